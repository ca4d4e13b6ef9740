//! Request parameters before they meet a dataset: the typed parameters every front end fills
//! (REST from its query string, GraphQL and MCP from their typed arguments), with their limits
//! declared on them, but no name looked up yet; then the syntax rules: the declared limits
//! checked into the contract's `invalid_parameter` messages ([`check`]), and the small grammars
//! of values (sort keys, lists, counts, percentile labels, an agg `sort`).
//! [`crate::request`] checks them against the dataset's schema.

use validator::{Validate, ValidationErrors, ValidationErrorsKind};

use crate::error::ApiError;
use crate::operators::Op;

/// Records per page when the client does not say (spec §8).
pub const DEFAULT_PER_PAGE: u64 = 20;
/// The largest page (spec §8).
pub const MAX_PER_PAGE: u64 = 100;
/// The most identifiers one `_ids` may list.
pub const MAX_IDS: u64 = 1000;
/// The largest page number: SQL's `OFFSET` and GraphQL's `Int` arguments are signed 64-bit, so
/// REST takes what GraphQL takes (a page past the end is still an empty page, not an error).
pub const MAX_PAGE: u64 = i64::MAX as u64;

pub use super::catalog::{MAX_CATALOG_QUERY_CHARS, catalog_words};
pub use super::reserved::{AGG_PARAMETERS, EXPORT_PARAMETERS, RECORD_PARAMETERS};
/// The most groups an answer may hold without `limit` (contract §12.2), and the largest
/// `limit`: no request builds an unbounded answer.
pub const MAX_GROUPS: u64 = 10_000;
/// The most percentile labels one request may ask for (contract §12.2).
pub const MAX_PERCENTILES: u64 = 10;
/// The percentiles an agg answer holds when the request does not choose (contract §6).
pub const DEFAULT_PERCENTILES: [f64; 3] = [25.0, 50.0, 75.0];
/// The most fields one `facet` may list: each is a count over every matching record.
pub const MAX_FACETS: u64 = 20;
/// Values per facet when the request does not say, and the most it may ask for.
pub const DEFAULT_FACET_SIZE: u64 = 10;
pub const MAX_FACET_SIZE: u64 = 100;
/// The most fields one `group_by` may list: each multiplies the groups an answer can have.
pub const MAX_GROUP_BY_FIELDS: u64 = 4;

/// Conditions shared by records and agg (contract §5, §6: "all filters of §5 apply").
#[derive(Clone, Debug, Default, PartialEq, Validate)]
pub struct FilterParams {
    /// Each `q` value; its whitespace-separated terms are all required.
    pub q: Vec<String>,
    /// `q[name]=terms`.
    pub q_fields: Vec<(String, String)>,
    /// `name=value`; the same name repeated is OR. A REST `name[op]=value` arrives here too,
    /// with its bracketed name: only the schema can tell it from a field called `name[op]`.
    pub exact: Vec<(String, String)>,
    /// `name[op]` conditions as a typed front end (GraphQL) gives them (contract §12.1).
    pub ops: Vec<OpParam>,
    /// `_ids=a,b,c`: 1..=[`MAX_IDS`] identifiers.
    #[validate(length(min = 1, max = MAX_IDS, message = "identifier"))]
    pub ids: Option<Vec<String>>,
    /// `near=<lat>,<lon>,<radius>` and `bbox=<min_lon>,<min_lat>,<max_lon>,<max_lat>` as
    /// written; read by [`crate::request::places`].
    pub near: Option<String>,
    pub bbox: Option<String>,
}

/// One `name[op]` condition: `in` takes its values as a list, every other operator one value.
#[derive(Clone, Debug, PartialEq)]
pub struct OpParam {
    pub name: String,
    pub op: Op,
    pub values: Vec<String>,
}

/// One sort key: a field and its direction.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SortParam {
    pub name: String,
    pub descending: bool,
    /// The `<` or `>` a `sort` text's key ended with, read as its direction and left out of
    /// `name`. When `name` is not a field of the dataset, `name` followed by this mark is tried
    /// as the field's whole name, ascending (see [`parse_sort`]). `None` for typed keys
    /// (GraphQL), whose name is always the whole name.
    #[serde(skip)]
    pub mark: Option<char>,
}

impl SortParam {
    /// A key naming `name` exactly, as typed arguments give it.
    pub fn new(name: impl Into<String>, descending: bool) -> Self {
        SortParam {
            name: name.into(),
            descending,
            mark: None,
        }
    }

