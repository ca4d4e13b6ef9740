//! Authentication: API tokens, the device authorization grant, and the site's accounts.
//!
//! - [`token`]: minting and hashing API tokens; [`bearer`]: the API's `Authorization: Bearer`
//!   check; [`gate`]: the API's door (who asks, within which budget); [`rate_limit`]: request
//!   budgets per token and per client address; [`token_cache`]: live tokens without a query.
//! - [`grant`]: the device grant's states in the store; [`device`]: its two HTTP endpoints;
//!   [`discovery`]: the RFC 8414 metadata that announces them.
//! - [`account`], [`password`], [`session`], [`throttle`]: sign-up and sign-in, Argon2id on
//!   bounded workers, server-side sessions, and the counters for logins, user codes, sign-ups and
//!   the device flow (kept in memory, shared through the store at most once a second a key).
//! - [`purge`]: expired grants, sessions, explorer tokens and counters, on the maintenance tick.

pub mod account;
pub mod bearer;
pub mod device;
pub mod discovery;
pub mod gate;
pub mod grant;
pub mod openapi;
pub mod password;
pub mod purge;
pub mod rate_limit;
pub mod session;
pub mod throttle;
pub mod token;
pub mod token_cache;
