//! Store failures as API errors: logged in full here, answered generically (`unavailable` when
//! a retry later can cure it, `internal` otherwise), so nothing about SQL or files reaches a
//! client.

use sea_orm::{DbErr, RuntimeErr};

use super::ApiError;
use crate::log_text::clip_display;

impl From<DbErr> for ApiError {
    fn from(error: DbErr) -> Self {
        if unreachable(&error) {
            // A store's message may quote a value the client sent: clipped.
            tracing::warn!(error = %clip_display(&error), "store unreachable");
            ApiError::Unavailable
        } else {
            tracing::error!(error = %clip_display(&error), "store error");
            ApiError::Internal
        }
    }
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
