//! Failure throttling: wrong passwords at `/login` and wrong user codes at `/device`
//! (contract §8, RFC 8628 §5.1 "Brute Forcing").
//!
//! Counters live in the store (`throttle_counters`), not in the process: several instances
//! behind a load balancer count the same failures, and a restart does not hand an attacker a
//! fresh budget. Each key has a fixed window; the first failure after a window has passed
//! starts a new one. Only failures count, so a person who types correctly is never slowed.

use entity::throttle_counter;
use sea_orm::{ConnectionTrait, DatabaseBackend, EntityTrait, Statement};
use time::OffsetDateTime;

use crate::store::{Store, StoreError};

/// A budget of failures per window for one kind of key.
#[derive(Clone, Copy, Debug)]
pub struct Limit {
    /// Failures allowed in a window; the next attempt is refused until the window ends.
    pub max_failures: i32,
    /// Length of the window, in seconds.
    pub window_secs: i64,
}

/// Wrong passwords per e-mail address: 5 in 15 minutes.
pub const LOGIN_PER_ACCOUNT: Limit = Limit {
    max_failures: 5,
    window_secs: 15 * 60,
};
/// Wrong passwords per client address: 20 in 15 minutes (a few people may share an address).
pub const LOGIN_PER_ADDRESS: Limit = Limit {
    max_failures: 20,
    window_secs: 15 * 60,
};
/// Wrong user codes per account: 10 in 15 minutes. With 20⁸ ≈ 2.6·10¹⁰ possible codes and a
/// 15-minute code lifetime, each account can try 10 of them per lifetime of a code.
pub const CODE_PER_ACCOUNT: Limit = Limit {
    max_failures: 10,
    window_secs: 15 * 60,
};
/// Wrong user codes per client address: 30 in 15 minutes, so many accounts behind one address
/// do not multiply the budget.
pub const CODE_PER_ADDRESS: Limit = Limit {
    max_failures: 30,
    window_secs: 15 * 60,
};

/// A counter key, e.g. `Key::new("login:email", "ada@example.org")`.
pub fn key(kind: &str, subject: &str) -> String {
    let mut key = format!("{kind}:{subject}");
    key.truncate(300);
    key
}

fn now_secs() -> i64 {
    OffsetDateTime::now_utc().unix_timestamp()
}

/// Seconds until `key` may try again, or `None` when it is within its budget.
pub async fn blocked_for(
    store: &Store,
    key: &str,
    limit: Limit,
) -> Result<Option<i64>, StoreError> {
    let Some(row) = throttle_counter::Entity::find_by_id(key.to_string())
        .one(&store.db)
        .await?
    else {
        return Ok(None);
    };
    let ends = row.window_start + limit.window_secs;
    let now = now_secs();
    Ok((row.hits >= limit.max_failures && now < ends).then_some(ends - now))
}

/// Counts one failure for `key`, starting a new window when the last one has ended; returns
/// the failures in the current window. One statement, so concurrent failures all count.
pub async fn record_failure(store: &Store, key: &str, limit: Limit) -> Result<i32, StoreError> {
    let backend = store.backend();
    let now = now_secs();
    let stale = now - limit.window_secs;
    let sql = "INSERT INTO throttle_counters (key, window_start, hits) VALUES ($1, $2, 1) \
         ON CONFLICT (key) DO UPDATE SET \
           hits = CASE WHEN throttle_counters.window_start <= $3 THEN 1 ELSE throttle_counters.hits + 1 END, \
           window_start = CASE WHEN throttle_counters.window_start <= $3 THEN $2 ELSE throttle_counters.window_start END \
         RETURNING hits";
    // SQLite understands `$N` placeholders too (numbered parameters), so one text serves both.
    let statement =
        Statement::from_sql_and_values(backend, sql, [key.into(), now.into(), stale.into()]);
    let row = store
        .db
        .query_one_raw(statement)
        .await?
        .expect("INSERT … RETURNING returns a row");
    let hits: i32 = match backend {
        DatabaseBackend::Postgres => row.try_get("", "hits")?,
        _ => row.try_get::<i64>("", "hits")? as i32,
    };
    Ok(hits)
}

/// Forgets the failures of `key` (a successful login clears its account's counter).
pub async fn clear(store: &Store, key: &str) -> Result<(), StoreError> {
    throttle_counter::Entity::delete_by_id(key.to_string())
        .exec(&store.db)
        .await?;
    Ok(())
}

/// Drops counters whose window ended more than a day ago, so the table stays small.
pub async fn purge_stale(store: &Store) -> Result<(), StoreError> {
    let cutoff = now_secs() - 24 * 3600;
    store
        .db
        .execute_raw(Statement::from_sql_and_values(
            store.backend(),
            "DELETE FROM throttle_counters WHERE window_start < $1",
            [cutoff.into()],
        ))
        .await?;
    Ok(())
}
