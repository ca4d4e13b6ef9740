//! Validated requests: parameters checked against one dataset version's schema and normalized,
//! so that two requests that mean the same thing are equal (their cache key and `ETag` too).
//! Every rule of contract §5 and §6 about names and types is here, once.

use entity::FieldType;
use serde::Serialize;

use crate::dates::{self, DateBucket, Instant};
use crate::error::ApiError;
use crate::operators::{self, Op};
use crate::params::{
    AggParams, DEFAULT_PERCENTILES, ExportFormat, ExportParams, FilterParams, GroupByParam,
    OpParam, Paging, RecordParams, SortParam, split_values,
};
use crate::schema::{Column, DatasetSchema};

/// A value of an exact match, in the type of its column.
#[derive(Clone, Debug, PartialEq, PartialOrd, Serialize)]
pub enum ExactValue {
    Str(String),
    Num(f64),
}

/// A bound of a range, in the order its field's values compare (contract §12.1).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum RangeValue {
    /// A number field.
    Num(f64),
    /// A keyword field (or `_id`): byte order.
    Str(String),
    /// A date field: the instant the text names.
    Time(Instant),
}

impl RangeValue {
    fn compare(&self, other: &RangeValue) -> std::cmp::Ordering {
        match (self, other) {
            (RangeValue::Num(a), RangeValue::Num(b)) => a.total_cmp(b),
            (RangeValue::Str(a), RangeValue::Str(b)) => a.cmp(b),
            (RangeValue::Time(a), RangeValue::Time(b)) => a.cmp(b),
            _ => std::cmp::Ordering::Equal,
        }
    }
}

/// `gt`/`gte` and `lt`/`lte` of one column, merged into one interval: a value and whether it
/// is included.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Range {
    pub lower: Option<(RangeValue, bool)>,
    pub upper: Option<(RangeValue, bool)>,
}

impl Range {
    /// Narrows the interval by one bound (the tighter bound wins; at equal values the
    /// exclusive one).
    fn add(&mut self, op: Op, value: RangeValue) {
        let inclusive = matches!(op, Op::Gte | Op::Lte);
        let lower = matches!(op, Op::Gt | Op::Gte);
        let slot = if lower {
            &mut self.lower
        } else {
            &mut self.upper
        };
        let replace = match slot {
            None => true,
            Some((old, old_inclusive)) => match value.compare(old) {
                std::cmp::Ordering::Equal => *old_inclusive && !inclusive,
                std::cmp::Ordering::Greater => lower,
                std::cmp::Ordering::Less => !lower,
            },
        };
        if replace {
            *slot = Some((value, inclusive));
        }
    }

    /// Whether a date's instant lies in the interval (a date range's bounds are instants).
    pub fn holds_instant(&self, instant: Instant) -> bool {
        self.holds(|bound| match bound {
            RangeValue::Time(b) => instant.cmp(b),
            _ => std::cmp::Ordering::Equal,
        })
    }

    /// Whether `value` lies in the interval, given how it compares to each bound.
    pub fn holds(&self, compare: impl Fn(&RangeValue) -> std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        let above = self
            .lower
            .as_ref()
            .is_none_or(|(b, incl)| matches!((compare(b), incl), (Greater, _) | (Equal, true)));
        let below = self
            .upper
            .as_ref()
            .is_none_or(|(b, incl)| matches!((compare(b), incl), (Less, _) | (Equal, true)));
        above && below
    }
}

/// The conditions of a request, normalized: terms lower-cased, sorted and de-duplicated,
/// conditions grouped by column with sorted values, so that two requests that mean the same
/// thing compare (and hash) equal.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Filter {
    /// `q`: each term must occur in some text field.
    pub terms: Vec<String>,
    /// `q[name]`: each term must occur in that text field (field index).
    pub field_terms: Vec<(usize, Vec<String>)>,
    /// `name=value` and `name[in]`: OR within a column, AND across columns.
    pub exact: Vec<(Column, Vec<ExactValue>)>,
    /// `name[ne]`: none of these values (records without a value match).
    pub not: Vec<(Column, Vec<ExactValue>)>,
    /// `name[gt|gte|lt|lte]`: one interval per column; never matches a missing value.
    pub ranges: Vec<(Column, Range)>,
    /// `name[prefix]`: the value starts with one of these (case-sensitive).
    pub prefixes: Vec<(Column, Vec<String>)>,
    /// `name[exists]`: whether the record has a value.
    pub exists: Vec<(Column, bool)>,
    /// `_ids`.
    pub ids: Option<Vec<String>>,
}

