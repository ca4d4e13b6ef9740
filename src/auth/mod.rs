//! Authentication's domain: API tokens, the device authorization grant, the site's accounts and
//! every budget a request is counted against. Nothing here is an HTTP handler; those are in
//! [`http`].
//!
//! - [`token`]: minting and hashing API tokens, who a token acts for (and its "last used"
//!   writes), and the live tokens known without a query; [`rate_limit`]: request budgets per
//!   token and per client address, and [`cost_gate`]: a token's budget as each call weighs it; [`export_slots`]: how many exports run at once.
//! - [`grant`]: the device grant's states in the store, its paths and limits.
//! - [`account`], [`password`], [`session`], [`throttle`]: sign-up and sign-in, Argon2id on
//!   bounded workers, server-side sessions, and the counters for logins, user codes, sign-ups and
//!   the device flow (kept in memory, shared through the store at most once a second a key).
//! - [`publishers`]: the operator's grants of the right to publish, and the patterns they name.
//! - [`scope`]: the scope and lifetime a new token is asked for, checked against the store.
//! - [`purge`]: expired grants, sessions, explorer tokens and counters, on the maintenance tick.
//! - [`http`]: the API gate, the bearer extractor, the device-flow endpoints and the OAuth
//!   discovery document.

pub mod account;
pub mod cost_gate;
pub mod export_slots;
pub mod grant;
pub mod http;
pub mod openapi;
pub mod password;
pub mod publishers;
pub mod purge;
pub mod rate_limit;
pub mod scope;
pub mod session;
pub mod throttle;
pub mod token;
