//! Request budgets (contract §7: 429 `rate_limited` with `Retry-After`; §12.5: `RateLimit-Policy`
//! and `RateLimit` on every API answer), so that one client cannot monopolize a public instance
//! and a flood cannot turn the limiter against us.
//!
//! Two budgets, each a GCRA (`governor`: a burst of `per_minute`, refilled evenly), O(1) a
//! request whatever the number of keys:
//! - per **known token** (keyed by the token's id, so only tokens that exist can make keys);
//! - per **client address** for everything else: requests without a token and tokens this
//!   instance does not know yet, which are charged *before* the store is asked. A flood of
//!   random tokens therefore costs at most the address's budget in store queries, and makes no
//!   keys beyond one per address (IPv6: per /64).
//!
//! Keys whose budget is full again are forgotten on the maintenance tick ([`RateLimits::forget_idle`]),
//! so memory stays proportional to the clients of the last minute. Buckets live in the process:
//! behind a load balancer each instance grants its own budget, which bounds the load an
//! instance takes — what the limit is for.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};

/// API requests a minute per token unless configured: generous for people and scripts, a
/// bound for a runaway client.
pub const DEFAULT_API_RATE_LIMIT: u32 = 1200;

/// API requests a minute per client address without a known token unless configured: plenty
/// for reading the OpenAPI document and getting a first token confirmed, a hard bound on
/// guessing tokens.
pub const DEFAULT_ADDRESS_RATE_LIMIT: u32 = 300;

/// The window `per_minute` budgets are stated in, as `RateLimit-Policy` announces it.
pub const WINDOW_SECS: u64 = 60;

type Keyed<K> = RateLimiter<K, DashMapStateStore<K>, DefaultClock, StateInformationMiddleware>;

/// One budget over keys of type `K`.
#[derive(Debug)]
pub struct Budget<K: std::hash::Hash + Eq + Clone> {
    /// Requests a minute per key; `None`: no limit.
    per_minute: Option<NonZeroU32>,
    limiter: Option<Keyed<K>>,
    clock: DefaultClock,
}

/// What a request's charge left: for the `RateLimit` header, or the wait on a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Charge {
    /// The budget's size (`q` of the policy).
    pub limit: u32,
    /// Requests left in the burst (`r`).
    pub remaining: u32,
    /// Seconds until the budget is full again (`t`), or, when refused, until the next request fits.
    pub reset_secs: u64,
    /// Whether the request was refused.
    pub refused: bool,
    /// Refused because it asked for more than the whole budget: no wait makes it fit.
    pub never: bool,
}

impl<K: std::hash::Hash + Eq + Clone> Budget<K> {
    /// A budget of `per_minute` requests a minute per key (0: no limit).
    pub fn new(per_minute: u32) -> Self {
        let per_minute = NonZeroU32::new(per_minute);
        let limiter = per_minute.map(|n| {
            RateLimiter::dashmap(Quota::per_minute(n))
                .with_middleware::<StateInformationMiddleware>()
        });
        Budget {
            per_minute,
            limiter,
            clock: DefaultClock::default(),
        }
    }

    /// Requests a minute per key (0: no limit).
    pub fn per_minute(&self) -> u32 {
        self.per_minute.map_or(0, NonZeroU32::get)
    }

    /// Takes one request from `key`'s budget; `None` when there is no limit.
    pub fn charge(&self, key: &K) -> Option<Charge> {
        let (limiter, limit) = (self.limiter.as_ref()?, self.per_minute?.get());
        Some(match limiter.check_key(key) {
            Ok(snapshot) => self.granted(limit, snapshot.remaining_burst_capacity()),
            Err(not_until) => Charge {
                limit,
                remaining: 0,
                reset_secs: self.wait_secs(&not_until),
                refused: true,
                never: false,
            },
        })
    }

    /// Takes `n` more requests from `key`'s budget at once (an export's records, contract
    /// §12.3), all or none; `None` when there is no limit or nothing to take. A refusal because
    /// `n` is more than the whole budget has [`Charge::never`] set: no wait makes it fit.
    pub fn charge_n(&self, key: &K, n: u32) -> Option<Charge> {
        let (limiter, limit) = (self.limiter.as_ref()?, self.per_minute?.get());
        let n = NonZeroU32::new(n)?;
        Some(match limiter.check_key_n(key, n) {
            Ok(Ok(snapshot)) => self.granted(limit, snapshot.remaining_burst_capacity()),
            Ok(Err(not_until)) => Charge {
                limit,
                remaining: 0,
                reset_secs: self.wait_secs(&not_until),
                refused: true,
                never: false,
            },
            Err(_) => Charge {
                limit,
                remaining: 0,
                reset_secs: WINDOW_SECS,
                refused: true,
                never: true,
            },
        })
    }

