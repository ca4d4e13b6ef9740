//! The facade every front end calls: [`Resolver`] resolves a dataset, validates a request
//! against it, and answers it from the in-memory index when one answers, else from the store,
//! with the caches and the single flight in front of the store.

pub(crate) mod agg;
pub(crate) mod bodies;
mod body_reads;
pub(crate) mod call;
pub(crate) mod catalog;
pub(crate) mod catalog_search;
pub(crate) mod cursors;
pub(crate) mod export;
pub(crate) mod facets;
pub(crate) mod facts;
pub(crate) mod memo;
pub(crate) mod memory_page;
pub(crate) mod orders;
pub(crate) mod places;
pub(crate) mod record;
pub(crate) mod records;
pub(crate) mod relevance;
pub(crate) mod single_flight;
pub(crate) mod store_page;
pub(crate) mod versions;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sea_orm::DatabaseConnection;
use serde::Serialize;
use sha2::{Digest, Sha256};

pub use crate::answer::hex;
use crate::answer::views;
use crate::dataset::{Dataset, DatasetSchema};
use crate::engine::store::direct;
use crate::engine::store::files::VersionFiles;
use crate::engine::store::replicas::{Reader, Replicas};
use crate::engine::{memory, store};
use crate::error::ApiError;

/// Runs validated requests on the store. One per process, shared by REST and GraphQL; cheap
/// to share behind an `Arc`.
#[derive(Debug)]
pub struct Resolver {
    db: DatabaseConnection,
    /// `{site_url}` without a trailing slash; every URL in an answer starts with it.
    site_url: Arc<str>,
    /// Schemas of versions seen, by version id (versions never change).
    schemas: Mutex<HashMap<i64, Arc<DatasetSchema>>>,
    totals: records::Totals,
    /// Whole orders by relevance or distance, kept (see [`orders`]).
    orders: orders::Orders,
    /// Facets counted lately (see [`facets`]).
    kept_facets: facets::KeptFacets,
    datasets: catalog::Datasets,
    /// The catalog search's index (see [`catalog_search`]).
    catalog_index: catalog_search::CatalogIndex,
    memory: Arc<memory::Memory>,
    flights: Flights,
    exports: export::ExportCounters,
    /// On an SQLite file, where each version's records are, and their direct readers.
    files: Arc<VersionFiles>,
    /// Record bodies served lately, within a share of the index budget.
    bodies: bodies::Bodies,
    /// Concurrent body reads of a version on PostgreSQL, joined ([`body_reads`]).
    body_reads: body_reads::BodyReads<bodies::Stored>,
    /// The key cursors are signed with, read from the store once ([`cursors`]).
    cursor_key: tokio::sync::OnceCell<[u8; 32]>,
    /// The primary (`db`) and its read replicas: where the reads of records go.
    reads: Arc<Replicas>,
    /// Answers the in-memory index gave (for the operator's figures).
    index_answers: std::sync::atomic::AtomicU64,
    /// Where in-memory indexes are kept between runs (`ODQS_INDEX_DIR`); `None`: not kept.
    index_dir: Option<std::path::PathBuf>,
}

/// The body cache that goes with `policy`: none when indexes are off, so a store-only
/// deployment keeps its memory bound.
fn body_cache(policy: memory::IndexPolicy) -> bodies::Bodies {
    bodies::Bodies::new((policy.budget_bytes / bodies::BODY_SHARE).min(bodies::BODY_CACHE_MAX))
}

/// The engine a request runs on ([`Resolver::engine`]).
enum Engine {
    /// The in-memory index of the version; it may still leave a request's shape to the store
    /// (an agg it does not hold the columns of).
    Memory(Arc<memory::MemIndex>),
    /// The store, through the modules of [`crate::engine::store`].
    Store,
}

/// Store computations under way, by kind of answer (see [`single_flight`]).
#[derive(Debug, Default)]
struct Flights {
    records: single_flight::SingleFlight<views::RecordPage>,
    agg: single_flight::SingleFlight<views::AggResult>,
}

