//! What requests keep so they skip the store: totals ([`Totals`]) and resolved datasets
//! ([`Datasets`]).
//!
//! Totals that don't cost a scan. A `COUNT(*)` of a large match costs 100–200 ms, and paging
//! through one query asks for the same total on every page; datasets change only by import, so
//! a total is a pure function of (version, normalized condition) and can be kept. The map is
//! bounded: when full it starts over, which costs at most one recount per entry.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::Dataset;

/// Entries kept before the cache starts over (a few MB at most).
const CAPACITY: usize = 50_000;

/// Counts by key; keys start with the version id, so a new version never sees an old count.
#[derive(Debug, Default)]
pub struct Totals {
    map: Mutex<HashMap<String, u64>>,
}

impl Totals {
    /// The count kept for `key`, if any.
    pub fn get(&self, key: &str) -> Option<u64> {
        self.map.lock().expect("totals lock").get(key).copied()
    }

    /// Keeps `count` for `key`.
    pub fn put(&self, key: String, count: u64) {
        let mut map = self.map.lock().expect("totals lock");
        if map.len() >= CAPACITY {
            map.clear();
        }
        map.insert(key, count);
    }
}

/// How long a resolved dataset is believed without asking the store again. A re-import or a
/// removal made by another process (`odqs import` beside `odqs serve`, another instance behind
/// the load balancer) is therefore served everywhere within this time of its commit; one made
/// in this process is seen at once ([`catalog_changed`]). The old version stays readable for
/// far longer (`RETIRED_GRACE`), so a request still resolved to it reads a whole, consistent
/// version.
pub const DATASET_FRESH_FOR: Duration = Duration::from_secs(1);

/// Slugs kept before the cache starts over (there are rarely more datasets).
const DATASET_CAPACITY: usize = 10_000;

/// Bumped by every change of the catalog made in this process.
static CATALOG_EPOCH: AtomicU64 = AtomicU64::new(0);

/// Says that this process published, replaced or removed a dataset: every resolver forgets
/// what it resolved before. Imports and removals call it after their commit.
pub fn catalog_changed() {
    CATALOG_EPOCH.fetch_add(1, Ordering::SeqCst);
}

/// Published datasets resolved lately, by slug, so a request for a known dataset costs no
/// store statement (issue 13). Only found datasets are kept.
#[derive(Debug, Default)]
pub struct Datasets {
    map: Mutex<HashMap<String, (Dataset, Instant, u64)>>,
}

impl Datasets {
    /// The epoch to give [`Self::put`] with a dataset about to be read from the store: read
    /// before the statement, so a change committed meanwhile is not hidden.
    pub fn epoch(&self) -> u64 {
        CATALOG_EPOCH.load(Ordering::SeqCst)
    }

    /// The dataset kept for `slug`, if resolved within [`DATASET_FRESH_FOR`] and no catalog
    /// change of this process came after.
    pub fn get(&self, slug: &str) -> Option<Dataset> {
        let map = self.map.lock().expect("datasets lock");
        let (dataset, at, epoch) = map.get(slug)?;
        (*epoch == self.epoch() && at.elapsed() < DATASET_FRESH_FOR).then(|| dataset.clone())
    }

    /// Keeps `dataset` for `slug`, read from the store at `epoch` (see [`Self::epoch`]).
    pub fn put(&self, slug: &str, dataset: Dataset, epoch: u64) {
        let mut map = self.map.lock().expect("datasets lock");
        if map.len() >= DATASET_CAPACITY {
            map.clear();
        }
        map.insert(slug.to_string(), (dataset, Instant::now(), epoch));
    }
}
