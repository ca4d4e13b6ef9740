//! What requests keep so they skip the store: totals ([`Totals`]), resolved datasets
//! ([`Datasets`]) and record bodies ([`Bodies`]).
//!
//! Totals that don't cost a scan. A `COUNT(*)` of a large match is a scan, and paging
//! through one query asks for the same total on every page; datasets change only by import, so
//! a total is a pure function of (version, normalized condition) and can be kept. The map is
//! bounded: when full it starts over, which costs at most one recount per entry.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::dataset::Dataset;

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
/// store statement. Only found datasets are kept.
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

/// The share of the in-memory index budget (`ODQS_INDEX_MEMORY_MB`) that record bodies may
/// take besides: a sixteenth, 64 MiB of the default 1 GiB.
pub const BODY_SHARE: u64 = 16;

/// Bytes one kept body costs besides its text: its key, the text's counted header and the
/// map's slot.
const BODY_OVERHEAD: usize = 64;

/// Record bodies as answers write them (shaped, without a projection), by (version, position),
/// so a page or a record asked for again costs no store statement and no reshaping
/// (on PostgreSQL a page's round trip and its JSONB re-read are most of a simple read).
/// Versions never change, so a kept body is never stale. Two generations bound the memory:
/// bodies go into the young one, and when it holds half the budget the old one is dropped and
/// the young one takes its place; a body found in the old one moves back into the young one.
/// Bodies asked for again and again stay; the rest are dropped a generation later.
#[derive(Debug, Default)]
pub struct Bodies {
    /// Bytes both generations may take together; 0 keeps nothing.
    budget: usize,
    generations: Mutex<Generations>,
}

#[derive(Debug, Default)]
struct Generations {
    young: HashMap<(i64, i64), Arc<str>>,
    young_bytes: usize,
    old: HashMap<(i64, i64), Arc<str>>,
}

impl Generations {
    fn insert(&mut self, key: (i64, i64), body: Arc<str>, half: usize) {
        let bytes = body.len() + BODY_OVERHEAD;
        if self.young_bytes + bytes > half {
            self.old = std::mem::take(&mut self.young);
            self.young_bytes = 0;
        }
        if self.young.insert(key, body).is_none() {
            self.young_bytes += bytes;
        }
    }
}

impl Bodies {
    /// Bodies within `budget` bytes (both generations together).
    pub fn new(budget: u64) -> Self {
        Bodies {
            budget: usize::try_from(budget).unwrap_or(usize::MAX),
            generations: Mutex::default(),
        }
    }

    /// Whether bodies are kept at all.
    pub fn is_on(&self) -> bool {
        self.budget > 0
    }

    /// The bodies kept of version `version` at `positions`, in their order.
    pub fn get(&self, version: i64, positions: &[i64]) -> Vec<Option<Arc<str>>> {
        let half = self.budget / 2;
        let mut generations = self.generations.lock().expect("bodies lock");
        positions
            .iter()
            .map(|&pos| {
                let key = (version, pos);
                if let Some(body) = generations.young.get(&key) {
                    return Some(body.clone());
                }
                let body = generations.old.remove(&key)?;
                generations.insert(key, body.clone(), half);
                Some(body)
            })
            .collect()
    }

    /// Keeps `bodies` of version `version`, by position.
    pub fn put(&self, version: i64, bodies: impl IntoIterator<Item = (i64, Arc<str>)>) {
        let half = self.budget / 2;
        let mut generations = self.generations.lock().expect("bodies lock");
        for (pos, body) in bodies {
            if body.len() + BODY_OVERHEAD <= half {
                generations.insert((version, pos), body, half);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_stay_within_their_budget_and_keep_the_ones_asked_again() {
        let body = |n: usize| -> Arc<str> { "x".repeat(n).into() };
        // Half the budget holds two bodies of 36 bytes (100 bytes each with the overhead).
        let bodies = Bodies::new(2 * 2 * (36 + BODY_OVERHEAD) as u64);
        bodies.put(1, [(1, body(36)), (2, body(36))]);
        assert_eq!(
            bodies
                .get(1, &[1, 2, 3])
                .iter()
                .filter(|b| b.is_some())
                .count(),
            2
        );
        // A third body starts a new generation: 1 and 2 are old, still found; 1 moves back.
        bodies.put(1, [(3, body(36))]);
        let found = bodies.get(1, &[1]);
        assert_eq!(found[0].as_deref(), Some("x".repeat(36).as_str()));
        // Two more bodies: the young generation (3, 1) becomes old, 2 is dropped.
        bodies.put(1, [(4, body(36)), (5, body(36))]);
        let kept: Vec<bool> = bodies
            .get(1, &[4, 5, 3, 2])
            .iter()
            .map(Option::is_some)
            .collect();
        assert_eq!(kept, [true, true, true, false]);
        // Another version's position is another body; a body larger than half is not kept.
        assert!(bodies.get(2, &[1])[0].is_none());
        bodies.put(1, [(6, body(200))]);
        assert!(bodies.get(1, &[6])[0].is_none());
        // Off: nothing is kept.
        let off = Bodies::new(0);
        assert!(!off.is_on());
        off.put(1, [(1, body(1))]);
        assert!(off.get(1, &[1])[0].is_none());
    }
}
