//! The schema of one dataset version as the query layer uses it: which names exist, their
//! types and store columns, the contract's schema entries (§4), and the key order records are
//! returned in (PostgreSQL's JSONB does not keep the file's key order; the schema does).

use std::collections::HashMap;
use std::sync::Arc;

use entity::{FieldType, dataset_field};
use serde::Serialize;
use serde_json::{Map, Value};

use super::flat::FlatOrder;
use super::packed::{Layout, Scan};

/// Fields a dataset may have. Each field with a type other than `json` is a column of
/// `records_v{N}`, and PostgreSQL keeps a row within one 8 KB page: 300 columns each holding
/// the longest value it cannot move out of the row (24 bytes) still fit (a test loads such a
/// row), 340 do not. The limit is on fields, not columns, so a file cannot pass or fail by the
/// types inferred for it.
pub const MAX_FIELDS: usize = 300;

/// Where a name of a request points.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Column {
    /// The record identifier, `_id`: a keyword that filters and sorts.
    Id,
    /// A field of the schema, by its index in [`DatasetSchema::fields`].
    Field(usize),
}

/// One field of a version's schema.
#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    pub field_type: FieldType,
    pub description: Option<String>,
    /// The typed column of `records_v{version}` (`c{n}` / `t{n}`); `None` for `json` fields.
    pub column: Option<String>,
}

/// A schema entry: a field as the API describes it.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SchemaEntry {
    pub name: String,
    /// `keyword`, `text`, `number`, `boolean`, `date` or `json`.
    #[serde(rename = "type")]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub field_type: FieldType,
    pub description: Option<String>,
    pub filter: FilterInfo,
}

/// How a field can be used (its `filter`).
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FilterInfo {
    pub exact: bool,
    pub fulltext: bool,
    pub sort: bool,
    pub group_by: bool,
    /// The operators the field takes (`name[op]=value`).
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    pub operators: &'static [&'static str],
    /// The buckets `group_by` takes on this field: `year`…`hour` for a date,
    /// `<width>` for a number; empty for the others.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    pub buckets: &'static [&'static str],
}

/// [`FilterInfo::buckets`] of a type.
pub(crate) fn buckets(field_type: FieldType) -> &'static [&'static str] {
    match field_type {
        FieldType::Date => &crate::dates::DateBucket::NAMES,
        FieldType::Number => &["<width>"],
        _ => &[],
    }
}

/// The schema of one dataset version, immutable like the version itself.
#[derive(Clone, Debug)]
pub struct DatasetSchema {
    pub version_id: i64,
    pub fields: Vec<Field>,
    by_name: HashMap<String, usize>,
    /// Object paths that hold fields (`Position` for `Position.Lat`), for `fields=Position`.
    parents: HashMap<String, ()>,
    order: KeyTree,
    /// How the version's bodies are packed on SQLite.
    pub layout: Layout,
    /// Whether the store indexes each typed column (`odqs import --store-indexes`), so a
    /// store-path page may walk its sort column's index (the store's `Access::SortIndex`).
    pub store_indexes: bool,
    /// The geo pair's latitude and longitude fields (contract §13.4), from the dataset's row:
    /// one import, one pair.
    pub geo: Option<(String, String)>,
    /// The contract's entries, `_id` first.
    pub entries: Vec<SchemaEntry>,
    /// [`Self::entries`] as JSON, written once per version: every page carries them.
    entries_json: String,
    /// The top-level key order as [`FlatOrder`] writes a flat body's text in it.
    flat: Arc<FlatOrder>,
}

const ID_DESCRIPTION: &str = "Record identifier; use it in /records/{id} and _ids.";

