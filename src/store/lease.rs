//! An import's hold on the version it is loading, so that the garbage collector can tell an
//! import under way from one whose process died: a killed import's version and tables are
//! removed at the next collection instead of a day later. The hold is one the operating system
//! or the database lets go of when the process dies: on SQLite an exclusive lock on a file
//! beside the version's, on PostgreSQL a session advisory lock on a connection of its own,
//! taken on an id reserved before the version's row is written, so that no loading row is
//! ever seen without its hold. On SQLite a row is written first (its id is the row's), so a
//! loading version without a lock file (its import between the two steps, or one begun
//! before leases) is left to the day-long rule.

use std::fs::{File, TryLockError};
use std::path::PathBuf;

use super::lock::StoreLock;
use super::{Store, StoreError};

/// The high half of a version's advisory-lock key ("odqv"); the low half is the version id.
const PG_KEY_BASE: i64 = 0x6f64_7176 << 32;

/// Held while an import loads its version; let go when dropped (or when the process dies).
#[derive(Debug)]
pub enum Lease {
    /// The locked file, and where it is (removed when the lease ends normally).
    File(File, PathBuf),
    Postgres(StoreLock),
}

/// Whether an import holds version `version_id`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Holder {
    /// A live import holds it.
    Alive,
    /// It was held and no process holds it any more: its import died.
    Dead,
    /// It never had a hold, or its import has not taken it yet.
    Unknown,
}

/// The advisory-lock key of version `version_id`.
fn pg_key(version_id: i64) -> i64 {
    PG_KEY_BASE | (version_id & 0xffff_ffff)
}

/// The lock file of version `version_id` on an SQLite store.
fn lock_file(store: &Store, version_id: i64) -> Option<PathBuf> {
    Some(store.version_file(version_id)?.with_extension("lock"))
}

impl Lease {
    /// On PostgreSQL, the id of a version about to be written and the hold on it, taken before
    /// its row exists; `None` on SQLite (see [`Self::take`]).
    pub async fn reserve(store: &Store) -> Result<Option<(i64, Self)>, StoreError> {
        if store.backend() != sea_orm::DatabaseBackend::Postgres {
            return Ok(None);
        }
        let id: i64 =
            sqlx::query_scalar("SELECT nextval(pg_get_serial_sequence('dataset_versions', 'id'))")
                .fetch_one(store.db.get_postgres_connection_pool())
                .await?;
        let lock = StoreLock::acquire(store, pg_key(id)).await?;
        Ok(Some((id, Lease::Postgres(lock))))
    }

    /// On SQLite, the hold on version `version_id`, whose row was just written: its lock file
    /// is locked under a temporary name and then renamed, so the garbage collector never finds
    /// it unlocked while its import lives.
    pub fn take(store: &Store, version_id: i64) -> Result<Self, StoreError> {
        let path = lock_file(store, version_id).ok_or_else(|| {
            StoreError::Io(std::io::Error::other("a lock file is for an SQLite store"))
        })?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let taking = path.with_extension("lock-taking");
        let file = File::create(&taking)?;
        file.lock()?;
        std::fs::rename(&taking, &path)?;
        Ok(Lease::File(file, path))
    }

    /// Lets go of the hold: the import ended, published or cleaned up.
    pub async fn end(self) {
        match self {
            Lease::File(file, path) => {
                let _ = std::fs::remove_file(&path);
                drop(file);
            }
            Lease::Postgres(lock) => lock.release().await,
        }
    }
}

/// Whether an import holds version `version_id` (see [`Holder`]).
pub async fn holder(store: &Store, version_id: i64) -> Result<Holder, StoreError> {
    if let Some(path) = lock_file(store, version_id) {
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Holder::Unknown),
            Err(e) => return Err(e.into()),
        };
        return match file.try_lock() {
            Ok(()) => Ok(Holder::Dead),
            Err(TryLockError::WouldBlock) => Ok(Holder::Alive),
            Err(TryLockError::Error(e)) => Err(e.into()),
        };
    }
    let mut conn = store.db.get_postgres_connection_pool().acquire().await?;
    let key = pg_key(version_id);
    let free: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(key)
        .fetch_one(&mut *conn)
        .await?;
    if !free {
        return Ok(Holder::Alive);
    }
    sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(key)
        .execute(&mut *conn)
        .await?;
    // The hold was taken before the row was written ([`Lease::reserve`]).
    Ok(Holder::Dead)
}

/// Removes the lock file of a version whose import died (its version is dropped).
pub fn forget(store: &Store, version_id: i64) {
    if let Some(path) = lock_file(store, version_id) {
        let _ = std::fs::remove_file(path);
    }
}
