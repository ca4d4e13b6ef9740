//! What relevance (`sort=_score<`) reads from the store: the matches' text ids, the
//! characters of a text field over its version, and the dictionary's texts of some ids.

use std::collections::HashMap;
use std::sync::Arc;

use entity::record::{records_table, text_table};
use sea_orm::DatabaseBackend;

use super::direct::DirectSqlite;
use super::replicas::Reader;
use super::split;
use super::sql::{Access, Part, ResolvedFilter, Sql, from_where, one_of_ids, order_by};
use crate::dataset::schema::{Column, DatasetSchema};
use crate::error::ApiError;

/// The matches whose searched texts relevance scores.
pub(crate) struct Matches<'a> {
    pub(crate) schema: &'a DatasetSchema,
    pub(crate) resolved: &'a ResolvedFilter<'a>,
    /// The text fields searched, whose dictionary ids each row gives.
    pub(crate) searched: &'a [usize],
    /// The request's other sort keys: the order the matches come in, then file order.
    pub(crate) sort: &'a [(Column, bool)],
    /// The version's records.
    pub(crate) records: i64,
}

/// Each match as its `pos`, then the dictionary id of each searched field's text (`None`
/// where it has none), flattened: rows of `1 + searched.len()`.
pub(crate) async fn matches(
    direct: Option<Arc<DirectSqlite>>,
    reader: &Reader,
    read: &Matches<'_>,
) -> Result<Vec<Option<i64>>, ApiError> {
    let width = 1 + read.searched.len();
    let mut sql = Sql::new(reader.backend());
    sql.push("SELECT \"pos\"");
    for (k, &field) in read.searched.iter().enumerate() {
        sql.push(", ")
            .ident(read.schema.sql_column(Column::Field(field)))
            .push(&format!(" AS \"t{k}\""));
    }
    from_where(&mut sql, read.schema, read.resolved, Access::Planner);
    // In file order alone, the SQLite file is read in ranges side by side (a common word over
    // a large version matches millions of rows); any other order through sqlx.
    if read.sort.is_empty() {
        let split = split::may_split(read.schema, true);
        let statement = sql.clone().build();
        let rows = split::integer_rows(direct, &statement, (read.records, split), width).await;
        if let Some(rows) = rows {
            return Ok(rows);
        }
    }
    order_by(&mut sql, read.schema, read.sort, Part::All);
    let rows = reader.query_all(sql.build()).await?;
    let mut matches = Vec::with_capacity(rows.len() * width);
    for row in &rows {
        matches.push(Some(row.try_get::<i64>("", "pos")?));
        for k in 0..read.searched.len() {
            matches.push(row.try_get::<Option<i64>>("", &format!("t{k}"))?);
        }
    }
    Ok(matches)
}

/// The dictionary's id column: `tid` on PostgreSQL, the FTS5 rowid on SQLite.
pub(crate) fn id_column(backend: DatabaseBackend) -> &'static str {
    match backend {
        DatabaseBackend::Postgres => "\"tid\"",
        _ => "rowid",
    }
}

/// The characters of text field `field`'s values over every record of `schema`'s version.
pub(crate) async fn length(
    reader: &Reader,
    schema: &DatasetSchema,
    field: usize,
) -> Result<u64, ApiError> {
    let backend = reader.backend();
    let id = id_column(backend);
    let mut sql = Sql::new(backend);
    sql.push("SELECT SUM(LENGTH(d.\"value\")) AS n FROM ")
        .ident(&records_table(schema.version_id))
        .push(" r JOIN ")
        .ident(&text_table(schema.version_id))
        .push(&format!(" d ON d.{id} = r."))
        .ident(schema.sql_column(Column::Field(field)));
    Ok(match reader.query_one(sql.build()).await? {
        Some(row) => row.try_get::<Option<i64>>("", "n")?.unwrap_or(0).max(0) as u64,
        None => 0,
    })
}

/// The lower-cased texts of dictionary `ids` in version `version_id`.
pub(crate) async fn values(
    reader: &Reader,
    version_id: i64,
    ids: &[i64],
) -> Result<HashMap<i64, String>, ApiError> {
    let mut values = HashMap::with_capacity(ids.len());
    if ids.is_empty() {
        return Ok(values);
    }
    let backend = reader.backend();
    let mut sql = Sql::new(backend);
    sql.push("SELECT ")
        .push(id_column(backend))
        .push(" AS id, \"value\" FROM ")
        .ident(&text_table(version_id))
        .push(" WHERE ")
        .push(id_column(backend));
    one_of_ids(&mut sql, ids);
    for row in reader.query_all(sql.build()).await? {
        values.insert(row.try_get::<i64>("", "id")?, row.try_get("", "value")?);
    }
    Ok(values)
}