    /// The field name this key names in a schema, and its direction: `name` if `has_field`
    /// says it is one; otherwise, for a key written with a trailing mark, the whole text
    /// (`name` and the mark) ascending, if that is a field; otherwise `None`.
    pub fn resolve(&self, has_field: impl Fn(&str) -> bool) -> Option<(String, bool)> {
        if has_field(&self.name) {
            return Some((self.name.clone(), self.descending));
        }
        let whole = format!("{}{}", self.name, self.mark?);
        has_field(&whole).then_some((whole, false))
    }
}

/// Parameters of `GET /datasets/{slug}/records`. `page` and `per_page` are checked by
/// [`Paging::new`], which the dataset list shares.
#[derive(Clone, Debug, Default, PartialEq, Validate)]
pub struct RecordParams {
    #[validate(nested)]
    pub filter: FilterParams,
    pub page: Option<u64>,
    pub per_page: Option<u64>,
    #[validate(custom(function = "each_key_once"))]
    pub sort: Vec<SortParam>,
    /// At least one name.
    #[validate(length(min = 1, message = "field name"))]
    pub fields: Option<Vec<String>>,
    /// Keyword fields whose values are counted over every match, beside the page.
    #[validate(length(min = 1, max = MAX_FACETS, message = "field"))]
    pub facet: Option<Vec<String>>,
    /// Values per facet, 1..=[`MAX_FACET_SIZE`]; `None`: [`DEFAULT_FACET_SIZE`].
    #[validate(range(min = 1, max = MAX_FACET_SIZE))]
    pub facet_size: Option<u64>,
    /// The dataset version to read (contract §13.1), from 1; `None`: the live one.
    #[validate(range(min = 1))]
    pub version: Option<u64>,
    /// The page after the one that gave this cursor (contract §13.2), instead of `page`.
    #[validate(length(min = 1, max = MAX_CURSOR_CHARS))]
    pub cursor: Option<String>,
}

/// The longest text a cursor can be: longer is refused before its signature is checked.
pub const MAX_CURSOR_CHARS: u64 = 256;

/// Parameters of `GET /datasets/{slug}/agg` (contract §6, §12.2).
#[derive(Clone, Debug, Default, PartialEq, Validate)]
pub struct AggParams {
    #[validate(nested)]
    pub filter: FilterParams,
    /// The fields to group by, each possibly with a bucket; empty when absent (which
    /// [`crate::request`] refuses as `missing_parameter`).
    #[validate(length(max = MAX_GROUP_BY_FIELDS, message = "field"))]
    pub group_by: Vec<GroupByParam>,
    pub field: Option<String>,
    /// Percentile labels, 1..=[`MAX_PERCENTILES`] of them, each 0..=100; `None`:
    /// [`DEFAULT_PERCENTILES`].
    #[validate(
        length(min = 1, max = MAX_PERCENTILES, message = "label"),
        custom(function = "labels_in_range")
    )]
    pub percentiles: Option<Vec<f64>>,
    /// The order of the groups; `None`: count descending, then key.
    pub sort: Option<SortParam>,
    /// Keep the first N groups, 1..=[`MAX_GROUPS`].
    #[validate(range(min = 1, max = MAX_GROUPS))]
    pub limit: Option<u64>,
    /// Keep only groups of at least this many records (SQL's `HAVING count(*) >= n`), from 1.
    #[validate(range(min = 1))]
    pub min_count: Option<u64>,
    /// The dataset version to read (contract §13.1), from 1; `None`: the live one.
    #[validate(range(min = 1))]
    pub version: Option<u64>,
}

/// The `fields` of a single-record request (`GET /datasets/{slug}/records/{id}`).
#[derive(Clone, Debug, Default, PartialEq, Validate)]
pub struct ProjectionParams {
    /// At least one name.
    #[validate(length(min = 1, message = "field name"))]
    pub fields: Option<Vec<String>>,
}

impl ProjectionParams {
    /// Reads a `fields` value (comma-separated names) and checks its rules.
    pub fn parse(value: Option<&str>) -> Result<Self, ApiError> {
        let projection = ProjectionParams {
            fields: value.map(split_list),
        };
        check(&projection)?;
        Ok(projection)
    }
}