impl Resolver {
    /// A resolver over `db`, building URLs from `site_url`; `catalog` counts the changes of
    /// the catalog made through the same store, so that they are seen at once.
    pub fn new(db: DatabaseConnection, site_url: &str, catalog: catalog::CatalogEpoch) -> Self {
        let files = Arc::new(VersionFiles::of(&db));
        Resolver {
            files: files.clone(),
            site_url: site_url.trim_end_matches('/').into(),
            schemas: Mutex::new(HashMap::new()),
            totals: records::Totals::default(),
            orders: orders::Orders::default(),
            kept_facets: facets::KeptFacets::default(),
            datasets: catalog::Datasets::new(catalog),
            catalog_index: catalog_search::CatalogIndex::default(),
            flights: Flights::default(),
            exports: export::ExportCounters::default(),
            memory: Arc::new(memory::Memory::new(memory::IndexPolicy::default(), files)),
            bodies: body_cache(memory::IndexPolicy::default()),
            body_reads: body_reads::BodyReads::default(),
            cursor_key: tokio::sync::OnceCell::new(),
            reads: Arc::new(Replicas::new(db.clone(), Vec::new())),
            index_answers: Default::default(),
            index_dir: None,
            db,
        }
    }

    /// The same resolver reading records from `replicas` (name, connection) when they have
    /// replayed the version asked for (see [`crate::engine::store::replicas`]).
    pub fn with_replicas(mut self, replicas: Vec<(String, DatabaseConnection)>) -> Self {
        self.reads = Arc::new(Replicas::new(self.db.clone(), replicas));
        self
    }

    /// The primary and the read replicas, to check them ([`Replicas::check`]) and report them.
    pub fn replicas(&self) -> &Arc<Replicas> {
        &self.reads
    }

    /// Where to read the records of version `version_id`: its own file on SQLite, else the
    /// store (a replica that has replayed it, or the primary).
    async fn reader(&self, version_id: i64) -> Reader {
        match self.files.db(version_id).await {
            Some(file) => Reader::on(file, &self.reads),
            None => self.reads.reader(version_id).await,
        }
    }

    /// Direct reads of version `version_id` on an SQLite file (see [`direct`]).
    fn direct(&self, version_id: i64) -> Option<Arc<direct::DirectSqlite>> {
        self.files.direct(version_id)
    }

    /// The same resolver with in-memory indexes under `policy`, and record bodies kept within
    /// [`bodies::BODY_SHARE`] of its budget.
    pub fn with_index_policy(mut self, policy: memory::IndexPolicy) -> Self {
        self.memory = Arc::new(
            memory::Memory::new(policy, self.files.clone()).with_files(self.index_dir.clone()),
        );
        self.bodies = body_cache(policy);
        self
    }

    /// The same resolver keeping its in-memory indexes in files in `dir` between runs
    /// ([`memory::persist`]); `None`: built from the store after every start.
    pub fn with_index_dir(mut self, dir: Option<std::path::PathBuf>) -> Self {
        self.index_dir = dir;
        let policy = self.memory.policy();
        self.with_index_policy(policy)
    }

    /// What answers a request on `dataset`: the in-memory index of its live version when it
    /// is built (see [`memory::IndexPolicy`]), else the store. Chosen once a request.
    async fn engine(&self, dataset: &Dataset) -> Engine {
        if !dataset.is_current() {
            // An older version asked for by number: the store answers it (see `versions`).
            return Engine::Store;
        }
        let reader = self.reader(dataset.schema.version_id).await;
        match self.memory.index(&reader, dataset).await {
            Some(index) => {
                self.index_answers
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Engine::Memory(index)
            }
            None => Engine::Store,
        }
    }

