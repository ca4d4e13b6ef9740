//! A token's budget as the query layer's [`CostGate`]: every call weighs what a request costs
//! beyond one (grouped statistics, full text) here before it runs, for REST, GraphQL's fields
//! and MCP's tools alike. The API gate has already charged the request itself, and writes the
//! last charge, granted or refused, in the answer's `RateLimit` headers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use query::ApiError;
use query::cost::CostGate;

use crate::auth::rate_limit::{Charge, RateLimits};

/// One HTTP request's gate: the token's budget, and what its parts have paid.
pub struct TokenGate {
    limits: Arc<RateLimits>,
    token_id: i64,
    /// The last charge, granted or refused, for the answer's `RateLimit` header.
    last: Mutex<Option<Charge>>,
    /// Requests paid by the fields run so far.
    paid: AtomicU64,
    /// Requests an earlier run of the same document paid (a run again after a store fault),
    /// spent before the budget is.
    credit: AtomicU64,
}

impl TokenGate {
    pub fn new(limits: Arc<RateLimits>, token_id: i64) -> Arc<TokenGate> {
        Arc::new(TokenGate {
            limits,
            token_id,
            last: Mutex::new(None),
            paid: AtomicU64::new(0),
            credit: AtomicU64::new(0),
        })
    }

    /// Before the document runs once more: what its fields paid is not charged again.
    pub fn run_again(&self) {
        let paid = self.paid.swap(0, Ordering::SeqCst);
        self.credit.fetch_add(paid, Ordering::SeqCst);
    }

    /// The last charge, to announce in the answer.
    pub fn last_charge(&self) -> Option<Charge> {
        *self.last.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes up to `extra` from the credit; returns what was taken.
    fn spend_credit(&self, extra: u64) -> u64 {
        let taken = self
            .credit
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |c| {
                Some(c - c.min(extra))
            })
            .unwrap_or(0);
        taken.min(extra)
    }
}

impl CostGate for TokenGate {
    fn weigh(&self, extra: u64) -> Result<(), ApiError> {
        let from_credit = self.spend_credit(extra);
        self.paid.fetch_add(from_credit, Ordering::SeqCst);
        let rest = extra - from_credit;
        if rest == 0 {
            return Ok(());
        }
        let weighed = self.limits.weigh(self.token_id, rest);
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        match weighed {
            Ok(charge) => {
                self.paid.fetch_add(rest, Ordering::SeqCst);
                *last = charge.or(*last);
                Ok(())
            }
            Err(refused) => {
                *last = Some(refused);
                Err(ApiError::RateLimited {
                    retry_after: refused.reset_secs,
                })
            }
        }
    }
}
