//! The answers of the query layer, shaped as contract §3–§6 define them. REST serializes them
//! as they are; GraphQL exposes the same structs as typed objects.

use std::sync::Arc;

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::dataset::schema::{DatasetSchema, SchemaEntry};

/// An item of `GET /datasets`.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DatasetItem {
    pub slug: String,
    pub title: String,
    pub description: String,
    pub record_count: i64,
    /// RFC 3339.
    pub updated_at: String,
    /// The metadata URL.
    pub url: String,
}

/// `GET /datasets`.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DatasetList {
    pub datasets: Vec<DatasetItem>,
    pub total: u64,
}

/// Links of a dataset's metadata.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DatasetLinks {
    pub records: String,
    pub agg: String,
    pub skill: String,
    /// The dataset's versions.
    pub versions: String,
}

/// `GET /datasets/{slug}/versions`: every version ever published, newest
/// first.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VersionList {
    /// The live version's number.
    pub current: i64,
    pub versions: Vec<VersionItem>,
}

/// One version of a dataset.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VersionItem {
    /// Its number within the dataset: 1, 2, 3…
    pub version: i64,
    /// When it went live (RFC 3339).
    pub published_at: String,
    pub record_count: i64,
    /// `sha256:<hex>` of its NDJSON export with the records in `_id` byte order; `null` for a
    /// version dropped before its hash was first asked for.
    pub content_hash: Option<String>,
    /// Whether `version=` still reads it.
    pub retained: bool,
}

/// `GET /datasets/{slug}`: the list item plus the rest of the metadata.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DatasetDetail {
    #[serde(flatten)]
    pub item: DatasetItem,
    pub license: Option<String>,
    pub source_url: Option<String>,
    pub id_field: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// The number of the version answered: the live one.
    pub version: i64,
    pub fields: Vec<SchemaEntry>,
    pub links: DatasetLinks,
    /// The fields of latitudes and longitudes that `near`, `bbox` and `_distance` read; left
    /// out when the dataset has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geo: Option<GeoPair>,
    /// Present when the store answers every query of this dataset because its in-memory index
    /// would be beyond the memory budget (`ODQS_INDEX_MEMORY_MB`); left out otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<IndexBeyondBudget>,
}

/// Why the store, not the in-memory index, answers a dataset's queries: the index would take
/// `index_mib` and the budget is `budget_mib`; a budget of `index_mib` or more would hold it.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IndexBeyondBudget {
    /// Always `store`.
    pub answered_by: &'static str,
    /// Always `beyond_memory_budget`.
    pub because: &'static str,
    /// The index's estimated size, MiB (rounded up).
    pub index_mib: u64,
    /// The memory budget of the instance that answered, MiB.
    pub budget_mib: u64,
}

/// A dataset's geo pair: its number fields of latitudes and longitudes (WGS 84 degrees).
#[derive(Clone, Debug, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GeoPair {
    pub lat: String,
    pub lon: String,
}

impl GeoPair {
    /// The pair a dataset's row names, if it names both fields.
    pub fn of(meta: &entity::dataset::Model) -> Option<GeoPair> {
        Some(GeoPair {
            lat: meta.geo_lat.clone()?,
            lon: meta.geo_lon.clone()?,
        })
    }
}

/// `GET /datasets/{slug}/schema.json`: the dataset's schema in the format `odqs import
/// --schema` reads, so an export re-imported with it keeps its types (a CSV cell alone cannot
/// say that `"306423"` is text).
#[derive(Clone, Debug, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SchemaFile {
    pub title: String,
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_url: Option<String>,
    /// The field the records' `_id` was taken from, if the publisher named one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_field: Option<String>,
    /// Every field but `_id`, in schema order.
    pub fields: Vec<SchemaFileField>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geo: Option<GeoPair>,
}

/// One field of a [`SchemaFile`].
#[derive(Clone, Debug, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SchemaFileField {
    pub name: String,
    /// `keyword`, `text`, `number`, `boolean`, `date` or `json`.
    #[serde(rename = "type")]
    pub field_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `GET /datasets/{slug}/records`.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecordPage {
    pub total: u64,
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub page: u64,
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub per_page: u64,
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Record>))]
    pub records: Vec<RecordBody>,
    /// The page after this one: pass it as `cursor` with the same conditions, sort, fields,
    /// facets and `per_page` (the `Link` header's `rel="next"` URL does). It reads the same
    /// dataset version as this page, however deep. `null` on the last page.
    pub next_cursor: Option<String>,
    /// With `facet`: per field asked, in that order, its most frequent values over every
    /// matching record (not only the page's).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(value_type = Option<std::collections::HashMap<String, Vec<FacetValue>>>, nullable = false)
    )]
    pub facets: Option<FacetCounts>,
    pub schema: Vec<SchemaEntry>,
}

