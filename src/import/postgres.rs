//! Bulk loading into PostgreSQL: `COPY … FROM STDIN` streams for the records (two, taking
//! batches in turn, in the binary format: [`binary`]) and the text dictionary, side by side on
//! their own connections; keys and indexes built after the load. The dictionary gets a
//! `pg_trgm` GIN index, so substring search in any script avoids a scan. A small load takes
//! another way ([`small`]).
//!
//! Every statement runs on a session of the import's own whose commits do not wait for the
//! disk ([`Unsynced`]): a small import is many commits, and waiting for each to be flushed
//! cost more than the work. Nothing is lost by it: the version goes live in a commit that does
//! wait, and PostgreSQL writes its log in order, so when that commit is on disk, so is
//! everything the import wrote before it; a crash before it leaves a loading version that the
//! garbage collector removes.

use std::io::Write;

use entity::FieldType;
use entity::record::{column_index, records_table, text_table};
use sqlx::AssertSqlSafe;
use sqlx::PgPool;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnection, PgCopyIn, Postgres};
use tokio::sync::mpsc;

use super::pipeline::Batch;
use super::schema::plan::{Cell, Plan};
use super::{ImportError, RecordColumns, duplicate_error, duplicate_id_sql};

mod binary;
mod small;

/// Strings compare byte-wise (`COLLATE "C"`, code-point order), as SQLite's default does, so
/// both stores sort keywords identically whatever the database's locale.
fn column_type(field_type: FieldType) -> &'static str {
    match field_type {
        FieldType::Number => "double precision",
        FieldType::Text => "bigint",
        _ => "text COLLATE \"C\"",
    }
}

/// Creates the version's tables and streams every batch into them; a `small` load's (whose ids
/// the reader checks) is laid out as [`small`] says, with its indexes (ordered ones when the
/// store's column indexes are asked for: `store_indexes`). Returns the record count.
pub async fn load(
    pool: &PgPool,
    version_id: i64,
    plan: &Plan,
    mut batches: mpsc::Receiver<Batch>,
    small: bool,
    store_indexes: bool,
) -> Result<u64, ImportError> {
    let records = records_table(version_id);
    let texts = text_table(version_id);
    let RecordColumns {
        definitions: columns,
        names,
    } = RecordColumns::new(
        plan,
        [
            "bigint NOT NULL",
            "text COLLATE \"C\" NOT NULL",
            "jsonb NOT NULL",
        ],
        column_type,
    );
    if small {
        // Gathered before a session is taken: none is held while the file is read.
        let batches = small::gather(batches).await;
        let sizes = small::Sizes::of(&batches);
        let create = small::create_tables(version_id, (&columns, &names), &sizes);
        let mut conn = Unsynced::acquire_running(pool, &in_version(version_id, &create)).await?;
        let count = small::insert(&mut conn, version_id, plan, &names, &batches).await?;
        let indexes = small::index_statements(version_id, store_indexes, &sizes);
        conn.release_after(&indexes).await?;
        return Ok(count);
    }
    let create = create_tables(version_id, &columns);
    let mut first_conn = Unsynced::acquire_running(pool, &in_version(version_id, &create)).await?;
    let [mut second_conn, mut text_conn] = [
        Unsynced::acquire(pool).await?,
        Unsynced::acquire(pool).await?,
    ];

    // Two records streams: each is one server backend parsing rows (the JSONB body and every
    // typed column), and with one that backend is the bottleneck of a large import while the
    // reader has time to spare. Binary, so that neither side escapes or scans the bodies'
    // text for escapes, and numbers go as their bits, not as text to parse.
    let copy_records = format!(
        "COPY \"{records}\" ({}) FROM STDIN (FORMAT binary)",
        names.join(", ")
    );
    let first_stream = first_conn.copy_in_raw(&copy_records).await?;
    let second_stream = second_conn.copy_in_raw(&copy_records).await?;
    let text_stream = text_conn
        .copy_in_raw(&format!("COPY \"{texts}\" (\"tid\", \"value\") FROM STDIN"))
        .await?;
    let (first, first_tuples) = mpsc::channel(STREAM_BATCHES);
    let (second, second_tuples) = mpsc::channel(STREAM_BATCHES);
    let (text_sender, text_lines_sent) = mpsc::channel(STREAM_BATCHES);
    // Batches go to the records streams in turn. A closed channel means its stream failed, and
    // that stream's error is the one reported.
    let dispatch = async move {
        let record_senders = [first, second];
        let mut count = 0u64;
        let mut turn = 0;
        while let Some(batch) = batches.recv().await {
            count += batch.rows.len() as u64;
            if !batch.texts.is_empty() && text_sender.send(text_lines(&batch)).await.is_err() {
                break;
            }
            if record_senders[turn]
                .send(record_tuples(&batch)?)
                .await
                .is_err()
            {
                break;
            }
            turn = (turn + 1) % record_senders.len();
        }
        Ok::<_, sqlx::Error>(count)
    };
    let binary_frame = [binary::HEADER, binary::TRAILER];
    let (count, ..) = tokio::try_join!(
        dispatch,
        feed(first_stream, first_tuples, binary_frame),
        feed(second_stream, second_tuples, binary_frame),
        feed(text_stream, text_lines_sent, [&[], &[]]),
    )?;
    for conn in [first_conn, second_conn, text_conn] {
        conn.release().await?;
    }
    Ok(count)
}

