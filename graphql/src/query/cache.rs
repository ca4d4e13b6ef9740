//! Totals that don't cost a scan. A `COUNT(*)` of a large match costs 100–200 ms, and paging
//! through one query asks for the same total on every page; datasets change only by import, so
//! a total is a pure function of (version, normalized condition) and can be kept. The map is
//! bounded: when full it starts over, which costs at most one recount per entry.

use std::collections::HashMap;
use std::sync::Mutex;

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
