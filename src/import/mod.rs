//! `odqs import`: publish a CSV, JSON or NDJSON file as a dataset version, atomically.
//!
//! The work runs as a pipeline: a blocking thread reads and converts records (`reader`,
//! `schema`) and hands batches over a bounded channel to the store's bulk loader (`sqlite`,
//! `postgres`), so memory stays flat. The new version's tables are invisible until `activate`
//! points the dataset at them in one transaction; any failure drops them and leaves the old
//! version as it was.

mod activate;
mod bounded;
mod pipeline;
mod postgres;
pub mod progress;
pub mod reader;
pub mod schema;
mod sqlite;

use std::sync::Arc;
use std::time::Instant;

use entity::dataset_version;
use sea_orm::{ActiveModelTrait, DatabaseBackend, Set, TransactionTrait};
use time::OffsetDateTime;

use crate::store::lease::Lease;
use crate::store::{Store, StoreError, gc};
pub use progress::Progress;
use reader::{Format, Source};
use schema::SchemaFile;
use schema::infer::Inference;
use schema::plan::Plan;

/// Where in the file something went wrong.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Location {
    Line(u64),
    Record(u64),
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Line(n) => write!(f, "line {n}"),
            Location::Record(n) => write!(f, "record {n}"),
        }
    }
}