/// `create`, statements that create version `version_id`'s tables, run in one transaction
/// with the version's row locked, or failing if it is gone. The garbage collector removes a
/// killed import's row, then its tables, in one transaction (`gc::drop_version`); the import's
/// server session may still be running this when the collector sees the import gone, and the
/// lock makes one wait for the other, so no table outlives its row.
fn in_version(version_id: i64, create: &str) -> String {
    format!(
        "DO $$ BEGIN \
         PERFORM 1 FROM \"dataset_versions\" WHERE \"id\" = {version_id} FOR UPDATE; \
         IF NOT FOUND THEN RAISE EXCEPTION 'version {version_id} was removed'; END IF; \
         END $$; {create}"
    )
}

/// The statements that create version `version_id`'s tables with their `columns`, to run as
/// one.
fn create_tables(version_id: i64, columns: &[String]) -> String {
    format!(
        "CREATE TABLE \"{}\" ({}); CREATE TABLE \"{}\" ({TEXT_KEY}, {TEXT_VALUE})",
        records_table(version_id),
        columns.join(", "),
        text_table(version_id)
    )
}

/// The text dictionary's columns: the id records refer to, and the lower-cased text.
const TEXT_KEY: &str = "\"tid\" bigint NOT NULL";
const TEXT_VALUE: &str = "\"value\" text NOT NULL";

/// A session of the import's own whose commits do not wait for the disk (see the module's
/// doc). Its settings are reset before it goes back to the pool; dropped without that (an
/// error on the way), it is closed instead, so no other use of the pool inherits them.
struct Unsynced(Option<PoolConnection<Postgres>>);

/// The settings of an [`Unsynced`] session.
const UNSYNCED: &str = "SET synchronous_commit = off; SET maintenance_work_mem = '256MB'";

impl Unsynced {
    async fn acquire(pool: &PgPool) -> Result<Self, sqlx::Error> {
        Self::acquire_running(pool, "").await
    }

    /// [`Self::acquire`], running `first` (statements this module generated) in the same round
    /// trip as the settings.
    async fn acquire_running(pool: &PgPool, first: &str) -> Result<Self, sqlx::Error> {
        // Held as `Unsynced` at once: a failure below closes the session.
        let mut unsynced = Unsynced(Some(pool.acquire().await?));
        exec(&mut *unsynced, joined(UNSYNCED, first)).await?;
        Ok(unsynced)
    }

    /// Resets the session's settings and gives it back to the pool.
    async fn release(self) -> Result<(), sqlx::Error> {
        self.release_after(&[]).await
    }

