//! Throttles: wrong passwords at `/login`, wrong user codes at `/device` (contract §8,
//! RFC 8628 §5.1 "Brute Forcing"), sign-ups at `/signup`, and the device flow's two endpoints
//! per client address.
//!
//! # Where the counts live
//!
//! Each key has a fixed window; the first attempt after a window has passed starts a new one.
//! Every instance keeps its keys' counts in memory ([`Throttles`]), and the store's
//! `throttle_counters` table holds the count every instance shares.
//!
//! - **Refusals come from memory.** A key whose count has reached its budget refuses until its
//!   window ends without a store statement, without waiting for a lock held across an await,
//!   and without an INFO line (a debug line; the refusals per kind are summed on the
//!   maintenance tick, [`Throttles::forget_idle`]). A flood of refused requests costs a
//!   hash-map look-up each, and refused attempts are not counted (they did no work).
//! - **The store is synced at most once a second per key.** One statement
//!   (`INSERT … ON CONFLICT … RETURNING`) adds what this instance counted since the last sync
//!   and reads back the total of every instance. The first attempt of a key (or of a new
//!   window) waits for a sync before it is decided, so an instance starts from the shared
//!   count, not from zero; attempts within a second of the last sync are counted and decided
//!   in memory, and what they counted is written by the next sync: at the first attempt a
//!   second or more after the last one, or by a flush scheduled a second after it.
//!
//! The price of the second point, across instances behind a load balancer: an attempt counted
//! on one instance is seen by the others' decisions within about a second (the flush, then
//! their next sync). Attempts spread over instances more than a second apart share one budget
//! exactly; a burst landing on K instances in the same second can get at most K × the budget
//! through in a window (each instance never allows more than the budget by its own count, which
//! includes everything it read from the store). A restart forgets at most the last second's
//! unwritten counts. Memory is one entry per key seen in a live window, at most [`MAX_KEYS`];
//! beyond that (a flood of distinct keys) a key is counted in the store directly, one statement
//! an attempt, so the budgets still hold.
//!
//! # Count first, then decide
//!
//! Within one process an attempt is counted under its entry's lock before it is decided, and
//! syncs of one key are serialized, so N concurrent attempts get N distinct counts and only
//! those within the budget go on. A budget of 10 lets at most 10 codes be looked up however
//! many arrive at once (reading the count, doing the work and counting afterwards would let
//! every attempt that read before the first one counted through). Where only failures should
//! count (a right password, a real code), the caller [`Throttles::give_back`]s the attempt
//! afterwards, so a person who types correctly is never slowed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use sea_orm::{ConnectionTrait, Statement};
use time::OffsetDateTime;

use crate::store::{Store, StoreError};

mod limits;
mod store;

pub use limits::*;
pub use store::purge_stale;

/// How long an entry's count may go without being added to the store's, and how stale the
/// shared count an instance decides from may be: the "at most once a second per key" of the
/// store writes.
pub const SYNC_EVERY: Duration = Duration::from_secs(1);

/// Most keys kept in memory at once (about 300 bytes each: some 15 MB). Keys come from client
/// addresses and typed e-mail addresses, so their number is the attackers' to choose; beyond
/// this, new keys are counted in the store directly, as if there were no memory.
pub const MAX_KEYS: usize = 50_000;

/// What a throttle decided.
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

/// The kind of `key` (`login:email`, `code:ip`…), for logs: the subject may be an e-mail address.
fn kind_of(key: &str) -> &str {
    match key.match_indices(':').nth(1) {
        Some((i, _)) => &key[..i],
        None => key,
    }
}

