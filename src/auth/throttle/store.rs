//! The count every instance shares: the store's `throttle_counters`, written at most once a
//! second per key ([`SYNC_EVERY`](super::SYNC_EVERY)) and read back in the same statement.

use std::sync::atomic::Ordering;
use std::time::Instant;

use sea_orm::{ConnectionTrait, DatabaseBackend, Statement};

use super::{Entry, LONGEST_WINDOW_SECS, Limit, Shared, lock, now_secs};
use crate::store::{Store, StoreError};

impl Shared {
    /// Writes `entry`'s pending count and reads the shared total back.
    pub(super) async fn flush(&self, entry: &Entry) {
        let _turn = entry.turn.lock().await;
        let now = now_secs();
        let delta = {
            let mut count = lock(&entry.state);
            count.flushing = false;
            count.roll(entry.limit, now);
            std::mem::take(&mut count.pending)
        };
        if delta == 0 {
            return;
        }
        if delta < 0 {
            // Given back: lower the shared count, never below zero.
            if self.add_in_store(&entry.key, delta).await {
                return;
            }
        } else {
            match self.add(&entry.key, delta, entry.limit, now).await {
                Ok((total, window_start)) => {
                    let mut count = lock(&entry.state);
                    count.hits = total + count.pending;
                    count.window_start = window_start;
                    count.synced_at = Some(Instant::now());
                    return;
                }
                Err(e) => tracing::warn!(error = %e, "throttle: writing counts failed"),
            }
        }
        // Kept for the next sync.
        lock(&entry.state).pending += delta;
    }

    /// Adds `delta` (> 0) attempts to `key`'s shared count (starting a new window when the last
    /// one has ended) and returns the total and the window's start: one statement, so
    /// concurrent instances all count.
    pub(super) async fn add(
        &self,
        key: &str,
        delta: i64,
        limit: Limit,
        now: i64,
    ) -> Result<(i64, i64), StoreError> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        let backend = self.store.backend();
        let stale = now - limit.window_secs;
        let delta = i32::try_from(delta).unwrap_or(i32::MAX);
        let sql = "INSERT INTO throttle_counters (key, window_start, hits) VALUES ($1, $2, $4) \
             ON CONFLICT (key) DO UPDATE SET \
               hits = CASE WHEN throttle_counters.window_start <= $3 THEN $4 ELSE throttle_counters.hits + $4 END, \
               window_start = CASE WHEN throttle_counters.window_start <= $3 THEN $2 ELSE throttle_counters.window_start END \
             RETURNING hits, window_start";
        // SQLite understands `$N` placeholders too (numbered parameters), so one text serves
        // both; `INSERT … ON CONFLICT … RETURNING` needs SQLite 3.35 (sqlx bundles a newer one).
        let statement = Statement::from_sql_and_values(
            backend,
            sql,
            [key.into(), now.into(), stale.into(), delta.into()],
        );
        let row = self
            .store
            .db
            .query_one_raw(statement)
            .await?
            .ok_or_else(|| {
                StoreError::from(sea_orm::DbErr::RecordNotFound(
                    "INSERT … RETURNING returned no row".into(),
                ))
            })?;
        let hits: i64 = match backend {
            DatabaseBackend::Postgres => i64::from(row.try_get::<i32>("", "hits")?),
            _ => row.try_get("", "hits")?,
        };
        let window_start: i64 = row.try_get("", "window_start")?;
        Ok((hits, window_start))
    }

    /// Adds `delta` (< 0) to `key`'s shared count, not below zero; whether it was written.
    pub(super) async fn add_in_store(&self, key: &str, delta: i64) -> bool {
        self.writes.fetch_add(1, Ordering::Relaxed);
        let delta = i32::try_from(delta).unwrap_or(i32::MIN);
        let statement = Statement::from_sql_and_values(
            self.store.backend(),
            "UPDATE throttle_counters SET hits = CASE WHEN hits + $2 < 0 THEN 0 ELSE hits + $2 END \
             WHERE key = $1",
            [key.into(), delta.into()],
        );
        match self.store.db.execute_raw(statement).await {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(error = %e, "throttle: giving attempts back failed");
                false
            }
        }
    }
}

/// Drops the counters whose window has ended for every limit (the next attempt would start a
/// new window anyway), so the table holds only live windows; returns how many.
pub async fn purge_stale(store: &Store) -> Result<u64, StoreError> {
    let cutoff = now_secs() - LONGEST_WINDOW_SECS;
    let done = store
        .db
        .execute_raw(Statement::from_sql_and_values(
            store.backend(),
            "DELETE FROM throttle_counters WHERE window_start <= $1",
            [cutoff.into()],
        ))
        .await?;
    Ok(done.rows_affected())
}
