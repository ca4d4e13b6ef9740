//! Throttles kept in the store: wrong passwords at `/login`, wrong user codes at `/device`
//! (contract §8, RFC 8628 §5.1 "Brute Forcing"), and the device flow's two endpoints per
//! client address.
//!
//! Counters live in the store (`throttle_counters`), not in the process: several instances
//! behind a load balancer count the same attempts, and a restart does not hand an attacker a
//! fresh budget. Each key has a fixed window; the first attempt after a window has passed
//! starts a new one.
//!
//! Count first, then decide: [`take`] is one statement that counts the attempt and returns the
//! new count, so N concurrent attempts get N distinct counts and only those within the budget
//! go on. A budget of 10 lets at most 10 codes be looked up however many arrive at once
//! (reading the count, doing the work and counting afterwards would let every attempt that
//! read before the first one counted through). Where only failures should count (a right
//! password, a real code), the caller [`give_back`]s the attempt afterwards, so a person who
//! types correctly is never slowed.

use sea_orm::{ConnectionTrait, DatabaseBackend, Statement};
use time::OffsetDateTime;

use crate::store::{Store, StoreError};

/// A budget of attempts per window for one kind of key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// Attempts allowed in a window; later ones are refused until the window ends.
    pub max: i32,
    /// Length of the window, in seconds.
    pub window_secs: i64,
}

/// Wrong passwords per e-mail address: 5 in 15 minutes.
pub const LOGIN_PER_ACCOUNT: Limit = Limit {
    max: 5,
    window_secs: 15 * 60,
};
/// Wrong passwords per client address: 20 in 15 minutes (a few people may share an address).
pub const LOGIN_PER_ADDRESS: Limit = Limit {
    max: 20,
    window_secs: 15 * 60,
};
/// Wrong user codes per account: 10 in 15 minutes. With 20⁸ ≈ 2.6·10¹⁰ possible codes and a
/// 15-minute code lifetime, each account can try 10 of them per lifetime of a code.
pub const CODE_PER_ACCOUNT: Limit = Limit {
    max: 10,
    window_secs: 15 * 60,
};
/// Wrong user codes per client address: 30 in 15 minutes, so many accounts behind one address
/// do not multiply the budget.
pub const CODE_PER_ADDRESS: Limit = Limit {
    max: 30,
    window_secs: 15 * 60,
};
/// Device authorizations started per client address (`POST /auth/device`): 30 in 15 minutes,
/// a code's lifetime. Each start stores a grant row until it expires, so this bounds the rows
/// one address can keep alive; a person signing in a few machines never meets it.
pub const DEVICE_START_PER_ADDRESS: Limit = Limit {
    max: 30,
    window_secs: 15 * 60,
};
/// Token polls per client address (`POST /auth/token`): 120 a minute, the polls of ten
/// clients waiting side by side at the 5-second interval. Every poll locks a grant row (on
/// SQLite, the store's write lock), so one address cannot keep the store busy.
pub const TOKEN_POLL_PER_ADDRESS: Limit = Limit {
    max: 120,
    window_secs: 60,
};

/// The longest window of the limits above: a counter whose window started longer ago than
/// this is stale for every limit and can be dropped.
pub const LONGEST_WINDOW_SECS: i64 = {
    let all = [
        LOGIN_PER_ACCOUNT,
        LOGIN_PER_ADDRESS,
        CODE_PER_ACCOUNT,
        CODE_PER_ADDRESS,
        DEVICE_START_PER_ADDRESS,
        TOKEN_POLL_PER_ADDRESS,
    ];
    let mut longest = 0;
    let mut i = 0;
    while i < all.len() {
        if all[i].window_secs > longest {
            longest = all[i].window_secs;
        }
        i += 1;
    }
    longest
};

/// What [`take`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Within the budget: go on.
    Allowed,
    /// Over the budget: refuse; the window ends in `retry_after` seconds (at least 1).
    Refused { retry_after: i64 },
}

/// A counter key, e.g. `key("login:email", "ada@example.org")`.
pub fn key(kind: &str, subject: &str) -> String {
    let mut key = format!("{kind}:{subject}");
    // The column holds 320 characters; cut on a character boundary.
    while key.len() > 300 {
        key.pop();
    }
    key
}

