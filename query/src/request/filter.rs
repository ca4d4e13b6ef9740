//! The conditions of a request (contract §5, §12.1), checked against the schema and normalized:
//! terms lower-cased, sorted and de-duplicated, conditions grouped by column with sorted values,
//! so two requests that mean the same thing compare (and hash) equal. Records, agg and export
//! share them.

use entity::FieldType;
use serde::Serialize;

use super::params::{FilterParams, OpParam, split_values};
use super::places::{Near, place_conditions};
use crate::dataset::{Column, DatasetSchema};
use crate::dates::{self, Instant};
use crate::error::ApiError;
use crate::operators::{self, Op};

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
    /// `near`: the circle's exact test (its box is in `ranges`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub near: Option<Near>,
}

impl Filter {
    /// No condition at all: the whole dataset.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty() && self.is_empty_but_terms()
    }

    /// No condition but `q`'s terms (if any).
    pub fn is_empty_but_terms(&self) -> bool {
        self.exact.is_empty() && self.is_empty_but_exact()
    }

    /// No condition but `q`'s terms and `name=value` (if any).
    pub fn is_empty_but_exact(&self) -> bool {
        self.field_terms.is_empty()
            && self.not.is_empty()
            && self.ranges.is_empty()
            && self.prefixes.is_empty()
            && self.exists.is_empty()
            && self.ids.is_none()
            && self.near.is_none()
    }
}

/// Splits full-text input into lower-cased terms (Unicode case folding as at import).
pub(crate) fn terms(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_lowercase).collect()
}

pub(super) fn sorted_unique(mut items: Vec<String>) -> Vec<String> {
    items.sort();
    items.dedup();
    items
}

/// Refuses a NUL character in any condition value: no stored value holds one (imports refuse
/// them) and PostgreSQL cannot take one as a bound text, so it is a client error, not a 500.
/// The most characters of search text (`q` and every `q[name]` together) one request may
/// send, and the most terms: each term is a dictionary look-up, so a page of text would be
/// thousands of them.
pub const MAX_SEARCH_CHARS: usize = 1000;
pub const MAX_SEARCH_TERMS: usize = 32;

/// Refuses search text beyond [`MAX_SEARCH_CHARS`] or [`MAX_SEARCH_TERMS`].
fn search_within_limits(params: &FilterParams) -> Result<(), ApiError> {
    let texts = params
        .q
        .iter()
        .map(|q| ("q".to_string(), q))
        .chain(params.q_fields.iter().map(|(n, v)| (format!("q[{n}]"), v)));
    let (mut chars, mut words) = (0, 0);
    for (parameter, text) in texts {
        chars += text.chars().count();
        words += text.split_whitespace().count();
        if chars > MAX_SEARCH_CHARS || words > MAX_SEARCH_TERMS {
            return Err(ApiError::invalid(
                parameter,
                format!(
                    "Search text is at most {MAX_SEARCH_CHARS} characters and {MAX_SEARCH_TERMS} terms in all (q and every q[field] together)."
                ),
            ));
        }
    }
    Ok(())
}

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
pub(crate) fn filter(params: &FilterParams, schema: &DatasetSchema) -> Result<Filter, ApiError> {
    no_nul(params)?;
    search_within_limits(params)?;
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
        let values = if op.takes_list() {
            split_values(value)
        } else {
            vec![value.clone()]
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
    // Only a request with a place reads the geo pair.
    if params.near.is_some() || params.bbox.is_some() {
        let geo = schema
            .geo
            .as_ref()
            .map(|(lat, lon)| (lat.as_str(), lon.as_str()));
        let (places, near) =
            place_conditions(params.near.as_deref(), params.bbox.as_deref(), geo, schema)?;
        conditions.extend(places);
        out.near = near;
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
    // A list: `in` (any of them) and `nin` (none of them) from a comma-separated value or a
    // list; several values of `ne` (a list through GraphQL or MCP) mean none of them, as a
    // repeated `ne` does.
    if op.takes_list() || (op == Op::Ne && values.len() > 1) {
        if values.is_empty() || values.iter().any(String::is_empty) {
            return Err(ApiError::invalid(
                parameter.as_str(),
                format!("{parameter} needs one or more values (comma-separated), none empty."),
            ));
        }
        let lists = if op == Op::In {
            &mut out.exact
        } else {
            &mut out.not
        };
        for item in values {
            push_value(lists, column, exact_value(name, field_type, item)?);
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
        // Taken before the match: `in` and `nin` take a list.
        Op::In | Op::Nin => {}
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
