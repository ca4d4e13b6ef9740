//! The schema of an import: the schema file (contract §1), type inference for fields it does not
//! list, and the [`Plan`] that turns a source record into a typed row.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use entity::FieldType;
use serde::Deserialize;
use serde_json::{Map, Number, Value};

use super::ImportError;

/// A schema file as written by a publisher.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchemaFile {
    pub title: Option<String>,
    pub description: Option<String>,
    pub license: Option<String>,
    pub source_url: Option<String>,
    pub id_field: Option<String>,
    #[serde(default)]
    pub fields: Vec<SchemaFileField>,
}

/// One field of a schema file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchemaFileField {
    pub name: String,
    #[serde(rename = "type")]
    pub field_type: String,
    pub description: Option<String>,
}

impl SchemaFile {
    /// Reads and checks a schema file: known types, no duplicate or empty names.
    pub fn load(path: &Path) -> Result<Self, ImportError> {
        let text = std::fs::read_to_string(path).map_err(|source| ImportError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text)
    }

    /// Parses schema JSON (also used for the bundled demo schemas).
    pub fn parse(text: &str) -> Result<Self, ImportError> {
        let schema: SchemaFile = serde_json::from_str(text)
            .map_err(|e| ImportError::Schema(format!("the schema file is not valid: {e}")))?;
        for (what, value) in [
            ("title", &schema.title),
            ("description", &schema.description),
            ("license", &schema.license),
            ("source_url", &schema.source_url),
            ("id_field", &schema.id_field),
        ] {
            if let Some(value) = value {
                check_no_nul(&format!("the schema file's {what}"), value)?;
            }
        }
        let mut seen = HashSet::new();
        for field in &schema.fields {
            if let Some(description) = &field.description {
                check_no_nul(
                    &format!("the description of field {:?}", field.name),
                    description,
                )?;
            }
            if FieldType::parse(&field.field_type).is_none() {
                return Err(ImportError::Schema(format!(
                    "field {:?} has unknown type {:?}; use keyword, text, number, boolean, date or json",
                    field.name, field.field_type
                )));
            }
            check_field_name(&field.name)?;
            if !seen.insert(field.name.as_str()) {
                return Err(ImportError::Schema(format!(
                    "field {:?} is listed twice",
                    field.name
                )));
            }
        }
        Ok(schema)
    }
}

fn check_field_name(name: &str) -> Result<(), ImportError> {
    if name.is_empty()
        || name.split('.').any(str::is_empty)
        || name.split('.').next() == Some(ID)
        || name.contains('\0')
    {
        return Err(ImportError::Schema(format!(
            "{name:?} cannot be a field name (empty parts, a NUL character, or the reserved _id: \
             to use a column _id as the identifier, set \"id_field\": \"_id\" and do not list it)"
        )));
    }
    Ok(())
}

/// Refuses text that holds a NUL character, which PostgreSQL cannot store; `what` names it.
pub fn check_no_nul(what: &str, value: &str) -> Result<(), ImportError> {
    if value.contains('\0') {
        return Err(ImportError::Schema(format!(
            "{what} holds a NUL character (\\0), which a store cannot keep"
        )));
    }
    Ok(())
}

/// The field under which every record carries its identifier (contract §2).
pub const ID: &str = "_id";

/// Fields a dataset may have. Each field with a type other than `json` is a column of
/// `records_v{N}`, and PostgreSQL keeps a row within one 8 KB page: 300 columns each holding
/// the longest value it cannot move out of the row (24 bytes) still fit (a test loads such a
/// row), 340 do not. The limit is on fields, not columns, so a file cannot pass or fail by the
/// types inferred for it.
pub const MAX_FIELDS: usize = 300;

/// Bytes of one value of an exact-match field (keyword, boolean, date) and of an identifier:
/// each is a key of a PostgreSQL B-tree index, whose entries hold at most 2,704 bytes, so a
/// longer value would fail on one store and not the other. Longer values belong in `text`.
pub const MAX_KEY_BYTES: usize = 2048;

/// Where each record's `_id` comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IdSource {
    /// The 1-based record number (no id field named).
    Position,
    /// The field at this index of [`Plan::fields`].
    Field(usize),
    /// The source's own `_id` field (`--id-field _id`), which is then no field of the plan:
    /// `_id` is always the first schema entry already.
    Own,
}

