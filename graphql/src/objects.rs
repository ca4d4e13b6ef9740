//! The answers as typed GraphQL objects, field for field the query layer's views
//! ([`query::views`]) in camelCase; records stay a JSON scalar, because every dataset
//! has fields of its own.

use async_graphql::{Json, SimpleObject};
use serde_json::Value;

use query::schema::{FilterInfo, SchemaEntry};
use query::views;

/// A dataset in the catalog (REST `GET /datasets` item).
#[derive(SimpleObject, Clone, Debug)]
pub struct DatasetItem {
    pub slug: String,
    pub title: String,
    pub description: String,
    pub record_count: i64,
    /// RFC 3339.
    pub updated_at: String,
    /// The REST metadata URL.
    pub url: String,
}

/// One page of the catalog (REST `GET /datasets`).
#[derive(SimpleObject, Clone, Debug)]
pub struct DatasetList {
    pub datasets: Vec<DatasetItem>,
    /// Datasets in all.
    pub total: u64,
}

/// A dataset's metadata (REST `GET /datasets/{slug}`).
#[derive(SimpleObject, Clone, Debug)]
pub struct Dataset {
    /// The catalog item's fields, inline as in REST.
    #[graphql(flatten)]
    pub item: DatasetItem,
    pub license: Option<String>,
    pub source_url: Option<String>,
    /// The import's identifier field, whose values are `_id`.
    pub id_field: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// The live version's number (REST `Dataset-Version`); `versions` in REST lists them all.
    pub version: i64,
    /// Schema entries, `_id` first.
    pub fields: Vec<Field>,
    pub links: DatasetLinks,
    /// The number fields of latitudes and longitudes that `near` and `bbox` read; null when
    /// the dataset has none.
    pub geo: Option<GeoPair>,
    /// Set when the store answers every query of this dataset because its in-memory index
    /// would be beyond the memory budget (REST `index`); null otherwise.
    pub index: Option<IndexBeyondBudget>,
}

/// Why the store answers a dataset: its in-memory index would be beyond the memory budget.
#[derive(SimpleObject, Clone, Debug)]
pub struct IndexBeyondBudget {
    /// Always `store`.
    pub answered_by: String,
    /// Always `beyond_memory_budget`.
    pub because: String,
    /// The index's estimated size, MiB; a budget this large would hold it.
    pub index_mib: u64,
    /// The memory budget of the instance that answered, MiB.
    pub budget_mib: u64,
}

/// A dataset's geo pair.
#[derive(SimpleObject, Clone, Debug)]
pub struct GeoPair {
    pub lat: String,
    pub lon: String,
}

/// Where the REST API and the usage guide of a dataset are.
#[derive(SimpleObject, Clone, Debug)]
pub struct DatasetLinks {
    pub records: String,
    pub agg: String,
    /// The dataset's Markdown usage guide.
    pub skill: String,
    /// The dataset's versions (REST).
    pub versions: String,
}

/// A schema entry: a field, its type and how it can be used.
#[derive(SimpleObject, Clone, Debug)]
pub struct Field {
    /// The name to use in arguments; dotted for nested fields.
    pub name: String,
    /// `keyword`, `text`, `number`, `boolean`, `date` or `json`.
    #[graphql(name = "type")]
    pub field_type: String,
    pub description: Option<String>,
    pub filter: FieldUse,
}

/// How a field can be used in `records` and `agg` arguments.
#[derive(SimpleObject, Clone, Debug)]
pub struct FieldUse {
    /// Usable in `filters` (exact match).
    pub exact: bool,
    /// Usable in `q` / `search` (full text).
    pub fulltext: bool,
    /// Usable in `sort`.
    pub sort: bool,
    /// Usable as `agg(groupBy:)` by value (keywords).
    pub group_by: bool,
    /// The operators `filters` take on this field (`op:`, lower-case here as in REST).
    pub operators: Vec<String>,
    /// The buckets `agg(groupBy:)` takes on this field: `year`…`hour` for a date, `<width>`
    /// for a number.
    pub buckets: Vec<String>,
}

/// One page of matching records (the REST records envelope).
#[derive(SimpleObject, Clone, Debug)]
pub struct RecordPage {
    /// Records matching the conditions, on all pages.
    pub total: u64,
    pub page: u64,
    pub per_page: u64,
    /// The records of this page, each an object with `_id` first.
    pub records: Vec<Json<Value>>,
    /// The page after this one: pass it as `after` with the same arguments (REST
    /// `next_cursor`); it reads the same dataset version however deep. Null on the last page.
    pub next_cursor: Option<String>,
    /// With `facet`: per field asked, in that order, its most frequent values over every
    /// matching record (REST `facets`).
    pub facets: Option<Vec<Facet>>,
    /// The dataset's schema entries.
    pub schema: Vec<Field>,
}

/// One facet of a records page: a keyword field and its most frequent values.
#[derive(SimpleObject, Clone, Debug)]
pub struct Facet {
    pub field: String,
    /// Most frequent first, ties by value; at most `facetSize`.
    pub values: Vec<FacetValue>,
}

/// A value of a facet and how many matching records hold it.
#[derive(SimpleObject, Clone, Debug)]
pub struct FacetValue {
    pub value: String,
    pub count: u64,
}

/// Grouped statistics (the REST agg answer).
#[derive(SimpleObject, Clone, Debug)]
pub struct AggResult {
    /// Records matching the conditions, grouped or not.
    pub total_records: u64,
    /// Groups in all, also beyond `limit`.
    pub total_groups: u64,
    /// Records that matched but have no value (or bucket) for a `groupBy` field.
    pub ungrouped_records: u64,
    /// The groups in the requested order (default: count descending, then key), at most
    /// `limit`.
    pub groups: Vec<Group>,
}

