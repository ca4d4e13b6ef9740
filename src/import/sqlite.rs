//! Bulk loading into SQLite on a connection of the import's own, through rusqlite on a blocking
//! thread (no argument encoding and hand-off to sqlx's worker thread per statement, so the
//! load waits on the reader thread, not on the store). One cached single-row insert a
//! record, committed every few batches so other writers of the file are not locked out for a
//! whole import; bodies packed without their keys where they can be (`query::packed`);
//! indexes built after the load, when it is cheapest. Text values go into an
//! FTS5 table with the trigram tokenizer, which finds substrings in any script, Chinese
//! included.

use std::path::Path;

use entity::FieldType;
use entity::record::{column_index, records_table, text_table};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, Statement};
use sqlx::SqlitePool;
use tokio::sync::mpsc;

use super::pipeline::Batch;
use super::schema::plan::{Cell, Plan};
use super::{ImportError, RecordColumns, duplicate_error, duplicate_id_sql};
use crate::store::{SQLITE_BUSY_TIMEOUT, SQLITE_CACHE_KIB, WAL_LIMIT_BYTES};

/// Batches per write transaction.
const BATCHES_PER_COMMIT: usize = 50;

fn column_type(field_type: FieldType) -> &'static str {
    match field_type {
        FieldType::Number => "REAL",
        FieldType::Text => "INTEGER",
        _ => "TEXT",
    }
}

/// Creates the version's tables and loads every batch; returns the number of records.
pub async fn load(
    pool: &SqlitePool,
    version_id: i64,
    plan: &Plan,
    mut batches: mpsc::Receiver<Batch>,
) -> Result<u64, ImportError> {
    on_own_connection(pool, plan, move |conn, plan| {
        load_blocking(conn, version_id, plan, &mut batches)
    })
    .await
}

fn load_blocking(
    conn: &Connection,
    version_id: i64,
    plan: &Plan,
    batches: &mut mpsc::Receiver<Batch>,
) -> Result<u64, ImportError> {
    let records = records_table(version_id);
    let texts = text_table(version_id);
    let RecordColumns {
        definitions: columns,
        names,
    } = RecordColumns::new(
        plan,
        ["INTEGER PRIMARY KEY", "TEXT NOT NULL", "TEXT NOT NULL"],
        column_type,
    );
    conn.execute_batch(&format!(
        "BEGIN IMMEDIATE; \
         CREATE TABLE \"{records}\" ({}); \
         CREATE VIRTUAL TABLE \"{texts}\" USING fts5(value, tokenize = 'trigram case_sensitive 1')",
        columns.join(", ")
    ))?;
    let mut insert = conn.prepare(&format!(
        "INSERT INTO \"{records}\" ({}) VALUES ({})",
        names.join(","),
        vec!["?"; names.len()].join(",")
    ))?;
    let mut insert_text = conn.prepare(&format!(
        "INSERT INTO \"{texts}\" (rowid, value) VALUES (?1, ?2)"
    ))?;
    let layout = plan.layout();
    let mut count = 0u64;
    let mut since_commit = 0;
    while let Some(batch) = batches.blocking_recv() {
        for row in &batch.rows {
            insert.raw_bind_parameter(1, row.pos)?;
            insert.raw_bind_parameter(2, row.id.as_str())?;
            // A body the reader packed already is stored as it is.
            let packed = (!row.packed).then(|| layout.pack(&row.doc)).flatten();
            insert.raw_bind_parameter(3, packed.as_deref().unwrap_or(&row.doc))?;
            for (i, cell) in row.cells.iter().enumerate() {
                bind(&mut insert, i + 4, cell)?;
            }
            insert.raw_execute()?;
            count += 1;
        }
        for (id, text) in &batch.texts {
            insert_text.execute((id, text))?;
        }
        since_commit += 1;
        if since_commit == BATCHES_PER_COMMIT {
            conn.execute_batch("COMMIT; BEGIN IMMEDIATE")?;
            since_commit = 0;
        }
    }
    conn.execute_batch("COMMIT")?;
    Ok(count)
}