impl Filter {
    /// No condition at all: the whole dataset.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty() && self.is_empty_but_terms()
    }

    /// No condition but `q`'s terms (if any).
    pub fn is_empty_but_terms(&self) -> bool {
        self.field_terms.is_empty()
            && self.exact.is_empty()
            && self.not.is_empty()
            && self.ranges.is_empty()
            && self.prefixes.is_empty()
            && self.exists.is_empty()
            && self.ids.is_none()
    }
}

/// A validated records request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RecordQuery {
    pub filter: Filter,
    pub paging: Paging,
    /// Sort keys (column, descending); ties and unsorted requests follow file order.
    pub sort: Vec<(Column, bool)>,
    pub fields: Option<Vec<String>>,
}

/// A validated export request: every match of `filter`, in `sort` order, projected.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExportQuery {
    pub filter: Filter,
    /// Sort keys (column, descending); ties and unsorted requests follow file order.
    pub sort: Vec<(Column, bool)>,
    pub fields: Option<Vec<String>>,
    pub format: ExportFormat,
}

/// How one `group_by` item turns a record's value into a group key part (contract §12.2).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Grouping {
    /// A keyword field: its value.
    Value,
    /// A date field: the UTC bucket of its instant.
    Date(DateBucket),
    /// A number field: the lower bound of its fixed-width bin.
    Bin(f64),
}

/// One validated `group_by` item.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupBy {
    /// The field's index in the schema.
    pub field: usize,
    pub grouping: Grouping,
    /// The item as written (`time_hour[month]`): the name of its member in a group's `keys`.
    pub label: String,
}

/// What orders the groups of an answer (contract §12.2).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum GroupOrder {
    Count,
    Key,
    Sum,
    Avg,
    Min,
    Max,
    /// A percentile, by its index in [`AggQuery::percentiles`].
    Percentile(usize),
}

/// A validated aggregation request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AggQuery {
    pub filter: Filter,
    /// The fields to group by, in the order given.
    pub group_by: Vec<GroupBy>,
    /// The number field to compute statistics of.
    pub field: Option<usize>,
    /// Percentile labels, ascending, without repeats.
    pub percentiles: Vec<f64>,
    /// The groups' order, then key ascending.
    pub order: GroupOrder,
    pub descending: bool,
    pub limit: Option<u64>,
}

/// Splits full-text input into lower-cased terms (Unicode case folding as at import).
pub fn terms(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_lowercase).collect()
}

fn sorted_unique(mut items: Vec<String>) -> Vec<String> {
    items.sort();
    items.dedup();
    items
}

/// Refuses a NUL character in any condition value: no stored value holds one (imports refuse
/// them) and PostgreSQL cannot take one as a bound text, so it is a client error, not a 500.
fn no_nul(params: &FilterParams) -> Result<(), ApiError> {
    let values = params
        .q
        .iter()
        .map(|q| ("q".to_string(), q))
        .chain(params.q_fields.iter().map(|(n, v)| (format!("q[{n}]"), v)))
        .chain(params.exact.iter().map(|(n, v)| (n.clone(), v)))
        .chain(
            params
                .ids
                .iter()
                .flatten()
                .map(|id| ("_ids".to_string(), id)),
        );
    for (parameter, value) in values {
        if value.contains('\0') || parameter.contains('\0') {
            return Err(ApiError::invalid(
                parameter.replace('\0', "\\0"),
                "A value cannot contain a NUL character (\\0); no record holds one.",
            ));
        }
    }
    Ok(())
}

