//! The syntax rules of request parameters, whichever front end gave them: the limits declared
//! on the parameter types checked into the contract's `invalid_parameter` messages, and the
//! small grammars of values (sort keys, lists, counts, percentile labels, an agg `sort`).

use validator::{Validate, ValidationErrors, ValidationErrorsKind};

use super::params::*;
use crate::error::ApiError;

/// The bounds of [`Paging`], declared as the other parameters' are.
#[derive(Validate)]
pub(super) struct PagingBounds {
    #[validate(range(min = 1, max = MAX_PAGE))]
    pub(super) page: u64,
    #[validate(range(min = 1, max = MAX_PER_PAGE))]
    pub(super) per_page: u64,
}

/// Checks the syntax rules declared on a parameter type (ranges, list lengths): the first
/// broken one as the contract's `invalid_parameter`, named as REST names the parameter.
pub fn check(params: &impl Validate) -> Result<(), ApiError> {
    match params.validate() {
        Ok(()) => Ok(()),
        Err(errors) => Err(first_error(&errors).unwrap_or(ApiError::Internal)),
    }
}

/// The first error of a validation, as a message a person can act on.
fn first_error(errors: &ValidationErrors) -> Option<ApiError> {
    if let Some((field, kind)) = errors.errors().iter().next() {
        let name = match field.as_ref() {
            "ids" => "_ids",
            other => other,
        };
        match kind {
            ValidationErrorsKind::Field(list) => {
                let error = list.first()?;
                let param = |key: &str| error.params.get(key).map(|v| v.to_string());
                let noun = error.message.as_deref().unwrap_or("item");
                let message = match error.code.as_ref() {
                    "range" => format!(
                        "{name} must be between {} and {}.",
                        param("min").unwrap_or_default(),
                        param("max").unwrap_or_default()
                    ),
                    "length"
                        if param("min").is_some_and(|min| {
                            error
                                .params
                                .get("value")
                                .and_then(|v| v.as_array())
                                .is_some_and(|v| (v.len() as u64) < min.parse::<u64>().unwrap_or(0))
                        }) =>
                    {
                        format!("{name} needs at least one {noun} (comma-separated).")
                    }
                    "length" => format!(
                        "{name} can list at most {} {noun}s.",
                        param("max").unwrap_or_default()
                    ),
                    _ => error
                        .message
                        .as_deref()
                        .unwrap_or("This parameter is not valid.")
                        .to_string(),
                };
                return Some(ApiError::invalid(name, message));
            }
            ValidationErrorsKind::Struct(inner) => return first_error(inner),
            ValidationErrorsKind::List(items) => {
                return items.values().next().and_then(|inner| first_error(inner));
            }
        }
    }
    None
}

/// Percentile labels are 0..=100.
pub(super) fn labels_in_range(labels: &[f64]) -> Result<(), validator::ValidationError> {
    match labels.iter().find(|p| !(0.0..=100.0).contains(*p)) {
        None => Ok(()),
        Some(bad) => Err(validator::ValidationError::new("percentile")
            .with_message(format!("A percentile is between 0 and 100; {bad} is not.").into())),
    }
}

/// Each sort key names its field once.
pub(super) fn each_key_once(keys: &[SortParam]) -> Result<(), validator::ValidationError> {
    check_sort_keys(keys).map_err(|error| {
        validator::ValidationError::new("sort").with_message(error.message().into())
    })
}

/// Parses a `sort` value: keys separated by commas, each a name followed by `<` (descending),
/// `>` (ascending) or nothing (ascending).
///
/// Field names may contain `<` and `>` themselves. The rule: a key's last character, when it is
/// `<` or `>` and something comes before it, is its direction if the rest names a field of the
/// dataset; otherwise the whole key is the field's name, ascending ([`SortParam::resolve`],
/// applied against the schema). So with fields `a` and `a<`, `a<` sorts `a` descending, `a<>`
/// sorts `a<` ascending and `a<<` sorts `a<` descending; with only `a<`, `a<` sorts it
/// ascending too. A key with nothing but a mark, or nothing at all, is refused.
pub fn parse_sort(value: &str) -> Result<Vec<SortParam>, ApiError> {
    let mut keys = Vec::new();
    for raw in value.split(',') {
        let raw = raw.trim();
        let mark = raw.chars().last().filter(|c| matches!(c, '<' | '>'));
        let name = match mark {
            Some(mark) if raw.len() > 1 => &raw[..raw.len() - mark.len_utf8()],
            _ => raw,
        };
        if name.is_empty() || raw == "<" || raw == ">" {
            return Err(ApiError::invalid(
                "sort",
                format!(
                    "Cannot read the sort key {raw:?}: write a field name followed by < (descending) or > (ascending), keys separated by commas."
                ),
            ));
        }
        let mark = mark.filter(|_| name.len() < raw.len());
        keys.push(SortParam {
            name: name.to_string(),
            descending: mark == Some('<'),
            mark,
        });
    }
    check_sort_keys(&keys)?;
    Ok(keys)
}

