//! The tools' arguments: the JSON face of the REST query strings. Each argument type turns
//! into the typed parameters the resolver takes, read by the same syntax rules as a REST
//! request's (`query::params`), and validated by the resolver's calls like any request:
//! every rule (names, operators, bounds, limits) is checked there, once, and a broken one is
//! the same error with the same code. The bounds written here only describe those rules to the client, from
//! the same constants.

use std::collections::BTreeMap;

use query::ApiError;
use query::params::{
    AGG_PARAMETERS, AggParams, EXPORT_PARAMETERS, ExportFormat, ExportParams, FilterParams,
    GroupByParam, MAX_CATALOG_QUERY_CHARS, MAX_FACET_SIZE, MAX_GROUPS, MAX_PAGE, MAX_PER_PAGE,
    RECORD_PARAMETERS, RecordParams, add_condition, check, parse_group_sort, parse_percentiles,
    parse_sort, split_list,
};
use schemars::JsonSchema;
use serde::Deserialize;

/// A filter's value: text, a number, `true`/`false`, or a list: any of them for an exact match or
/// `in`, none of them for `ne` and `nin`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum FilterValue {
    Text(String),
    Number(serde_json::Number),
    Bool(bool),
    List(Vec<Scalar>),
}

/// One item of a list.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Scalar {
    Text(String),
    Number(serde_json::Number),
    Bool(bool),
}

impl Scalar {
    fn text(&self) -> String {
        match self {
            Scalar::Text(text) => text.clone(),
            Scalar::Number(number) => number.to_string(),
            Scalar::Bool(flag) => flag.to_string(),
        }
    }
}

impl FilterValue {
    /// The values as a query string carries them: one, or a list's items each as a repeated
    /// parameter, which means any of them for an exact match or `in`, none of them for `ne`
    /// and `nin`. A list is never joined into one text: `"carrier[ne]": ["UA", "AA"]` is
    /// `carrier[ne]=UA&carrier[ne]=AA`, not the one value `UA,AA`.
    fn texts(&self) -> Vec<String> {
        match self {
            FilterValue::Text(text) => vec![text.clone()],
            FilterValue::Number(number) => vec![number.to_string()],
            FilterValue::Bool(flag) => vec![flag.to_string()],
            FilterValue::List(items) => items.iter().map(Scalar::text).collect(),
        }
    }
}

/// A list given as a JSON array or as the comma-separated text REST takes.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum List {
    Items(Vec<String>),
    Text(String),
}

impl List {
    fn text(&self) -> String {
        match self {
            List::Items(items) => items.join(","),
            List::Text(text) => text.clone(),
        }
    }
}

/// Filters as REST writes them: `{"carrier": "UA", "dep_delay[gte]": 60,
/// "origin[in]": ["EWR", "JFK"], "dep_time[exists]": false}`.
pub type Filters = BTreeMap<String, FilterValue>;

/// The conditions of `q` and `filters`, named as REST names them, refusing first a name that
/// is one of the tool's own arguments (it would be read as that argument, not as a filter).
fn conditions(
    q: &Option<String>,
    filters: &Option<Filters>,
    reserved: &[&str],
) -> Result<FilterParams, ApiError> {
    for name in filters.iter().flat_map(|f| f.keys()) {
        let condition = ["q", "_ids", "near", "bbox"].contains(&name.as_str());
        if reserved.contains(&name.as_str()) && !condition {
            return Err(ApiError::invalid(
                name.as_str(),
                format!("{name} is an argument of its own, not a filter: pass it beside filters."),
            ));
        }
    }
    let mut filter = FilterParams::default();
    if let Some(q) = q {
        add_condition(&mut filter, "q", q)?;
    }
    for (name, value) in filters.iter().flatten() {
        let mut texts = value.texts();
        if texts.is_empty() {
            // An empty list is an empty value, refused as REST refuses `name=`.
            texts.push(String::new());
        }
        for text in texts {
            add_condition(&mut filter, name, &text)?;
        }
    }
    Ok(filter)
}