/// Whether a value counts as absent: `null` or an empty string, as an import stores them.
fn is_missing(value: &Value) -> bool {
    matches!(value, Value::Null) || matches!(value, Value::String(s) if s.is_empty())
}

/// Refuses a record holding a value under `_id` unless that field is the identifier
/// (`own_id`): the identifier would overwrite it, silently losing data.
pub fn check_reserved_id(object: &Map<String, Value>, own_id: bool) -> Result<(), String> {
    match object.get(ID) {
        Some(value) if !own_id && !is_missing(value) => Err(format!(
            "has a value in a field named {ID:?}, the name odqs gives each record's identifier: \
             to use these values as identifiers, import with --id-field {ID} (or \"id_field\": \
             \"{ID}\" in the schema file); otherwise rename the field"
        )),
        _ => Ok(()),
    }
}

/// A field of the dataset being imported.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedField {
    pub name: String,
    pub path: Vec<String>,
    pub field_type: FieldType,
    pub description: Option<String>,
    /// The typed column in `records_v{N}`, if the type has one.
    pub column: Option<String>,
}

/// How to turn source records into rows: the fields in order, with their columns.
#[derive(Clone, Debug)]
pub struct Plan {
    pub fields: Vec<PlannedField>,
    /// Where `_id` comes from.
    pub id: IdSource,
}

/// A typed value for one column.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Null,
    Str(String),
    Num(f64),
    /// A text value as read; the loader replaces it with [`Cell::TextId`].
    Text(String),
    /// Id of the lower-cased text value in the version's text dictionary.
    TextId(i64),
}

/// A converted record.
#[derive(Debug)]
pub struct Row {
    pub pos: i64,
    pub id: String,
    /// The record as JSON text, `_id` first.
    pub doc: String,
    /// One cell per planned field that has a column, in field order.
    pub cells: Vec<Cell>,
}

impl Plan {
    /// Builds the plan: the schema file's fields first, in its order, then the fields only the
    /// data has, in order of first appearance, with inferred types.
    pub fn new(
        schema: &SchemaFile,
        inferred: &[(String, FieldType)],
        id_field: Option<&str>,
    ) -> Result<Self, ImportError> {
        let mut fields: Vec<PlannedField> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        for field in &schema.fields {
            index.insert(field.name.clone(), fields.len());
            fields.push(PlannedField {
                name: field.name.clone(),
                path: field.name.split('.').map(str::to_string).collect(),
                field_type: FieldType::parse(&field.field_type).expect("checked on load"),
                description: field.description.clone().filter(|d| !d.is_empty()),
                column: None,
            });
        }
        for (name, field_type) in inferred {
            if index.contains_key(name) || name == "_id" {
                continue;
            }
            // A leaf of an object the schema declares as one field (type json) stays inside it.
            if fields
                .iter()
                .any(|f| name.starts_with(&f.name) && name[f.name.len()..].starts_with('.'))
            {
                continue;
            }
            index.insert(name.clone(), fields.len());
            fields.push(PlannedField {
                name: name.clone(),
                path: name.split('.').map(str::to_string).collect(),
                field_type: *field_type,
                description: None,
                column: None,
            });
        }
        if fields.len() > MAX_FIELDS {
            return Err(ImportError::Schema(format!(
                "the dataset would have {} fields; a dataset holds at most {MAX_FIELDS} \
                 (MAX_FIELDS), so that every record fits one row of the store: declare an \
                 object holding many of them as one json field in a schema file, or split the file",
                fields.len()
            )));
        }
        let id = match id_field {
            None => IdSource::Position,
            Some(ID) if inferred.iter().any(|(name, _)| name == ID) => IdSource::Own,
            Some(name) => {
                let Some(&i) = index.get(name) else {
                    // An object under the name is read as its leaves (`id.x`): name that.
                    let prefix = format!("{name}.");
                    if let Some((leaf, _)) = inferred.iter().find(|(n, _)| n.starts_with(&prefix)) {
                        return Err(ImportError::Schema(format!(
                            "the id field {name:?} holds objects (with fields such as {leaf:?}); \
                             an identifier must be a string or a number: name another field with \
                             --id-field, or one of the object's fields (--id-field {leaf})"
                        )));
                    }
                    return Err(ImportError::Schema(format!(
                        "the id field {name:?} is not a field of the file"
                    )));
                };
                if !matches!(
                    fields[i].field_type,
                    FieldType::Keyword | FieldType::Number | FieldType::Text
                ) {
                    return Err(ImportError::Schema(format!(
                        "the id field {name:?} has type {}, which cannot identify records",
                        fields[i].field_type
                    )));
                }
                IdSource::Field(i)
            }
        };
        for (position, field) in fields.iter_mut().enumerate() {
            field.column = match field.field_type {
                t if t.is_exact() => Some(entity::record::value_column(position)),
                FieldType::Text => Some(entity::record::text_column(position)),
                _ => None,
            };
        }
        Ok(Plan { fields, id })
    }