/// Checks the conditions of §5 against the schema.
pub fn filter(params: &FilterParams, schema: &DatasetSchema) -> Result<Filter, ApiError> {
    no_nul(params)?;
    let mut out = Filter {
        terms: sorted_unique(params.q.iter().flat_map(|q| terms(q)).collect()),
        ..Filter::default()
    };
    for (name, text) in &params.q_fields {
        let column = schema.column(name).ok_or_else(|| ApiError::UnknownField {
            field: name.clone(),
        })?;
        let field_type = schema.field_type(column);
        let Column::Field(index) = column else {
            return Err(not_fulltext(name, field_type));
        };
        if !field_type.is_fulltext() {
            return Err(not_fulltext(name, field_type));
        }
        let new = terms(text);
        match out.field_terms.iter_mut().find(|(i, _)| *i == index) {
            Some((_, existing)) => existing.extend(new),
            None => out.field_terms.push((index, new)),
        }
    }
    for (_, list) in &mut out.field_terms {
        *list = sorted_unique(std::mem::take(list));
    }
    out.field_terms.retain(|(_, list)| !list.is_empty());
    out.field_terms.sort_by_key(|(i, _)| *i);

    let mut conditions: Vec<(&str, Column, Op, Vec<String>)> = Vec::new();
    for (name, value) in &params.exact {
        if let Some(column) = schema.column(name) {
            let field_type = schema.field_type(column);
            if value.is_empty() && field_type.is_exact() {
                return Err(ApiError::invalid(
                    name.as_str(),
                    format!(
                        "{name}= needs a value; to find records without one, write {name}[exists]=false."
                    ),
                ));
            }
            let value = exact_value(name, field_type, value)?;
            push_value(&mut out.exact, column, value);
            continue;
        }
        // Not a field: `name[op]` (contract §12.1), or a name the dataset does not have.
        let unknown = || ApiError::UnknownField {
            field: name.clone(),
        };
        let (field, op) = operators::split(name).ok_or_else(unknown)?;
        let column = schema.column(field).ok_or_else(|| ApiError::UnknownField {
            field: field.to_string(),
        })?;
        let field_type = schema.field_type(column);
        let allowed = Op::allowed(field_type);
        let op = Op::parse(op)
            .filter(|op| allowed.contains(op))
            .ok_or_else(|| ApiError::InvalidOperator {
                field: field.to_string(),
                field_type,
                operator: op.to_string(),
                allowed: operators::names(allowed),
            })?;
        let values = match op {
            Op::In => split_values(value),
            _ => vec![value.clone()],
        };
        conditions.push((field, column, op, values));
    }
    for OpParam {
        name,
        op,
        values: given,
    } in &params.ops
    {
        let column = schema.column(name).ok_or_else(|| ApiError::UnknownField {
            field: name.clone(),
        })?;
        let field_type = schema.field_type(column);
        let allowed = Op::allowed(field_type);
        if !allowed.contains(op) {
            return Err(ApiError::InvalidOperator {
                field: name.clone(),
                field_type,
                operator: op.as_str().to_string(),
                allowed: operators::names(allowed),
            });
        }
        conditions.push((name, column, *op, given.clone()));
    }
    for (name, column, op, values) in conditions {
        add_condition(&mut out, schema, name, column, op, &values)?;
    }
    for (_, values) in out.exact.iter_mut().chain(out.not.iter_mut()) {
        values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        values.dedup();
    }
    for (_, values) in &mut out.prefixes {
        *values = sorted_unique(std::mem::take(values));
    }
    out.exact.sort_by_key(|(c, _)| *c);
    out.not.sort_by_key(|(c, _)| *c);
    out.ranges.sort_by_key(|(c, _)| *c);
    out.prefixes.sort_by_key(|(c, _)| *c);
    out.exists.sort();
    out.exists.dedup();
    out.ids = params.ids.clone().map(sorted_unique);
    Ok(out)
}

/// Adds `value` to `column`'s list in `lists`.
fn push_value<T>(lists: &mut Vec<(Column, Vec<T>)>, column: Column, value: T) {
    match lists.iter_mut().find(|(c, _)| *c == column) {
        Some((_, values)) => values.push(value),
        None => lists.push((column, vec![value])),
    }
}

