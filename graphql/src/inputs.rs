//! Typed GraphQL arguments turned into the query layer's parameters ([`RecordParams`],
//! [`AggParams`]). This is only a change of shape: every rule (bounds, names, types, the
//! `_ids` and `fields` lists, repeated sort keys) is checked by `query`, the code REST
//! uses, so both APIs refuse the same requests with the same codes and messages.

use async_graphql::{Enum, InputObject};

use query::operators::Op;
use query::params::{self, GroupByParam, OpParam, parse_count};
use query::{AggParams, ApiError, FilterParams, RecordParams, SortParam};

/// Full-text search in one text field (REST `q[field]=terms`).
#[derive(InputObject, Clone, Debug)]
pub struct FieldSearch {
    /// A `text` field.
    pub field: String,
    /// Whitespace-separated terms, all required, case-insensitive.
    pub q: String,
}

/// A condition on one field: an exact match (REST `field=value`; several on one field are
/// OR) or an operator (REST `field[op]=value`); conditions on different
/// fields, or with different operators, are AND. Which operators a field takes is in its
/// schema entry (`filter.operators`).
#[derive(InputObject, Clone, Debug)]
pub struct FieldFilter {
    /// A field name; dotted names reach nested fields.
    pub field: String,
    /// The operator; `EQ` (an exact match) when absent.
    #[graphql(default_with = "FilterOp::Eq")]
    pub op: FilterOp,
    /// The value, written as in a REST query string (`5`, `5.0`, `true`, `EWR`,
    /// `2013-01-31T05:00:00Z`); for `EXISTS`, `true` or `false` (default `true`).
    pub value: Option<String>,
    /// Several values, meaning what repeating the parameter means in REST: any of them for
    /// `EQ` and `IN`, none of them for `NE` and `NIN`; other operators take one `value`.
    pub values: Option<Vec<String>>,
}

/// The operators of a [`FieldFilter`] (REST `field[op]=value`).
#[derive(Enum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum FilterOp {
    /// Equal (REST `field=value`).
    Eq,
    /// Greater than: numbers as numbers, dates as instants, keywords in byte order.
    Gt,
    /// Greater than or equal.
    Gte,
    /// Less than.
    Lt,
    /// Less than or equal.
    Lte,
    /// Not equal; records without a value match.
    Ne,
    /// Any of `values`.
    In,
    /// None of `values`; records without a value match.
    Nin,
    /// Has a value (`value` `true`, the default) or has none (`false`).
    Exists,
    /// Starts with `value`, case-sensitive (keywords).
    Prefix,
}

impl FilterOp {
    /// The query layer's operator; `None` for an exact match.
    fn op(self) -> Option<Op> {
        match self {
            FilterOp::Eq => None,
            FilterOp::Gt => Some(Op::Gt),
            FilterOp::Gte => Some(Op::Gte),
            FilterOp::Lt => Some(Op::Lt),
            FilterOp::Lte => Some(Op::Lte),
            FilterOp::Ne => Some(Op::Ne),
            FilterOp::In => Some(Op::In),
            FilterOp::Nin => Some(Op::Nin),
            FilterOp::Exists => Some(Op::Exists),
            FilterOp::Prefix => Some(Op::Prefix),
        }
    }
}

/// Sort direction.
#[derive(Enum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum SortOrder {
    /// Ascending (REST `name>`).
    Asc,
    /// Descending (REST `name<`).
    Desc,
}

/// One sort key; records without the value come last, ties keep file order.
#[derive(InputObject, Clone, Debug)]
pub struct SortKey {
    pub field: String,
    #[graphql(default_with = "SortOrder::Asc")]
    pub order: SortOrder,
}

/// The conditions `records` and `agg` share.
#[derive(Clone, Debug, Default)]
pub struct Conditions {
    pub q: Option<String>,
    pub search: Option<Vec<FieldSearch>>,
    pub filters: Option<Vec<FieldFilter>>,
    pub ids: Option<Vec<String>>,
    /// REST `near=<lat>,<lon>,<radius>`.
    pub near: Option<String>,
    /// REST `bbox=<min_lon>,<min_lat>,<max_lon>,<max_lat>`.
    pub bbox: Option<String>,
}

