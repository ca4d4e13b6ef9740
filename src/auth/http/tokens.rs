//! A token about itself (contract §13.3): `GET /api/v1/token` describes the calling token, and
//! `POST /api/v1/auth/revoke` (RFC 7009) revokes one, so a client can log itself out.
//!
//! The revocation endpoint is the device flow's neighbour: no bearer token, a JSON or form
//! body, OAuth-shaped errors, a budget per client address. As RFC 7009 §2.2 says, it answers
//! 200 whether or not the token was live, so it tells nobody which tokens exist.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use entity::api_token;
use query::catalog::rfc3339;
use query::error::Code;
use sea_orm::EntityTrait;

use super::device::{OAuthError, parameters, take_budget};
use crate::auth::openapi::TokenInfo;
use crate::auth::token::{Principal, hash};
use crate::auth::{account, publishers, throttle};
use crate::http::client_addr::ClientAddr;
use crate::http::error::{ApiError, HttpError};
use crate::state::AppState;

/// Where tokens are revoked (RFC 7009), announced by the OAuth metadata.
pub const REVOKE_PATH: &str = "/api/v1/auth/revoke";
/// The parameters `POST /auth/revoke` reads.
const REVOKE_PARAMETERS: &[&str] = &["token", "token_type_hint"];

/// The calling token: its name, scope, creation, expiry and last four characters.
#[utoipa::path(get, path = "/token", tag = "auth", operation_id = "describe_token",
    summary = "Describes the calling token: name, scope, created_at, expires_at, last4 (never the token), grants",
    responses(
        (status = 200, description = "The calling token", body = TokenInfo),
        (status = 401, response = crate::http::error::openapi::Unauthorized),
        (status = 429, response = crate::http::error::openapi::TooManyRequests),
        (status = 503, response = crate::http::error::openapi::Unavailable),
    ),
    security(("bearer" = []))
)]
pub async fn describe(
    principal: Principal,
    State(state): State<AppState>,
) -> Result<Response, HttpError> {
    let token = api_token::Entity::find_by_id(principal.token_id)
        .one(&state.store.db)
        .await?
        .ok_or(ApiError::InvalidToken)?;
    let grants = publishers::token_grants(&state.store, &principal).await?;
    Ok(Json(TokenInfo {
        name: token.name,
        scope: principal.scope.to_string(),
        created_at: rfc3339(token.created_at),
        expires_at: token.expires_at.map(rfc3339),
        last4: token.last4,
        grants,
    })
    .into_response())
}

/// `POST /api/v1/auth/revoke` (RFC 7009 §2.1): revokes `token`, within
/// [`throttle::REVOKE_PER_ADDRESS`]; every instance refuses it within the token cache's
/// freshness, this one at once.
#[utoipa::path(post, path = "/auth/revoke", tag = "auth", operation_id = "revoke_token",
    summary = "Revokes a token (RFC 7009): a client logs itself out",
    request_body(content(
        (crate::auth::openapi::RevokeRequest = "application/x-www-form-urlencoded"),
        (crate::auth::openapi::RevokeRequest = "application/json"),
    )),
    responses(
        (status = 200, description = "Revoked, or not a live token (RFC 7009 §2.2: the answer is the same)"),
        (status = 400, description = "`invalid_request`: no `token`, or a body that cannot be read", body = crate::auth::openapi::OAuthErrorBody),
        (status = 408, response = crate::http::error::openapi::RequestTimeout),
        (status = 429, description = "`rate_limited`: too many revocations from this address", body = crate::auth::openapi::OAuthErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 503, description = "`temporarily_unavailable`: the store cannot be reached", body = crate::auth::openapi::OAuthErrorBody),
    ),
    security(())
)]
pub(crate) async fn revoke(
    State(state): State<AppState>,
    ClientAddr(address): ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, OAuthError> {
    let params = parameters(&headers, &body, REVOKE_PARAMETERS)?;
    let Some(token) = params.get("token").filter(|t| !t.is_empty()) else {
        return Err(OAuthError::bad(
            Code::InvalidRequest,
            "token is missing; send token=<the API token to revoke>.",
        ));
    };
    take_budget(
        &state,
        address,
        "revoke:ip",
        throttle::REVOKE_PER_ADDRESS,
        "revocations",
    )
    .await?;
    let token_hash = hash(token);
    account::revoke_hash(&state.store, &token_hash)
        .await
        .map_err(OAuthError::unavailable)?;
    state.token_cache.forget(&token_hash);
    Ok(StatusCode::OK.into_response())
}