/// One `name[op]` condition whose operator the field takes, into `out`.
fn add_condition(
    out: &mut Filter,
    schema: &DatasetSchema,
    name: &str,
    column: Column,
    op: Op,
    values: &[String],
) -> Result<(), ApiError> {
    let field_type = schema.field_type(column);
    let parameter = format!("{name}[{}]", op.as_str());
    if op == Op::In {
        if values.is_empty() || values.iter().any(String::is_empty) {
            return Err(ApiError::invalid(
                parameter.as_str(),
                format!("{parameter} needs one or more values (comma-separated), none empty."),
            ));
        }
        for item in values {
            push_value(&mut out.exact, column, exact_value(name, field_type, item)?);
        }
        return Ok(());
    }
    let [value] = values else {
        return Err(ApiError::invalid(
            parameter.as_str(),
            format!("{parameter} takes one value."),
        ));
    };
    if op != Op::Exists && value.is_empty() {
        return Err(ApiError::invalid(
            parameter.as_str(),
            format!(
                "{parameter} needs a value; to find records with or without one, write {name}[exists]=true or false."
            ),
        ));
    }
    match op {
        Op::Exists => {
            let has = match value.trim().to_ascii_lowercase().as_str() {
                "true" | "" => true,
                "false" => false,
                _ => {
                    return Err(ApiError::invalid(
                        parameter.as_str(),
                        format!("{parameter} takes true or false."),
                    ));
                }
            };
            out.exists.push((column, has));
        }
        // Taken before the match: `in` takes a list.
        Op::In => {}
        Op::Ne => {
            let value = exact_value(name, field_type, value)?;
            push_value(&mut out.not, column, value);
        }
        Op::Prefix => push_value(&mut out.prefixes, column, value.to_string()),
        Op::Gt | Op::Gte | Op::Lt | Op::Lte => {
            let bound = match field_type {
                FieldType::Number => match exact_value(name, field_type, value)? {
                    ExactValue::Num(n) => RangeValue::Num(n),
                    ExactValue::Str(_) => return Err(ApiError::Internal),
                },
                FieldType::Date => RangeValue::Time(dates::parse(value).ok_or_else(|| {
                    ApiError::invalid(
                        parameter.as_str(),
                        format!(
                            "{name} is a date field; {value:?} is not an ISO 8601 date such as 2013-01-31 or 2013-01-31T05:00:00Z."
                        ),
                    )
                })?),
                _ => RangeValue::Str(value.to_string()),
            };
            match out.ranges.iter_mut().find(|(c, _)| *c == column) {
                Some((_, range)) => range.add(op, bound),
                None => {
                    let mut range = Range::default();
                    range.add(op, bound);
                    out.ranges.push((column, range));
                }
            }
        }
    }
    Ok(())
}

fn not_fulltext(name: &str, field_type: FieldType) -> ApiError {
    ApiError::invalid(
        format!("q[{name}]"),
        format!(
            "q[{name}] searches text fields, and {name} is a {field_type} field; match it exactly with {name}=value."
        ),
    )
}

/// The typed value of `name=value` (contract §5: numbers compare as numbers).
fn exact_value(name: &str, field_type: FieldType, value: &str) -> Result<ExactValue, ApiError> {
    match field_type {
        FieldType::Text => Err(ApiError::TextFieldExactMatch { field: name.into() }),
        FieldType::Json => Err(ApiError::invalid(
            name,
            format!("{name} holds lists or objects and cannot be filtered."),
        )),
        FieldType::Number => match value.trim().parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(ExactValue::Num(if n == 0.0 { 0.0 } else { n })),
            _ => Err(ApiError::invalid(
                name,
                format!("{name} is a number field; {value:?} is not a number."),
            )),
        },
        FieldType::Boolean => match value.trim().to_ascii_lowercase().as_str() {
            "true" => Ok(ExactValue::Str("true".into())),
            "false" => Ok(ExactValue::Str("false".into())),
            _ => Err(ApiError::invalid(
                name,
                format!("{name} is a boolean field; give true or false."),
            )),
        },
        FieldType::Keyword | FieldType::Date => Ok(ExactValue::Str(value.to_string())),
    }
}