    /// The charge of a granted request that left `remaining`.
    fn granted(&self, limit: u32, remaining: u32) -> Charge {
        let per_request = Duration::from_secs(WINDOW_SECS) / limit;
        let used = u64::from(limit - remaining.min(limit));
        Charge {
            limit,
            remaining,
            reset_secs: (per_request * used as u32).as_secs_f64().ceil() as u64,
            refused: false,
            never: false,
        }
    }

    /// Whole seconds until a refused request would fit (at least 1).
    fn wait_secs(&self, not_until: &governor::NotUntil<<DefaultClock as Clock>::Instant>) -> u64 {
        not_until
            .wait_time_from(self.clock.now())
            .as_secs_f64()
            .ceil()
            .max(1.0) as u64
    }

    /// Forgets keys whose budget is full again (they carry no information).
    pub fn forget_idle(&self) {
        if let Some(limiter) = &self.limiter {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }

    /// Keys held.
    pub fn keys(&self) -> usize {
        self.limiter.as_ref().map_or(0, |l| l.len())
    }
}

/// The two budgets of the API.
#[derive(Debug)]
pub struct RateLimits {
    /// Per known token, by token id.
    pub tokens: Budget<i64>,
    /// Per client address (IPv6: per /64): requests without a known token.
    pub addresses: Budget<IpAddr>,
}

impl RateLimits {
    /// `per_token` requests a minute per token, `per_address` per client address for requests
    /// without a known token (0: no limit).
    pub fn new(per_token: u32, per_address: u32) -> Self {
        RateLimits {
            tokens: Budget::new(per_token),
            addresses: Budget::new(per_address),
        }
    }

    /// Charges token `token_id` `extra` requests beyond the one the gate charged (a heavy
    /// request, `query::cost`; an export's records), all or none: `Ok(Some(charge))`
    /// for the answer's extensions (the gate announces it), `Ok(None)` when nothing was
    /// charged, `Err(refused)` when the budget cannot pay. Every front end charges through
    /// this, so REST and MCP refuse alike.
    pub fn weigh(&self, token_id: i64, extra: u64) -> Result<Option<Charge>, Charge> {
        let extra = u32::try_from(extra).unwrap_or(u32::MAX);
        match self.tokens.charge_n(&token_id, extra) {
            Some(refused) if refused.refused => Err(refused),
            charge => Ok(charge),
        }
    }

    /// Forgets idle keys of both budgets (the maintenance tick).
    pub fn forget_idle(&self) {
        self.tokens.forget_idle();
        self.addresses.forget_idle();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_runs_out_and_names_the_wait() {
        let budget = Budget::<&str>::new(3);
        for left in [2, 1, 0] {
            let charge = budget.charge(&"a").unwrap();
            assert!(!charge.refused);
            assert_eq!(charge.remaining, left);
            assert_eq!(charge.limit, 3);
        }
        // One request refills every 20 s at 3 a minute.
        let refused = budget.charge(&"a").unwrap();
        assert!(refused.refused);
        assert!((19..=20).contains(&refused.reset_secs), "{refused:?}");
        assert!(!budget.charge(&"b").unwrap().refused, "budgets are per key");
        let big = Budget::<&str>::new(10);
        let charge = big.charge_n(&"a", 4).unwrap();
        assert_eq!((charge.remaining, charge.refused), (6, false));
        let refused = big.charge_n(&"a", 7).unwrap();
        assert!(refused.refused && !refused.never, "{refused:?}");
        assert_eq!(
            big.charge(&"a").unwrap().remaining,
            5,
            "a refusal takes nothing"
        );
        assert!(big.charge_n(&"a", 11).unwrap().never);
        assert!(big.charge_n(&"a", 0).is_none());
        let off = Budget::<&str>::new(0);
        assert!((0..10_000).all(|_| off.charge(&"a").is_none()));
        assert!(off.charge_n(&"a", 5).is_none());
    }

    #[test]
    fn idle_keys_are_forgotten() {
        let budget = Budget::<u32>::new(1_000_000);
        for key in 0..1000 {
            budget.charge(&key);
        }
        assert_eq!(budget.keys(), 1000);
        // At a million a minute one request refills in 60 µs: every key is full again soon.
        std::thread::sleep(Duration::from_millis(5));
        budget.forget_idle();
        assert_eq!(budget.keys(), 0);
    }
}
