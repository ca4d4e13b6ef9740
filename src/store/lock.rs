//! A lock shared by every odqs process on one store, for the start-up work that must run once
//! (migrations, the demo load): a PostgreSQL session advisory lock held on a dedicated
//! connection. SQLite needs none: its write lock already serializes writers of one file.

use sqlx::Postgres;
use sqlx::pool::PoolConnection;

use super::{Store, StoreError};

/// Advisory-lock key for migrations ("odqsmigr").
pub const MIGRATIONS: i64 = 0x6f64_7173_6d69_6772;
/// Advisory-lock key for loading the demo datasets ("odqsdemo").
pub const DEMO: i64 = 0x6f64_7173_6465_6d6f;

/// Held until released or dropped. Released, the session unlocks and goes back to the pool (a
/// new session costs a handshake); dropped without that (an error or a cancelled task on the
/// way), it is closed, which lets go of the lock whatever else happened.
#[derive(Debug)]
pub struct StoreLock {
    conn: Option<PoolConnection<Postgres>>,
    key: i64,
}

impl StoreLock {
    /// Waits for the lock `key`.
    pub async fn acquire(store: &Store, key: i64) -> Result<Self, StoreError> {
        if store.backend() != sea_orm::DatabaseBackend::Postgres {
            return Ok(StoreLock { conn: None, key });
        }
        let mut conn = store.db.get_postgres_connection_pool().acquire().await?;
        sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(key)
            .execute(&mut *conn)
            .await?;
        Ok(StoreLock {
            conn: Some(conn),
            key,
        })
    }

    /// The lock `key` if no other session holds it, else `None` (no wait). On SQLite, always the
    /// lock: one instance serves a file.
    pub async fn try_acquire(store: &Store, key: i64) -> Result<Option<Self>, StoreError> {
        if store.backend() != sea_orm::DatabaseBackend::Postgres {
            return Ok(Some(StoreLock { conn: None, key }));
        }
        let mut conn = store.db.get_postgres_connection_pool().acquire().await?;
        let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(key)
            .fetch_one(&mut *conn)
            .await?;
        Ok(taken.then_some(StoreLock {
            conn: Some(conn),
            key,
        }))
    }

    /// Lets go of the lock and gives the session back to the pool; a session whose unlock
    /// fails is closed instead.
    pub async fn release(mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let unlocked: Result<bool, _> = sqlx::query_scalar("SELECT pg_advisory_unlock($1)")
            .bind(self.key)
            .fetch_one(&mut *conn)
            .await;
        if !matches!(unlocked, Ok(true)) {
            drop(conn.detach());
        }
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            // Closing the session releases every advisory lock it holds.
            drop(conn.detach());
        }
    }
}