/// Validates a records request (contract §5).
pub fn record_query(
    params: &RecordParams,
    schema: &DatasetSchema,
) -> Result<RecordQuery, ApiError> {
    crate::params::check(params)?;
    let filter = filter(&params.filter, schema)?;
    let paging = Paging::new(params.page, params.per_page)?;
    let sort = sort_keys(&params.sort, schema)?;
    let fields = projection(params.fields.as_deref(), schema)?;
    Ok(RecordQuery {
        filter,
        paging,
        sort,
        fields,
    })
}

/// Checks sort keys against the schema: known names of sortable (non-text) fields, each once.
/// A key written with a trailing `<` or `>` names the field before the mark if there is one,
/// else the whole text ([`SortParam::resolve`]).
fn sort_keys(keys: &[SortParam], schema: &DatasetSchema) -> Result<Vec<(Column, bool)>, ApiError> {
    let mut sort: Vec<(Column, bool)> = Vec::with_capacity(keys.len());
    for key in keys {
        let (name, descending) = key
            .resolve(|name| schema.column(name).is_some())
            .ok_or_else(|| ApiError::UnknownField {
                field: key.name.clone(),
            })?;
        let column = schema.column(&name).ok_or_else(|| ApiError::UnknownField {
            field: name.clone(),
        })?;
        let field_type = schema.field_type(column);
        if !field_type.is_exact() {
            return Err(ApiError::invalid(
                "sort",
                format!(
                    "{name} is a {field_type} field and cannot be sorted; sort by a keyword, number, boolean or date field."
                ),
            ));
        }
        if sort.iter().any(|(c, _)| *c == column) {
            return Err(ApiError::invalid(
                "sort",
                format!("The sort key {name} is given twice."),
            ));
        }
        sort.push((column, descending));
    }
    Ok(sort)
}

/// Validates an export request (contract §12.3): the conditions, sort and projection of a
/// records request, checked by the same rules, and the format.
pub fn export_query(
    params: &ExportParams,
    schema: &DatasetSchema,
) -> Result<ExportQuery, ApiError> {
    crate::params::check(params)?;
    Ok(ExportQuery {
        filter: filter(&params.filter, schema)?,
        sort: sort_keys(&params.sort, schema)?,
        fields: projection(params.fields.as_deref(), schema)?,
        format: params.format,
    })
}

/// Checks a `fields` projection (of records, a single record or an export).
pub fn projection(
    fields: Option<&[String]>,
    schema: &DatasetSchema,
) -> Result<Option<Vec<String>>, ApiError> {
    crate::params::check(&crate::params::ProjectionParams {
        fields: fields.map(<[String]>::to_vec),
    })?;
    match fields {
        None => Ok(None),
        Some(list) => {
            if let Some(bad) = list.iter().find(|name| !schema.projectable(name)) {
                return Err(ApiError::UnknownField { field: bad.clone() });
            }
            Ok(Some(sorted_unique(list.to_vec())))
        }
    }
}

/// Validates an aggregation request (contract §6, §12.2).
pub fn agg_query(params: &AggParams, schema: &DatasetSchema) -> Result<AggQuery, ApiError> {
    crate::params::check(params)?;
    if params.group_by.is_empty() {
        return Err(ApiError::MissingParameter {
            parameter: "group_by",
        });
    }
    let mut group_by = Vec::with_capacity(params.group_by.len());
    for item in &params.group_by {
        let group = group_by_item(item, schema)?;
        if group_by.iter().any(|g: &GroupBy| g.label == group.label) {
            return Err(ApiError::invalid(
                "group_by",
                format!("group_by lists {} twice.", group.label),
            ));
        }
        group_by.push(group);
    }
    let field = match params.field.as_deref() {
        None => None,
        Some(name) => match schema.column(name) {
            None => {
                return Err(ApiError::UnknownField {
                    field: name.to_string(),
                });
            }
            Some(Column::Field(i)) if schema.fields[i].field_type == FieldType::Number => Some(i),
            Some(column) => {
                return Err(ApiError::InvalidField {
                    field: name.to_string(),
                    field_type: schema.field_type(column),
                });
            }
        },
    };
    let mut percentiles = params
        .percentiles
        .clone()
        .unwrap_or_else(|| DEFAULT_PERCENTILES.to_vec());
    percentiles.sort_by(f64::total_cmp);
    percentiles.dedup();
    let (order, descending) = match &params.sort {
        None => (GroupOrder::Count, true),
        Some(key) => (
            group_order(&key.name, field.is_some(), &percentiles)?,
            key.descending,
        ),
    };
    Ok(AggQuery {
        filter: filter(&params.filter, schema)?,
        group_by,
        field,
        percentiles,
        order,
        descending,
        limit: params.limit,
    })
}

