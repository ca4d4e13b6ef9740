//! The API under `/api/v1` (spec §4.1–§4.5, contract §3–§7, §10, §11). Handlers are thin: they
//! read the request, call the query layer (`query`) or the GraphQL schema built on it
//! (`graphql`), and write the answer with the caching headers of contract §11.

pub(crate) mod agg;
pub(crate) mod datasets;
pub mod export;
pub(crate) mod index;
pub(crate) mod jobs;
pub mod parameters;
pub(crate) mod publish;
mod query_string;
pub(crate) mod records;
pub mod responses;
pub(crate) mod versions;

use crate::http::error::{ApiError, HttpError};

/// A weighed answer with the gate's last charge, granted or refused, in its extensions: the API
/// gate writes the `RateLimit` headers from it.
pub(crate) fn charged(
    gate: &crate::auth::cost_gate::TokenGate,
    answer: Result<axum::response::Response, HttpError>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let mut response = answer.unwrap_or_else(IntoResponse::into_response);
    if let Some(charge) = gate.last_charge() {
        response.extensions_mut().insert(charge);
    }
    response
}

/// The 429 answer to a request [`RateLimits::weigh`](crate::auth::rate_limit::RateLimits::weigh)
/// refused, announcing its charge.
pub(crate) fn refusal(refused: crate::auth::rate_limit::Charge) -> axum::response::Response {
    use axum::response::IntoResponse;
    let mut response = HttpError(ApiError::RateLimited {
        retry_after: refused.reset_secs,
    })
    .into_response();
    response.extensions_mut().insert(refused);
    response
}
