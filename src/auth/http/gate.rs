//! The API's door: every request under `/api/v1` passes here once, before any handler. It
//! finds who the request acts for and charges the right budget, in an order a flood cannot
//! turn against us:
//!
//! 1. a token this instance confirmed within [`FRESH_FOR`](crate::auth::token::FRESH_FOR) is
//!    charged to its own budget and costs no store query;
//! 2. a token confirmed before but not lately is checked again, charged to its own budget;
//! 3. anything else (no token, a malformed header, a token never seen) is charged to the
//!    client address's budget first, and only within it is the store asked; a token the
//!    store confirms is then charged to its own budget as well.
//!
//! The answer carries `RateLimit-Policy` and `RateLimit` (IETF draft, contract §12.5) for the
//! budget charged; a refusal is 429 `rate_limited` with `Retry-After`. A handler that charges
//! the token's budget again (an export: one more request per 1,000 records) puts that later
//! [`Charge`] in the response's extensions, and the headers announce it instead.
//!
//! What the gate found ([`Authenticated`]) stays in the request's extensions: the
//! [`Principal`] extractor handlers take and MCP's token check read it from there.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth::rate_limit::{Charge, WINDOW_SECS};
use crate::auth::token::{self, Known, Principal, authenticate_hash};
use crate::http::client_addr;
use crate::http::error::{ApiError, HttpError};
use crate::http::server::Seat;
use crate::state::AppState;

/// `RateLimit-Policy`: the budget's name, size and window.
pub static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`: what is left of it and when it is full again.
pub static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// Which budget a request was charged to (the policy's name in the headers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Charged {
    Token,
    Address,
}

impl Charged {
    fn name(self) -> &'static str {
        match self {
            Charged::Token => "token",
            Charged::Address => "address",
        }
    }
}

/// The middleware (install with `axum::middleware::from_fn_with_state`).
pub async fn gate(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let limits = &state.rate_limits;
    let (who, charged, charge) = match bearer(request.headers()) {
        Err(error) => (
            Err(error),
            Charged::Address,
            limits.addresses.charge(&address(&request, &state)),
        ),
        Ok(None) => (
            Ok(None),
            Charged::Address,
            limits.addresses.charge(&address(&request, &state)),
        ),
        Ok(Some(plain)) => {
            let token_hash = token::hash(plain);
            match state.token_cache.get(&token_hash) {
                Known::Fresh(principal) => {
                    let charge = limits.tokens.charge(&principal.token_id);
                    (Ok(Some(principal)), Charged::Token, charge)
                }
                Known::Stale(principal) => {
                    let charge = limits.tokens.charge(&principal.token_id);
                    let who = if charge.is_some_and(|c| c.refused) {
                        Ok(Some(principal))
                    } else {
                        check(&state, &token_hash).await
                    };
                    (who, Charged::Token, charge)
                }
                Known::Unknown => {
                    let charge = limits.addresses.charge(&address(&request, &state));
                    if charge.is_some_and(|c| c.refused) {
                        (Ok(None), Charged::Address, charge)
                    } else {
                        let _turn = state.token_cache.first_check_turn().await;
                        match check(&state, &token_hash).await {
                            // Confirmed: from here on the token's own budget counts.
                            Ok(Some(principal)) => {
                                let charge = limits.tokens.charge(&principal.token_id);
                                (Ok(Some(principal)), Charged::Token, charge)
                            }
                            other => (other, Charged::Address, charge),
                        }
                    }
                }
            }
        }
    };
    if let Some(charge) = charge.filter(|c| c.refused) {
        let mut response = HttpError(ApiError::RateLimited {
            retry_after: charge.reset_secs,
        })
        .into_response();
        announce(&mut response, charged, charge);
        return response;
    }
    if let Ok(Some(principal)) = &who {
        state.token_usage.touch(&state.store, principal.token_id);
        // A valid token: its connection is no longer one a flood's newcomer may push out.
        if let Some(seat) = request.extensions().get::<Arc<Seat>>() {
            seat.confirm();
        }
    }
    request.extensions_mut().insert(Authenticated(who));
    let mut response = next.run(request).await;
    // A handler that charged more (an export, contract §12.3) leaves its later charge here.
    let charge = response.extensions_mut().remove::<Charge>().or(charge);
    if let Some(charge) = charge {
        announce(&mut response, charged, charge);
    }
    response
}

/// The client address's network, the key of the address budget. Only a request without a
/// known token is charged to its address, so only such a request reads it.
fn address(request: &Request, state: &AppState) -> std::net::IpAddr {
    client_addr::network(client_addr::of_request(request, &state.trusted_proxies))
}

/// Asks the store about a token and keeps the answer in the cache.
async fn check(state: &AppState, token_hash: &str) -> Result<Option<Principal>, ApiError> {
    match authenticate_hash(&state.store, token_hash).await {
        Ok((principal, expires_at)) => {
            state
                .token_cache
                .confirm(token_hash, principal.clone(), expires_at);
            Ok(Some(principal))
        }
        Err(error) => {
            if error == ApiError::InvalidToken {
                state.token_cache.forget(token_hash);
            }
            Err(error)
        }
    }
}

/// Adds `RateLimit-Policy` and `RateLimit` for `charge`.
fn announce(response: &mut Response, charged: Charged, charge: Charge) {
    let name = charged.name();
    let policy = format!("\"{name}\";q={};w={WINDOW_SECS}", charge.limit);
    let left = format!("\"{name}\";r={};t={}", charge.remaining, charge.reset_secs);
    let headers = response.headers_mut();
    for (header, value) in [(&RATELIMIT_POLICY, policy), (&RATELIMIT, left)] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(header.clone(), value);
        }
    }
}

// The `Authorization: Bearer` header.

/// The bearer token of a request: `Ok(None)` when there is none.
fn bearer(headers: &axum::http::HeaderMap) -> Result<Option<&str>, ApiError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value.to_str().map_err(|_| ApiError::InvalidToken)?.trim();
    let Some((scheme, rest)) = value.split_once(' ') else {
        return if value.eq_ignore_ascii_case("bearer") {
            Err(ApiError::InvalidToken)
        } else {
            Ok(None)
        };
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Ok(None);
    }
    let token = rest.trim();
    if token.is_empty() {
        return Err(ApiError::InvalidToken);
    }
    Ok(Some(token))
}

/// Who the API gate ([`gate`]) found a request to act for: `Ok(None)` without a token.
#[derive(Clone, Debug)]
pub struct Authenticated(pub Result<Option<Principal>, ApiError>);

impl FromRequestParts<AppState> for Principal {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, HttpError> {
        match parts.extensions.get::<Authenticated>() {
            Some(Authenticated(Ok(Some(principal)))) => Ok(principal.clone()),
            Some(Authenticated(Ok(None))) => Err(ApiError::MissingToken.into()),
            Some(Authenticated(Err(error))) => Err(error.clone().into()),
            None => {
                tracing::error!("a route that needs a token is not behind the API gate");
                Err(ApiError::Internal.into())
            }
        }
    }
}
