//! Bulk loading into SQLite, into a file of the version's own
//! ([`entity::record::version_file`]): the store's file keeps only the catalog, so its schema,
//! which SQLite reads on every new connection and after every change, stays the same size
//! however many datasets there are, and an import costs the same at the ten-thousandth dataset
//! as at the first. Nobody else writes the version's file, so it is loaded in one transaction
//! without a journal and synced to disk once, before the version can go live; a failed import
//! leaves a file the garbage collector deletes with its version.
//!
//! The load runs through rusqlite on a blocking thread (no argument encoding and hand-off to
//! sqlx's worker thread per statement, so the load waits on the reader thread, not on the
//! store): one cached single-row insert a record; bodies packed without their keys where they
//! can be (`query::packed`); indexes built after the load, when it is cheapest. Text values go
//! into an FTS5 table with the trigram tokenizer, which finds substrings in any script, Chinese
//! included.

use std::path::Path;

use entity::FieldType;
use entity::record::{column_index, records_table, text_table, version_file};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, Statement};
use sqlx::SqlitePool;
use tokio::sync::mpsc;

use super::pipeline::Batch;
use super::schema::plan::{Cell, Plan};
use super::{ImportError, RecordColumns, duplicate_error, duplicate_id_sql};
use crate::store::SQLITE_CACHE_KIB;

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
    // A file left by a version of the same id whose clean-up failed is no part of this one.
    let path = version_file(pool.connect_options().get_filename(), version_id);
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(ImportError::Io {
                path: path.display().to_string(),
                source: e,
            });
        }
        _ => {}
    }
    on_own_connection(pool, version_id, plan, move |conn, plan| {
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
        "BEGIN; \
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
    on_own_connection(pool, version_id, plan, move |conn, plan| {
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
    conn.execute_batch("BEGIN")?;
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
    // The `_id` index needs no statistics: it is unique. Its build is also the check for a
    // duplicate `_id`: only when it fails is the table searched for the records to name.
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

/// Runs `work` on a blocking thread with a write connection of its own on the file of
/// version `version_id`, created by the load, and syncs the file to disk after it.
async fn on_own_connection<T: Send + 'static>(
    pool: &SqlitePool,
    version_id: i64,
    plan: &Plan,
    work: impl FnOnce(&Connection, &Plan) -> Result<T, ImportError> + Send + 'static,
) -> Result<T, ImportError> {
    let path = version_file(pool.connect_options().get_filename(), version_id);
    let plan = plan.clone();
    tokio::task::spawn_blocking(move || {
        let done = work(&open(&path)?, &plan)?;
        sync(&path)?;
        Ok(done)
    })
    .await
    .expect("the SQLite import work does not panic")
}

/// A write connection on a version's file, created with its folder when missing. No journal
/// and no syncs: a version's file has one writer, is read by nobody before it goes live, and
/// is deleted with its version when the import fails ([`sync`] makes it durable before). Its
/// cache is the store pool's: SQLite's sorter keeps that much of an index build in memory per
/// sorted run, and small runs sorted on two threads and merged beat one large run on one.
fn open(path: &Path) -> Result<Connection, ImportError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| ImportError::Io {
            path: dir.display().to_string(),
            source,
        })?;
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.pragma_update(None, "journal_mode", "OFF")?;
    conn.pragma_update(None, "synchronous", "OFF")?;
    conn.pragma_update(None, "cache_size", -(SQLITE_CACHE_KIB as i64))?;
    Ok(conn)
}

/// Writes the file at `path` and its folder's entry to disk.
fn sync(path: &Path) -> Result<(), ImportError> {
    let io = |source| ImportError::Io {
        path: path.display().to_string(),
        source,
    };
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(io)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io)?;
    }
    Ok(())
}

/// Helper threads SQLite may use to sort an index's entries: the machine's cores, at most 4.
fn sort_threads() -> i64 {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4) as i64)
}