/// The rule on a list of sort keys however it was written (a REST `sort` value or GraphQL's
/// typed keys): each field at most once.
pub fn check_sort_keys(keys: &[SortParam]) -> Result<(), ApiError> {
    for (i, key) in keys.iter().enumerate() {
        if keys[..i].iter().any(|k| k.name == key.name) {
            return Err(ApiError::invalid(
                "sort",
                format!("The sort key {} is given twice.", key.name),
            ));
        }
    }
    Ok(())
}

/// Splits a comma-separated list (`fields`, `_ids`), trimming items and dropping empty ones.
pub fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Splits an `in` list of values (`carrier[in]=UA,AA`) on its commas, dropping empty items but
/// keeping every other item exactly as given: a value is matched as `carrier=value` matches
/// it, spaces included (`carrier[in]=%20UA` does not match `UA`, as `carrier=%20UA` does not).
pub fn split_values(value: &str) -> Vec<String> {
    value
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Parses a whole-number parameter (`page`, `per_page`).
pub fn parse_count(name: &str, value: &str) -> Result<u64, ApiError> {
    value.trim().parse::<u64>().map_err(|_| {
        ApiError::invalid(
            name,
            format!("{name} must be a whole number, not {value:?}."),
        )
    })
}

/// Parses `percentiles=5,50,95.5`: plain decimal numbers (no sign, no exponent).
pub fn parse_percentiles(value: &str) -> Result<Vec<f64>, ApiError> {
    value
        .split(',')
        .map(|item| {
            let item = item.trim();
            let (whole, fraction) = item.split_once('.').unwrap_or((item, "0"));
            let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            let plain = digits(whole) && digits(fraction);
            plain.then(|| item.parse::<f64>().ok()).flatten().ok_or_else(|| {
                ApiError::invalid(
                    "percentiles",
                    format!(
                        "Cannot read the percentile {item:?}: give numbers from 0 to 100, comma-separated (percentiles=5,50,95)."
                    ),
                )
            })
        })
        .collect()
}

/// Parses an agg `sort`: one key (`count<`, `key>`, `avg<`, `p95<`, …); its name is checked by
/// [`crate::request`].
pub fn parse_group_sort(value: &str) -> Result<SortParam, ApiError> {
    let mut keys = parse_sort(value)?;
    if keys.len() != 1 {
        return Err(ApiError::invalid(
            "sort",
            "An agg sort takes one key (count<, count>, key>, key<, or a statistic of field such as avg< or p95<); ties follow the key.",
        ));
    }
    Ok(keys.remove(0))
}

/// What a condition's name says, as REST writes it (a query-string name, an MCP filter name).
enum Pair<'a> {
    Q(&'a str),
    QField(&'a str, &'a str),
    Ids(&'a str),
    Other(&'a str, &'a str),
}

fn classify<'a>(name: &'a str, value: &'a str) -> Result<Pair<'a>, ApiError> {
    if name == "q" {
        return Ok(Pair::Q(value));
    }
    if let Some(rest) = name.strip_prefix("q[") {
        return match rest.strip_suffix(']') {
            Some(field) if !field.is_empty() => Ok(Pair::QField(field, value)),
            _ => Err(ApiError::invalid(
                name,
                format!("Cannot read the parameter {name:?}: write q[<field>]=terms."),
            )),
        };
    }
    if name == "_ids" {
        return Ok(Pair::Ids(value));
    }
    Ok(Pair::Other(name, value))
}

fn add_filter(filter: &mut FilterParams, pair: Pair<'_>) -> Result<(), ApiError> {
    match pair {
        Pair::Q(value) => filter.q.push(value.to_string()),
        Pair::QField(field, value) => filter.q_fields.push((field.into(), value.into())),
        Pair::Ids(value) => filter
            .ids
            .get_or_insert_with(Vec::new)
            .extend(split_list(value)),
        Pair::Other(name, value) => filter.exact.push((name.into(), value.into())),
    }
    Ok(())
}

/// Adds the condition `name=value`, named as REST names conditions: `q` (full text), `q[field]`
/// (full text in one field), `_ids` (a comma-separated list), else a field with an optional
/// `[op]` (which only the schema can tell from a field's own name).
pub fn add_condition(filter: &mut FilterParams, name: &str, value: &str) -> Result<(), ApiError> {
    add_filter(filter, classify(name, value)?)
}
