//! Authentication: API tokens, the device authorization grant, and the site's accounts.
//!
//! - [`token`]: minting and hashing API tokens; [`bearer`]: the API's `Authorization: Bearer`
//!   check; [`rate_limit`]: request budgets per token.
//! - [`grant`]: the device grant's states in the store; [`device`]: its two HTTP endpoints.
//! - [`account`], [`password`], [`session`], [`throttle`]: sign-up and sign-in, Argon2id,
//!   server-side sessions, and failure counters for logins and user codes.

pub mod account;
pub mod bearer;
pub mod device;
pub mod grant;
pub mod password;
pub mod rate_limit;
pub mod session;
pub mod throttle;
pub mod token;
