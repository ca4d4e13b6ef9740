//! `Authorization: Bearer` on the API (spec §5, contract §7), the HTTP side: reading the
//! header, and the [`Principal`] extractor handlers take. The API gate ([`super::gate`]) does
//! the checking once per request and leaves what it found ([`Authenticated`]) in the request's
//! extensions; the extractor and MCP's token check read it from there.

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;

use crate::auth::principal::Principal;
use crate::http::error::{ApiError, HttpError};
use crate::state::AppState;

/// The bearer token of a request: `Ok(None)` when there is none.
pub(super) fn bearer(headers: &axum::http::HeaderMap) -> Result<Option<&str>, ApiError> {
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

/// Who the API gate ([`super::gate`]) found a request to act for: `Ok(None)` without a token.
#[derive(Clone, Debug)]
pub struct Authenticated(pub Result<Option<Principal>, ApiError>);

impl FromRequestParts<AppState> for Principal {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, HttpError> {
        match parts.extensions.get::<Authenticated>() {
            Some(Authenticated(Ok(Some(principal)))) => Ok(*principal),
            Some(Authenticated(Ok(None))) => Err(ApiError::MissingToken.into()),
            Some(Authenticated(Err(error))) => Err(error.clone().into()),
            None => {
                tracing::error!("a route that needs a token is not behind the API gate");
                Err(ApiError::Internal.into())
            }
        }
    }
}