/// One item of `group_by`: `origin`, `time_hour[month]`, `distance[500]`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GroupByParam {
    pub name: String,
    /// The bracketed part: a date bucket name or a number bin width, checked against the
    /// field's type by [`crate::request`].
    pub bucket: Option<String>,
}

impl GroupByParam {
    /// Reads one item; a field whose own name ends in `]` is found by [`crate::request`],
    /// which tries the whole text as a name first.
    pub fn parse(item: &str) -> Self {
        match crate::operators::split(item) {
            Some((name, bucket)) => GroupByParam {
                name: name.to_string(),
                bucket: Some(bucket.to_string()),
            },
            None => GroupByParam {
                name: item.to_string(),
                bucket: None,
            },
        }
    }

    /// The item as the client wrote it (a group's `keys` member is named so).
    pub fn label(&self) -> String {
        match &self.bucket {
            Some(bucket) => format!("{}[{bucket}]", self.name),
            None => self.name.clone(),
        }
    }
}

/// The formats of an export (contract §12.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// One record a line, exactly as `records` shows it (the default).
    #[default]
    Ndjson,
    /// A header of the selected fields, nested ones as dotted names; RFC 4180 quoting.
    Csv,
}

impl ExportFormat {
    /// Every format, in the order the documentation lists them.
    pub const ALL: [ExportFormat; 2] = [ExportFormat::Ndjson, ExportFormat::Csv];

    /// The name a client writes in `format=`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExportFormat::Ndjson => "ndjson",
            ExportFormat::Csv => "csv",
        }
    }

    /// Reads `format=` (names are matched without regard to case).
    pub fn parse(value: &str) -> Result<Self, ApiError> {
        let value = value.trim();
        Self::ALL
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(value))
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|f| f.as_str()).collect();
                ApiError::invalid(
                    "format",
                    format!(
                        "format must be one of {}, not {value:?}.",
                        names.join(" or ")
                    ),
                )
            })
    }
}

/// Parameters of `GET /datasets/{slug}/export` (contract §12.3): the conditions, sort and
/// projection of records, without paging.
#[derive(Clone, Debug, Default, PartialEq, Validate)]
pub struct ExportParams {
    #[validate(nested)]
    pub filter: FilterParams,
    #[validate(custom(function = "each_key_once"))]
    pub sort: Vec<SortParam>,
    /// At least one name.
    #[validate(length(min = 1, message = "field name"))]
    pub fields: Option<Vec<String>>,
    pub format: ExportFormat,
    /// The dataset version to read (contract §13.1), from 1; `None`: the live one.
    #[validate(range(min = 1))]
    pub version: Option<u64>,
}

/// Paging of lists (`page`, `per_page`), validated: page 1..=[`MAX_PAGE`], per_page
/// 1..=[`MAX_PER_PAGE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Paging {
    pub page: u64,
    pub per_page: u64,
}

impl Paging {
    /// Checks the bounds of spec §8 and contract §5 (and [`MAX_PAGE`]).
    pub fn new(page: Option<u64>, per_page: Option<u64>) -> Result<Self, ApiError> {
        let page = page.unwrap_or(1);
        let per_page = per_page.unwrap_or(DEFAULT_PER_PAGE);
        check(&PagingBounds { page, per_page })?;
        Ok(Paging { page, per_page })
    }

    /// Records before this page.
    pub fn offset(&self) -> u64 {
        (self.page - 1).saturating_mul(self.per_page)
    }
}

// The syntax rules.

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
                    "range" => match param("max") {
                        Some(max) => format!(
                            "{name} must be between {} and {max}.",
                            param("min").unwrap_or_default()
                        ),
                        None => format!(
                            "{name} must be at least {}.",
                            param("min").unwrap_or_default()
                        ),
                    },
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

/// A version number (`version`, `from`, `to`; contract §13.1): versions are numbered from 1.
pub fn version_number(name: &str, number: u64) -> Result<u64, ApiError> {
    match number {
        0 => Err(ApiError::invalid(
            name,
            format!("{name} must be at least 1."),
        )),
        n => Ok(n),
    }
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
    Place(&'a str, &'a str),
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
    if name == "near" || name == "bbox" {
        return Ok(Pair::Place(name, value));
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
        Pair::Place(name, value) => {
            let slot = if name == "near" {
                &mut filter.near
            } else {
                &mut filter.bbox
            };
            if slot.replace(value.into()).is_some() {
                return Err(ApiError::invalid(
                    name,
                    format!("The parameter {name} is given more than once."),
                ));
            }
        }
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
