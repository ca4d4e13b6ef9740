//! Orders of whole match sets, kept. A page by relevance or by distance must score every
//! match to know which come first, so its cost grows with the matches, not the page; but the
//! order is a pure function of (version, conditions, sort), like a total, so it is kept, and
//! later pages of the same search (and the same page asked again) cost what the page costs.
//! The map is bounded by the rows it holds: when full it starts over.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::dataset::Dataset;
use crate::request::RecordQuery;

/// Rows kept in all (12 bytes each: about 48 MB).
const MAX_ROWS: usize = 4_000_000;

/// Each row (0-based position) of a match set in its order, with its score or distance.
pub(super) type Order = Arc<Vec<(u32, f64)>>;

#[derive(Debug, Default)]
pub(super) struct Orders {
    map: Mutex<(HashMap<String, Order>, usize)>,
}

impl Orders {
    /// The key of `query`'s order on `dataset`: its version, conditions and sort (not its page).
    pub fn key(dataset: &Dataset, query: &RecordQuery) -> String {
        let order = (
            &query.filter,
            &query.sort,
            query.by_score,
            query.by_distance,
        );
        format!(
            "{}|{}",
            dataset.schema.version_id,
            serde_json::to_string(&order).unwrap_or_default()
        )
    }

    pub fn get(&self, key: &str) -> Option<Order> {
        self.map.lock().expect("orders lock").0.get(key).cloned()
    }

    pub fn put(&self, key: String, order: Order) {
        if order.len() > MAX_ROWS / 4 {
            return;
        }
        let mut guard = self.map.lock().expect("orders lock");
        let (map, rows) = &mut *guard;
        if *rows + order.len() > MAX_ROWS {
            map.clear();
            *rows = 0;
        }
        *rows += order.len();
        map.insert(key, order);
    }
}
