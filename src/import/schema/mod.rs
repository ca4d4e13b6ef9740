//! The schema of an import (contract §1): the schema file a publisher writes, and the limits
//! every dataset keeps. Fields the file does not list are typed by [`infer`]; [`plan`] turns
//! each source record into a typed row; [`values`] reads numbers, booleans and dates from text
//! the same way for both.

pub mod csv_rows;
pub mod geo;
pub mod infer;
pub mod plan;
pub mod values;

use std::collections::HashSet;
use std::path::Path;

use entity::FieldType;
use serde::Deserialize;

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
    /// The geo pair, when the fields' names do not say it.
    pub geo: Option<geo::GeoPair>,
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

pub use query::MAX_FIELDS;

/// Bytes of one value of an exact-match field (keyword, boolean, date) and of an identifier:
/// each is a key of a PostgreSQL B-tree index, whose entries hold at most 2,704 bytes, so a
/// longer value would fail on one store and not the other. Longer values belong in `text`.
pub const MAX_KEY_BYTES: usize = 2048;