/// `list_datasets`: `GET /datasets`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDatasets {
    /// Words that must each occur in a dataset's title, description, field names or field
    /// descriptions (case-insensitive; substrings, so Chinese words need no spaces); the
    /// matches come best first.
    #[schemars(length(max = MAX_CATALOG_QUERY_CHARS))]
    pub q: Option<String>,
    /// The page, from 1.
    #[schemars(range(min = 1, max = MAX_PAGE))]
    pub page: Option<u64>,
    /// Datasets per page.
    #[schemars(range(min = 1, max = MAX_PER_PAGE))]
    pub per_page: Option<u64>,
}

/// `describe_dataset`: `GET /datasets/{slug}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Describe {
    /// The dataset's slug, as `list_datasets` gives it.
    pub dataset: String,
}

/// `search_records`: `GET /datasets/{slug}/records`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRecords {
    /// The dataset's slug.
    pub dataset: String,
    /// Full-text search over the dataset's text fields.
    pub q: Option<String>,
    /// Filters: `field` for an exact match, `field[op]` for an operator (see the schema
    /// entries' `filter.operators`), `_ids` for a list of ids.
    pub filters: Option<Filters>,
    /// Sort keys, each a field name followed by `<` (descending) or `>` (ascending), e.g.
    /// `["dep_delay<", "_id"]`.
    pub sort: Option<List>,
    /// Only these fields in each record (`_id` always comes).
    pub fields: Option<List>,
    /// The page, from 1.
    #[schemars(range(min = 1, max = MAX_PAGE))]
    pub page: Option<u64>,
    /// Records per page.
    #[schemars(range(min = 1, max = MAX_PER_PAGE))]
    pub per_page: Option<u64>,
    /// Keyword fields whose most frequent values are counted over every match (not only the
    /// page), e.g. `["carrier", "origin"]`: the answer gains `facets`.
    pub facet: Option<List>,
    /// Values per facet (default 10).
    #[schemars(range(min = 1, max = MAX_FACET_SIZE))]
    pub facet_size: Option<u64>,
    /// The page after the one whose `next_cursor` this is, instead of `page`; send the same
    /// `q`, `filters`, `sort`, `fields`, `facet` and `per_page` with it. It reads the version the
    /// first page read, so a re-import meanwhile shifts nothing.
    pub cursor: Option<String>,
    /// The dataset version to read (its `versions` list them), from 1; default: the live one.
    #[schemars(range(min = 1))]
    pub version: Option<u64>,
}

impl SearchRecords {
    /// The records request's parameters.
    pub fn params(&self) -> Result<RecordParams, ApiError> {
        let mut params = RecordParams {
            filter: conditions(&self.q, &self.filters, RECORD_PARAMETERS)?,
            page: self.page,
            per_page: self.per_page,
            ..RecordParams::default()
        };
        if let Some(sort) = &self.sort {
            params.sort = parse_sort(&sort.text())?;
        }
        params.fields = self.fields.as_ref().map(|f| split_list(&f.text()));
        params.facet = self.facet.as_ref().map(|f| split_list(&f.text()));
        params.facet_size = self.facet_size;
        params.version = self.version;
        params.cursor = self.cursor.clone();
        check(&params)?;
        Ok(params)
    }
}

/// `get_record`: `GET /datasets/{slug}/records/{id}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetRecord {
    /// The dataset's slug.
    pub dataset: String,
    /// The record's `_id`.
    pub id: String,
    /// Only these fields (`_id` always comes).
    pub fields: Option<List>,
    /// The dataset version to read (its `versions` list them), from 1; default: the live one.
    #[schemars(range(min = 1))]
    pub version: Option<u64>,
}

impl GetRecord {
    /// The `fields` list, split as REST splits it.
    pub fn fields(&self) -> Option<String> {
        self.fields.as_ref().map(List::text)
    }
}

