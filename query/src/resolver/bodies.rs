//! Record bodies by position, for a page, one record, an export's batch and the guides'
//! examples: from the body cache ([`Bodies`]), else read straight from an SQLite file, else
//! by one statement; unpacked and shaped ([`Stored`]) as the answers write them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::Resolver;
use crate::dataset::schema::DatasetSchema;
use crate::engine::store;
pub(super) use crate::engine::store::bodies::Stored;
use crate::error::ApiError;

/// The share of the in-memory index budget (`ODQS_INDEX_MEMORY_MB`) that record bodies may
/// take besides: a sixteenth, 64 MiB of a 1 GiB budget, up to [`BODY_CACHE_MAX`].
pub(crate) const BODY_SHARE: u64 = 16;

/// The most record bodies may take, whatever the budget: the budget follows the machine's
/// memory, and a cache of pages served lately gains little beyond this.
pub(crate) const BODY_CACHE_MAX: u64 = 256 * 1024 * 1024;

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
pub(crate) struct Bodies {
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
    pub(crate) fn new(budget: u64) -> Self {
        Bodies {
            budget: usize::try_from(budget).unwrap_or(usize::MAX),
            generations: Mutex::default(),
        }
    }

    /// Whether bodies are kept at all.
    pub(crate) fn is_on(&self) -> bool {
        self.budget > 0
    }

    /// The bodies kept of version `version` at `positions`, in their order.
    pub(crate) fn get(&self, version: i64, positions: &[i64]) -> Vec<Option<Arc<str>>> {
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
    pub(crate) fn put(&self, version: i64, bodies: impl IntoIterator<Item = (i64, Arc<str>)>) {
        let half = self.budget / 2;
        let mut generations = self.generations.lock().expect("bodies lock");
        for (pos, body) in bodies {
            if body.len() + BODY_OVERHEAD <= half {
                generations.insert((version, pos), body, half);
            }
        }
    }
}

impl Resolver {
    /// The bodies of the records at in-memory rows `rows` (positions `row + 1`), in that
    /// order: the store serves them by primary key. One statement text whatever the number of
    /// rows (an array bound as one value), so it is prepared once per connection; SQLite's text
    /// is parsed here rather than through `json()`, which would parse it twice.
    pub(crate) async fn at_positions(
        &self,
        schema: &DatasetSchema,
        rows: &[u32],
    ) -> Result<Vec<Value>, ApiError> {
        self.stored_at_positions(schema, rows)
            .await?
            .into_iter()
            .map(Stored::value)
            .collect()
    }

    /// [`Self::at_positions`] for an export's batch: on an SQLite file the direct read runs on
    /// the blocking pool, so a thousand bodies read for an export never hold a request
    /// thread (20 exports at once starved every other request of both); elsewhere, and when
    /// the direct read fails, as [`Self::at_positions`]. The body cache is left alone: an
    /// export's bodies are read once and would push out the pages people ask again.
    pub(crate) async fn export_batch(
        &self,
        schema: &DatasetSchema,
        rows: &[u32],
    ) -> Result<Vec<Value>, ApiError> {
        if let Some(direct) = self.direct(schema.version_id) {
            let positions: Vec<i64> = rows.iter().map(|&row| i64::from(row) + 1).collect();
            let version_id = schema.version_id;
            let read = tokio::task::spawn_blocking(move || {
                let found = direct.bodies(version_id, &positions).ok()?;
                let mut found: HashMap<i64, String> = found.into_iter().collect();
                positions
                    .iter()
                    .map(|pos| found.remove(pos))
                    .collect::<Option<Vec<String>>>()
            })
            .await;
            if let Ok(Some(texts)) = read {
                return texts
                    .into_iter()
                    .map(|text| Stored::text(schema, text)?.value())
                    .collect();
            }
        }
        self.at_positions(schema, rows).await
    }

    /// [`Self::at_positions`] as the body cache or the store gives the bodies: those not kept
    /// are read in one statement, shaped once, and kept.
    pub(super) async fn stored_at_positions(
        &self,
        schema: &DatasetSchema,
        rows: &[u32],
    ) -> Result<Vec<Stored>, ApiError> {
        let positions: Vec<i64> = rows.iter().map(|&row| i64::from(row) + 1).collect();
        // Boxed: the store read's future is large, and a page's future holds it (a debug
        // build's worker stack overflowed).
        if !self.bodies.is_on() {
            return Box::pin(self.read_at_positions(schema, &positions)).await;
        }
        let mut kept = self.bodies.get(schema.version_id, &positions);
        let missing: Vec<i64> = positions
            .iter()
            .zip(&kept)
            .filter(|(_, body)| body.is_none())
            .map(|(&pos, _)| pos)
            .collect();
        if !missing.is_empty() {
            let mut read = Box::pin(self.read_at_positions(schema, &missing))
                .await?
                .into_iter();
            let mut fresh = Vec::with_capacity(missing.len());
            for slot in kept.iter_mut().filter(|body| body.is_none()) {
                let body = read.next().ok_or(ApiError::Internal)?.shaped_text(schema)?;
                fresh.push(body.clone());
                *slot = Some(body);
            }
            self.bodies
                .put(schema.version_id, missing.into_iter().zip(fresh));
        }
        kept.into_iter()
            .map(|body| body.map(Stored::Shaped).ok_or(ApiError::Internal))
            .collect()
    }

    /// The bodies at `positions`, in that order, as the store gives them.
    pub(super) async fn read_at_positions(
        &self,
        schema: &DatasetSchema,
        positions: &[i64],
    ) -> Result<Vec<Stored>, ApiError> {
        if positions.is_empty() {
            return Ok(Vec::new());
        }
        let reader = self.reader(schema.version_id).await;
        if store::bodies::read_by_round_trip(&reader) {
            let read = |positions: Vec<i64>| {
                let reader = reader.clone();
                async move { store::bodies::at_positions(None, &reader, schema, &positions).await }
            };
            return self
                .body_reads
                .read(schema.version_id, positions.to_vec(), read)
                .await;
        }
        let direct = self.direct(schema.version_id);
        store::bodies::at_positions(direct.as_deref(), &reader, schema, positions).await
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
