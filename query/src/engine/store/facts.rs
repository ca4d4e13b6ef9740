//! The guides' facts read from the store when no in-memory index holds the version: the most
//! common value of a number column, the most frequent texts of a text column.

use entity::record::{records_table, text_table};

use super::replicas::Reader;
use super::sql::Sql;
use super::text::id_column;
use crate::dataset::schema::DatasetSchema;
use crate::error::ApiError;

/// The most common value of number column `column` and its records (ties: the smallest
/// value); `None` when the column holds none.
pub(crate) async fn number_mode(
    reader: &Reader,
    schema: &DatasetSchema,
    column: &str,
) -> Result<Option<(f64, u64)>, ApiError> {
    let mut sql = Sql::new(reader.backend());
    sql.push("SELECT ")
        .ident(column)
        .push(" AS v, COUNT(*) AS n FROM ")
        .ident(&records_table(schema.version_id))
        .push(" WHERE ")
        .ident(column)
        .push(" IS NOT NULL GROUP BY ")
        .ident(column)
        .push(" ORDER BY n DESC, v ASC LIMIT 1");
    let Some(row) = reader.query_one(sql.build()).await? else {
        return Ok(None);
    };
    let value: Option<f64> = row.try_get("", "v")?;
    let count: i64 = row.try_get("", "n")?;
    Ok(value.map(|v| (v, count as u64)))
}

/// The texts of text column `column` tied with or above its `top`-th most frequent, each as
/// (lower-cased text, records, first row): enough to break ties the way the index does.
pub(crate) async fn top_texts(
    reader: &Reader,
    schema: &DatasetSchema,
    column: &str,
    top: usize,
) -> Result<Vec<(String, u64, u32)>, ApiError> {
    let backend = reader.backend();
    let version = schema.version_id;
    let records = records_table(version);
    // The N-th highest count: every text with at least that many records is a candidate.
    let mut sql = Sql::new(backend);
    sql.push("SELECT COUNT(*) AS n FROM ")
        .ident(&records)
        .push(" WHERE ")
        .ident(column)
        .push(" IS NOT NULL GROUP BY ")
        .ident(column)
        .push(" ORDER BY n DESC LIMIT 1 OFFSET ")
        .bind(top.saturating_sub(1) as i64);
    let floor: i64 = match reader.query_one(sql.build()).await? {
        Some(row) => row.try_get("", "n")?,
        None => 1,
    };
    let mut sql = Sql::new(backend);
    sql.push("SELECT d.value AS v, top.n AS n, top.first AS first FROM (SELECT ")
        .ident(column)
        .push(" AS tid, COUNT(*) AS n, MIN(\"pos\") AS first FROM ")
        .ident(&records)
        .push(" WHERE ")
        .ident(column)
        .push(" IS NOT NULL GROUP BY ")
        .ident(column)
        .push(" HAVING COUNT(*) >= ")
        .bind(floor)
        .push(") AS top JOIN ")
        .ident(&text_table(version))
        .push(" AS d ON d.")
        .push(id_column(backend))
        .push(" = top.tid");
    let mut out = Vec::new();
    for row in reader.query_all(sql.build()).await? {
        let text: String = row.try_get("", "v")?;
        let n: i64 = row.try_get("", "n")?;
        let first: i64 = row.try_get("", "first")?;
        out.push((text, n as u64, (first - 1) as u32));
    }
    Ok(out)
}