/// `aggregate`: `GET /datasets/{slug}/agg`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Aggregate {
    /// The dataset's slug.
    pub dataset: String,
    /// Group keys: keyword fields, `date_field[year|month|day|hour]`, `number_field[width]`.
    /// Required: the schema says so; a call without it is refused as REST refuses it
    /// (`missing_parameter`), not by the JSON reader.
    #[schemars(required)]
    pub group_by: Option<List>,
    /// The number field to compute statistics of, per group.
    pub field: Option<String>,
    /// Percentile labels, 0 to 100, e.g. `[5, 50, 95]`.
    pub percentiles: Option<Vec<serde_json::Number>>,
    /// Order of groups, one key: `count<` (default), `count>`, `key>`, `key<`, or a statistic of
    /// `field` (`avg<`, `p95>`, …); `<` is descending.
    pub sort: Option<String>,
    /// At most this many groups.
    #[schemars(range(min = 1, max = MAX_GROUPS))]
    pub limit: Option<u64>,
    /// Only groups of at least this many records (before `sort` and `limit`; `total_groups`
    /// counts the groups kept), e.g. carriers with at least 10,000 flights.
    #[schemars(range(min = 1))]
    pub min_count: Option<u64>,
    /// Full-text search over the text fields.
    pub q: Option<String>,
    /// Filters, as for `search_records`.
    pub filters: Option<Filters>,
    /// The dataset version to read (its `versions` list them), from 1; default: the live one.
    #[schemars(range(min = 1))]
    pub version: Option<u64>,
}

impl Aggregate {
    /// The agg request's parameters (percentile labels read as REST reads them: plain
    /// decimal numbers).
    pub fn params(&self) -> Result<AggParams, ApiError> {
        let filter = conditions(&self.q, &self.filters, AGG_PARAMETERS)?;
        let group_by = self
            .group_by
            .as_ref()
            .map(|g| {
                split_list(&g.text())
                    .iter()
                    .map(|item| GroupByParam::parse(item))
                    .collect()
            })
            .unwrap_or_default();
        let percentiles = self
            .percentiles
            .as_ref()
            .map(|p| {
                let labels = p.iter().map(|n| n.to_string()).collect::<Vec<_>>();
                parse_percentiles(&labels.join(","))
            })
            .transpose()?;
        let params = AggParams {
            filter,
            group_by,
            field: self.field.clone(),
            percentiles,
            sort: self.sort.as_deref().map(parse_group_sort).transpose()?,
            limit: self.limit,
            min_count: self.min_count,
            version: self.version,
        };
        check(&params)?;
        Ok(params)
    }
}

/// `export_records`: `GET /datasets/{slug}/export`, for a small slice.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportRecords {
    /// The dataset's slug.
    pub dataset: String,
    /// `ndjson` (default) or `csv`.
    pub format: Option<String>,
    /// Full-text search over the text fields.
    pub q: Option<String>,
    /// Filters, as for `search_records`.
    pub filters: Option<Filters>,
    /// Sort keys, as for `search_records`.
    pub sort: Option<List>,
    /// Only these fields.
    pub fields: Option<List>,
    /// The dataset version to read (its `versions` list them), from 1; default: the live one.
    #[schemars(range(min = 1))]
    pub version: Option<u64>,
}

impl ExportRecords {
    /// The export request's parameters.
    pub fn params(&self) -> Result<ExportParams, ApiError> {
        let mut params = ExportParams {
            filter: conditions(&self.q, &self.filters, EXPORT_PARAMETERS)?,
            ..ExportParams::default()
        };
        if let Some(sort) = &self.sort {
            params.sort = parse_sort(&sort.text())?;
        }
        params.fields = self.fields.as_ref().map(|f| split_list(&f.text()));
        if let Some(format) = &self.format {
            params.format = ExportFormat::parse(format)?;
        }
        params.version = self.version;
        check(&params)?;
        Ok(params)
    }
}
