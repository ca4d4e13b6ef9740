//! Reading one version from the store into an in-memory index: the typed columns in file
//! order, a chunk of rows at a time, and the text dictionary. The store stays the source of
//! truth; this is a copy of its typed columns, rebuilt for every version.

use std::collections::HashMap;

use entity::FieldType;
use entity::record::{records_table, text_table};
use sea_orm::{ConnectionTrait, DatabaseBackend, DatabaseConnection, DbErr};

use super::column::{Codes, Dict, IdColumn, MISSING, NumBuilder, Postings, StrBuilder, TextColumn};
use super::{FieldIndex, MemIndex};
use crate::query::schema::DatasetSchema;
use crate::query::sql::Sql;

/// Rows read per statement: bounded memory for the result set, few round trips.
const CHUNK: i64 = 5_000;

/// A column being collected.
enum Pending {
    None,
    Str(StrBuilder),
    Num(NumBuilder),
    Text(Codes),
}

/// Bytes an index of `rows` rows of `schema` is expected to take, before reading anything:
/// enough to decide whether to try within a budget (the text dictionary is not counted). Per
/// row: `_id` about 16 bytes (text, end, sorted position), a number 6 (a 1–2 byte value and a
/// 2-byte row in value order, with room for wider ones), a keyword or text 4 (a narrow code
/// and a 2-byte row); flights ×10 is estimated at 450 MiB and takes 394.
pub fn estimate(schema: &DatasetSchema, rows: u64) -> u64 {
    let per_row: u64 = 16
        + schema
            .fields
            .iter()
            .filter(|f| f.column.is_some())
            .map(|f| match f.field_type {
                FieldType::Number => 6,
                FieldType::Json => 0,
                _ => 4,
            })
            .sum::<u64>();
    rows * per_row
}

/// Reads version `schema.version_id` (`rows` records) into an index.
pub async fn build(
    db: &DatabaseConnection,
    schema: &DatasetSchema,
    rows: u64,
) -> Result<MemIndex, DbErr> {
    let backend = db.get_database_backend();
    let (texts, text_codes) = read_texts(db, schema).await?;
    let planned: Vec<(usize, &str, FieldType)> = schema
        .fields
        .iter()
        .enumerate()
        .filter_map(|(i, f)| Some((i, f.column.as_deref()?, f.field_type)))
        .filter(|(_, _, t)| *t != FieldType::Json)
        .collect();
    let mut pending: Vec<Pending> = schema.fields.iter().map(|_| Pending::None).collect();
    for &(i, _, field_type) in &planned {
        pending[i] = match field_type {
            FieldType::Number => Pending::Num(NumBuilder::with_capacity(rows as usize)),
            FieldType::Text => Pending::Text(Codes::with_capacity(texts.len(), rows as usize)),
            _ => Pending::Str(StrBuilder::with_capacity(rows as usize)),
        };
    }
    let mut ids = Dict::default();
    let mut read: i64 = 0;
    loop {
        let mut sql = Sql::new(backend);
        sql.push("SELECT \"pos\", \"_id\"");
        for &(_, column, _) in &planned {
            sql.push(", ").ident(column);
        }
        sql.push(" FROM ")
            .ident(&records_table(schema.version_id))
            .push(" WHERE \"pos\" > ")
            .bind(read)
            .push(" ORDER BY \"pos\" LIMIT ")
            .bind(CHUNK);
        let chunk = db.query_all_raw(sql.build()).await?;
        if chunk.is_empty() {
            break;
        }
        for row in &chunk {
            let pos: i64 = row.try_get_by_index(0)?;
            if pos != read + 1 {
                return Err(DbErr::Custom(format!(
                    "records of version {} are not numbered 1..n (found {pos} after {read})",
                    schema.version_id
                )));
            }
            read = pos;
            let id: String = row.try_get_by_index(1)?;
            ids.push(&id);
            for (k, &(i, _, _)) in planned.iter().enumerate() {
                match &mut pending[i] {
                    Pending::Str(b) => {
                        let v: Option<String> = row.try_get_by_index(k + 2)?;
                        b.push(v.as_deref());
                    }
                    Pending::Num(values) => {
                        let v: Option<f64> = row.try_get_by_index(k + 2)?;
                        values.push(v.unwrap_or(f64::NAN));
                    }
                    Pending::Text(codes) => {
                        let tid: Option<i64> = row.try_get_by_index(k + 2)?;
                        codes.push(
                            tid.and_then(|t| text_codes.get(&t).copied())
                                .unwrap_or(MISSING),
                        );
                    }
                    Pending::None => {}
                }
            }
        }
        if (chunk.len() as i64) < CHUNK {
            break;
        }
    }
    let fields: Vec<FieldIndex> = pending
        .into_iter()
        .map(|p| match p {
            Pending::None => FieldIndex::None,
            Pending::Str(b) => FieldIndex::Str(b.finish()),
            Pending::Num(b) => FieldIndex::Num(b.finish()),
            Pending::Text(codes) => {
                let postings = Postings::new(&codes, texts.len());
                FieldIndex::Text(TextColumn { codes, postings })
            }
        })
        .collect();
    Ok(MemIndex::new(
        schema.version_id,
        read as u32,
        IdColumn::new(ids).ok_or_else(|| {
            DbErr::Custom(format!(
                "records of version {} share an _id",
                schema.version_id
            ))
        })?,
        fields,
        texts,
    ))
}

/// The version's text dictionary (lower-cased values) and each store id's code in it.
async fn read_texts(
    db: &DatabaseConnection,
    schema: &DatasetSchema,
) -> Result<(Dict, HashMap<i64, u32>), DbErr> {
    let mut dict = Dict::default();
    let mut codes = HashMap::new();
    if schema.text_fields().next().is_none() {
        return Ok((dict, codes));
    }
    let backend = db.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push(match backend {
        DatabaseBackend::Postgres => "SELECT \"tid\", \"value\" FROM ",
        _ => "SELECT rowid, \"value\" FROM ",
    })
    .ident(&text_table(schema.version_id));
    for row in db.query_all_raw(sql.build()).await? {
        let tid: i64 = row.try_get_by_index(0)?;
        let value: String = row.try_get_by_index(1)?;
        codes.insert(tid, dict.len() as u32);
        dict.push(&value);
    }
    Ok((dict, codes))
}