impl Conditions {
    /// The REST filter parameters these arguments mean.
    pub fn filter_params(self) -> Result<FilterParams, ApiError> {
        let mut exact = Vec::new();
        let mut ops = Vec::new();
        for f in self.filters.unwrap_or_default() {
            let values: Vec<String> = f
                .value
                .into_iter()
                .chain(f.values.unwrap_or_default())
                .collect();
            match f.op.op() {
                // Several values are any of them, as a repeated `field=value` is.
                None => {
                    if values.is_empty() {
                        return Err(ApiError::invalid(
                            f.field.as_str(),
                            format!("The filter on {} needs a value or values.", f.field),
                        ));
                    }
                    exact.extend(values.into_iter().map(|value| (f.field.clone(), value)));
                }
                Some(Op::Exists) if values.is_empty() => ops.push(OpParam {
                    name: f.field,
                    op: Op::Exists,
                    values: vec!["true".into()],
                }),
                Some(op) => ops.push(OpParam {
                    name: f.field,
                    op,
                    values,
                }),
            }
        }
        Ok(FilterParams {
            q: self.q.into_iter().collect(),
            q_fields: self
                .search
                .unwrap_or_default()
                .into_iter()
                .map(|s| (s.field, s.q))
                .collect(),
            exact,
            ops,
            ids: self.ids,
            near: self.near,
            bbox: self.bbox,
        })
    }
}

/// A whole-number argument: GraphQL's `Int` may be negative, which REST's rule refuses.
pub fn count(name: &str, value: Option<i64>) -> Result<Option<u64>, ApiError> {
    value
        .map(|n| u64::try_from(n).or_else(|_| parse_count(name, &n.to_string())))
        .transpose()
}

/// A `version` argument: a whole number from 1.
pub fn version(value: Option<i64>) -> Result<Option<u64>, ApiError> {
    count("version", value)?
        .map(|n| params::version_number("version", n))
        .transpose()
}

/// The arguments of `records` beyond its conditions.
#[derive(Clone, Debug, Default)]
pub struct RecordArgs {
    pub page: Option<i64>,
    pub per_page: Option<i64>,
    pub sort: Option<Vec<SortKey>>,
    pub fields: Option<Vec<String>>,
    pub facet: Option<Vec<String>>,
    pub facet_size: Option<i64>,
}

/// `records` arguments as REST parameters.
pub fn record_params(conditions: Conditions, args: RecordArgs) -> Result<RecordParams, ApiError> {
    let RecordArgs {
        page,
        per_page,
        sort,
        fields,
        facet,
        facet_size,
    } = args;
    let sort: Vec<SortParam> = sort
        .unwrap_or_default()
        .into_iter()
        .map(|k| SortParam::new(k.field, k.order == SortOrder::Desc))
        .collect();
    let params = RecordParams {
        filter: conditions.filter_params()?,
        page: count("page", page)?,
        per_page: count("per_page", per_page)?,
        sort,
        fields,
        facet,
        facet_size: count("facet_size", facet_size)?,
        version: None,
        cursor: None,
    };
    params::check(&params)?;
    Ok(params)
}

/// The order of an agg answer's groups (REST `sort=count<`).
#[derive(InputObject, Clone, Debug)]
pub struct GroupSort {
    /// `count`, `key`, or with `field`: `sum`, `avg`, `min`, `max`, `p<label>` (`p95`).
    pub by: String,
    #[graphql(default_with = "SortOrder::Desc")]
    pub order: SortOrder,
}

/// The arguments of `agg` beyond its conditions.
#[derive(Clone, Debug, Default)]
pub struct Grouping {
    pub group_by: Vec<String>,
    pub field: Option<String>,
    pub percentiles: Option<Vec<f64>>,
    pub sort: Option<GroupSort>,
    pub limit: Option<i64>,
    pub min_count: Option<i64>,
}

/// `agg` arguments as REST parameters.
pub fn agg_params(conditions: Conditions, grouping: Grouping) -> Result<AggParams, ApiError> {
    let params = AggParams {
        filter: conditions.filter_params()?,
        group_by: grouping
            .group_by
            .iter()
            .map(|item| GroupByParam::parse(item.trim()))
            .collect(),
        field: grouping.field,
        percentiles: grouping.percentiles,
        sort: grouping
            .sort
            .map(|s| SortParam::new(s.by, s.order == SortOrder::Desc)),
        limit: count("limit", grouping.limit)?,
        min_count: count("min_count", grouping.min_count)?,
        version: None,
    };
    params::check(&params)?;
    Ok(params)
}
