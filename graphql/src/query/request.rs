//! Validated requests: parameters checked against one dataset version's schema and normalized,
//! so that two requests that mean the same thing are equal (their cache key and `ETag` too).
//! Every rule of contract §5 and §6 about names and types is here, once.

use entity::FieldType;
use serde::Serialize;

use super::error::ApiError;
use super::params::{AggParams, FilterParams, Paging, RecordParams};
use super::schema::{Column, DatasetSchema};

/// A value of an exact match, in the type of its column.
#[derive(Clone, Debug, PartialEq, PartialOrd, Serialize)]
pub enum ExactValue {
    Str(String),
    Num(f64),
}

/// The conditions of a request, normalized: terms lower-cased, sorted and de-duplicated,
/// exact matches grouped by column with sorted values.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Filter {
    /// `q`: each term must occur in some text field.
    pub terms: Vec<String>,
    /// `q[name]`: each term must occur in that text field (field index).
    pub field_terms: Vec<(usize, Vec<String>)>,
    /// `name=value`: OR within a column, AND across columns.
    pub exact: Vec<(Column, Vec<ExactValue>)>,
    /// `_ids`.
    pub ids: Option<Vec<String>>,
}

impl Filter {
    /// No condition at all: the whole dataset.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
            && self.field_terms.is_empty()
            && self.exact.is_empty()
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

/// A validated aggregation request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AggQuery {
    pub filter: Filter,
    /// The keyword field to group by.
    pub group_by: usize,
    /// The number field to compute statistics of.
    pub field: Option<usize>,
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

    for (name, value) in &params.exact {
        let column = schema.column(name).ok_or_else(|| ApiError::UnknownField {
            field: name.clone(),
        })?;
        let field_type = schema.field_type(column);
        let value = exact_value(name, field_type, value)?;
        match out.exact.iter_mut().find(|(c, _)| *c == column) {
            Some((_, values)) => values.push(value),
            None => out.exact.push((column, vec![value])),
        }
    }
    for (_, values) in &mut out.exact {
        values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        values.dedup();
    }
    out.exact.sort_by_key(|(c, _)| *c);
    out.ids = params.ids.clone().map(sorted_unique);
    Ok(out)
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
    let filter = filter(&params.filter, schema)?;
    let paging = Paging::new(params.page, params.per_page)?;
    let mut sort = Vec::with_capacity(params.sort.len());
    for key in &params.sort {
        let column = schema
            .column(&key.name)
            .ok_or_else(|| ApiError::UnknownField {
                field: key.name.clone(),
            })?;
        let field_type = schema.field_type(column);
        if !field_type.is_exact() {
            return Err(ApiError::invalid(
                "sort",
                format!(
                    "{} is a {field_type} field and cannot be sorted; sort by a keyword, number, boolean or date field.",
                    key.name
                ),
            ));
        }
        sort.push((column, key.descending));
    }
    let fields = match &params.fields {
        None => None,
        Some(list) => {
            for name in list {
                if !schema.projectable(name) {
                    return Err(ApiError::UnknownField {
                        field: name.clone(),
                    });
                }
            }
            Some(sorted_unique(list.clone()))
        }
    };
    Ok(RecordQuery {
        filter,
        paging,
        sort,
        fields,
    })
}

/// Checks a `fields` projection of a single-record request.
pub fn projection(
    fields: Option<&[String]>,
    schema: &DatasetSchema,
) -> Result<Option<Vec<String>>, ApiError> {
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

/// Validates an aggregation request (contract §6).
pub fn agg_query(params: &AggParams, schema: &DatasetSchema) -> Result<AggQuery, ApiError> {
    let name = params
        .group_by
        .as_deref()
        .ok_or(ApiError::MissingParameter {
            parameter: "group_by",
        })?;
    let group_by = match schema.column(name) {
        None => {
            return Err(ApiError::UnknownField {
                field: name.to_string(),
            });
        }
        Some(Column::Field(i)) if schema.fields[i].field_type.is_group_by() => i,
        Some(column) => {
            return Err(ApiError::InvalidGroupBy {
                field: name.to_string(),
                field_type: schema.field_type(column),
            });
        }
    };
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
    Ok(AggQuery {
        filter: filter(&params.filter, schema)?,
        group_by,
        field,
    })
}