fn bind(statement: &mut Statement<'_>, index: usize, cell: &Cell) -> rusqlite::Result<()> {
    match cell {
        Cell::Null => statement.raw_bind_parameter(index, rusqlite::types::Null),
        Cell::Str(s) | Cell::Text(s) => statement.raw_bind_parameter(index, s.as_str()),
        Cell::Num(n) => statement.raw_bind_parameter(index, n),
        Cell::TextId(id) => statement.raw_bind_parameter(index, id),
    }
}

/// With `columns`, one index per typed column; planner statistics, and the unique `_id` index
/// (naming a duplicate when it cannot be built).
pub async fn build_indexes(
    pool: &SqlitePool,
    version_id: i64,
    plan: &Plan,
    columns: bool,
) -> Result<(), ImportError> {
    on_own_connection(pool, plan, move |conn, plan| {
        build_indexes_blocking(conn, version_id, plan, columns)
    })
    .await
}

fn build_indexes_blocking(
    conn: &Connection,
    version_id: i64,
    plan: &Plan,
    columns: bool,
) -> Result<(), ImportError> {
    let records = records_table(version_id);
    // Index builds sort on helper threads too.
    conn.pragma_update(None, "threads", sort_threads())?;
    conn.execute_batch("BEGIN IMMEDIATE")?;
    for field in plan.columns().filter(|_| columns) {
        let column = field.column.as_deref().expect("columns() has columns");
        let index = column_index(version_id, column);
        conn.execute_batch(&format!(
            "CREATE INDEX \"{index}\" ON \"{records}\" (\"{column}\")"
        ))?;
    }
    conn.execute_batch("COMMIT")?;
    conn.pragma_update(None, "analysis_limit", 1000)?;
    conn.execute_batch(&format!("ANALYZE \"{records}\""))?;
    // ANALYZE does not make other connections reload statistics; a schema change does. So the
    // last index comes after it, and every connection of every process plans with the new
    // statistics (one that had read the schema before ANALYZE planned without them and chose
    // full scans). The `_id` index needs no statistics: it is unique. Its build is also the
    // check for a duplicate `_id`: only when it fails is the table searched for the records to
    // name.
    let unique = conn.execute_batch(&format!(
        "CREATE UNIQUE INDEX \"{records}_id\" ON \"{records}\" (\"_id\")"
    ));
    match unique {
        Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == ErrorCode::ConstraintViolation => {
            let found = conn
                .query_row(&duplicate_id_sql(version_id), [], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                })
                .optional()?;
            duplicate_error(found)?;
            Err(rusqlite::Error::SqliteFailure(e, None).into())
        }
        other => Ok(other?),
    }
}

/// Runs `work` on a blocking thread with a write connection of its own on the store's file.
async fn on_own_connection<T: Send + 'static>(
    pool: &SqlitePool,
    plan: &Plan,
    work: impl FnOnce(&Connection, &Plan) -> Result<T, ImportError> + Send + 'static,
) -> Result<T, ImportError> {
    let path = pool.connect_options().get_filename().to_path_buf();
    let plan = plan.clone();
    tokio::task::spawn_blocking(move || work(&open(&path)?, &plan))
        .await
        .expect("the SQLite import work does not panic")
}

/// A write connection on the store's file with the pool's settings (WAL is the file's own).
/// Its cache is the pool's too: SQLite's sorter keeps that much of an index build in memory
/// per sorted run, and small runs sorted on two threads and merged beat one large run sorted
/// on one.
fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(SQLITE_BUSY_TIMEOUT)?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "cache_size", -(SQLITE_CACHE_KIB as i64))?;
    conn.pragma_update(None, "journal_size_limit", WAL_LIMIT_BYTES as i64)?;
    Ok(conn)
}

/// Helper threads SQLite may use to sort an index's entries: the machine's cores, at most 4.
fn sort_threads() -> i64 {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4) as i64)
}
