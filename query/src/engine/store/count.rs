//! Counts of a version's matches read from the store, and the text dictionary's ids of a
//! search term: what answers them when no in-memory index holds the version.

use std::sync::Arc;

use super::direct::DirectSqlite;
use super::replicas::Reader;
use super::split;
use super::sql::{Access, ResolvedFilter, Sql, dictionary_lookup, distinct_values, from_where};
use crate::dataset::schema::{Column, DatasetSchema};
use crate::error::ApiError;

/// The matches of `resolved` in `schema`'s version of `records` rows, then, with `has_value`,
/// those with a value in that column too (a sorted page asks for both): one read, in
/// position ranges on both cores of an SQLite file when that is worth it, else through
/// `reader`.
pub(crate) async fn matches(
    direct: Option<Arc<DirectSqlite>>,
    reader: &Reader,
    schema: &DatasetSchema,
    resolved: &ResolvedFilter<'_>,
    has_value: Option<Column>,
    records: i64,
) -> Result<Vec<u64>, ApiError> {
    let mut sql = Sql::new(reader.backend());
    sql.push("SELECT COUNT(*) AS n");
    if let Some(column) = has_value {
        sql.push(", COUNT(")
            .ident(schema.sql_column(column))
            .push(") AS v");
    }
    from_where(&mut sql, schema, resolved, Access::Planner);
    let statement = sql.build();
    let split = split::may_split(schema, !resolved.filter.is_empty());
    if let Some(counts) = split::counts(direct, &statement, records, split).await {
        return Ok(counts);
    }
    let row = reader
        .query_one(statement)
        .await?
        .ok_or(ApiError::Internal)?;
    let mut counts = vec![row.try_get::<i64>("", "n")?.max(0) as u64];
    if has_value.is_some() {
        counts.push(row.try_get::<i64>("", "v")?.max(0) as u64);
    }
    Ok(counts)
}

/// The ids of `term` in the text dictionary of version `version_id`, sorted.
pub(crate) async fn dictionary_ids(
    reader: &Reader,
    version_id: i64,
    term: &str,
) -> Result<Vec<i64>, ApiError> {
    let rows = reader
        .query_all(dictionary_lookup(reader.backend(), version_id, term))
        .await?;
    let mut ids = rows
        .iter()
        .map(|row| row.try_get::<i64>("", "id"))
        .collect::<Result<Vec<_>, _>>()?;
    ids.sort_unstable();
    Ok(ids)
}

/// The distinct stored texts of `column` in version `version_id` (a date field's, whose
/// ranges are resolved to the texts whose instants lie in them).
pub(crate) async fn distinct_texts(
    reader: &Reader,
    version_id: i64,
    column: &str,
) -> Result<Vec<String>, ApiError> {
    let statement = distinct_values(reader.backend(), version_id, column);
    reader
        .query_all(statement)
        .await?
        .iter()
        .map(|row| Ok(row.try_get("", "v")?))
        .collect()
}
