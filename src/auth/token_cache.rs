//! Tokens known to be live, so that a known token costs no store query: an entry is
//! trusted for [`FRESH_FOR`], then checked against the store again on its next use. A token
//! revoked on another instance therefore stops working everywhere within [`FRESH_FOR`]; one
//! revoked through this instance (the account page, log-out) is forgotten at once.
//!
//! Only tokens the store confirmed are kept, so a flood of made-up tokens adds nothing here;
//! the map is bounded by [`CAPACITY`] all the same.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use time::OffsetDateTime;

use super::principal::Principal;

/// How long a confirmed token is believed without asking the store again.
pub const FRESH_FOR: Duration = Duration::from_secs(1);
/// Entries kept before stale ones are dropped to make room.
const CAPACITY: usize = 100_000;
/// Store checks of never-seen tokens that may run at once. A flood of made-up tokens (within
/// the per-address budgets of many addresses) then waits here instead of taking every pooled
/// store connection from the requests of known tokens, which never ask.
pub const FIRST_CHECKS_AT_ONCE: usize = 2;

/// Live tokens by hash.
#[derive(Debug)]
pub struct TokenCache {
    entries: Mutex<HashMap<String, Entry>>,
    first_checks: tokio::sync::Semaphore,
}

impl Default for TokenCache {
    fn default() -> Self {
        TokenCache {
            entries: Mutex::default(),
            first_checks: tokio::sync::Semaphore::new(FIRST_CHECKS_AT_ONCE),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    principal: Principal,
    expires_at: Option<OffsetDateTime>,
    checked: Instant,
}

/// What the cache knows of a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    /// Confirmed within [`FRESH_FOR`]: use it.
    Fresh(Principal),
    /// Confirmed before: it exists, but ask the store again.
    Stale(Principal),
    /// Never confirmed here.
    Unknown,
}

impl TokenCache {
    /// A turn to check a never-seen token against the store (see [`FIRST_CHECKS_AT_ONCE`]).
    pub async fn first_check_turn(&self) -> tokio::sync::SemaphorePermit<'_> {
        self.first_checks
            .acquire()
            .await
            .expect("the semaphore is never closed")
    }

    /// What is known of the token with this hash.
    pub fn get(&self, token_hash: &str) -> Known {
        let entries = self.entries.lock().expect("token cache lock");
        let Some(entry) = entries.get(token_hash) else {
            return Known::Unknown;
        };
        let expired = entry
            .expires_at
            .is_some_and(|at| at <= OffsetDateTime::now_utc());
        if !expired && entry.checked.elapsed() < FRESH_FOR {
            Known::Fresh(entry.principal)
        } else {
            Known::Stale(entry.principal)
        }
    }

    /// Notes that the store just confirmed this token.
    pub fn confirm(
        &self,
        token_hash: &str,
        principal: Principal,
        expires_at: Option<OffsetDateTime>,
    ) {
        let mut entries = self.entries.lock().expect("token cache lock");
        if entries.len() >= CAPACITY && !entries.contains_key(token_hash) {
            entries.retain(|_, e| e.checked.elapsed() < FRESH_FOR);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(
            token_hash.to_string(),
            Entry {
                principal,
                expires_at,
                checked: Instant::now(),
            },
        );
    }

    /// Forgets a token the store no longer accepts.
    pub fn forget(&self, token_hash: &str) {
        self.entries
            .lock()
            .expect("token cache lock")
            .remove(token_hash);
    }

    /// Forgets a token by id (revoked on the account page).
    pub fn forget_token(&self, token_id: i64) {
        self.entries
            .lock()
            .expect("token cache lock")
            .retain(|_, e| e.principal.token_id != token_id);
    }

    /// Forgets every token of an account (its explorer tokens ended at log-out).
    pub fn forget_user(&self, user_id: i64) {
        self.entries
            .lock()
            .expect("token cache lock")
            .retain(|_, e| e.principal.user_id != user_id);
    }

    /// Drops entries not confirmed lately (the maintenance tick).
    pub fn forget_stale(&self) {
        self.entries
            .lock()
            .expect("token cache lock")
            .retain(|_, e| e.checked.elapsed() < FRESH_FOR * 60);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirmed_tokens_are_fresh_then_stale_and_can_be_forgotten() {
        let cache = TokenCache::default();
        let p = Principal {
            user_id: 1,
            token_id: 7,
        };
        assert_eq!(cache.get("h"), Known::Unknown);
        cache.confirm("h", p, None);
        assert_eq!(cache.get("h"), Known::Fresh(p));
        let past = OffsetDateTime::now_utc() - time::Duration::seconds(1);
        cache.confirm("e", p, Some(past));
        assert_eq!(
            cache.get("e"),
            Known::Stale(p),
            "an expired token is asked again"
        );
        cache.forget_token(7);
        assert_eq!(cache.get("h"), Known::Unknown);
        cache.confirm("h", p, None);
        cache.forget_user(1);
        assert_eq!(cache.get("h"), Known::Unknown);
    }
}