fn now_secs() -> i64 {
    OffsetDateTime::now_utc().unix_timestamp()
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section below leaves its state consistent before anything can panic.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Seconds until the window that began at `window_start` ends (at least 1).
fn retry_after(window_start: i64, limit: Limit, now: i64) -> i64 {
    (window_start + limit.window_secs - now).max(1)
}

/// One key's count in this process.
#[derive(Debug)]
struct Entry {
    key: String,
    limit: Limit,
    /// Held across a sync with the store, so one key has one sync (or flush) at a time and an
    /// attempt that needs the shared count waits for it instead of starting another.
    turn: Arc<tokio::sync::Mutex<()>>,
    state: Mutex<Count>,
}

/// What an [`Entry`] knows; changed only under its lock, never across an await.
#[derive(Debug, Default)]
struct Count {
    /// Unix seconds when the window began (0: no window yet).
    window_start: i64,
    /// Attempts counted in the window: the store's total at the last sync plus `pending`.
    hits: i64,
    /// Counted here since the last sync and not yet written (negative: given back).
    pending: i64,
    /// When the store's total was last read into `hits` (`None`: never in this window).
    synced_at: Option<Instant>,
    /// A flush of `pending` is scheduled.
    flushing: bool,
}

impl Count {
    /// Starts over when the window has ended: the next attempt syncs and begins a new one.
    fn roll(&mut self, limit: Limit, now: i64) {
        if self.window_start != 0 && now >= self.window_start + limit.window_secs {
            self.window_start = 0;
            self.hits = 0;
            self.pending = 0;
            self.synced_at = None;
        }
    }

    /// `Some(retry_after)` when the window's count has reached the budget.
    fn over(&self, limit: Limit, now: i64) -> Option<i64> {
        (self.synced_at.is_some() && self.hits >= i64::from(limit.max))
            .then(|| retry_after(self.window_start, limit, now))
    }

    /// Whether the shared count read at the last sync is recent enough to decide from.
    fn fresh(&self) -> bool {
        self.synced_at.is_some_and(|at| at.elapsed() < SYNC_EVERY)
    }
}

/// The throttles of one instance: counts in memory, synced with the store's
/// `throttle_counters` at most once a second per key (see the module's documentation).
#[derive(Debug)]
pub struct Throttles {
    shared: Shared,
    entries: Mutex<HashMap<String, Arc<Entry>>>,
    /// Refusals per kind since the last summary ([`Throttles::forget_idle`]).
    refused: Mutex<HashMap<String, u64>>,
    /// When a full map was last swept for idle entries (a sweep a second at most).
    swept_at: Mutex<Option<Instant>>,
}

/// The store and the count of statements sent to it: what a scheduled flush takes along.
#[derive(Clone, Debug)]
struct Shared {
    store: Store,
    /// Statements sent to the store (counting, flushing, giving back, clearing).
    writes: Arc<AtomicU64>,
}

impl Throttles {
    /// Throttles counting in memory and sharing their counts through `store`.
    pub fn new(store: Store) -> Self {
        Throttles {
            shared: Shared {
                store,
                writes: Arc::default(),
            },
            entries: Mutex::default(),
            refused: Mutex::default(),
            swept_at: Mutex::default(),
        }
    }

    /// Statements this instance has sent to the store: a refusal adds none.
    pub fn store_writes(&self) -> u64 {
        self.shared.writes.load(Ordering::Relaxed)
    }

    /// The entry of `key`, made when new; `None` when [`MAX_KEYS`] are kept and none is idle.
    fn entry(&self, key: &str, limit: Limit) -> Option<Arc<Entry>> {
        let mut entries = lock(&self.entries);
        if let Some(entry) = entries.get(key) {
            return Some(entry.clone());
        }
        if entries.len() >= MAX_KEYS {
            let mut swept_at = lock(&self.swept_at);
            if swept_at.is_none_or(|at| at.elapsed() >= SYNC_EVERY) {
                *swept_at = Some(Instant::now());
                let now = now_secs();
                entries.retain(|_, e| !idle(e, now));
            }
            if entries.len() >= MAX_KEYS {
                return None;
            }
        }
        let entry = Arc::new(Entry {
            key: key.to_string(),
            limit,
            turn: Arc::default(),
            state: Mutex::default(),
        });
        entries.insert(key.to_string(), entry.clone());
        Some(entry)
    }

    /// Notes a refusal of `key`: a debug line with the kind's count since the last summary.
    fn refusal(&self, key: &str, hits: i64) {
        let kind = kind_of(key);
        let mut refused = lock(&self.refused);
        let count = match refused.get_mut(kind) {
            Some(n) => {
                *n += 1;
                *n
            }
            None => {
                refused.insert(kind.to_string(), 1);
                1
            }
        };
        tracing::debug!(throttle = %kind, hits, refused = count, "throttled");
    }

    /// Counts one attempt for `key` and decides from the count: never more than `limit.max`
    /// allowed in a window by this instance, however many arrive at once; an attempt over the
    /// budget is refused from memory, uncounted.
    pub async fn take(&self, key: &str, limit: Limit) -> Result<Verdict, StoreError> {
        let Some(entry) = self.entry(key, limit) else {
            return self.take_in_store(key, limit).await;
        };
        // Refused without waiting for a sync in progress: most of a flood ends here.
        let now = now_secs();
        let over = {
            let mut count = lock(&entry.state);
            count.roll(limit, now);
            count.over(limit, now).map(|r| (r, count.hits))
        };
        if let Some((retry_after, hits)) = over {
            self.refusal(key, hits);
            return Ok(Verdict::Refused { retry_after });
        }
        let turn = entry.turn.clone().lock_owned().await;
        let now = now_secs();
        let delta = {
            let mut count = lock(&entry.state);
            count.roll(limit, now);
            if let Some(retry_after) = count.over(limit, now) {
                let hits = count.hits;
                drop(count);
                self.refusal(key, hits);
                return Ok(Verdict::Refused { retry_after });
            }
            // Count first, then decide: the count is below the budget here.
            count.hits += 1;
            count.pending += 1;
            if count.fresh() {
                let schedule = !count.flushing;
                count.flushing = true;
                drop(count);
                if schedule {
                    self.schedule_flush(entry.clone());
                }
                return Ok(Verdict::Allowed);
            }
            // The shared count is older than a second (or unknown): add ours and read it.
            std::mem::take(&mut count.pending)
        };
        // In a task of its own, holding the key's turn: a client that hangs up drops this
        // request, not the sync, so what was pending is written (or kept) either way.
        let shared = self.shared.clone();
        let synced = tokio::spawn(async move {
            let _turn = turn;
            let result = shared.add(&entry.key, delta, limit, now).await;
            let mut count = lock(&entry.state);
            match &result {
                Ok((total, window_start)) => {
                    // `pending` holds only give-backs made during the statement.
                    count.hits = total + count.pending;
                    count.window_start = *window_start;
                    count.synced_at = Some(Instant::now());
                }
                Err(_) => {
                    // This attempt is not counted; what was pending before it still is.
                    count.hits -= 1;
                    count.pending += delta - 1;
                }
            }
            result.map(|(total, window_start)| (total, window_start, count.hits))
        })
        .await
        .expect("a throttle sync does not panic");
        let (total, window_start, hits) = synced?;
        Ok(if total <= i64::from(limit.max) {
            Verdict::Allowed
        } else {
            // Counted by another instance meanwhile: refused, as the store says.
            self.refusal(key, hits);
            Verdict::Refused {
                retry_after: retry_after(window_start, limit, now),
            }
        })
    }

    /// [`Throttles::take`] for several keys in order (e.g. per account, then per address):
    /// allowed only when every one allows. When one refuses, the attempts already counted on
    /// the keys before it are given back (the attempt never happened) and the keys after it
    /// are not counted.
    pub async fn take_all(&self, keys: &[(String, Limit)]) -> Result<Verdict, StoreError> {
        for (i, (key, limit)) in keys.iter().enumerate() {
            let verdict = match self.take(key, *limit).await {
                Ok(v) => v,
                Err(e) => {
                    self.give_back(&keys[..i]).await;
                    return Err(e);
                }
            };
            if let Verdict::Refused { .. } = verdict {
                self.give_back(&keys[..i]).await;
                return Ok(verdict);
            }
        }
        Ok(Verdict::Allowed)
    }

    /// Uncounts one allowed attempt on each key (it turned out not to be a failure). In memory
    /// at once; the store learns it with the key's next sync, so a take and its give-back
    /// within a second cost no store write. A give-back that fails to reach the store only
    /// leaves the throttle stricter, so it is logged, not returned.
    pub async fn give_back(&self, keys: &[(String, Limit)]) {
        for (key, limit) in keys {
            let entry = lock(&self.entries).get(key.as_str()).cloned();
            let Some(entry) = entry else {
                // Counted in the store directly (the map was full).
                self.shared.add_in_store(key, -1).await;
                continue;
            };
            let schedule = {
                let mut count = lock(&entry.state);
                count.roll(*limit, now_secs());
                if count.hits <= 0 {
                    continue;
                }
                count.hits -= 1;
                count.pending -= 1;
                !std::mem::replace(&mut count.flushing, true)
            };
            if schedule {
                self.schedule_flush(entry);
            }
        }
    }

    /// Forgets the attempts of `key` (a successful login clears its account's counter), here
    /// and in the store.
    pub async fn clear(&self, key: &str) -> Result<(), StoreError> {
        let entry = lock(&self.entries).get(key).cloned();
        let _turn = match &entry {
            Some(e) => Some(e.turn.lock().await),
            None => None,
        };
        if let Some(entry) = &entry {
            let mut count = lock(&entry.state);
            count.hits = 0;
            count.pending = 0;
        }
        self.shared.writes.fetch_add(1, Ordering::Relaxed);
        let store = &self.shared.store;
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

    /// Writes every key's pending count now (tests, and anyone who must not wait the second).
    pub async fn flush_all(&self) {
        let entries: Vec<Arc<Entry>> = lock(&self.entries).values().cloned().collect();
        for entry in entries {
            self.shared.flush(&entry).await;
        }
    }

    /// Drops the entries whose window has ended and that have nothing to write, and logs how
    /// many requests each kind refused since the last call (one INFO line per kind that
    /// refused any): what the maintenance tick calls.
    pub fn forget_idle(&self) {
        let now = now_secs();
        lock(&self.entries).retain(|_, e| !idle(e, now));
        let refused = std::mem::take(&mut *lock(&self.refused));
        let mut kinds: Vec<_> = refused.into_iter().collect();
        kinds.sort();
        for (kind, refused) in kinds {
            tracing::info!(throttle = %kind, refused, "throttle: requests refused since the last report");
        }
    }

    /// Keys kept in memory.
    pub fn keys_kept(&self) -> usize {
        lock(&self.entries).len()
    }

    /// A key counted in the store alone (the map is full): one statement an attempt, refused
    /// ones included, as if there were no memory.
    async fn take_in_store(&self, key: &str, limit: Limit) -> Result<Verdict, StoreError> {
        let now = now_secs();
        let (hits, window_start) = self.shared.add(key, 1, limit, now).await?;
        Ok(if hits <= i64::from(limit.max) {
            Verdict::Allowed
        } else {
            self.refusal(key, hits);
            Verdict::Refused {
                retry_after: retry_after(window_start, limit, now),
            }
        })
    }

    /// Writes `entry`'s pending count a second after its last sync (the once-a-second bound).
    fn schedule_flush(&self, entry: Arc<Entry>) {
        let shared = self.shared.clone();
        tokio::spawn(async move {
            loop {
                let due = lock(&entry.state).synced_at.map(|at| at + SYNC_EVERY);
                match due {
                    // A sync may happen meanwhile and move the time; look again after.
                    Some(due) if due > Instant::now() => {
                        tokio::time::sleep_until(due.into()).await;
                    }
                    _ => break,
                }
            }
            shared.flush(&entry).await;
        });
    }
}

/// Whether `entry` can be dropped: its window has ended (or never began), nothing is left to
/// write, and no request holds it.
fn idle(entry: &Arc<Entry>, now: i64) -> bool {
    if Arc::strong_count(entry) > 1 {
        return false;
    }
    let count = lock(&entry.state);
    let ended = count.window_start == 0 || now >= count.window_start + entry.limit.window_secs;
    ended && count.pending == 0 && !count.flushing
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

    #[test]
    fn kinds_leave_the_subject_out() {
        assert_eq!(kind_of("login:email:ada@example.org"), "login:email");
        assert_eq!(kind_of("signup:all:"), "signup:all");
        assert_eq!(kind_of("odd"), "odd");
    }
}