    /// The fields that have a column, in column order.
    pub fn columns(&self) -> impl Iterator<Item = &PlannedField> {
        self.fields.iter().filter(|f| f.column.is_some())
    }

    /// Converts one source record; the error says which field and why.
    pub fn convert(&self, pos: i64, mut object: Map<String, Value>) -> Result<Row, String> {
        check_reserved_id(&object, self.id == IdSource::Own)?;
        let mut cells = Vec::with_capacity(self.fields.len());
        let mut id = match self.id {
            IdSource::Own => Some(own_id(&object)?),
            _ => None,
        };
        for (i, field) in self.fields.iter().enumerate() {
            let is_id = self.id == IdSource::Field(i);
            if field.column.is_none() && !is_id {
                continue;
            }
            let (cell, replacement) = match lookup(&object, &field.path) {
                None => (Cell::Null, None),
                Some(value) => coerce(value, field.field_type)
                    .map_err(|why| format!("field {:?} {why}", field.name))?,
            };
            if let Cell::Str(s) = &cell
                && !is_id
                && field.field_type.is_exact()
                && s.len() > MAX_KEY_BYTES
            {
                return Err(format!(
                    "field {:?} holds a value of {} bytes; a {} value holds at most \
                     {MAX_KEY_BYTES} bytes (MAX_KEY_BYTES): declare the field text in a schema file",
                    field.name,
                    s.len(),
                    field.field_type
                ));
            }
            if is_id {
                id = Some(match &cell {
                    Cell::Str(s) | Cell::Text(s) => s.clone(),
                    Cell::Num(_) => match lookup(&object, &field.path) {
                        Some(Value::Number(n)) => n.to_string(),
                        Some(Value::String(s)) => s.trim().to_string(),
                        _ => unreachable!("a number cell comes from a number or a string"),
                    },
                    Cell::Null | Cell::TextId(_) => {
                        return Err(format!("has no value for the id field {:?}", field.name));
                    }
                });
            }
            if let Some(value) = replacement {
                set_path(&mut object, &field.path, value);
            }
            if field.column.is_some() {
                cells.push(cell);
            }
        }
        let id = id.unwrap_or_else(|| pos.to_string());
        if id.len() > MAX_KEY_BYTES {
            return Err(format!(
                "has an identifier of {} bytes; an identifier holds at most {MAX_KEY_BYTES} \
                 bytes (MAX_KEY_BYTES)",
                id.len()
            ));
        }
        object.shift_insert(0, ID.to_string(), Value::String(id.clone()));
        Ok(Row {
            pos,
            id,
            doc: Value::Object(object).to_string(),
            cells,
        })
    }
}

/// The identifier a record gives itself in its `_id` field: a string as written, or a number
/// in its JSON form (`_id` is always a string, contract §2).
fn own_id(object: &Map<String, Value>) -> Result<String, String> {
    match object.get(ID) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        None | Some(Value::Null | Value::String(_)) => {
            Err(format!("has no value for the id field {ID:?}"))
        }
        Some(other) => Err(format!(
            "field {ID:?} is the identifier and must be a string or a number, got {}",
            kind(other)
        )),
    }
}

fn lookup<'a>(object: &'a Map<String, Value>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut value = object.get(first)?;
    for part in rest {
        value = value.as_object()?.get(part)?;
    }
    (!value.is_null()).then_some(value)
}

