//! A statement over a whole version read on both cores: split into [`PARTS`] ranges of
//! positions (`"pos" BETWEEN`, a range of the table's primary key), each part read straight
//! from the SQLite file on a blocking thread of its own, their results merged by the caller.
//! A count, a fold or a tally over tens of millions of rows takes half the time.

use std::sync::Arc;

use rusqlite::types::Value;

use super::direct::{self, DirectSqlite};
use crate::dataset::DatasetSchema;

/// Statements over at least this many records are read in parts.
pub(crate) const SPLIT_FROM: u64 = 200_000;

/// The parts such a statement is read in, one blocking thread each (the machines odqs runs on
/// have two cores or more).
pub(crate) const PARTS: u64 = 2;

/// Whether a statement on `schema`'s table with conditions (`filtered`) is read in parts:
/// always without conditions, and with them when the table has no column indexes (each part
/// is then a scan of its range, as the whole would be a scan of the table); with indexes a
/// range of positions could turn the planner away from a selective one.
pub(crate) fn may_split(schema: &DatasetSchema, filtered: bool) -> bool {
    !filtered || !schema.store_indexes
}

/// The ranges of positions (first and last, both included) a statement over `records` rows is
/// read in: [`PARTS`] when `split` and there are [`SPLIT_FROM`] rows or more, else one range
/// of none (the statement as it is).
pub(crate) fn ranges(records: i64, split: bool) -> Vec<Option<(i64, i64)>> {
    let records = records.max(0) as u64;
    if !split || records < SPLIT_FROM {
        return vec![None];
    }
    let step = records.div_ceil(PARTS);
    (0..PARTS)
        .map(|k| Some(((k * step + 1) as i64, ((k + 1) * step).min(records) as i64)))
        .collect()
}

/// `sql` (ending with its conditions) and its `values`, limited to the positions of `range`.
pub(crate) fn in_range(
    sql: &str,
    values: &[Value],
    range: Option<(i64, i64)>,
) -> (String, Vec<Value>) {
    let (mut sql, mut values) = (sql.to_string(), values.to_vec());
    if let Some((first, last)) = range {
        sql.push_str(" AND \"pos\" BETWEEN ? AND ?");
        values.extend([first, last].map(Value::from));
    }
    (sql, values)
}

/// `read` run on each part of `statement` (its text limited to the part's range, its values
/// as rusqlite binds them), the parts side by side on blocking threads; their results in
/// position order. `None` when there is no direct reader, a value has a type the direct read
/// does not bind, or a part failed: the caller then asks the store.
pub(crate) async fn each_part<T, E>(
    direct: Option<Arc<DirectSqlite>>,
    statement: &sea_orm::Statement,
    (records, split): (i64, bool),
    read: impl Fn(&DirectSqlite, &str, &[Value]) -> Result<T, E> + Clone + Send + 'static,
) -> Option<Vec<T>>
where
    T: Send + 'static,
    E: Send + 'static,
{
    let direct = direct?;
    let values = statement
        .values
        .as_ref()
        .map_or(Some(Vec::new()), |v| direct::bound(&v.0))?;
    let parts: Vec<_> = ranges(records, split)
        .into_iter()
        .map(|range| {
            let (sql, values) = in_range(&statement.sql, &values, range);
            let (direct, read) = (direct.clone(), read.clone());
            tokio::task::spawn_blocking(move || read(&direct, &sql, &values))
        })
        .collect();
    let mut results = Vec::with_capacity(parts.len());
    for part in parts {
        results.push(part.await.ok()?.ok()?);
    }
    Some(results)
}

/// A `SELECT COUNT(*), … WHERE …` statement's counts (each column of its one row), its
/// parts counted side by side and added.
pub(crate) async fn counts(
    direct: Option<Arc<DirectSqlite>>,
    statement: &sea_orm::Statement,
    records: i64,
    split: bool,
) -> Option<Vec<u64>> {
    let parts = each_part(
        direct,
        statement,
        (records, split),
        |direct, sql, values| {
            let mut counts = Vec::new();
            direct
                .each_row(sql, values, |row| {
                    for i in 0..row.as_ref().column_count() {
                        counts.push(row.get::<_, i64>(i)?.max(0) as u64);
                    }
                    Ok::<_, rusqlite::Error>(())
                })
                .map(|()| counts)
        },
    )
    .await?;
    let mut total: Vec<u64> = Vec::new();
    for part in parts {
        total.resize(part.len().max(total.len()), 0);
        for (sum, n) in total.iter_mut().zip(part) {
            *sum += n;
        }
    }
    Some(total)
}

/// The rows of a `SELECT "pos", c1, … WHERE …` statement of integer columns (each `None`
/// where NULL), `width` columns each, flattened, in position order: its parts read side by
/// side and put one after the other.
pub(crate) async fn integer_rows(
    direct: Option<Arc<DirectSqlite>>,
    statement: &sea_orm::Statement,
    (records, split): (i64, bool),
    width: usize,
) -> Option<Vec<Option<i64>>> {
    let parts = each_part(
        direct,
        statement,
        (records, split),
        move |direct, sql, values| {
            let mut rows = Vec::new();
            direct
                .each_row(&format!("{sql} ORDER BY \"pos\""), values, |row| {
                    for i in 0..width {
                        rows.push(row.get::<_, Option<i64>>(i)?);
                    }
                    Ok::<_, rusqlite::Error>(())
                })
                .map(|()| rows)
        },
    )
    .await?;
    Some(parts.concat())
}
