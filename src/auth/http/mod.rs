//! Auth's HTTP side: what turns a request into an account and a budget, and the device flow's
//! endpoints. Kept apart from the domain (tokens, grants, throttles, budgets in [`crate::auth`])
//! so the domain holds no handler and the state can hold the domain without importing HTTP.
//!
//! - [`gate`]: the API's door (who asks, within which budget): the `Authorization: Bearer`
//!   header and the [`Principal`](crate::auth::token::Principal) extractor.
//! - [`device`]: the two device-flow endpoints (RFC 8628); [`discovery`]: the RFC 8414
//!   metadata that announces them; [`tokens`]: `GET /token` (the calling token) and
//!   `POST /auth/revoke` (RFC 7009).

pub mod device;
pub mod discovery;
pub mod gate;
pub mod tokens;
