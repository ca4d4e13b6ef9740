//! Request parameters before they meet a dataset: the typed parameters every front end fills
//! (REST from its query string, GraphQL and MCP from their typed arguments), with their limits
//! declared on them ([`super::syntax`] checks them), but no name looked up yet.
//! [`crate::request`] checks them against the dataset's schema.

use validator::Validate;

use crate::error::ApiError;
use crate::operators::Op;

// The syntax rules, under the names the front ends know them by (`query::params::…`).
use super::syntax::{PagingBounds, each_key_once, labels_in_range};
pub use super::syntax::{
    add_condition, check, check_sort_keys, parse_count, parse_group_sort, parse_percentiles,
    parse_sort, split_list, split_values,
};

/// Records per page when the client does not say (spec §8).
pub const DEFAULT_PER_PAGE: u64 = 20;
/// The largest page (spec §8).
pub const MAX_PER_PAGE: u64 = 100;
/// The most identifiers one `_ids` may list.
pub const MAX_IDS: u64 = 1000;
/// The largest page number: SQL's `OFFSET` and GraphQL's `Int` arguments are signed 64-bit, so
/// REST takes what GraphQL takes (a page past the end is still an empty page, not an error).
pub const MAX_PAGE: u64 = i64::MAX as u64;

/// The query parameters of `GET /datasets/{slug}/records` that mean something of their own:
/// no filter can be written on a field of one of these names (contract §5).
pub const RECORD_PARAMETERS: &[&str] = &["q", "_ids", "page", "per_page", "sort", "fields"];
/// The same for `GET /datasets/{slug}/agg` (contract §6, §12.2); the paging and projection
/// names are refused there rather than read as filters.
pub const AGG_PARAMETERS: &[&str] = &[
    "q",
    "_ids",
    "group_by",
    "field",
    "percentiles",
    "sort",
    "limit",
    "page",
    "per_page",
    "fields",
];

/// The same for `GET /datasets/{slug}/export` (contract §12.3); `page` and `per_page` are
/// refused there (an export is every match), not read as filters.
pub const EXPORT_PARAMETERS: &[&str] =
    &["q", "_ids", "format", "sort", "fields", "page", "per_page"];
/// The most groups an answer may hold without `limit` (contract §12.2), and the largest
/// `limit`: no request builds an unbounded answer.
pub const MAX_GROUPS: u64 = 10_000;
/// The most percentile labels one request may ask for (contract §12.2).
pub const MAX_PERCENTILES: u64 = 10;
/// The percentiles an agg answer holds when the request does not choose (contract §6).
pub const DEFAULT_PERCENTILES: [f64; 3] = [25.0, 50.0, 75.0];
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
}

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
