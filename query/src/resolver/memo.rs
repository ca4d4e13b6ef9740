//! Answers shared within one request of several parts (a GraphQL document's fields): a
//! per-request memo kept by the one call ([`super::call`]), so that aliases asking the same
//! thing run once and a dataset is resolved once per slug however many fields name it.
//!
//! Sibling fields of a query resolve concurrently, so each entry is a [`OnceCell`]: the first
//! caller runs the work, identical callers wait for its answer (errors included, so a refused
//! request is refused alike everywhere it appears). Keys are the dataset slug for lookups and
//! the answer's `ETag` (dataset version + endpoint + normalized request) for fetches: two
//! requests that mean the same thing share one run even if written differently.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::OnceCell;

use crate::answer::views::{AggResult, RecordPage};
use crate::dataset::Dataset;
use crate::error::ApiError;

type Slot<T> = Arc<OnceCell<Result<T, ApiError>>>;

/// One table of the memo: key → answer, computed at most once.
#[derive(Debug)]
struct Table<T> {
    slots: Mutex<HashMap<String, Slot<T>>>,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Table {
            slots: Mutex::new(HashMap::new()),
        }
    }
}

impl<T: Clone> Table<T> {
    /// The answer for `key`, running `work` only if no caller has yet; `ran` counts the runs.
    async fn get_or_run<F>(&self, key: String, ran: &AtomicUsize, work: F) -> Result<T, ApiError>
    where
        F: Future<Output = Result<T, ApiError>>,
    {
        let slot = self
            .slots
            .lock()
            .expect("memo lock")
            .entry(key)
            .or_default()
            .clone();
        slot.get_or_init(|| async {
            ran.fetch_add(1, Ordering::Relaxed);
            work.await
        })
        .await
        .clone()
    }
}

/// The memo of one request of several parts. The GraphQL handler makes a fresh one for each
/// document; a call without one shares nothing (and is answered alike).
#[derive(Debug, Default)]
pub struct Memo {
    datasets: Table<Dataset>,
    pages: Table<Arc<RecordPage>>,
    records: Table<Arc<Value>>,
    aggs: Table<Arc<AggResult>>,
    lookups: AtomicUsize,
    fetches: AtomicUsize,
}

impl Memo {
    /// How many dataset look-ups ran (one per distinct slug).
    pub fn lookups(&self) -> usize {
        self.lookups.load(Ordering::Relaxed)
    }

    /// How many store fetches ran (records pages, single records, aggregations), one per
    /// distinct normalized request.
    pub fn fetches(&self) -> usize {
        self.fetches.load(Ordering::Relaxed)
    }

    /// The dataset under `slug`, looked up by `work` once per request.
    pub(crate) async fn dataset<F>(&self, slug: &str, work: F) -> Result<Dataset, ApiError>
    where
        F: Future<Output = Result<Dataset, ApiError>>,
    {
        self.datasets
            .get_or_run(slug.to_string(), &self.lookups, work)
            .await
    }

    /// A records page, fetched by `work` once per distinct `etag`.
    pub(crate) async fn page<F>(&self, etag: String, work: F) -> Result<Arc<RecordPage>, ApiError>
    where
        F: Future<Output = Result<RecordPage, ApiError>>,
    {
        self.pages
            .get_or_run(etag, &self.fetches, async { work.await.map(Arc::new) })
            .await
    }

    /// A single record, fetched by `work` once per distinct `etag`.
    pub(crate) async fn record<F>(&self, etag: String, work: F) -> Result<Arc<Value>, ApiError>
    where
        F: Future<Output = Result<Value, ApiError>>,
    {
        self.records
            .get_or_run(etag, &self.fetches, async { work.await.map(Arc::new) })
            .await
    }

    /// An aggregation, run by `work` once per distinct `etag`.
    pub(crate) async fn agg<F>(&self, etag: String, work: F) -> Result<Arc<AggResult>, ApiError>
    where
        F: Future<Output = Result<AggResult, ApiError>>,
    {
        self.aggs
            .get_or_run(etag, &self.fetches, async { work.await.map(Arc::new) })
            .await
    }
}
