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

/// Held until dropped; dropping closes the connection, which releases the lock even if the
/// explicit unlock never ran.
pub struct StoreLock {
    conn: Option<PoolConnection<Postgres>>,
}

impl StoreLock {
    /// Waits for the lock `key`.
    pub async fn acquire(store: &Store, key: i64) -> Result<Self, StoreError> {
        if store.backend() != sea_orm::DatabaseBackend::Postgres {
            return Ok(StoreLock { conn: None });
        }
        let mut conn = store.db.get_postgres_connection_pool().acquire().await?;
        sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(key)
            .execute(&mut *conn)
            .await?;
        Ok(StoreLock { conn: Some(conn) })
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
