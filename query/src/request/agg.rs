//! An aggregation request (contract §6, §12.2) validated: `group_by` items (values, date
//! buckets, number bins), the statistics field, percentiles, the groups' order and `limit`.

use entity::FieldType;
use serde::Serialize;

use super::filter::{Filter, filter};
use super::params::{AggParams, DEFAULT_PERCENTILES, GroupByParam, check};
use crate::dataset::{Column, DatasetSchema};
use crate::dates::DateBucket;
use crate::error::ApiError;

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
    /// Groups of fewer records are left out, before the order and `limit`; `None` keeps every
    /// group (a `min_count` of 1 is `None`, so the two share a cache key and `ETag`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_count: Option<u64>,
}

impl AggQuery {
    /// Whether a group of `count` records is kept (`min_count`).
    pub fn keeps(&self, count: u64) -> bool {
        count >= self.min_count.unwrap_or(1).max(1)
    }
}

/// Validates an aggregation request (contract §6, §12.2).
pub(crate) fn agg_query(params: &AggParams, schema: &DatasetSchema) -> Result<AggQuery, ApiError> {
    check(params)?;
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
        min_count: params.min_count.filter(|&n| n > 1),
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