/// Why an import failed. Every variant reads as one sentence naming the place and the reason.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{location} {message}")]
    Malformed { location: Location, message: String },
    #[error("{0}")]
    Schema(String),
    #[error("invalid slug {0:?}: {SLUG_RULE}")]
    InvalidSlug(String),
    #[error(
        "{0}: the file name must end in .csv, .json, .ndjson or .jsonl, optionally followed by .gz"
    )]
    UnknownFormat(String),
    #[error("duplicate _id {id:?} at records {first} and {second}")]
    DuplicateId { id: String, first: i64, second: i64 },
    #[error("the file holds no records (a CSV file's header line is not one)")]
    Empty,
    #[error(
        "{location} is a record of more than {}, the most one record may take \
         (--max-record-mb or ODQS_MAX_RECORD_MB)",
        size_text(*limit)
    )]
    RecordTooLarge { location: Location, limit: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A byte count as written in messages: whole mebibytes as `16 MB`, anything else in bytes.
fn size_text(bytes: u64) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// One mebibyte: the unit of `--max-record-mb`, as of the other `*_MB` settings.
pub const MIB: u64 = 1024 * 1024;

/// The record size limit unless configured (`--max-record-mb`, `ODQS_MAX_RECORD_MB`): far above
/// any real record (a flight takes 300 bytes), low enough that a broken or hostile file with
/// one endless field or line is refused after 16 MB instead of growing the import without
/// bound. An import holds a few copies of a record at once (parsed, converted, batched).
pub const DEFAULT_MAX_RECORD_MB: u64 = 16;

impl From<sea_orm::DbErr> for ImportError {
    fn from(e: sea_orm::DbErr) -> Self {
        ImportError::Store(e.into())
    }
}

impl From<sqlx::Error> for ImportError {
    fn from(e: sqlx::Error) -> Self {
        ImportError::Store(e.into())
    }
}

impl From<rusqlite::Error> for ImportError {
    fn from(e: rusqlite::Error) -> Self {
        ImportError::Store(e.into())
    }
}

/// What to publish.
#[derive(Debug)]
pub struct ImportRequest {
    pub source: Source,
    pub slug: String,
    pub schema: SchemaFile,
    /// Overrides the schema's `id_field`.
    pub id_field: Option<String>,
    /// Overrides the schema's title.
    pub title: Option<String>,
    /// Overrides the schema's description.
    pub description: Option<String>,
    /// Bytes one record may take in the file (decompressed); a larger one fails the import.
    /// [`DEFAULT_MAX_RECORD_MB`] unless configured.
    pub max_record_bytes: u64,
    /// Whether the store also gets one index per typed column (`--store-indexes`). The
    /// in-memory index answers filters and sorts, so by default the store keeps only its
    /// primary key and the `_id` index (the column indexes are a large share of the file);
    /// a dataset the store answers itself (`ODQS_INDEX_MEMORY_MB=0`, or beyond the budget)
    /// scans its table without them.
    pub store_indexes: bool,
}

/// What an import did.
#[derive(Debug, Clone)]
pub struct ImportSummary {
    pub slug: String,
    pub version_id: i64,
    /// The version's number within the dataset: the new one, or the live one when nothing
    /// changed.
    pub version: i64,
    /// The file held what the live version holds: nothing was published.
    pub unchanged: bool,
    pub records: u64,
    pub fields: usize,
    pub seconds: f64,
}

/// What [`valid_slug`] allows, as messages say it.
pub const SLUG_RULE: &str =
    "use letters, digits, '-', '_', '.' and '~' (at most 100), starting with a letter or digit";

/// Whether `slug` can be one URL path segment (contract §3: dots and tildes allowed).
pub fn valid_slug(slug: &str) -> bool {
    slug.len() <= 100
        && slug
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && slug
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~'))
}

/// Publishes `request` as the new live version of its slug.
pub async fn import(
    store: &Store,
    request: ImportRequest,
    progress: Arc<dyn Progress>,
) -> Result<ImportSummary, ImportError> {
    let started = Instant::now();
    if !valid_slug(&request.slug) {
        return Err(ImportError::InvalidSlug(request.slug));
    }
    let name = request.source.name();
    let (format, gzip) =
        Format::from_name(&name).ok_or_else(|| ImportError::UnknownFormat(name.clone()))?;
    let id_field = request
        .id_field
        .clone()
        .or_else(|| request.schema.id_field.clone());
    no_nul_in_row_texts(&request, id_field.as_deref())?;
    let inferred = if needs_inference(&request, format, gzip)? {
        progress.phase("reading the file to infer field types");
        infer(&request, format, gzip, id_field.clone(), progress.clone()).await?
    } else {
        Vec::new()
    };
    let plan = Plan::new(&request.schema, &inferred, id_field.as_deref())?;
    // A declared geo pair that names no number field fails before any record is loaded.
    schema::geo::geo_pair(request.schema.geo.as_ref(), &plan.fields)?;
    let (version_id, lease) = loading_version(store, &request.slug).await?;
    let loaded = load(
        store,
        &request,
        &plan,
        version_id,
        format,
        gzip,
        progress.clone(),
    )
    .await;
    let finished = finish(store, &request, &plan, version_id, loaded, started).await;
    lease.end().await;
    if finished.is_ok()
        && let Err(e) = gc::collect_due(store, gc::RETIRED_GRACE).await
    {
        tracing::warn!(error = %e, "could not drop retired dataset versions");
    }
    finished
}

/// What an import did once its version was loaded and published (or found unchanged); a
/// failed import's version is dropped.
async fn finish(
    store: &Store,
    request: &ImportRequest,
    plan: &Plan,
    version_id: i64,
    loaded: Result<(u64, activate::Published), ImportError>,
    started: Instant,
) -> Result<ImportSummary, ImportError> {
    let (records, published) = match loaded {
        Ok(loaded) => loaded,
        Err(error) => {
            if let Err(e) = gc::drop_version(store, version_id).await {
                tracing::warn!(error = %e, version = version_id, "could not clean up a failed import");
            }
            return Err(error);
        }
    };
    let (number, unchanged) = match published {
        activate::Published::New(number) => (number, false),
        activate::Published::Unchanged(number) => (number, true),
    };
    if unchanged {
        gc::drop_version(store, version_id).await?;
    }
    Ok(ImportSummary {
        slug: request.slug.clone(),
        version_id,
        version: number,
        unchanged,
        records,
        fields: plan.fields.len(),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Refuses a NUL character in the texts the dataset row keeps.
fn no_nul_in_row_texts(request: &ImportRequest, id_field: Option<&str>) -> Result<(), ImportError> {
    for (what, value) in [
        ("the title", request.title.as_deref()),
        ("the description", request.description.as_deref()),
        ("the id field", id_field),
    ] {
        if let Some(value) = value {
            schema::check_no_nul(what, value)?;
        }
    }
    Ok(())
}

/// A new version of `slug`, loading: no reader sees it until it goes live. The import holds it
/// ([`Lease`]) until it ends, so a killed import's version is found dead and removed. Returns
/// the version's id.
async fn loading_version(store: &Store, slug: &str) -> Result<(i64, Lease), ImportError> {
    if let Some((id, lease)) = Lease::reserve(store).await? {
        insert_loading_pg(store, id, slug).await?;
        return Ok((id, lease));
    }
    let txn = store.db.begin().await?;
    let version = dataset_version::ActiveModel {
        slug: Set(slug.to_string()),
        state: Set(dataset_version::STATE_LOADING.into()),
        record_count: Set(0),
        created_at: Set(OffsetDateTime::now_utc()),
        retired_at: Set(None),
        ..Default::default()
    }
    .insert(&txn)
    .await?;
    txn.commit().await?;
    Ok((version.id, Lease::take(store, version.id)?))
}

/// The loading version's row on PostgreSQL, under the id its lease reserved: one statement, its
/// own transaction, whose commit does not wait for the disk (see `postgres`'s module doc for
/// why nothing is lost by it).
async fn insert_loading_pg(store: &Store, id: i64, slug: &str) -> Result<(), ImportError> {
    sqlx::query(
        "INSERT INTO \"dataset_versions\" (\"id\", \"slug\", \"state\", \"record_count\", \"created_at\") \
         SELECT $1, $2, $3, 0, $4 FROM (SELECT set_config('synchronous_commit', 'off', true)) AS \"unsynced\"",
    )
    .bind(id)
    .bind(slug)
    .bind(dataset_version::STATE_LOADING)
    .bind(OffsetDateTime::now_utc())
    .execute(store.db.get_postgres_connection_pool())
    .await?;
    Ok(())
}

/// Inference is needed unless a schema file lists every column of a CSV header.
fn needs_inference(
    request: &ImportRequest,
    format: Format,
    gzip: bool,
) -> Result<bool, ImportError> {
    if request.schema.fields.is_empty() || format != Format::Csv {
        return Ok(true);
    }
    let headers = reader::csv_headers(
        request.source.open(gzip, Arc::default())?,
        request.max_record_bytes,
    )?;
    Ok(headers
        .iter()
        .any(|h| !request.schema.fields.iter().any(|f| &f.name == h)))
}

/// Reads the whole file once for the types of the fields the schema does not list. Every
/// record is checked here already (size, NUL, `_id`, number of fields), so a file with such a
/// fault fails before anything is written to the store.
async fn infer(
    request: &ImportRequest,
    format: Format,
    gzip: bool,
    id_field: Option<String>,
    progress: Arc<dyn Progress>,
) -> Result<Vec<(String, entity::FieldType)>, ImportError> {
    let source = request.source.clone();
    let max_record_bytes = request.max_record_bytes;
    let mut inference = Inference::new(&request.schema);
    tokio::task::spawn_blocking(move || {
        let consumed = Arc::default();
        let input = source.open(gzip, Arc::clone(&consumed))?;
        let own_id = id_field.as_deref() == Some(schema::ID);
        let mut count = 0u64;
        reader::read_records(input, format, max_record_bytes, |record| {
            let malformed = |message| ImportError::Malformed {
                location: record.location,
                message,
            };
            schema::plan::check_reserved_id(&record.object, own_id).map_err(malformed)?;
            inference
                .observe(&record.object, record.untyped)
                .map_err(malformed)?;
            count += 1;
            if count.is_multiple_of(4096) {
                progress.records(count, &consumed);
            }
            Ok(())
        })?;
        // A file with a header and nothing after it: said as such here, before the plan
        // looks for the id field among fields no record has shown.
        if count == 0 {
            return Err(ImportError::Empty);
        }
        Ok(inference.finish(id_field.as_deref()))
    })
    .await
    .expect("the inference thread does not panic")
}

#[allow(clippy::too_many_arguments)]
async fn load(
    store: &Store,
    request: &ImportRequest,
    plan: &Plan,
    version_id: i64,
    format: Format,
    gzip: bool,
    progress: Arc<dyn Progress>,
) -> Result<(u64, activate::Published), ImportError> {
    progress.phase("loading records");
    let small = is_small(&request.source, gzip);
    let handing = pipeline::Handing {
        pack: store.backend() == DatabaseBackend::Sqlite,
        check_ids: small,
    };
    let (producer, batches) = pipeline::start(
        request.source.clone(),
        format,
        gzip,
        request.max_record_bytes,
        plan.clone(),
        handing,
        progress.clone(),
    );
    let loaded = match store.backend() {
        DatabaseBackend::Postgres => {
            let pool = store.db.get_postgres_connection_pool();
            postgres::load(
                pool,
                version_id,
                plan,
                batches,
                small,
                request.store_indexes,
            )
            .await
        }
        _ => {
            sqlite::load(
                store.db.get_sqlite_connection_pool(),
                version_id,
                plan,
                batches,
            )
            .await
        }
    };
    // The reader's error explains a closed channel better than the loader's, so it comes first.
    let records = producer.await.expect("the reader thread does not panic")?;
    let loaded = loaded?;
    debug_assert_eq!(records, loaded);
    if records == 0 {
        return Err(ImportError::Empty);
    }
    progress.phase("building indexes");
    match store.backend() {
        DatabaseBackend::Postgres => {
            let pool = store.db.get_postgres_connection_pool();
            postgres::build_indexes(pool, version_id, plan, request.store_indexes, small).await?
        }
        _ => {
            let pool = store.db.get_sqlite_connection_pool();
            sqlite::build_indexes(pool, version_id, plan, request.store_indexes).await?
        }
    }
    progress.phase("comparing with the live version");
    let published = activate::activate(store, request, plan, version_id, records).await?;
    Ok((records, published))
}

/// Stored bytes of a file small enough that its ids are checked in memory and, on PostgreSQL,
/// its rows gathered in memory before its tables are made to fit them (`postgres::small`).
/// A compressed file counts eight times its size.
const SMALL_SOURCE_BYTES: u64 = 4 * MIB;

/// Whether `source` is small ([`SMALL_SOURCE_BYTES`]).
fn is_small(source: &Source, gzip: bool) -> bool {
    let factor = if gzip { 8 } else { 1 };
    source
        .size()
        .is_some_and(|size| size.saturating_mul(factor) <= SMALL_SOURCE_BYTES)
}

/// The columns of a `records_v{N}` table in one store's dialect: the definitions for
/// `CREATE TABLE` and the quoted names for `INSERT`/`COPY`, in the order rows carry their cells.
struct RecordColumns {
    definitions: Vec<String>,
    names: Vec<String>,
}

impl RecordColumns {
    /// `shared` declares `pos`, `_id` and `doc`; `column_type` gives each typed column's type.
    fn new(
        plan: &Plan,
        shared: [&str; 3],
        column_type: fn(entity::FieldType) -> &'static str,
    ) -> Self {
        let mut definitions: Vec<String> = ["pos", "_id", "doc"]
            .iter()
            .zip(shared)
            .map(|(name, declaration)| format!("\"{name}\" {declaration}"))
            .collect();
        let mut names: Vec<String> = ["\"pos\"", "\"_id\"", "\"doc\""].map(String::from).into();
        for field in plan.columns() {
            let column = field.column.as_deref().expect("columns() has columns");
            definitions.push(format!("\"{column}\" {}", column_type(field.field_type)));
            names.push(format!("\"{column}\""));
        }
        RecordColumns { definitions, names }
    }
}

/// SQL that finds the first duplicated `_id` of a loaded records table with two of its record
/// positions. Run when the unique index fails to build, so the error can name the records.
fn duplicate_id_sql(version_id: i64) -> String {
    let table = entity::record::records_table(version_id);
    format!(
        "SELECT \"_id\", MIN(\"pos\"), MAX(\"pos\") FROM \"{table}\" GROUP BY \"_id\" \
         HAVING COUNT(*) > 1 ORDER BY MIN(\"pos\") LIMIT 1"
    )
}

fn duplicate_error(found: Option<(String, i64, i64)>) -> Result<(), ImportError> {
    match found {
        Some((id, first, second)) => Err(ImportError::DuplicateId { id, first, second }),
        None => Ok(()),
    }
}
