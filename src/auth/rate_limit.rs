//! Request budgets per API token (contract §7: 429 `rate_limited` with `Retry-After`), so one
//! client cannot monopolize a public instance. A token bucket per token: `per_minute` requests
//! at once, refilled at `per_minute / 60` a second. Buckets live in the process, so behind a
//! load balancer each instance grants its own budget; that bounds the load an instance takes,
//! which is what the limit is for.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// Buckets kept before idle (full) ones are forgotten.
const MAX_BUCKETS: usize = 100_000;

/// The budgets of every token seen lately.
#[derive(Debug)]
pub struct RateLimiter {
    /// Requests a minute per token; 0 turns the limit off.
    per_minute: u32,
    buckets: Mutex<HashMap<String, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

impl RateLimiter {
    /// A limiter granting `per_minute` requests a minute per key (0: no limit).
    pub fn new(per_minute: u32) -> Self {
        RateLimiter {
            per_minute,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request from `key`'s budget; `Err(seconds)` says when the next one fits.
    /// `key` should not be a secret itself (pass the token's hash).
    pub fn check(&self, key: &str) -> Result<(), u64> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let capacity = f64::from(self.per_minute);
        let per_second = capacity / 60.0;
        let now = Instant::now();
        let mut buckets = self.buckets.lock().expect("rate limiter lock");
        if buckets.len() >= MAX_BUCKETS {
            // A bucket untouched for a minute is full again: forgetting it changes nothing.
            buckets.retain(|_, b| now.duration_since(b.updated).as_secs() < 60);
        }
        let bucket = buckets.entry(key.to_string()).or_insert(Bucket {
            tokens: capacity,
            updated: now,
        });
        let elapsed = now.duration_since(bucket.updated).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * per_second).min(capacity);
        bucket.updated = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - bucket.tokens) / per_second).ceil().max(1.0) as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_runs_out_and_names_the_wait() {
        let limiter = RateLimiter::new(3);
        for _ in 0..3 {
            assert_eq!(limiter.check("a"), Ok(()));
        }
        // One request refills every 20 s at 3 a minute.
        assert_eq!(limiter.check("a"), Err(20));
        assert_eq!(limiter.check("b"), Ok(()), "budgets are per key");
        let off = RateLimiter::new(0);
        assert!((0..10_000).all(|_| off.check("a").is_ok()));
    }
}
