//! Bulk loading into SQLite: multi-row inserts through prepared statements, committed every few
//! batches so other writers of the file are not locked out for a whole import; indexes built
//! after the load, when it is cheapest. Text values go into an FTS5 table with the trigram
//! tokenizer, which finds substrings in any script, Chinese included.

use entity::FieldType;
use entity::record::{column_index, records_table, text_table};
use sqlx::Arguments;
use sqlx::AssertSqlSafe;
use sqlx::SqlitePool;
use sqlx::sqlite::{Sqlite, SqliteArguments};
use tokio::sync::mpsc;

use super::pipeline::Batch;
use super::schema::{Cell, Plan};
use super::{ImportError, RecordColumns, duplicate_error, duplicate_id_sql};

/// SQLite's default limit of bound parameters per statement is 32766.
const MAX_PARAMS: usize = 32_000;
/// Text-dictionary rows per insert statement.
const TEXTS_PER_STATEMENT: usize = 500;
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
    let mut tx = pool.begin().await?;
    exec(
        &mut *tx,
        format!("CREATE TABLE \"{records}\" ({})", columns.join(", ")),
    )
    .await?;
    exec(&mut *tx, format!(
        "CREATE VIRTUAL TABLE \"{texts}\" USING fts5(value, tokenize = 'trigram case_sensitive 1')"
    )).await?;

    let per_row = names.len();
    let rows_per_statement = (MAX_PARAMS / per_row).clamp(1, 500);
    let insert = |n: usize| {
        let tuple = format!("({})", vec!["?"; per_row].join(","));
        format!(
            "INSERT INTO \"{records}\" ({}) VALUES {}",
            names.join(","),
            vec![tuple; n].join(",")
        )
    };
    let insert_texts = |n: usize| {
        format!(
            "INSERT INTO \"{texts}\" (rowid, value) VALUES {}",
            vec!["(?,?)"; n].join(",")
        )
    };
    let full_insert = insert(rows_per_statement);
    let full_text_insert = insert_texts(TEXTS_PER_STATEMENT);

    let mut count = 0u64;
    let mut since_commit = 0;
    while let Some(batch) = batches.recv().await {
        // Rows are moved into the statement's arguments: a record's JSON is never copied.
        let mut rows = batch.rows.into_iter().peekable();
        while rows.peek().is_some() {
            let mut args = SqliteArguments::default();
            let mut n = 0;
            for row in rows.by_ref().take(rows_per_statement) {
                args.add(row.pos).map_err(sqlx::Error::Encode)?;
                args.add(row.id).map_err(sqlx::Error::Encode)?;
                args.add(row.doc).map_err(sqlx::Error::Encode)?;
                for cell in row.cells {
                    bind(&mut args, cell)?;
                }
                n += 1;
            }
            let sql = if n == rows_per_statement {
                full_insert.clone()
            } else {
                insert(n)
            };
            sqlx::query_with::<Sqlite, _>(AssertSqlSafe(sql), args)
                .execute(&mut *tx)
                .await?;
            count += n as u64;
        }
        let mut texts = batch.texts.into_iter().peekable();
        while texts.peek().is_some() {
            let mut args = SqliteArguments::default();
            let mut n = 0;
            for (id, text) in texts.by_ref().take(TEXTS_PER_STATEMENT) {
                args.add(id).map_err(sqlx::Error::Encode)?;
                args.add(text).map_err(sqlx::Error::Encode)?;
                n += 1;
            }
            let sql = if n == TEXTS_PER_STATEMENT {
                full_text_insert.clone()
            } else {
                insert_texts(n)
            };
            sqlx::query_with::<Sqlite, _>(AssertSqlSafe(sql), args)
                .execute(&mut *tx)
                .await?;
        }
        since_commit += 1;
        if since_commit == BATCHES_PER_COMMIT {
            tx.commit().await?;
            tx = pool.begin().await?;
            since_commit = 0;
        }
    }
    tx.commit().await?;
    Ok(count)
}

fn bind(args: &mut SqliteArguments, cell: Cell) -> Result<(), sqlx::Error> {
    match cell {
        Cell::Null => args.add(Option::<String>::None),
        Cell::Str(s) | Cell::Text(s) => args.add(s),
        Cell::Num(n) => args.add(n),
        Cell::TextId(id) => args.add(id),
    }
    .map_err(sqlx::Error::Encode)
}

/// The unique `_id` index (after naming any duplicate), one index per typed column, and
/// planner statistics.
pub async fn build_indexes(
    pool: &SqlitePool,
    version_id: i64,
    plan: &Plan,
) -> Result<(), ImportError> {
    let records = records_table(version_id);
    let found: Option<(String, i64, i64)> =
        sqlx::query_as(AssertSqlSafe(duplicate_id_sql(version_id)))
            .fetch_optional(pool)
            .await?;
    duplicate_error(found)?;
    let mut tx = pool.begin().await?;
    // Index builds sort on helper threads too (issue 13: 30% faster a column on 2 cores).
    exec(&mut *tx, format!("PRAGMA threads = {}", sort_threads())).await?;
    for field in plan.columns() {
        let column = field.column.as_deref().expect("columns() has columns");
        let index = column_index(version_id, column);
        exec(
            &mut *tx,
            format!("CREATE INDEX \"{index}\" ON \"{records}\" (\"{column}\")"),
        )
        .await?;
    }
    exec(&mut *tx, "PRAGMA threads = 0".to_string()).await?;
    tx.commit().await?;
    let mut conn = pool.acquire().await?;
    sqlx::query("PRAGMA analysis_limit = 1000")
        .execute(&mut *conn)
        .await?;
    exec(&mut *conn, format!("ANALYZE \"{records}\"")).await?;
    sqlx::query("PRAGMA analysis_limit = 0")
        .execute(&mut *conn)
        .await?;
    // ANALYZE does not make other connections reload statistics; a schema change does. So the
    // last index comes after it, and every connection of every process plans with the new
    // statistics (one that had read the schema before ANALYZE planned without them and chose
    // full scans). The `_id` index needs no statistics: it is unique.
    exec(
        &mut *conn,
        format!("CREATE UNIQUE INDEX \"{records}_id\" ON \"{records}\" (\"_id\")"),
    )
    .await?;
    Ok(())
}

/// Helper threads SQLite may use to sort an index's entries: the machine's cores, at most 4.
fn sort_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// Runs one statement whose SQL this module generated from checked names (no user input).
async fn exec<'c>(
    executor: impl sqlx::Executor<'c, Database = sqlx::Sqlite>,
    sql: String,
) -> Result<(), sqlx::Error> {
    sqlx::query(AssertSqlSafe(sql)).execute(executor).await?;
    Ok(())
}