fn now_secs() -> i64 {
    OffsetDateTime::now_utc().unix_timestamp()
}

/// Counts one attempt for `key` (starting a new window when the last one has ended) and
/// decides from the count: one statement, so concurrent attempts all count and never more
/// than `limit.max` of them are allowed in a window.
pub async fn take(store: &Store, key: &str, limit: Limit) -> Result<Verdict, StoreError> {
    let backend = store.backend();
    let now = now_secs();
    let stale = now - limit.window_secs;
    let sql = "INSERT INTO throttle_counters (key, window_start, hits) VALUES ($1, $2, 1) \
         ON CONFLICT (key) DO UPDATE SET \
           hits = CASE WHEN throttle_counters.window_start <= $3 THEN 1 ELSE throttle_counters.hits + 1 END, \
           window_start = CASE WHEN throttle_counters.window_start <= $3 THEN $2 ELSE throttle_counters.window_start END \
         RETURNING hits, window_start";
    // SQLite understands `$N` placeholders too (numbered parameters), so one text serves both;
    // `INSERT … ON CONFLICT … RETURNING` needs SQLite 3.35 (sqlx bundles a newer one).
    let statement =
        Statement::from_sql_and_values(backend, sql, [key.into(), now.into(), stale.into()]);
    let row = store.db.query_one_raw(statement).await?.ok_or_else(|| {
        StoreError::from(sea_orm::DbErr::RecordNotFound(
            "INSERT … RETURNING returned no row".into(),
        ))
    })?;
    let hits: i64 = match backend {
        DatabaseBackend::Postgres => i64::from(row.try_get::<i32>("", "hits")?),
        _ => row.try_get("", "hits")?,
    };
    let window_start: i64 = row.try_get("", "window_start")?;
    Ok(if hits <= i64::from(limit.max) {
        Verdict::Allowed
    } else {
        // The kind only (`login:email`, `code:ip`…): the subject may be an e-mail address.
        let kind: String = key.split(':').take(2).collect::<Vec<_>>().join(":");
        tracing::info!(throttle = %kind, hits, "throttled");
        Verdict::Refused {
            retry_after: (window_start + limit.window_secs - now).max(1),
        }
    })
}

/// [`take`] for several keys in order (e.g. per account, then per address): allowed only when
/// every one allows. When one refuses, the attempts already counted on the keys before it are
/// given back (the attempt never happened) and the keys after it are not counted.
pub async fn take_all(store: &Store, keys: &[(String, Limit)]) -> Result<Verdict, StoreError> {
    for (i, (key, limit)) in keys.iter().enumerate() {
        let verdict = match take(store, key, *limit).await {
            Ok(v) => v,
            Err(e) => {
                give_back(store, &keys[..i]).await;
                return Err(e);
            }
        };
        if let Verdict::Refused { .. } = verdict {
            give_back(store, &keys[..i]).await;
            return Ok(verdict);
        }
    }
    Ok(Verdict::Allowed)
}

/// Uncounts one allowed attempt on each key (it turned out not to be a failure). A give-back
/// that fails only leaves the throttle stricter, so it is logged, not returned.
pub async fn give_back(store: &Store, keys: &[(String, Limit)]) {
    for (key, _) in keys {
        let statement = Statement::from_sql_and_values(
            store.backend(),
            "UPDATE throttle_counters SET hits = hits - 1 WHERE key = $1 AND hits > 0",
            [key.as_str().into()],
        );
        if let Err(e) = store.db.execute_raw(statement).await {
            tracing::warn!(error = %e, "throttle: giving an attempt back failed");
        }
    }
}

/// Forgets the attempts of `key` (a successful login clears its account's counter).
pub async fn clear(store: &Store, key: &str) -> Result<(), StoreError> {
    store
        .db
        .execute_raw(Statement::from_sql_and_values(
            store.backend(),
            "DELETE FROM throttle_counters WHERE key = $1",
            [key.into()],
        ))
        .await?;
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_cut_on_a_character_boundary() {
        let long = "é".repeat(400);
        let key = key("login:email", &long);
        assert!(key.len() <= 300);
        assert!(key.starts_with("login:email:é"));
    }
}