impl DatasetSchema {
    /// Builds the schema from the version's field rows (in position order).
    pub fn new(version_id: i64, rows: Vec<dataset_field::Model>) -> Self {
        let fields: Vec<Field> = rows
            .into_iter()
            .map(|row| Field {
                name: row.name,
                field_type: row.field_type,
                description: row.description,
                column: row.column_name,
            })
            .collect();
        let by_name = fields
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.clone(), i))
            .collect();
        let mut parents = HashMap::new();
        let mut order = KeyTree::default();
        for field in &fields {
            let parts: Vec<&str> = field.name.split('.').collect();
            for end in 1..parts.len() {
                parents.insert(parts[..end].join("."), ());
            }
            order.insert(&parts);
        }
        let mut entries = vec![SchemaEntry {
            name: "_id".into(),
            field_type: FieldType::Keyword,
            description: Some(ID_DESCRIPTION.into()),
            filter: FilterInfo {
                exact: true,
                fulltext: false,
                sort: true,
                group_by: false,
                operators: crate::operators::Op::allowed_names(FieldType::Keyword),
                buckets: &[],
            },
        }];
        entries.extend(fields.iter().map(|f| SchemaEntry {
            name: f.name.clone(),
            field_type: f.field_type,
            description: f.description.clone(),
            filter: FilterInfo {
                exact: f.field_type.is_exact(),
                fulltext: f.field_type.is_fulltext(),
                sort: f.field_type.is_exact(),
                group_by: f.field_type.is_group_by(),
                operators: crate::operators::Op::allowed_names(f.field_type),
                buckets: buckets(f.field_type),
            },
        }));
        let entries_json = serde_json::to_string(&entries).expect("schema entries serialize");
        let layout = Layout::new(fields.iter().map(|f| f.name.as_str()));
        let flat = Arc::new(FlatOrder::new(order.keys()));
        DatasetSchema {
            version_id,
            layout,
            store_indexes: false,
            geo: None,
            fields,
            by_name,
            parents,
            order,
            entries,
            entries_json,
            flat,
        }
    }

    /// The column a request name points at; `None` when the dataset has no such field.
    pub fn column(&self, name: &str) -> Option<Column> {
        if name == "_id" {
            return Some(Column::Id);
        }
        self.by_name.get(name).map(|&i| Column::Field(i))
    }

    /// The type of a column (`_id` is a keyword).
    pub fn field_type(&self, column: Column) -> FieldType {
        match column {
            Column::Id => FieldType::Keyword,
            Column::Field(i) => self.fields[i].field_type,
        }
    }

    /// The store column of a column; only names that come from here ever reach SQL.
    pub fn sql_column(&self, column: Column) -> &str {
        match column {
            Column::Id => "_id",
            Column::Field(i) => self.fields[i]
                .column
                .as_deref()
                .expect("only fields with a column are planned"),
        }
    }

    /// The name of a column, as the client wrote it.
    pub fn name(&self, column: Column) -> &str {
        match column {
            Column::Id => "_id",
            Column::Field(i) => &self.fields[i].name,
        }
    }

    /// Indexes of the `text` fields, which `q` searches.
    pub fn text_fields(&self) -> impl Iterator<Item = usize> + '_ {
        self.fields
            .iter()
            .enumerate()
            .filter(|(_, f)| f.field_type.is_fulltext() && f.column.is_some())
            .map(|(i, _)| i)
    }

    /// Whether `name` can be projected with `fields=`: a field, `_id`, or an object holding
    /// fields.
    pub fn projectable(&self, name: &str) -> bool {
        name == "_id" || self.by_name.contains_key(name) || self.parents.contains_key(name)
    }

    /// A record as stored, with its keys in schema order (`_id` first) and, with a
    /// projection, only `_id` and the listed paths.
    pub fn shape(&self, doc: Value, projection: Option<&[String]>) -> Value {
        let object = match doc {
            Value::Object(object) => object,
            Value::Array(values) => match self.layout.unpack_value(values) {
                Ok(object) => object,
                Err(values) => return Value::Array(values),
            },
            other => return other,
        };
        match projection {
            None => Value::Object(self.order.reorder(object, true)),
            Some(paths) => {
                let mut tree = KeyTree::default();
                for path in paths {
                    let parts: Vec<&str> = path.split('.').collect();
                    // Keep the schema's order: insert the projection in field order below.
                    tree.insert(&parts);
                }
                let picked = self.order.restrict(&tree);
                Value::Object(picked.reorder(object, false))
            }
        }
    }

    /// Whether a stored record's text is already, byte for byte, what [`Self::shape`] writes
    /// without a projection, so a page can send it as stored (no parse and re-write).
    /// It is when, at every level, `_id` comes first and the other keys are the schema's, in
    /// its order; anything else (an unknown key, another order, an escaped key) says no, and
    /// the record is shaped. Stored texts are `serde_json`'s own writing, which reads back to
    /// the same text (`float_roundtrip`).
    pub fn is_shaped(&self, text: &str) -> bool {
        self.order.is_shaped(text)
    }

    /// Version 1's schema of keyword fields named `names`, in order (unit tests).
    #[cfg(test)]
    pub(crate) fn keywords(names: &[&str]) -> Self {
        let rows = names
            .iter()
            .enumerate()
            .map(|(i, name)| entity::dataset_field::Model {
                id: i as i64,
                version_id: 1,
                position: i as i32,
                name: (*name).into(),
                field_type: entity::FieldType::Keyword,
                description: None,
                column_name: None,
            })
            .collect();
        DatasetSchema::new(1, rows)
    }

    /// The key order [`Self::shape`] writes, for a flat body's text ([`FlatOrder`]).
    pub(crate) fn flat_order(&self) -> &FlatOrder {
        &self.flat
    }

    /// The records' top-level keys other than `_id`, in the order [`Self::shape`] writes them.
    pub fn top_keys(&self) -> impl Iterator<Item = &str> {
        self.order.keys()
    }

    /// The schema's entries as JSON, as a page writes them (`RecordPage::write_json` sends them as they are).
    pub fn entries_json(&self) -> &str {
        &self.entries_json
    }
}