    /// [`Self::release`], running `last` (statements this module generated) first, in the same
    /// round trip.
    async fn release_after(mut self, last: &[String]) -> Result<(), sqlx::Error> {
        let mut conn = self.0.take().expect("released once");
        let reset = exec(&mut *conn, joined(&last.join("; "), "RESET ALL")).await;
        if reset.is_err() {
            conn.close_on_drop();
        }
        reset
    }
}

/// Two runs of statements as one.
fn joined(first: &str, then: &str) -> String {
    match (first.is_empty(), then.is_empty()) {
        (true, _) => then.to_string(),
        (_, true) => first.to_string(),
        _ => format!("{first}; {then}"),
    }
}

impl std::ops::Deref for Unsynced {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        self.0.as_ref().expect("not released")
    }
}

impl std::ops::DerefMut for Unsynced {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.0.as_mut().expect("not released")
    }
}

impl Drop for Unsynced {
    fn drop(&mut self) {
        if let Some(conn) = self.0.as_mut() {
            conn.close_on_drop();
        }
    }
}

/// Batches of `COPY` data waiting for each stream; bounds memory.
const STREAM_BATCHES: usize = 2;

/// Sends `start`, each buffer of `COPY` data, then `end` to `stream`, and finishes it once the
/// channel closes: the binary format frames its data ([`binary::HEADER`],
/// [`binary::TRAILER`]), the text format does not (both empty).
async fn feed(
    mut stream: PgCopyIn<&mut PgConnection>,
    mut buffers: mpsc::Receiver<Vec<u8>>,
    [start, end]: [&[u8]; 2],
) -> Result<u64, sqlx::Error> {
    if !start.is_empty() {
        stream.send(start).await?;
    }
    while let Some(buffer) = buffers.recv().await {
        stream.send(buffer).await?;
    }
    if !end.is_empty() {
        stream.send(end).await?;
    }
    stream.finish().await
}

/// A batch's records as binary `COPY` tuples: `pos`, `_id`, the body and the typed columns.
fn record_tuples(batch: &Batch) -> Result<Vec<u8>, sqlx::Error> {
    let mut buffer = Vec::with_capacity(batch.rows.iter().map(|r| r.doc.len() + 256).sum());
    for row in &batch.rows {
        debug_assert!(!row.packed, "PostgreSQL stores bodies as JSONB objects");
        // The body holds the id and every typed value, so no field is longer than it.
        if row.doc.len() >= binary::MAX_FIELD_BYTES {
            return Err(sqlx::Error::Encode(
                format!(
                    "record {} takes {} bytes as JSON; PostgreSQL holds at most {} in a value",
                    row.pos,
                    row.doc.len(),
                    binary::MAX_FIELD_BYTES
                )
                .into(),
            ));
        }
        binary::tuple(&mut buffer, 3 + row.cells.len());
        binary::field(&mut buffer, &row.pos.to_be_bytes());
        binary::field(&mut buffer, row.id.as_bytes());
        binary::jsonb(&mut buffer, &row.doc);
        for cell in &row.cells {
            match cell {
                Cell::Null => binary::null(&mut buffer),
                Cell::Str(s) | Cell::Text(s) => binary::field(&mut buffer, s.as_bytes()),
                Cell::Num(n) => binary::field(&mut buffer, &n.to_be_bytes()),
                Cell::TextId(id) => binary::field(&mut buffer, &id.to_be_bytes()),
            }
        }
    }
    Ok(buffer)
}

/// The text-dictionary entries a batch introduced, as `COPY` text lines.
fn text_lines(batch: &Batch) -> Vec<u8> {
    let mut buffer = Vec::new();
    for (id, text) in &batch.texts {
        write!(buffer, "{id}").expect("writing to a Vec cannot fail");
        buffer.push(b'\t');
        escape(&mut buffer, text);
        buffer.push(b'\n');
    }
    buffer
}

/// Escapes a value for COPY's text format.
fn escape(out: &mut Vec<u8>, value: &str) {
    for &b in value.as_bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            _ => out.push(b),
        }
    }
}

