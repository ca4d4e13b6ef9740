//! How much memory the indexes may take, and whether a request waits for its index.

use std::time::Duration;

/// An index used this recently is not let go to make room for another: two datasets that do not
/// fit together are then not rebuilt in turn at every request; the later one is answered by
/// the store until the other has been idle this long.
pub(crate) const EVICT_IDLE: Duration = Duration::from_secs(60);

/// The memory indexes may take unless configured.
pub const DEFAULT_BUDGET_BYTES: u64 = 1024 * 1024 * 1024;

/// How much memory indexes may take, and whether a request waits for its dataset's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexPolicy {
    /// Bytes all indexes together may take; 0 turns them off.
    pub budget_bytes: u64,
    /// Wait for a version's index on its first request instead of answering from the store
    /// while it is built in the background. Tests use it to know which path answers.
    pub wait: bool,
    /// An index used within this long is not let go to make room ([`EVICT_IDLE`]).
    pub evict_idle: Duration,
}

impl IndexPolicy {
    /// No indexes: every request is answered by the store.
    pub const OFF: IndexPolicy = IndexPolicy {
        budget_bytes: 0,
        wait: false,
        evict_idle: EVICT_IDLE,
    };

    /// Indexes within `budget_bytes`, built in the background.
    pub fn background(budget_bytes: u64) -> Self {
        IndexPolicy {
            budget_bytes,
            wait: false,
            evict_idle: EVICT_IDLE,
        }
    }

    /// Indexes within `budget_bytes`, a request waiting for its version's.
    pub fn waiting(budget_bytes: u64) -> Self {
        IndexPolicy {
            budget_bytes,
            wait: true,
            evict_idle: EVICT_IDLE,
        }
    }

    /// The same policy letting indexes idle for `idle` go to make room (tests: at once).
    pub fn evicting_after(self, idle: Duration) -> Self {
        IndexPolicy {
            evict_idle: idle,
            ..self
        }
    }
}

impl Default for IndexPolicy {
    fn default() -> Self {
        IndexPolicy::background(DEFAULT_BUDGET_BYTES)
    }
}