/// Key order of records: children in first-seen field order.
#[derive(Clone, Debug, Default)]
struct KeyTree {
    children: Vec<(String, KeyTree)>,
    /// A leaf: the whole value at this path is kept.
    leaf: bool,
}

impl KeyTree {
    /// The children's keys, in order.
    fn keys(&self) -> impl Iterator<Item = &str> {
        self.children.iter().map(|(key, _)| key.as_str())
    }

    fn insert(&mut self, parts: &[&str]) {
        let Some((first, rest)) = parts.split_first() else {
            self.leaf = true;
            return;
        };
        let index = match self.children.iter().position(|(k, _)| k == first) {
            Some(i) => i,
            None => {
                self.children
                    .push(((*first).to_string(), KeyTree::default()));
                self.children.len() - 1
            }
        };
        self.children[index].1.insert(rest);
    }

    /// The part of `self` that `wanted` selects, in `self`'s order.
    fn restrict(&self, wanted: &KeyTree) -> KeyTree {
        if wanted.leaf {
            return KeyTree {
                children: self.children.clone(),
                leaf: true,
            };
        }
        KeyTree {
            children: self
                .children
                .iter()
                .filter_map(|(key, sub)| {
                    let want = wanted.children.iter().find(|(k, _)| k == key)?;
                    Some((key.clone(), sub.restrict(&want.1)))
                })
                .collect(),
            leaf: false,
        }
    }

    /// See [`DatasetSchema::is_shaped`]: whether [`Self::reorder`] (keeping the rest) would
    /// leave the object in `text` as it is.
    fn is_shaped(&self, text: &str) -> bool {
        if !text.starts_with('{') {
            return true; // not an object: shaping leaves it alone
        }
        let mut scan = Scan::new(text);
        self.scan_in_order(&mut scan).is_some() && {
            scan.space();
            scan.at_end()
        }
    }

