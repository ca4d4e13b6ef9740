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

/// A `name[op]` condition before its values are read: the field's name, its column, the
/// operator (one the field's type takes) and the values as given.
type Condition<'a> = (&'a str, Column, Op, Vec<String>);

/// Checks the conditions of §5 against the schema.
pub(crate) fn filter(params: &FilterParams, schema: &DatasetSchema) -> Result<Filter, ApiError> {
    no_nul(params)?;
    search_within_limits(params)?;
    let mut out = Filter {
        terms: sorted_unique(params.q.iter().flat_map(|q| terms(q)).collect()),
        field_terms: field_terms(&params.q_fields, schema)?,
        ..Filter::default()
    };
    let mut conditions: Vec<Condition> = Vec::new();
    for (name, value) in &params.exact {
        match schema.column(name) {
            Some(column) => {
                let value = exact_match(name, schema.field_type(column), value)?;
                push_value(&mut out.exact, column, value);
            }
            // Not a field: `name[op]` (contract §12.1), or a name the dataset does not have.
            None => conditions.push(operator_in_name(name, value, schema)?),
        }
    }
    for OpParam { name, op, values } in &params.ops {
        let (column, field_type) = field_column(schema, name)?;
        let op = taken_op(name, field_type, Some(*op), op.as_str())?;
        conditions.push((name, column, op, values.clone()));
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
    out.ids = params.ids.clone().map(sorted_unique);
    out.normalize();
    Ok(out)
}

impl Filter {
    /// Sorts every list by column and every column's values, dropping repeats, so that the
    /// same conditions in any order make the same filter.
    fn normalize(&mut self) {
        for (_, values) in self.exact.iter_mut().chain(self.not.iter_mut()) {
            values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
            values.dedup();
        }
        for (_, values) in &mut self.prefixes {
            *values = sorted_unique(std::mem::take(values));
        }
        self.exact.sort_by_key(|(c, _)| *c);
        self.not.sort_by_key(|(c, _)| *c);
        self.ranges.sort_by_key(|(c, _)| *c);
        self.prefixes.sort_by_key(|(c, _)| *c);
        self.exists.sort();
        self.exists.dedup();
    }
}

/// The column `name` names and its type; `unknown_field` when the dataset has no such field.
fn field_column(schema: &DatasetSchema, name: &str) -> Result<(Column, FieldType), ApiError> {
    let column = schema.column(name).ok_or_else(|| ApiError::UnknownField {
        field: name.to_string(),
    })?;
    Ok((column, schema.field_type(column)))
}

/// `op` when the field's type takes it; `invalid_operator` otherwise (or when there is no such
/// operator), naming `operator` as the client wrote it.
fn taken_op(
    field: &str,
    field_type: FieldType,
    op: Option<Op>,
    operator: &str,
) -> Result<Op, ApiError> {
    let allowed = Op::allowed(field_type);
    op.filter(|op| allowed.contains(op))
        .ok_or_else(|| ApiError::InvalidOperator {
            field: field.to_string(),
            field_type,
            operator: operator.to_string(),
            allowed: operators::names(allowed),
        })
}

/// The `q[name]` terms per text field, in field order, each field's sorted and unique; a
/// field whose text holds no term is left out.
fn field_terms(
    q_fields: &[(String, String)],
    schema: &DatasetSchema,
) -> Result<Vec<(usize, Vec<String>)>, ApiError> {
    let mut out: Vec<(usize, Vec<String>)> = Vec::new();
    for (name, text) in q_fields {
        let (column, field_type) = field_column(schema, name)?;
        let Column::Field(index) = column else {
            return Err(not_fulltext(name, field_type));
        };
        if !field_type.is_fulltext() {
            return Err(not_fulltext(name, field_type));
        }
        let new = terms(text);
        match out.iter_mut().find(|(i, _)| *i == index) {
            Some((_, existing)) => existing.extend(new),
            None => out.push((index, new)),
        }
    }
    for (_, list) in &mut out {
        *list = sorted_unique(std::mem::take(list));
    }
    out.retain(|(_, list)| !list.is_empty());
    out.sort_by_key(|(i, _)| *i);
    Ok(out)
}

/// `name=value` on a field. An empty value would match nothing where values are exact, so it
/// is refused with the way to ask for records without a value.
fn exact_match(name: &str, field_type: FieldType, value: &str) -> Result<ExactValue, ApiError> {
    if value.is_empty() && field_type.is_exact() {
        return Err(ApiError::invalid(
            name,
            format!(
                "{name}= needs a value; to find records without one, write {name}[exists]=false."
            ),
        ));
    }
    exact_value(name, field_type, value)
}

/// `name[op]=value` written in a query string's name; a name that is neither a field nor a
/// field with an operator is an unknown field.
fn operator_in_name<'a>(
    name: &'a str,
    value: &str,
    schema: &DatasetSchema,
) -> Result<Condition<'a>, ApiError> {
    let (field, op) = operators::split(name).ok_or_else(|| ApiError::UnknownField {
        field: name.to_string(),
    })?;
    let (column, field_type) = field_column(schema, field)?;
    let op = taken_op(field, field_type, Op::parse(op), op)?;
    let values = if op.takes_list() {
        split_values(value)
    } else {
        vec![value.to_string()]
    };
    Ok((field, column, op, values))
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
        Op::Exists => out.exists.push((column, exists_value(&parameter, value)?)),
        // Taken before the match: `in` and `nin` take a list.
        Op::In | Op::Nin => {}
        Op::Ne => {
            let value = exact_value(name, field_type, value)?;
            push_value(&mut out.not, column, value);
        }
        Op::Prefix => push_value(&mut out.prefixes, column, value.to_string()),
        Op::Gt | Op::Gte | Op::Lt | Op::Lte => {
            let bound = range_bound(name, &parameter, field_type, value)?;
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

/// `exists`'s value: `true` (or nothing) or `false`, in any case.
fn exists_value(parameter: &str, value: &str) -> Result<bool, ApiError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "" => Ok(true),
        "false" => Ok(false),
        _ => Err(ApiError::invalid(
            parameter,
            format!("{parameter} takes true or false."),
        )),
    }
}

/// A bound of a range in the order the field's values compare: numbers as numbers, dates as
/// instants, the rest as text.
fn range_bound(
    name: &str,
    parameter: &str,
    field_type: FieldType,
    value: &str,
) -> Result<RangeValue, ApiError> {
    Ok(match field_type {
        FieldType::Number => match exact_value(name, field_type, value)? {
            ExactValue::Num(n) => RangeValue::Num(n),
            ExactValue::Str(_) => return Err(ApiError::Internal),
        },
        FieldType::Date => RangeValue::Time(dates::parse(value).ok_or_else(|| {
            ApiError::invalid(
                parameter,
                format!(
                    "{name} is a date field; {value:?} is not an ISO 8601 date such as 2013-01-31 or 2013-01-31T05:00:00Z."
                ),
            )
        })?),
        _ => RangeValue::Str(value.to_string()),
    })
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
