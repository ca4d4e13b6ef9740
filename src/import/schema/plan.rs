//! The row plan: how each source record becomes a typed row of `records_v{N}`. The fields in
//! order (the schema file's first, then the inferred ones), where `_id` comes from, and the
//! coercion of each value to its field's type, with the record rewritten to show typed values.

use std::collections::HashMap;

use entity::FieldType;
use entity::record::ID_COLUMN;
use query::packed::Layout;
use serde_json::{Map, Value};

use super::values::{is_iso_date, parse_bool, parse_number};
use super::{ID, MAX_FIELDS, MAX_KEY_BYTES, SchemaFile};
use crate::import::ImportError;

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
    /// The typed column in `records_v{N}`, if the type has one. A keyword id field's is
    /// `_id`, which holds the same texts: a column of its own would store each id twice.
    pub column: Option<String>,
}

impl PlannedField {
    /// Refuses an exact value (not the id's) too long to be a key of the store's indexes.
    pub(super) fn check_key_size(&self, cell: &Cell) -> Result<(), String> {
        match cell {
            Cell::Str(s) if self.field_type.is_exact() && s.len() > MAX_KEY_BYTES => Err(format!(
                "field {:?} holds a value of {} bytes; a {} value holds at most \
                 {MAX_KEY_BYTES} bytes (MAX_KEY_BYTES): declare the field text in a schema file",
                self.name,
                s.len(),
                self.field_type
            )),
            _ => Ok(()),
        }
    }

    /// The error of a record with no value for this field, its id field.
    pub(super) fn no_id(&self) -> String {
        format!("has no value for the id field {:?}", self.name)
    }

    /// Whether the field has a typed column besides `_id`.
    pub fn has_own_column(&self) -> bool {
        self.column
            .as_deref()
            .is_some_and(|column| column != ID_COLUMN)
    }
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
    /// The record as JSON text, `_id` first; or, when [`Row::packed`], its body as SQLite
    /// stores it (`query::packed`).
    pub doc: String,
    pub packed: bool,
    /// One cell per planned field that has a column, in field order.
    pub cells: Vec<Cell>,
}

/// The fields in the plan's order, without columns yet, and each name's position: the schema
/// file's fields, then the data's others (not `_id`, nor a leaf of a declared json object).
fn planned_fields(
    schema: &SchemaFile,
    inferred: &[(String, FieldType)],
) -> (Vec<PlannedField>, HashMap<String, usize>) {
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
    (fields, index)
}

/// The position of the field `--id-field` names, refused when there is no such field or its
/// type cannot identify records.
fn id_field_index(
    name: &str,
    fields: &[PlannedField],
    index: &HashMap<String, usize>,
    inferred: &[(String, FieldType)],
) -> Result<usize, ImportError> {
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
    Ok(i)
}

impl Plan {
    /// Builds the plan: the schema file's fields first, in its order, then the fields only the
    /// data has, in order of first appearance, with inferred types.
    pub fn new(
        schema: &SchemaFile,
        inferred: &[(String, FieldType)],
        id_field: Option<&str>,
    ) -> Result<Self, ImportError> {
        let (mut fields, index) = planned_fields(schema, inferred);
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
            Some(name) => IdSource::Field(id_field_index(name, &fields, &index, inferred)?),
        };
        for (position, field) in fields.iter_mut().enumerate() {
            field.column = match field.field_type {
                FieldType::Keyword if id == IdSource::Field(position) => {
                    Some(ID_COLUMN.to_string())
                }
                t if t.is_exact() => Some(entity::record::value_column(position)),
                FieldType::Text => Some(entity::record::text_column(position)),
                _ => None,
            };
        }
        Ok(Plan { fields, id })
    }

    /// How SQLite packs this plan's record bodies ([`Layout`]).
    pub fn layout(&self) -> Layout {
        Layout::new(self.fields.iter().map(|f| f.name.as_str()))
    }

    /// The fields that have a typed column of their own, in column order.
    pub fn columns(&self) -> impl Iterator<Item = &PlannedField> {
        self.fields.iter().filter(|f| f.has_own_column())
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
            if is_id {
                id = Some(match &cell {
                    Cell::Str(s) | Cell::Text(s) => s.clone(),
                    Cell::Num(_) => match lookup(&object, &field.path) {
                        Some(Value::Number(n)) => n.to_string(),
                        Some(Value::String(s)) => s.trim().to_string(),
                        _ => unreachable!("a number cell comes from a number or a string"),
                    },
                    Cell::Null | Cell::TextId(_) => return Err(field.no_id()),
                });
            } else {
                field.check_key_size(&cell)?;
            }
            if let Some(value) = replacement {
                set_path(&mut object, &field.path, value);
            }
            if field.has_own_column() {
                cells.push(cell);
            }
        }
        let id = id.unwrap_or_else(|| pos.to_string());
        check_id_size(&id)?;
        object.shift_insert(0, ID.to_string(), Value::String(id.clone()));
        Ok(Row {
            pos,
            id,
            doc: Value::Object(object).to_string(),
            packed: false,
            cells,
        })
    }
}