    /// An object whose keys follow `tree`: `_id` only first, each other key a child of the
    /// tree after the previous one, nested objects of children that have children in order.
    fn scan_in_order(&self, scan: &mut Scan<'_>) -> Option<()> {
        scan.eat(b'{')?;
        if scan.eat(b'}').is_some() {
            return Some(());
        }
        let mut next = 0;
        let mut first = true;
        loop {
            let key = scan.key()?;
            scan.eat(b':')?;
            if key == b"_id" {
                if !first {
                    return None;
                }
                scan.value()?;
            } else {
                let offset = self.children[next..]
                    .iter()
                    .position(|(k, _)| k.as_bytes() == key)?;
                next += offset + 1;
                let sub = &self.children[next - 1].1;
                if !sub.children.is_empty() && scan.peek()? == b'{' {
                    sub.scan_in_order(scan)?;
                } else {
                    scan.value()?;
                }
            }
            first = false;
            match scan.peek()? {
                b',' => scan.advance(),
                b'}' => {
                    scan.advance();
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// `object` with `_id` first and then the tree's keys in order; with `keep_rest`, keys the
    /// tree does not know follow in their stored order (nothing is ever dropped).
    fn reorder(&self, mut object: Map<String, Value>, keep_rest: bool) -> Map<String, Value> {
        let mut out = Map::with_capacity(object.len());
        if let Some(id) = object.remove("_id") {
            out.insert("_id".into(), id);
        }
        for (key, sub) in &self.children {
            if let Some(value) = object.remove(key) {
                let value = match value {
                    Value::Object(inner) if !sub.children.is_empty() => {
                        Value::Object(sub.reorder(inner, keep_rest || sub.leaf))
                    }
                    other => other,
                };
                out.insert(key.clone(), value);
            }
        }
        if keep_rest {
            out.extend(object);
        }
        out
    }
}

/// A published dataset resolved to a version, for the length of one request: the metadata row
/// and that version's schema always belong together. Resolved to its live version unless a
/// request asked for another (`version=`, contract §13.1); then `meta` is the dataset's row
/// with that version's `version` and `record_count`, and `meta.version_id` still names the
/// live version, so [`Dataset::is_current`] tells the two apart.
#[derive(Clone, Debug)]
pub struct Dataset {
    pub meta: entity::dataset::Model,
    pub schema: Arc<DatasetSchema>,
}

impl Dataset {
    /// Whether this is the dataset's live version (the in-memory index holds only those).
    pub fn is_current(&self) -> bool {
        self.meta.version_id == self.schema.version_id
    }

    /// The version's number within the dataset (`Dataset-Version`).
    pub fn version(&self) -> i64 {
        self.meta.version
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(names: &[(&str, FieldType)]) -> DatasetSchema {
        let rows = names
            .iter()
            .enumerate()
            .map(|(i, (name, t))| dataset_field::Model {
                id: i as i64,
                version_id: 1,
                position: i as i32,
                name: name.to_string(),
                field_type: *t,
                description: None,
                column_name: Some(format!("c{i}")),
            })
            .collect();
        DatasetSchema::new(1, rows)
    }

    #[test]
    fn records_come_back_in_schema_order() {
        let s = schema(&[
            ("b", FieldType::Keyword),
            ("pos.lat", FieldType::Number),
            ("pos.lon", FieldType::Number),
            ("a", FieldType::Number),
        ]);
        let doc = json!({"a": 1, "pos": {"lon": 2, "lat": 3}, "_id": "x", "b": "k", "zz": 0});
        let shaped = s.shape(doc.clone(), None);
        assert_eq!(
            serde_json::to_string(&shaped).unwrap(),
            r#"{"_id":"x","b":"k","pos":{"lat":3,"lon":2},"a":1,"zz":0}"#
        );
        let projected = s.shape(doc.clone(), Some(&["a".into(), "pos.lon".into()]));
        assert_eq!(
            serde_json::to_string(&projected).unwrap(),
            r#"{"_id":"x","pos":{"lon":2},"a":1}"#
        );
        let parent = s.shape(doc, Some(&["pos".into()]));
        assert_eq!(
            serde_json::to_string(&parent).unwrap(),
            r#"{"_id":"x","pos":{"lat":3,"lon":2}}"#
        );
        assert!(s.projectable("pos") && s.projectable("_id") && !s.projectable("po"));
    }

    #[test]
    fn shaped_texts_are_recognised() {
        let s = schema(&[
            ("b", FieldType::Keyword),
            ("pos.lat", FieldType::Number),
            ("pos.lon", FieldType::Number),
            ("a", FieldType::Number),
        ]);
        for (text, shaped) in [
            (r#"{"_id":"x","b":"k","pos":{"lat":3,"lon":2},"a":1}"#, true),
            (r#"{"_id":"x","a":1}"#, true),
            (r#"{"_id":"x","b":"k","pos":7,"a":[1,{"z":0}]}"#, true),
            (r#"{"_id":"x","pos":{"lon":2,"lat":3},"b":"k"}"#, false),
            (r#"{"b":"k","_id":"x"}"#, false),
            (r#"{"_id":"x","b":"k","zz":0}"#, false),
            (r#"{"_id":"x","b":"k","b":"k"}"#, false),
            (r#"{"_id":"x","pos":{"_id":1,"lat":3},"a":1}"#, true),
            (r#"{"_id":"x","pos":{"lat":3,"_id":1}}"#, false),
            (r#"{"_id":"x","b\u0041":"k"}"#, false),
            (r#"{"_id":"x","a":0.30000000000000004}"#, true),
            (r#"{"_id":"x","b":"k\"}{,","a":-1.5e-7}"#, true),
            (
                r#"{"_id":"x","b":"\\","pos":{"lat":[{"a":"]"}],"lon":null},"a":true}"#,
                true,
            ),
            (r#"{"_id":"x","pos":[{"lon":1,"lat":2}],"a":false}"#, true),
            (r#"{"_id":"x","pos":{}}"#, true),
            (r#"{}"#, true),
            (r#"{"_id":"x","pos":{"lat":1},"b":"k"}"#, false),
        ] {
            assert_eq!(s.is_shaped(text), shaped, "{text}");
            let written =
                serde_json::to_string(&s.shape(serde_json::from_str(text).unwrap(), None));
            if shaped {
                assert_eq!(written.unwrap(), text, "a shaped text is what shape writes");
            }
        }
    }
}