/// A page's facets: each field asked and its values, written as one JSON object in the order
/// asked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FacetCounts(pub Vec<(String, Vec<FacetValue>)>);

impl Serialize for FacetCounts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (field, values) in &self.0 {
            map.serialize_entry(field, values)?;
        }
        map.end()
    }
}

/// One value of a facet and how many matching records hold it.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FacetValue {
    pub value: String,
    pub count: u64,
}

/// A record of a page: shaped by [`crate::dataset::DatasetSchema::shape`], or its stored text when that
/// is already what shaping would write ([`crate::dataset::DatasetSchema::is_shaped`], which also read it
/// through as JSON), sent without a parse and a re-write. Both serialize to the same
/// bytes.
#[derive(Clone, Debug)]
pub enum RecordBody {
    Shaped(Value),
    /// A whole JSON object, checked by `is_shaped` (or written by shaping), shared with the
    /// body cache.
    Stored(Arc<str>),
}

impl RecordBody {
    /// The record as a JSON value, taken apart (no copy of a shaped value).
    pub fn into_value(self) -> Value {
        match self {
            RecordBody::Shaped(value) => value,
            stored => stored.to_value(),
        }
    }

    /// The record as a JSON value (GraphQL's `JSON` scalar, the guides' examples).
    pub fn to_value(&self) -> Value {
        match self {
            RecordBody::Shaped(value) => value.clone(),
            RecordBody::Stored(text) => serde_json::from_str(text).expect("a stored text is JSON"),
        }
    }

    /// The record with one more member at its end (a record's `_score`, `_distance_m`): written onto a
    /// stored text as a shaped value's map would write it, so both give the same bytes.
    pub fn with_member(self, name: &str, value: impl Into<Value>) -> RecordBody {
        let value: Value = value.into();
        match self {
            RecordBody::Shaped(Value::Object(mut map)) => {
                map.insert(name.to_string(), value);
                RecordBody::Shaped(Value::Object(map))
            }
            RecordBody::Shaped(other) => RecordBody::Shaped(other),
            RecordBody::Stored(text) => {
                let body = text.trim_end().strip_suffix('}').unwrap_or(&text);
                let separator = if body.trim_end().ends_with('{') {
                    ""
                } else {
                    ","
                };
                let member = serde_json::to_string(name).expect("a name serializes");
                RecordBody::Stored(format!("{body}{separator}{member}:{value}}}").into())
            }
        }
    }

    /// Appends the record's JSON to `out`: a stored text as it is (serializing reads it again
    /// as a `RawValue` first).
    pub fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        match self {
            RecordBody::Shaped(value) => serde_json::to_writer(out, value),
            RecordBody::Stored(text) => {
                out.extend_from_slice(text.as_bytes());
                Ok(())
            }
        }
    }
}

impl Serialize for RecordBody {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RecordBody::Shaped(value) => value.serialize(serializer),
            RecordBody::Stored(text) => serde_json::from_str::<&serde_json::value::RawValue>(text)
                .map_err(serde::ser::Error::custom)?
                .serialize(serializer),
        }
    }
}

impl RecordPage {
    /// The page's JSON, the same bytes as `serde_json::to_writer(self)`, assembled from slices:
    /// stored bodies are copied as they are, and the entries of `schema` (the
    /// page's dataset) come written already ([`crate::dataset::DatasetSchema::entries_json`]).
    pub fn write_json(&self, schema: &DatasetSchema, out: &mut Vec<u8>) -> serde_json::Result<()> {
        use std::io::Write;
        write!(
            out,
            "{{\"total\":{},\"page\":{},\"per_page\":{},\"records\":[",
            self.total, self.page, self.per_page
        )
        .map_err(serde_json::Error::io)?;
        for (i, record) in self.records.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            record.write_json(out)?;
        }
        out.extend_from_slice(b"],\"next_cursor\":");
        serde_json::to_writer(&mut *out, &self.next_cursor)?;
        if let Some(facets) = &self.facets {
            out.extend_from_slice(b",\"facets\":");
            serde_json::to_writer(&mut *out, facets)?;
        }
        out.extend_from_slice(b",\"schema\":");
        if self.schema == schema.entries {
            out.extend_from_slice(schema.entries_json().as_bytes());
        } else {
            serde_json::to_writer(&mut *out, &self.schema)?;
        }
        out.push(b'}');
        Ok(())
    }
}

impl PartialEq for RecordBody {
    fn eq(&self, other: &Self) -> bool {
        self.to_value() == other.to_value()
    }
}

