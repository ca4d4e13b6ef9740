//! Real values of a dataset version for its usage guide (`skill.md`, contract §9): the most
//! common values of keyword-like fields, the range of number and date fields, and frequent
//! texts, read from the typed columns of `records_v{N}`.
//!
//! Column names come only from `dataset_fields.column_name`, checked to be one of our
//! generated `c{i}` / `t{i}` names before they reach SQL; values are never spliced in.

use entity::dataset_field;
use entity::record::{records_table, text_table};
use graphql::query::views::json_number;
use sea_orm::{ConnectionTrait, DatabaseBackend, QueryResult, Statement};
use serde_json::Value;

use super::{Store, StoreError};

/// One value and how many records hold it.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueCount {
    /// A JSON string for keyword, boolean, date and text fields, a JSON number for numbers.
    pub value: Value,
    pub count: i64,
}

/// The smallest and largest value of a number or date field.
#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    pub min: Value,
    pub max: Value,
}

/// A generated column name (`c12`, `t3`), or `None` for anything else.
fn checked_column(field: &dataset_field::Model, prefix: char) -> Option<&str> {
    let name = field.column_name.as_deref()?;
    let rest = name.strip_prefix(prefix)?;
    (!rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit())).then_some(name)
}

fn number(row: &QueryResult, column: &str) -> Result<Value, StoreError> {
    let n: Option<f64> = row.try_get("", column)?;
    Ok(n.map(json_number).unwrap_or(Value::Null))
}

/// The `limit` most common values of a keyword, boolean, date or number field, most common
/// first, ties by value.
pub async fn top_values(
    store: &Store,
    version_id: i64,
    field: &dataset_field::Model,
    limit: u32,
) -> Result<Vec<ValueCount>, StoreError> {
    let Some(column) = checked_column(field, 'c') else {
        return Ok(Vec::new());
    };
    let table = records_table(version_id);
    let sql = format!(
        "SELECT \"{column}\" AS v, COUNT(*) AS n FROM \"{table}\" WHERE \"{column}\" IS NOT NULL \
         GROUP BY \"{column}\" ORDER BY n DESC, v ASC LIMIT {limit}"
    );
    let rows = store
        .db
        .query_all_raw(Statement::from_string(store.backend(), sql))
        .await?;
    let is_number = field.field_type == entity::FieldType::Number;
    rows.iter()
        .map(|row| {
            let value = if is_number {
                number(row, "v")?
            } else {
                Value::String(row.try_get::<String>("", "v")?)
            };
            Ok(ValueCount {
                value,
                count: row.try_get("", "n")?,
            })
        })
        .collect()
}

/// The smallest and largest value of a number or date field; `None` when no record has one.
pub async fn range(
    store: &Store,
    version_id: i64,
    field: &dataset_field::Model,
) -> Result<Option<Range>, StoreError> {
    let Some(column) = checked_column(field, 'c') else {
        return Ok(None);
    };
    let table = records_table(version_id);
    let sql = format!("SELECT MIN(\"{column}\") AS lo, MAX(\"{column}\") AS hi FROM \"{table}\"");
    let Some(row) = store
        .db
        .query_one_raw(Statement::from_string(store.backend(), sql))
        .await?
    else {
        return Ok(None);
    };
    let (min, max) = if field.field_type == entity::FieldType::Number {
        (number(&row, "lo")?, number(&row, "hi")?)
    } else {
        let lo: Option<String> = row.try_get("", "lo")?;
        let hi: Option<String> = row.try_get("", "hi")?;
        (
            lo.map(Value::String).unwrap_or(Value::Null),
            hi.map(Value::String).unwrap_or(Value::Null),
        )
    };
    Ok((!min.is_null()).then_some(Range { min, max }))
}

/// The `limit` most frequent values of a text field (lower-cased, as the full-text dictionary
/// keeps them), most frequent first.
pub async fn top_texts(
    store: &Store,
    version_id: i64,
    field: &dataset_field::Model,
    limit: u32,
) -> Result<Vec<ValueCount>, StoreError> {
    let Some(column) = checked_column(field, 't') else {
        return Ok(Vec::new());
    };
    let backend = store.backend();
    let records = records_table(version_id);
    let texts = text_table(version_id);
    // The dictionary's id column: `tid` on PostgreSQL, the FTS5 rowid on SQLite.
    let id = match backend {
        DatabaseBackend::Postgres => "tid",
        _ => "rowid",
    };
    let sql = format!(
        "SELECT d.value AS v, top.n AS n FROM \
           (SELECT \"{column}\" AS tid, COUNT(*) AS n FROM \"{records}\" \
            WHERE \"{column}\" IS NOT NULL GROUP BY \"{column}\" ORDER BY n DESC, tid ASC LIMIT {limit}) AS top \
         JOIN \"{texts}\" AS d ON d.{id} = top.tid ORDER BY top.n DESC, d.value ASC"
    );
    let rows = store
        .db
        .query_all_raw(Statement::from_string(backend, sql))
        .await?;
    rows.iter()
        .map(|row| {
            Ok(ValueCount {
                value: Value::String(row.try_get::<String>("", "v")?),
                count: row.try_get("", "n")?,
            })
        })
        .collect()
}