/// Primary keys, the unique `_id` index and the trigram index of the text dictionary.
fn key_statements(version_id: i64) -> Vec<String> {
    let records = records_table(version_id);
    let texts = text_table(version_id);
    vec![
        format!("ALTER TABLE \"{records}\" ADD PRIMARY KEY (\"pos\")"),
        format!("CREATE UNIQUE INDEX \"{records}_id\" ON \"{records}\" (\"_id\")"),
        format!("ALTER TABLE \"{texts}\" ADD PRIMARY KEY (\"tid\")"),
        trigram_index(version_id),
    ]
}

/// The text dictionary's `pg_trgm` index: substring search in any script without a scan.
fn trigram_index(version_id: i64) -> String {
    let texts = text_table(version_id);
    format!("CREATE INDEX \"{texts}_trgm\" ON \"{texts}\" USING gin (\"value\" gin_trgm_ops)")
}

/// The keys ([`key_statements`], naming a duplicate `_id` when the unique index fails) unless
/// the load was `small` (whose indexes came with its tables), with `columns` one
/// `(column, pos)` index per typed column, then planner statistics. A small load without
/// `columns` has nothing built and no statistics: autovacuum gathers a small table's soon
/// after, and until then the planner takes its size from its pages, all it needs where it has
/// no column index to choose.
pub async fn build_indexes(
    pool: &PgPool,
    version_id: i64,
    plan: &Plan,
    columns: bool,
    small: bool,
) -> Result<(), ImportError> {
    let records = records_table(version_id);
    let texts = text_table(version_id);
    let mut statements = if small {
        Vec::new()
    } else {
        key_statements(version_id)
    };
    for field in plan.columns().filter(|_| columns) {
        let column = field.column.as_deref().expect("columns() has columns");
        let index = column_index(version_id, column);
        statements.push(format!(
            "CREATE INDEX \"{index}\" ON \"{records}\" (\"{column}\", \"pos\")"
        ));
    }
    if statements.is_empty() {
        return Ok(());
    }
    let mut conn = Unsynced::acquire(pool).await?;
    // Index builds are CPU-bound and independent: two sessions build two at a time.
    let mut other = match statements.len() {
        1 => None,
        _ => Some(Unsynced::acquire(pool).await?),
    };
    let (even, odd): (Vec<_>, Vec<_>) = statements
        .into_iter()
        .enumerate()
        .partition(|(i, _)| i % 2 == 0);
    let built = match other.as_mut() {
        Some(other) => tokio::try_join!(run_all(&mut conn, even), run_all(other, odd)).map(|_| ()),
        None => run_all(&mut conn, even).await,
    };
    if let Err(error) = built {
        // A duplicated `_id` fails the unique index, and only then is it looked for, to name
        // both records: looking first would read the whole table once more, a large part of
        // the time the indexes take.
        if let sqlx::Error::Database(e) = &error
            && e.is_unique_violation()
        {
            let found: Option<(String, i64, i64)> =
                sqlx::query_as(AssertSqlSafe(duplicate_id_sql(version_id)))
                    .fetch_optional(&mut *pool.acquire().await?)
                    .await?;
            duplicate_error(found)?;
        }
        return Err(error.into());
    }
    let analyze = format!("ANALYZE \"{records}\"; ANALYZE \"{texts}\"");
    exec(&mut *conn, analyze).await?;
    conn.release().await?;
    if let Some(other) = other {
        other.release().await?;
    }
    Ok(())
}

/// Runs statements one after the other on one session.
async fn run_all(
    conn: &mut sqlx::PgConnection,
    statements: Vec<(usize, String)>,
) -> Result<(), sqlx::Error> {
    for (_, statement) in statements {
        exec(&mut *conn, statement).await?;
    }
    Ok(())
}

/// Runs statements (one, or several separated by `;`, in one commit) whose SQL this module
/// generated from checked names (no user input).
async fn exec<'c>(
    executor: impl sqlx::Executor<'c, Database = sqlx::Postgres>,
    sql: String,
) -> Result<(), sqlx::Error> {
    sqlx::raw_sql(AssertSqlSafe(sql)).execute(executor).await?;
    Ok(())
}