    /// Starts building the live version of every dataset this instance serves (has been asked
    /// for) when it is not indexed yet, and drops the indexes of removed datasets: periodically,
    /// so versions imported by another process are indexed before their first request. A
    /// dataset never asked for here is not built (see [`memory`]).
    pub async fn refresh_indexes(&self) -> Result<(), ApiError> {
        if self.memory.policy().budget_bytes == 0 {
            return Ok(());
        }
        let datasets = store::catalog::all(&self.db).await?;
        let live: std::collections::HashSet<i64> = datasets.iter().map(|d| d.id).collect();
        self.memory.retain(&live);
        self.memory
            .prune_files(datasets.iter().map(|d| d.version_id).collect());
        for meta in datasets {
            let small = !self.memory.may_be_beyond(meta.record_count);
            if small && !self.memory.serves(meta.id) {
                // Its schema is not read: a catalog of many small datasets costs one
                // statement a refresh.
                self.memory.note_within_budget(meta.id);
                continue;
            }
            let schema = self.schema(&meta).await?;
            let dataset = Dataset { meta, schema };
            self.memory.note_budget(&dataset);
            if !self.memory.serves(dataset.meta.id) {
                continue;
            }
            let reader = self.reader(dataset.schema.version_id).await;
            self.memory.prepare(&reader, &dataset);
        }
        Ok(())
    }

    /// Each in-memory index held: slug, bytes, seconds to be ready, loaded from its file.
    pub fn index_report(&self) -> Vec<memory::Held> {
        self.memory.report()
    }

    /// The datasets the store answers because their index would be beyond the memory budget
    /// (as the last refresh found them).
    pub fn beyond_budget(&self) -> Vec<crate::engine::memory::BeyondBudget> {
        self.memory.beyond()
    }

    /// Requests the in-memory indexes answered since start.
    pub fn index_answers(&self) -> u64 {
        self.index_answers
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Bytes held by in-memory indexes.
    pub fn index_bytes(&self) -> u64 {
        self.memory.used_bytes()
    }

    /// `{base_url}`: the site URL and `/api/v1`.
    pub fn base_url(&self) -> String {
        format!("{}/api/v1", self.site_url)
    }

    /// A records page's tag, as [`Self::etag`] makes one, from the hash the request already
    /// carries (`RecordQuery::meaning`) and its page, without serializing it again.
    pub fn records_etag(&self, dataset: &Dataset, query: &crate::RecordQuery) -> String {
        let mut hasher = Sha256::new();
        hasher.update(dataset.schema.version_id.to_le_bytes());
        hasher.update(b"records");
        hasher.update(query.meaning);
        hasher.update(query.paging.page.to_le_bytes());
        let digest = hasher.finalize();
        format!("\"{}\"", hex(&digest[..16]))
    }

    /// A strong validator for an answer: it depends only on the dataset version and the
    /// normalized request, both immutable, so it can be computed before running the query.
    pub fn etag(&self, dataset: &Dataset, endpoint: &str, request: &impl Serialize) -> String {
        let mut hasher = Sha256::new();
        hasher.update(dataset.schema.version_id.to_le_bytes());
        hasher.update(endpoint.as_bytes());
        hasher.update(serde_json::to_vec(request).unwrap_or_default());
        let digest = hasher.finalize();
        format!("\"{}\"", hex(&digest[..16]))
    }
}

/// A request resolved to its dataset's live version and validated, before it runs: all a front
/// end needs to answer `If-None-Match` and to weigh the request, then run it (`run_…`).
#[derive(Clone, Debug)]
pub struct Prepared<Q> {
    pub dataset: Dataset,
    pub query: Q,
    /// The answer's tag ([`Resolver::etag`]), known before it runs.
    pub etag: String,
    /// Requests the answer weighs beyond one ([`crate::cost`]) when it reads the dataset's
    /// columns (grouped statistics, full text); `None` when it weighs one.
    pub extra: Option<u64>,
}

/// A single record asked for by `_id`, with its projection validated.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordById {
    pub id: String,
    pub fields: Option<Vec<String>>,
}

/// The records of `dataset`, for its weight.
fn record_count(dataset: &Dataset) -> u64 {
    u64::try_from(dataset.meta.record_count).unwrap_or(0)
}
