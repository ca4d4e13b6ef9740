//! Orders of whole match sets, kept. A page by relevance or by distance must score every
//! match to know which come first, so its cost grows with the matches, not the page; but the
//! order is a pure function of (version, conditions, sort), like a total, so it is kept, and
//! later pages of the same search (and the same page asked again) cost what the page costs.
//! The map is bounded by the rows it holds: when full it starts over. An order too long to
//! keep whole (a common word over a large version matches millions of rows) keeps its head:
//! the first pages are those people read, and a page beyond the head scores again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::dataset::Dataset;
use crate::request::RecordQuery;

/// Rows kept in all (12 bytes each: about 48 MB).
const MAX_ROWS: usize = 4_000_000;
/// The longest order kept whole: a longer one keeps its first [`HEAD_ROWS`].
const MAX_WHOLE: usize = MAX_ROWS / 4;
/// The rows kept of an order longer than [`MAX_WHOLE`]: a hundred pages of the largest.
const HEAD_ROWS: usize = 100 * crate::request::params::MAX_PER_PAGE as usize;

/// Each row (0-based position) of a match set in its order, with its score or distance: all
/// of them, or the first of `total`.
#[derive(Debug)]
pub(super) struct Order {
    rows: Vec<(u32, f64)>,
    total: usize,
}

impl Order {
    /// A whole order.
    pub(super) fn whole(rows: Vec<(u32, f64)>) -> Self {
        let total = rows.len();
        Order { rows, total }
    }

    /// The matches in all.
    pub(super) fn total(&self) -> u64 {
        self.total as u64
    }

    /// The rows `offset..offset + limit`, or `None` when they lie beyond the rows kept.
    pub(super) fn page(&self, offset: u64, limit: u64) -> Option<&[(u32, f64)]> {
        let total = self.total as u64;
        let (start, end) = (offset.min(total), offset.saturating_add(limit).min(total));
        if start == end {
            return Some(&[]);
        }
        if end > self.rows.len() as u64 {
            return None;
        }
        Some(&self.rows[start as usize..end as usize])
    }

    /// What is kept of this order: itself, or its head when it is too long.
    fn kept(order: &Arc<Order>) -> Arc<Order> {
        if order.rows.len() <= MAX_WHOLE {
            return order.clone();
        }
        Arc::new(Order {
            rows: order.rows[..HEAD_ROWS].to_vec(),
            total: order.total,
        })
    }
}

#[derive(Debug, Default)]
pub(super) struct Orders {
    map: Mutex<(HashMap<String, Arc<Order>>, usize)>,
}

impl Orders {
    /// The key of `query`'s order on `dataset`: its version, conditions and sort (not its page).
    pub(super) fn key(dataset: &Dataset, query: &RecordQuery) -> String {
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

    /// The order kept under `key`, when it holds the rows `offset..offset + limit`.
    pub(super) fn get(&self, key: &str, offset: u64, limit: u64) -> Option<Arc<Order>> {
        let guard = self.map.lock().expect("orders lock");
        let order = guard.0.get(key)?;
        order.page(offset, limit).is_some().then(|| order.clone())
    }

    /// Keeps `order` (or its head) under `key`.
    pub(super) fn put(&self, key: String, order: &Arc<Order>) {
        let kept = Order::kept(order);
        let mut guard = self.map.lock().expect("orders lock");
        let (map, rows) = &mut *guard;
        if *rows + kept.rows.len() > MAX_ROWS {
            map.clear();
            *rows = 0;
        }
        *rows += kept.rows.len();
        map.insert(key, kept);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_order_keeps_its_head_and_its_total() {
        let rows: Vec<(u32, f64)> = (0..MAX_WHOLE as u32 + 1).map(|r| (r, 0.0)).collect();
        let order = Arc::new(Order::whole(rows));
        let kept = Order::kept(&order);
        assert_eq!(kept.total(), MAX_WHOLE as u64 + 1);
        assert_eq!(kept.rows.len(), HEAD_ROWS);
        let last = HEAD_ROWS as u64 - 10;
        assert_eq!(kept.page(last, 10).map(|p| p[0].0), Some(last as u32));
        assert!(kept.page(last, 11).is_none());
        // A page past the end needs no rows.
        assert_eq!(kept.page(MAX_WHOLE as u64 + 1, 100), Some(&[][..]));
        // The whole order answers any page, past its end too.
        assert_eq!(order.page(MAX_WHOLE as u64, 100).map(<[_]>::len), Some(1));
        assert_eq!(order.page(u64::MAX, 100).map(<[_]>::len), Some(0));
    }

    #[test]
    fn a_short_order_is_kept_whole() {
        let order = Arc::new(Order::whole(vec![(3, 1.5), (1, 0.5)]));
        let orders = Orders::default();
        orders.put("k".into(), &order);
        let got = orders.get("k", 1, 100).expect("kept");
        assert_eq!(got.page(1, 100), Some(&[(1, 0.5)][..]));
        assert_eq!(got.page(5, 100), Some(&[][..]));
    }
}
