//! One write per dataset at a time (contract §14.2): a second write to a dataset while one runs
//! is refused at once with 409 `publish_in_progress` rather than queued, so a client never
//! holds a connection open behind a long upload and always learns where it stands. This
//! instance's writes are known in memory; on PostgreSQL a session advisory lock per dataset
//! covers every instance of a cluster (SQLite has one instance).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use crate::store::lock::StoreLock;
use crate::store::{Store, StoreError};

/// The high half of a dataset write's advisory-lock key ("odqw"); the low half is taken from a
/// hash of the slug, so two slugs may share a key and, rarely, one write wait for another's.
const PG_KEY_BASE: i64 = 0x6f64_7177 << 32;

/// The datasets being written on this instance.
#[derive(Debug, Default)]
pub struct Writes {
    running: Arc<Mutex<HashSet<String>>>,
}

/// A write's hold on its dataset, which may outlive the request (an asynchronous write); let go
/// with [`Held::end`] (or by dropping it).
#[derive(Debug)]
pub struct Held {
    running: Arc<Mutex<HashSet<String>>>,
    slug: String,
    store_lock: Option<StoreLock>,
}

impl Writes {
    /// The hold on `slug`, or `None` when another write to it runs.
    pub async fn try_hold(&self, store: &Store, slug: &str) -> Result<Option<Held>, StoreError> {
        if !self
            .running
            .lock()
            .expect("writes lock")
            .insert(slug.to_string())
        {
            return Ok(None);
        }
        let mut held = Held {
            running: self.running.clone(),
            slug: slug.to_string(),
            store_lock: None,
        };
        match StoreLock::try_acquire(store, pg_key(slug)).await? {
            Some(lock) => held.store_lock = Some(lock),
            None => return Ok(None),
        }
        Ok(Some(held))
    }
}

impl Held {
    /// Lets go of the dataset.
    pub async fn end(mut self) {
        if let Some(lock) = self.store_lock.take() {
            lock.release().await;
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.running.lock().expect("writes lock").remove(&self.slug);
    }
}

/// The advisory-lock key of writes to `slug`.
fn pg_key(slug: &str) -> i64 {
    let digest = Sha256::digest(slug.as_bytes());
    let low = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
    PG_KEY_BASE | i64::from(low)
}
