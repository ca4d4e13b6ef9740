//! Typed GraphQL arguments turned into the query layer's parameters ([`RecordParams`],
//! [`AggParams`]). This is only a change of shape: every rule (bounds, names, types, the
//! `_ids` and `fields` lists, repeated sort keys) is checked by `crate::query`, the code REST
//! uses, so both APIs refuse the same requests with the same codes and messages.

use async_graphql::{Enum, InputObject};

use crate::query::params::{self, parse_count};
use crate::query::{AggParams, ApiError, FilterParams, RecordParams, SortParam};

/// Full-text search in one text field (REST `q[field]=terms`).
#[derive(InputObject, Clone, Debug)]
pub struct FieldSearch {
    /// A `text` field.
    pub field: String,
    /// Whitespace-separated terms, all required, case-insensitive.
    pub q: String,
}

/// An exact match (REST `field=value`): keyword, number, boolean or date fields; numbers
/// compare as numbers. Several filters on one field are OR, on different fields AND.
#[derive(InputObject, Clone, Debug)]
pub struct FieldFilter {
    /// A field name; dotted names reach nested fields.
    pub field: String,
    /// The value, written as in a REST query string (`5`, `5.0`, `true`, `EWR`).
    pub value: String,
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

/// The conditions `records` and `agg` share (contract §5, §6).
#[derive(Clone, Debug, Default)]
pub struct Conditions {
    pub q: Option<String>,
    pub search: Option<Vec<FieldSearch>>,
    pub filters: Option<Vec<FieldFilter>>,
    pub ids: Option<Vec<String>>,
}

impl Conditions {
    /// The REST filter parameters these arguments mean.
    pub fn filter_params(self) -> Result<FilterParams, ApiError> {
        if let Some(ids) = &self.ids {
            params::check_ids(ids)?;
        }
        Ok(FilterParams {
            q: self.q.into_iter().collect(),
            q_fields: self
                .search
                .unwrap_or_default()
                .into_iter()
                .map(|s| (s.field, s.q))
                .collect(),
            exact: self
                .filters
                .unwrap_or_default()
                .into_iter()
                .map(|f| (f.field, f.value))
                .collect(),
            ids: self.ids,
        })
    }
}

/// A whole-number argument: GraphQL's `Int` may be negative, which REST's rule refuses.
pub fn count(name: &str, value: Option<i64>) -> Result<Option<u64>, ApiError> {
    value
        .map(|n| u64::try_from(n).or_else(|_| parse_count(name, &n.to_string())))
        .transpose()
}

/// `records` arguments as REST parameters.
pub fn record_params(
    conditions: Conditions,
    page: Option<i64>,
    per_page: Option<i64>,
    sort: Option<Vec<SortKey>>,
    fields: Option<Vec<String>>,
) -> Result<RecordParams, ApiError> {
    let sort: Vec<SortParam> = sort
        .unwrap_or_default()
        .into_iter()
        .map(|k| SortParam {
            name: k.field,
            descending: k.order == SortOrder::Desc,
        })
        .collect();
    params::check_sort_keys(&sort)?;
    if let Some(fields) = &fields {
        params::check_fields(fields)?;
    }
    Ok(RecordParams {
        filter: conditions.filter_params()?,
        page: count("page", page)?,
        per_page: count("per_page", per_page)?,
        sort,
        fields,
    })
}

/// `agg` arguments as REST parameters.
pub fn agg_params(
    conditions: Conditions,
    group_by: String,
    field: Option<String>,
) -> Result<AggParams, ApiError> {
    Ok(AggParams {
        filter: conditions.filter_params()?,
        group_by: Some(group_by),
        field,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_counts_are_refused_as_rest_refuses_them() {
        let graphql = count("page", Some(-1)).unwrap_err();
        let rest = parse_count("page", "-1").unwrap_err();
        assert_eq!(graphql, rest);
        assert_eq!(count("page", Some(3)).unwrap(), Some(3));
        assert_eq!(count("page", None).unwrap(), None);
    }

    #[test]
    fn repeated_sort_keys_and_empty_lists_are_refused() {
        let key = |f: &str| SortKey {
            field: f.into(),
            order: SortOrder::Desc,
        };
        let twice = record_params(
            Conditions::default(),
            None,
            None,
            Some(vec![key("a"), key("a")]),
            None,
        );
        assert_eq!(twice.unwrap_err().code(), "invalid_parameter");
        let no_ids = Conditions {
            ids: Some(vec![]),
            ..Conditions::default()
        };
        assert_eq!(
            no_ids.filter_params().unwrap_err().code(),
            "invalid_parameter"
        );
        let no_fields = record_params(Conditions::default(), None, None, None, Some(vec![]));
        assert_eq!(no_fields.unwrap_err().code(), "invalid_parameter");
    }
}