/// `GET /datasets/{slug}/agg`.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AggResult {
    /// Records that matched the conditions.
    pub total_records: u64,
    /// Groups among them, all of them, also beyond `limit`.
    pub total_groups: u64,
    /// Records that matched but have no value (or no bucket) for a `group_by` field: in
    /// `total_records`, in no group.
    pub ungrouped_records: u64,
    /// The groups, in the request's order, at most `limit` of them.
    pub groups: Vec<Group>,
}

/// A record as the API shows it: its fields, nested objects for dotted names, and
/// always `_id`. Documentation only: records are JSON values end to end, since their fields are
/// the dataset's.
pub struct Record;

/// One group of an aggregation.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Group {
    /// The group's values joined with ` | `, for display.
    pub key: String,
    /// Each `group_by` item (as written, `time_hour[month]`) and its value: a string, or for a
    /// number bin its lower bound as a number.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub keys: serde_json::Map<String, Value>,
    pub stats: Stats,
}

/// A group's statistics: `count` always, the rest when `field` is given.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Stats {
    pub count: u64,
    /// Present when the request names a `field`.
    #[serde(flatten)]
    pub numeric: Option<NumericStats>,
}

/// Statistics of the `field` values of a group: `sum` 0 and the rest
/// `null` when the group has no values.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct NumericStats {
    #[serde(serialize_with = "number")]
    pub sum: f64,
    #[serde(serialize_with = "optional_number")]
    pub avg: Option<f64>,
    #[serde(serialize_with = "optional_number")]
    pub min: Option<f64>,
    #[serde(serialize_with = "optional_number")]
    pub max: Option<f64>,
    /// Records of the group without a value of `field`.
    pub missing: u64,
    pub percentiles: Percentiles,
}

/// The requested percentiles of `field` (default 25, 50, 75) by linear interpolation between
/// closest ranks, labelled as JSON numbers are written (`"5"`, `"99.9"`), in label order;
/// null in a group without values of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Percentiles(pub Vec<(f64, Option<f64>)>);

impl Percentiles {
    /// The value of percentile `label`, if it was asked for.
    pub fn get(&self, label: f64) -> Option<Option<f64>> {
        self.0.iter().find(|(l, _)| *l == label).map(|(_, v)| *v)
    }
}

/// A percentile label as written in answers: the shortest JSON number (`25`, `99.9`).
pub fn percentile_label(label: f64) -> String {
    json_number(label).to_string()
}

impl Serialize for Percentiles {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (label, value) in &self.0 {
            map.serialize_entry(&percentile_label(*label), &value.map(json_number))?;
        }
        map.end()
    }
}

/// The largest integer an `f64` holds exactly.
const EXACT_INT: f64 = 9_007_199_254_740_992.0;

/// A number as JSON: integral values as integers (a sum of integers is an integer).
pub fn json_number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < EXACT_INT {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

fn number<S: Serializer>(n: &f64, s: S) -> Result<S::Ok, S::Error> {
    json_number(*n).serialize(s)
}

fn optional_number<S: Serializer>(n: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match n {
        Some(n) => json_number(*n).serialize(s),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use entity::{FieldType, dataset_field};
    use serde_json::json;

    use super::*;

    /// A page assembled from slices is byte for byte what serde writes, with stored and shaped
    /// bodies, and with entries other than the dataset's own.
    #[test]
    fn a_written_page_is_what_serde_writes() {
        let rows = ["b", "a"]
            .iter()
            .enumerate()
            .map(|(i, name)| dataset_field::Model {
                id: i as i64,
                version_id: 1,
                position: i as i32,
                name: name.to_string(),
                field_type: FieldType::Keyword,
                description: Some("say \"x\"".into()),
                column_name: Some(format!("c{i}")),
            })
            .collect();
        let schema = DatasetSchema::new(1, rows);
        let mut page = RecordPage {
            total: 12_345,
            page: 7,
            per_page: 2,
            records: vec![
                RecordBody::Stored(r#"{"_id":"1","b":"é\n","a":1.5}"#.into()),
                RecordBody::Shaped(json!({"_id": "2", "b": null, "a": [1, {"c": true}]})),
            ],
            next_cursor: None,
            facets: None,
            schema: schema.entries.clone(),
        };
        for round in 0..3 {
            if round == 1 {
                page.next_cursor = Some("01ab".into());
            }
            if round == 2 {
                page.facets = Some(FacetCounts(vec![(
                    "b".into(),
                    vec![FacetValue {
                        value: "é".into(),
                        count: 3,
                    }],
                )]));
            }
            let mut written = Vec::new();
            page.write_json(&schema, &mut written).expect("written");
            let serialized = serde_json::to_vec(&page).expect("serialized");
            assert_eq!(
                String::from_utf8(written).expect("text"),
                String::from_utf8(serialized).expect("text")
            );
            page.schema.pop();
        }
    }
}