/// One `group_by` item against the schema: a keyword field, a date field with a bucket, or a
/// number field with a bin width. A field whose own name is the whole item wins.
fn group_by_item(item: &GroupByParam, schema: &DatasetSchema) -> Result<GroupBy, ApiError> {
    let label = item.label();
    let whole = schema.column(&label).filter(|_| item.bucket.is_some());
    let (name, bucket) = match whole {
        Some(_) => (label.as_str(), None),
        None => (item.name.as_str(), item.bucket.as_deref()),
    };
    let field = match schema.column(name) {
        None => {
            return Err(ApiError::UnknownField {
                field: name.to_string(),
            });
        }
        Some(Column::Field(i)) => i,
        Some(Column::Id) => {
            return Err(ApiError::InvalidGroupBy {
                field: name.to_string(),
                field_type: FieldType::Keyword,
            });
        }
    };
    let field_type = schema.fields[field].field_type;
    let grouping = match (field_type, bucket) {
        (FieldType::Keyword, None) => Grouping::Value,
        (FieldType::Date, Some(b)) => Grouping::Date(DateBucket::parse(b).ok_or_else(|| {
            ApiError::invalid(
                "group_by",
                format!(
                    "{name} is a date field; group it by {}: {name}[month], for example.",
                    DateBucket::NAMES.join(", ")
                ),
            )
        })?),
        (FieldType::Number, Some(b)) => {
            let width = b
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|w| w.is_finite() && *w > 0.0)
                .ok_or_else(|| {
                    ApiError::invalid(
                        "group_by",
                        format!(
                            "{name} is a number field; group it into bins of a positive width: {name}[100], for example."
                        ),
                    )
                })?;
            Grouping::Bin(width)
        }
        (FieldType::Keyword, Some(_)) => {
            return Err(ApiError::invalid(
                "group_by",
                format!("{name} is a keyword field and groups by its values without brackets."),
            ));
        }
        (field_type, _) => {
            return Err(ApiError::InvalidGroupBy {
                field: name.to_string(),
                field_type,
            });
        }
    };
    let label = match grouping {
        Grouping::Value => name.to_string(),
        _ => label,
    };
    Ok(GroupBy {
        field,
        grouping,
        label,
    })
}

/// The order a group `sort` names: `count`, `key`, and with `field` `sum`, `avg`, `min`,
/// `max` or `p<label>` of a requested percentile.
fn group_order(name: &str, has_field: bool, percentiles: &[f64]) -> Result<GroupOrder, ApiError> {
    let order = match name {
        "count" => return Ok(GroupOrder::Count),
        "key" => return Ok(GroupOrder::Key),
        "sum" => GroupOrder::Sum,
        "avg" => GroupOrder::Avg,
        "min" => GroupOrder::Min,
        "max" => GroupOrder::Max,
        _ => {
            let label = name.strip_prefix('p').and_then(|l| l.parse::<f64>().ok());
            match label.and_then(|l| percentiles.iter().position(|p| *p == l)) {
                Some(i) => GroupOrder::Percentile(i),
                None => {
                    return Err(ApiError::invalid(
                        "sort",
                        format!(
                            "Groups sort by count, key, or with field by sum, avg, min, max or p<label> of a requested percentile (p50); {name:?} is none of them."
                        ),
                    ));
                }
            }
        }
    };
    if !has_field {
        return Err(ApiError::invalid(
            "sort",
            format!("Sorting groups by {name} needs a number field: add field=<name>."),
        ));
    }
    Ok(order)
}