/// Refuses an identifier too long to be a key of the store's indexes.
pub(super) fn check_id_size(id: &str) -> Result<(), String> {
    if id.len() > MAX_KEY_BYTES {
        return Err(format!(
            "has an identifier of {} bytes; an identifier holds at most {MAX_KEY_BYTES} \
             bytes (MAX_KEY_BYTES)",
            id.len()
        ));
    }
    Ok(())
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
    if let Value::String(s) = value {
        return coerce_text(s, field_type);
    }
    let as_text = |text: String| match field_type {
        FieldType::Text => Cell::Text(text),
        _ => Cell::Str(text),
    };
    match (field_type, value) {
        (FieldType::Number, Value::Number(n)) => {
            Ok((Cell::Num(n.as_f64().unwrap_or(f64::NAN)), None))
        }
        (FieldType::Number, other) => Err(format!("expects a number, got {}", kind(other))),
        (FieldType::Boolean, Value::Bool(b)) => Ok((Cell::Str(b.to_string()), None)),
        (FieldType::Boolean, other) => Err(format!("expects true or false, got {}", kind(other))),
        (FieldType::Date, other) => Err(format!("expects an ISO 8601 date, got {}", kind(other))),
        (FieldType::Keyword | FieldType::Text, Value::Number(n)) => {
            Ok((as_text(n.to_string()), None))
        }
        (FieldType::Keyword | FieldType::Text, Value::Bool(b)) => {
            Ok((as_text(b.to_string()), None))
        }
        (FieldType::Keyword, other) => Err(format!("expects a single value, got {}", kind(other))),
        (FieldType::Text, other) => Err(format!("expects text, got {}", kind(other))),
        (FieldType::Json, _) => Ok((Cell::Null, None)),
    }
}

/// [`coerce`] for a value written as text (every CSV cell, and JSON strings).
pub(super) fn coerce_text(s: &str, field_type: FieldType) -> Result<(Cell, Option<Value>), String> {
    match field_type {
        FieldType::Number if s.trim().is_empty() => Ok((Cell::Null, None)),
        FieldType::Number => match parse_number(s) {
            Some(n) => Ok((
                Cell::Num(n.as_f64().unwrap_or(f64::NAN)),
                Some(Value::Number(n)),
            )),
            None => Err(format!("expects a number, got {s:?}")),
        },
        FieldType::Boolean => match parse_bool(s) {
            Some(b) => Ok((Cell::Str(b.to_string()), Some(Value::Bool(b)))),
            None if s.is_empty() => Ok((Cell::Null, None)),
            None => Err(format!("expects true or false, got {s:?}")),
        },
        _ if s.is_empty() => Ok((Cell::Null, None)),
        FieldType::Date if is_iso_date(s) => Ok((Cell::Str(s.to_string()), None)),
        FieldType::Date => Err(format!("expects an ISO 8601 date, got {s:?}")),
        FieldType::Keyword => Ok((Cell::Str(s.to_string()), None)),
        FieldType::Text => Ok((Cell::Text(s.to_string()), None)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        // The keyword id field's column is `_id`: it has no cell of its own.
        assert_eq!(plan.fields[0].column.as_deref(), Some(ID_COLUMN));
        assert_eq!(plan.columns().count(), 2);
        assert_eq!(row.cells, vec![Cell::Num(42.0), Cell::Text("Hi".into())]);
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
}