/// One group of an aggregation.
#[derive(SimpleObject, Clone, Debug)]
pub struct Group {
    /// The group's values joined with ` | `.
    pub key: String,
    /// Each `groupBy` item (as written) and its value: a string, or a number bin's lower
    /// bound as a number.
    pub keys: Json<serde_json::Map<String, Value>>,
    pub stats: Stats,
}

/// A group's statistics: `count` always; the rest only when `agg(field:)` names a number
/// field (`sum` 0 and the others null when the group has no value of it).
#[derive(SimpleObject, Clone, Debug)]
pub struct Stats {
    pub count: u64,
    pub sum: Option<f64>,
    pub avg: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Records of the group without a value of `field`.
    pub missing: Option<u64>,
    /// Percentiles 25, 50 and 75 when they were asked for (the default).
    pub percentiles: Option<Percentiles>,
    /// Every requested percentile (`agg(percentiles:)`), by label.
    pub percentile_values: Option<Vec<PercentileValue>>,
}

/// Percentiles by linear interpolation between closest ranks (REST keys `25`, `50`, `75`);
/// null when not requested or when the group has no values.
#[derive(SimpleObject, Clone, Copy, Debug)]
pub struct Percentiles {
    pub p25: Option<f64>,
    pub p50: Option<f64>,
    pub p75: Option<f64>,
}

/// One requested percentile (REST `percentiles.<label>`).
#[derive(SimpleObject, Clone, Copy, Debug)]
pub struct PercentileValue {
    /// 0 to 100.
    pub label: f64,
    /// Null in a group without values of `field`.
    pub value: Option<f64>,
}

impl From<views::DatasetItem> for DatasetItem {
    fn from(v: views::DatasetItem) -> Self {
        DatasetItem {
            slug: v.slug,
            title: v.title,
            description: v.description,
            record_count: v.record_count,
            updated_at: v.updated_at,
            url: v.url,
        }
    }
}

impl From<views::DatasetList> for DatasetList {
    fn from(v: views::DatasetList) -> Self {
        DatasetList {
            datasets: v.datasets.into_iter().map(Into::into).collect(),
            total: v.total,
        }
    }
}

impl From<views::DatasetDetail> for Dataset {
    fn from(v: views::DatasetDetail) -> Self {
        let views::DatasetDetail {
            item,
            license,
            source_url,
            id_field,
            created_at,
            version,
            fields,
            links,
            geo,
            index,
        } = v;
        Dataset {
            item: item.into(),
            license,
            source_url,
            id_field,
            created_at,
            version,
            fields: fields.iter().map(Field::from).collect(),
            links: DatasetLinks {
                records: links.records,
                agg: links.agg,
                skill: links.skill,
                versions: links.versions,
            },
            geo: geo.map(|g| GeoPair {
                lat: g.lat,
                lon: g.lon,
            }),
            index: index.map(|i| IndexBeyondBudget {
                answered_by: i.answered_by.to_string(),
                because: i.because.to_string(),
                index_mib: i.index_mib,
                budget_mib: i.budget_mib,
            }),
        }
    }
}

impl From<&SchemaEntry> for Field {
    fn from(e: &SchemaEntry) -> Self {
        Field {
            name: e.name.clone(),
            field_type: e.field_type.as_str().to_string(),
            description: e.description.clone(),
            filter: FieldUse::from(e.filter),
        }
    }
}

impl From<FilterInfo> for FieldUse {
    fn from(f: FilterInfo) -> Self {
        FieldUse {
            exact: f.exact,
            fulltext: f.fulltext,
            sort: f.sort,
            group_by: f.group_by,
            operators: f.operators.iter().map(|s| s.to_string()).collect(),
            buckets: f.buckets.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl From<&views::RecordPage> for RecordPage {
    fn from(v: &views::RecordPage) -> Self {
        RecordPage {
            total: v.total,
            page: v.page,
            per_page: v.per_page,
            records: v.records.iter().map(|r| Json(r.to_value())).collect(),
            next_cursor: v.next_cursor.clone(),
            facets: v.facets.as_ref().map(|facets| {
                facets
                    .0
                    .iter()
                    .map(|(field, values)| Facet {
                        field: field.clone(),
                        values: values
                            .iter()
                            .map(|v| FacetValue {
                                value: v.value.clone(),
                                count: v.count,
                            })
                            .collect(),
                    })
                    .collect()
            }),
            schema: v.schema.iter().map(Field::from).collect(),
        }
    }
}

impl From<&views::AggResult> for AggResult {
    fn from(v: &views::AggResult) -> Self {
        AggResult {
            total_records: v.total_records,
            total_groups: v.total_groups,
            ungrouped_records: v.ungrouped_records,
            groups: v.groups.iter().map(Group::from).collect(),
        }
    }
}

impl From<&views::Group> for Group {
    fn from(g: &views::Group) -> Self {
        let numeric = g.stats.numeric.as_ref();
        Group {
            key: g.key.clone(),
            keys: Json(g.keys.clone()),
            stats: Stats {
                count: g.stats.count,
                sum: numeric.map(|n| n.sum),
                avg: numeric.and_then(|n| n.avg),
                min: numeric.and_then(|n| n.min),
                max: numeric.and_then(|n| n.max),
                missing: numeric.map(|n| n.missing),
                percentiles: numeric.map(|n| Percentiles {
                    p25: n.percentiles.get(25.0).flatten(),
                    p50: n.percentiles.get(50.0).flatten(),
                    p75: n.percentiles.get(75.0).flatten(),
                }),
                percentile_values: numeric.map(|n| {
                    n.percentiles
                        .0
                        .iter()
                        .map(|&(label, value)| PercentileValue { label, value })
                        .collect()
                }),
            },
        }
    }
}