fn set_path(object: &mut Map<String, Value>, path: &[String], value: Value) {
    let (last, parents) = path.split_last().expect("paths are never empty");
    let mut target = object;
    for part in parents {
        match target.get_mut(part).and_then(Value::as_object_mut) {
            Some(next) => target = next,
            None => return,
        }
    }
    target.insert(last.clone(), value);
}

/// Coerces a value to a field type: the cell for its column, and the value to write back into
/// the record when the record should show the typed value (a CSV `"42"` becomes `42`).
fn coerce(value: &Value, field_type: FieldType) -> Result<(Cell, Option<Value>), String> {
    let text = |s: &str| -> Cell {
        if s.is_empty() {
            Cell::Null
        } else {
            Cell::Str(s.to_string())
        }
    };
    match field_type {
        FieldType::Number => match value {
            Value::Number(n) => Ok((Cell::Num(n.as_f64().unwrap_or(f64::NAN)), None)),
            Value::String(s) if s.trim().is_empty() => Ok((Cell::Null, None)),
            Value::String(s) => match parse_number(s) {
                Some(n) => Ok((
                    Cell::Num(n.as_f64().unwrap_or(f64::NAN)),
                    Some(Value::Number(n)),
                )),
                None => Err(format!("expects a number, got {s:?}")),
            },
            other => Err(format!("expects a number, got {}", kind(other))),
        },
        FieldType::Boolean => match value {
            Value::Bool(b) => Ok((Cell::Str(b.to_string()), None)),
            Value::String(s) => match parse_bool(s) {
                Some(b) => Ok((Cell::Str(b.to_string()), Some(Value::Bool(b)))),
                None if s.is_empty() => Ok((Cell::Null, None)),
                None => Err(format!("expects true or false, got {s:?}")),
            },
            other => Err(format!("expects true or false, got {}", kind(other))),
        },
        FieldType::Date => match value {
            Value::String(s) if s.is_empty() => Ok((Cell::Null, None)),
            Value::String(s) if is_iso_date(s) => Ok((Cell::Str(s.clone()), None)),
            Value::String(s) => Err(format!("expects an ISO 8601 date, got {s:?}")),
            other => Err(format!("expects an ISO 8601 date, got {}", kind(other))),
        },
        FieldType::Keyword => match value {
            Value::String(s) => Ok((text(s), None)),
            Value::Number(n) => Ok((Cell::Str(n.to_string()), None)),
            Value::Bool(b) => Ok((Cell::Str(b.to_string()), None)),
            other => Err(format!("expects a single value, got {}", kind(other))),
        },
        FieldType::Text => match value {
            Value::String(s) if s.is_empty() => Ok((Cell::Null, None)),
            Value::String(s) => Ok((Cell::Text(s.clone()), None)),
            Value::Number(n) => Ok((Cell::Text(n.to_string()), None)),
            Value::Bool(b) => Ok((Cell::Text(b.to_string()), None)),
            other => Err(format!("expects text, got {}", kind(other))),
        },
        FieldType::Json => Ok((Cell::Null, None)),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A finite number written in a CSV cell or a JSON string; integers stay integers.
pub fn parse_number(s: &str) -> Option<Number> {
    let s = s.trim();
    if let Ok(i) = s.parse::<i64>() {
        return Some(Number::from(i));
    }
    let looks_numeric = s
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'));
    if !looks_numeric {
        return None; // "inf", "NaN" and friends are not data
    }
    s.parse::<f64>().ok().and_then(Number::from_f64)
}

fn parse_bool(s: &str) -> Option<bool> {
    if s.eq_ignore_ascii_case("true") {
        Some(true)
    } else if s.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// `YYYY-MM-DD`, optionally followed by a time (`T` or a space, then digits, `:`, `.`, a zone).
pub fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 10 || b.len() > 40 {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if !(digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10)) {
        return false;
    }
    if b.len() == 10 {
        return true;
    }
    (b[10] == b'T' || b[10] == b' ')
        && b.len() >= 16
        && digits(11..13)
        && b[13] == b':'
        && b[14..]
            .iter()
            .all(|c| c.is_ascii_digit() || matches!(c, b':' | b'.' | b'+' | b'-' | b'Z'))
}

/// Type inference over a whole file, one record at a time, in bounded memory: at most
/// [`MAX_FIELDS`] fields are tracked, each with at most [`DISTINCT_CAP`] short values.
#[derive(Default)]
pub struct Inference {
    order: Vec<String>,
    stats: HashMap<String, Stats>,
    /// Objects the schema file declares as one `json` field: inference does not look inside.
    opaque: HashSet<String>,
    /// Whether a record brought more than [`MAX_FIELDS`] fields.
    too_many: bool,
}

/// Distinct values tracked per field before we stop counting (memory stays bounded).
const DISTINCT_CAP: usize = 20_000;
/// Longest string that still counts as a keyword when inferring.
const KEYWORD_MAX_CHARS: usize = 64;

#[derive(Default)]
struct Stats {
    seen: u64,
    numbers: u64,
    bools: u64,
    dates: u64,
    nested: u64,
    max_chars: usize,
    whitespace: bool,
    distinct: HashSet<String>,
    overflow: bool,
}

impl Inference {
    /// Inference for fields `schema` does not list; what it declares as `json` stays whole.
    pub fn new(schema: &SchemaFile) -> Self {
        Inference {
            opaque: schema
                .fields
                .iter()
                .filter(|f| FieldType::parse(&f.field_type) == Some(FieldType::Json))
                .map(|f| f.name.clone())
                .collect(),
            ..Inference::default()
        }
    }

    /// Takes one record into account; refuses it when it brings the fields past
    /// [`MAX_FIELDS`] (the error says why, the caller says where).
    pub fn observe(&mut self, object: &Map<String, Value>, untyped: bool) -> Result<(), String> {
        let mut path = String::new();
        self.walk(object, &mut path, untyped);
        if self.too_many {
            return Err(format!(
                "brings the number of fields past {MAX_FIELDS}, the most a dataset holds \
                 (MAX_FIELDS), so that every record fits one row of the store: declare an \
                 object holding many of them as one json field in a schema file, or split the file"
            ));
        }
        Ok(())
    }

    fn walk(&mut self, object: &Map<String, Value>, path: &mut String, untyped: bool) {
        for (key, value) in object {
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
            match value {
                Value::Object(inner) if !self.opaque.contains(path.as_str()) => {
                    self.walk(inner, path, untyped)
                }
                Value::Null => {}
                leaf => self.leaf(path, leaf, untyped),
            }
            path.truncate(len);
        }
    }

    fn leaf(&mut self, path: &str, value: &Value, untyped: bool) {
        if !self.stats.contains_key(path) {
            if self.order.len() >= MAX_FIELDS {
                self.too_many = true;
                return;
            }
            self.order.push(path.to_string());
        }
        let stats = self.stats.entry(path.to_string()).or_default();
        let as_text = match value {
            Value::String(s) if s.is_empty() => return,
            Value::String(s) => {
                if untyped && parse_number(s).is_some() {
                    stats.numbers += 1;
                }
                if untyped && parse_bool(s).is_some() {
                    stats.bools += 1;
                }
                if is_iso_date(s) {
                    stats.dates += 1;
                }
                s.clone()
            }
            Value::Number(n) => {
                stats.numbers += 1;
                n.to_string()
            }
            Value::Bool(b) => {
                stats.bools += 1;
                b.to_string()
            }
            _ => {
                stats.nested += 1;
                String::new()
            }
        };
        stats.seen += 1;
        stats.max_chars = stats.max_chars.max(as_text.chars().count());
        stats.whitespace |= as_text.contains(char::is_whitespace);
        if stats.max_chars > KEYWORD_MAX_CHARS && !stats.overflow {
            // Too long to be a keyword whatever repeats: no need to remember long values.
            stats.overflow = true;
            stats.distinct = HashSet::new();
        }
        if !stats.overflow {
            stats.distinct.insert(as_text);
            if stats.distinct.len() > DISTINCT_CAP {
                stats.overflow = true;
                stats.distinct = HashSet::new();
            }
        }
    }

    /// The inferred fields in order of first appearance (contract §1: numbers → number; short,
    /// repeated strings → keyword; other strings → text), plus boolean, date and json.
    pub fn finish(self, id_field: Option<&str>) -> Vec<(String, FieldType)> {
        let Inference { order, stats, .. } = self;
        order
            .into_iter()
            .map(|name| {
                let s = &stats[&name];
                let field_type = if Some(name.as_str()) == id_field {
                    FieldType::Keyword
                } else if s.nested > 0 {
                    FieldType::Json
                } else if s.numbers == s.seen {
                    FieldType::Number
                } else if s.bools == s.seen {
                    FieldType::Boolean
                } else if s.dates == s.seen {
                    FieldType::Date
                } else {
                    let repeated = !s.overflow && (s.distinct.len() as u64) * 2 <= s.seen;
                    if s.max_chars <= KEYWORD_MAX_CHARS && (repeated || !s.whitespace) {
                        FieldType::Keyword
                    } else {
                        FieldType::Text
                    }
                };
                (name, field_type)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn infer(rows: &[Value], untyped: bool) -> Vec<(String, FieldType)> {
        let mut inference = Inference::default();
        for row in rows {
            inference
                .observe(row.as_object().unwrap(), untyped)
                .unwrap();
        }
        inference.finish(None)
    }

    #[test]
    fn infers_types() {
        let rows: Vec<Value> = (0..10)
            .map(|i| {
                json!({
                    "n": i, "kw": if i % 2 == 0 { "a b" } else { "c d" },
                    "code": format!("X{i}"), "prose": format!("words number {i}"),
                    "flag": i % 3 == 0, "when": "2021-03-31T01:12:12+08:00",
                    "pos": {"lat": 1.5}, "tags": ["x"], "zip": "540"
                })
            })
            .collect();
        let types: HashMap<_, _> = infer(&rows, false).into_iter().collect();
        assert_eq!(types["n"], FieldType::Number);
        assert_eq!(types["kw"], FieldType::Keyword);
        assert_eq!(types["code"], FieldType::Keyword);
        assert_eq!(types["prose"], FieldType::Text);
        assert_eq!(types["flag"], FieldType::Boolean);
        assert_eq!(types["when"], FieldType::Date);
        assert_eq!(types["pos.lat"], FieldType::Number);
        assert_eq!(types["tags"], FieldType::Json);
        assert_eq!(
            types["zip"],
            FieldType::Keyword,
            "JSON strings stay strings"
        );
    }

    #[test]
    fn csv_strings_can_be_numbers() {
        let rows = vec![json!({"a": "1", "b": "x"}), json!({"a": "2.5", "b": "1"})];
        let types = infer(&rows, true);
        assert_eq!(types[0], ("a".into(), FieldType::Number));
        assert_eq!(types[1], ("b".into(), FieldType::Keyword));
    }

    #[test]
    fn converts_rows() {
        let schema = SchemaFile::parse(
            r#"{"fields":[{"name":"id","type":"keyword"},{"name":"n","type":"number"},
                {"name":"o.c","type":"text"}]}"#,
        )
        .unwrap();
        let plan = Plan::new(&schema, &[("extra".into(), FieldType::Json)], Some("id")).unwrap();
        let object = json!({"id": "a1", "n": "42", "o": {"c": "Hi"}, "extra": [1]});
        let row = plan
            .convert(1, object.as_object().unwrap().clone())
            .unwrap();
        assert_eq!(row.id, "a1");
        assert_eq!(
            row.doc,
            r#"{"_id":"a1","id":"a1","n":42,"o":{"c":"Hi"},"extra":[1]}"#
        );
        assert_eq!(
            row.cells,
            vec![
                Cell::Str("a1".into()),
                Cell::Num(42.0),
                Cell::Text("Hi".into())
            ]
        );
        let bad = json!({"id": "a2", "n": "many"});
        let err = plan
            .convert(2, bad.as_object().unwrap().clone())
            .unwrap_err();
        assert!(err.contains("\"n\" expects a number"), "{err}");
        let missing = json!({"n": 1});
        assert!(
            plan.convert(3, missing.as_object().unwrap().clone())
                .is_err()
        );
    }

    #[test]
    fn dates() {
        assert!(is_iso_date("2013-01-01"));
        assert!(is_iso_date("2013-01-01T10:00:00Z"));
        assert!(is_iso_date("2021-03-31T01:12:12+08:00"));
        assert!(!is_iso_date("2013/01/01"));
        assert!(!is_iso_date("2013-01-01 is a day"));
    }
}
