//! Which pooled PostgreSQL sessions are checked before use. sqlx can ping every session it hands
//! out, a round trip each time, and a small import takes a dozen sessions in turn. A session given back less than [`ALIVE_WINDOW`] ago was alive
//! then (sqlx pings each one as it comes back, and closes it when that fails), so it is handed
//! out unchecked, as HikariCP does within its own window. One that waited longer is pinged, and
//! so is every session for a while after a store fault ([`query::error::fault_within`]): a
//! server restart or a cut kills sessions that were alive a moment ago, and the read that met
//! the fault, run once more (`http::resilience`), must get a live one.

use std::time::Duration;

use sqlx::Connection;
use sqlx::pool::PoolConnectionMetadata;
use sqlx::postgres::PgConnection;

/// How long a session given back alive is trusted without a ping; also how long after a store
/// fault every session is pinged.
pub const ALIVE_WINDOW: Duration = Duration::from_secs(1);

/// Whether a session idle for `idle_for` is pinged before use, `fault_recent` when a store
/// fault was met within [`ALIVE_WINDOW`].
fn needs_ping(idle_for: Duration, fault_recent: bool) -> bool {
    idle_for >= ALIVE_WINDOW || fault_recent
}

/// sqlx's `before_acquire` hook: pings the session when [`needs_ping`] says so. A failed ping
/// makes the pool close it and take another.
pub async fn before_acquire(
    conn: &mut PgConnection,
    meta: PoolConnectionMetadata,
) -> Result<bool, sqlx::Error> {
    if needs_ping(meta.idle_for, query::error::fault_within(ALIVE_WINDOW)) {
        conn.ping().await?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_pinged_after_a_wait_or_a_fault() {
        let moment = Duration::from_millis(10);
        assert!(!needs_ping(moment, false));
        assert!(needs_ping(moment, true));
        assert!(needs_ping(ALIVE_WINDOW, false));
        assert!(needs_ping(Duration::from_secs(60), false));
    }
}
