//! Store failures as API errors: logged in full here, answered generically (`unavailable` when
//! a retry later can cure it, `internal` otherwise), so nothing about SQL or files reaches a
//! client.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sea_orm::{DbErr, RuntimeErr};

use super::ApiError;
use crate::log_text::clip_display;

impl From<DbErr> for ApiError {
    fn from(error: DbErr) -> Self {
        if unreachable(&error) {
            note_fault();
            // A store's message may quote a value the client sent: clipped.
            tracing::warn!(error = %clip_display(&error), "store unreachable");
            ApiError::Unavailable
        } else {
            tracing::error!(error = %clip_display(&error), "store error");
            ApiError::Internal
        }
    }
}

/// When this process last met a store fault, in milliseconds after [`faults_clock`]'s start
/// (0: never).
static LAST_FAULT_MS: AtomicU64 = AtomicU64::new(0);

/// The instant fault times count from.
fn faults_clock() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

/// Notes that a store fault was just met: the pools check every session before handing it out
/// for a while ([`fault_within`]), so the read run once more after it gets a live one.
pub fn note_fault() {
    let now = faults_clock().elapsed().as_millis() as u64;
    LAST_FAULT_MS.store(now.max(1), Ordering::Relaxed);
}

/// Whether a store fault was met within the last `window`.
pub fn fault_within(window: Duration) -> bool {
    let last = LAST_FAULT_MS.load(Ordering::Relaxed);
    let now = faults_clock().elapsed().as_millis() as u64;
    last != 0 && now.saturating_sub(last) <= window.as_millis() as u64
}

/// A direct read of the SQLite file (`query::direct`) that failed: its callers read through
/// sqlx instead, so this only notes it.
impl From<rusqlite::Error> for ApiError {
    fn from(error: rusqlite::Error) -> Self {
        tracing::debug!(error = %clip_display(&error), "direct SQLite read");
        ApiError::Internal
    }
}

/// Whether a store error means "cannot reach the store" (503) rather than a bug (500): the
/// connection broke, the pool has none to give, or the server is shutting down, restarting or
/// refusing connections — all things a retry later can cure.
pub fn unreachable(error: &DbErr) -> bool {
    match error {
        DbErr::ConnectionAcquire(_) | DbErr::Conn(_) => true,
        DbErr::Query(RuntimeErr::SqlxError(e)) | DbErr::Exec(RuntimeErr::SqlxError(e)) => {
            sqlx_unreachable(e.as_ref())
        }
        _ => false,
    }
}

/// [`unreachable`] for sqlx's own errors.
pub fn sqlx_unreachable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| unavailable_sqlstate(&code)),
        _ => false,
    }
}

/// PostgreSQL SQLSTATEs that mean the connection or the server is going away, not that the
/// statement is wrong: class 08 (connection exception), 57P01–57P05 (admin or crash shutdown,
/// cannot connect now, idle session timeout), 53300 (too many connections).
fn unavailable_sqlstate(code: &str) -> bool {
    code.starts_with("08") || code.starts_with("57P") || code == "53300"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_noted_fault_is_recent_for_its_window() {
        note_fault();
        assert!(fault_within(Duration::from_secs(1)));
        let last = LAST_FAULT_MS.load(Ordering::Relaxed);
        LAST_FAULT_MS.store(last.saturating_sub(5_000).max(1), Ordering::Relaxed);
        assert!(fault_within(Duration::from_secs(10)));
    }
}
