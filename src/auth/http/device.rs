//! The device authorization endpoints (contract §8, RFC 8628): `POST /api/v1/auth/device`
//! starts a request, `POST /api/v1/auth/token` polls it. They need no bearer token, accept JSON
//! and `application/x-www-form-urlencoded` bodies alike, and answer errors in the OAuth shape
//! `{"error", "error_description"}` (RFC 6749 §5.2, RFC 8628 §3.5), not the API's own. Both are
//! limited per client address ([`throttle`]: counted in memory, shared through the store at most
//! once a second, so the budgets hold across instances); over budget, the answer is 429
//! `rate_limited` with `Retry-After`, decided from memory without a store write.

use std::collections::HashMap;
use std::net::IpAddr;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use crate::auth::grant::{
    self, DEVICE_PATH, GRANT_TYPE_URN, MAX_LABEL, METADATA_PATH, PollOutcome, TOKEN_PATH,
};
use crate::auth::scope;
use crate::auth::throttle::{self, Limit, Verdict};
use crate::http::client_addr::{self, ClientAddr};
use crate::state::AppState;
use query::ApiError;
use query::error::Code;

/// The two device-flow routes, token revocation beside them, and the metadata that announces
/// them, merged into the application router.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(DEVICE_PATH, post(start))
        .route(TOKEN_PATH, post(token))
        .route(super::tokens::REVOKE_PATH, post(super::tokens::revoke))
        .route(
            METADATA_PATH,
            axum::routing::get(super::discovery::metadata),
        )
}

/// An OAuth error answer: HTTP 400 (429 for a client address over its budget, 503 when the
/// store is down) with `{"error", "error_description"}` and `Cache-Control: no-store`
/// (RFC 6749 §5.1).
#[derive(Debug)]
pub struct OAuthError {
    error: Code,
    description: String,
    /// Seconds for `Retry-After` (429 only).
    retry_after: Option<i64>,
}

impl OAuthError {
    pub(super) fn bad(error: Code, description: impl Into<String>) -> Self {
        OAuthError {
            error,
            description: description.into(),
            retry_after: None,
        }
    }

    /// The client address is over `limit`: 429 `rate_limited` with `Retry-After`, the API's
    /// own code for it (contract §7) in the OAuth shape. Not `slow_down`, which RFC 8628 gives
    /// one device code's polling and which says the request is still pending: an address over
    /// its budget is refused before any code is looked at.
    fn rate_limited(what: &str, limit: Limit, retry_after: i64) -> Self {
        OAuthError {
            error: Code::RateLimited,
            description: format!(
                "Too many {what} from this address: at most {} in {} seconds. Try again in {retry_after} seconds.",
                limit.max, limit.window_secs
            ),
            retry_after: Some(retry_after),
        }
    }

    pub(super) fn unavailable(e: impl std::fmt::Display) -> Self {
        tracing::error!(error = %e, "device flow: store failure");
        OAuthError {
            error: Code::TemporarilyUnavailable,
            description: "The service cannot reach its data store right now; try again shortly."
                .into(),
            retry_after: None,
        }
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.error.status()).expect("the table's statuses");
        let mut response = no_store(
            status,
            json!({"error": self.error.name(), "error_description": self.description}),
        );
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
        }
        response
    }
}

fn no_store(status: StatusCode, body: Value) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

/// The request's parameters named in `known`, from a JSON object or a form body (RFC 6749 §3.2
/// requires the form; the spec's examples are JSON). A known parameter must be a string (JSON
/// `null` counts as absent) given once (RFC 6749 §3.1); other parameters are ignored whatever
/// they hold (contract §8).
pub(super) fn parameters(
    headers: &HeaderMap,
    body: &Bytes,
    known: &[&str],
) -> Result<HashMap<String, String>, OAuthError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let trimmed = body.trim_ascii();
    let is_json = content_type.starts_with("application/json")
        || content_type.contains("+json")
        || (!content_type.starts_with("application/x-www-form-urlencoded")
            && trimmed.first() == Some(&b'{'));
    let mut out = HashMap::new();
    if trimmed.is_empty() {
        return Ok(out);
    }
    if is_json {
        let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(trimmed) else {
            return Err(OAuthError::bad(
                Code::InvalidRequest,
                "The body is not a JSON object; send JSON or application/x-www-form-urlencoded.",
            ));
        };
        for (name, value) in map {
            if !known.contains(&name.as_str()) {
                continue;
            }
            match value {
                Value::String(s) => {
                    out.insert(name, s);
                }
                Value::Null => {}
                _ => {
                    return Err(OAuthError::bad(
                        Code::InvalidRequest,
                        format!("The parameter {name} must be a string."),
                    ));
                }
            }
        }
    } else {
        let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(trimmed).map_err(|_| {
            OAuthError::bad(
                Code::InvalidRequest,
                "The body is not a valid application/x-www-form-urlencoded form.",
            )
        })?;
        for (name, value) in pairs {
            if !known.contains(&name.as_str()) {
                continue;
            }
            if out.contains_key(&name) {
                return Err(OAuthError::bad(
                    Code::InvalidRequest,
                    format!("The parameter {name} is repeated; send it once."),
                ));
            }
            out.insert(name, value);
        }
    }
    Ok(out)
}

/// The parameters `POST /auth/device` reads.
const DEVICE_PARAMETERS: &[&str] = &["device_name", "client", "client_id", "scope"];
/// The parameters `POST /auth/token` reads.
const TOKEN_PARAMETERS: &[&str] = &["grant_type", "device_code"];

/// A label as sent, at most [`MAX_LABEL`] characters (counted before trimming, as the OpenAPI
/// document's `maxLength` counts them) and without NUL (its `pattern`); blank is absent.
fn label(params: &mut HashMap<String, String>, name: &str) -> Result<Option<String>, OAuthError> {
    match params.remove(name) {
        Some(s) if s.chars().count() > MAX_LABEL => Err(OAuthError::bad(
            Code::InvalidRequest,
            format!("{name} is longer than {MAX_LABEL} characters."),
        )),
        // The store's text cannot hold NUL (PostgreSQL refuses it): a client error, not a 503.
        Some(s) if s.contains('\0') => Err(OAuthError::bad(
            Code::InvalidRequest,
            format!("{name} cannot contain the NUL character."),
        )),
        Some(s) if s.trim().is_empty() => Ok(None),
        other => Ok(other.map(|s| s.trim().to_string())),
    }
}

/// Counts one request from `address` against `limit` under `kind` before any other store work,
/// and refuses when the address is over its budget.
pub(super) async fn take_budget(
    state: &AppState,
    address: IpAddr,
    kind: &str,
    limit: Limit,
    what: &str,
) -> Result<(), OAuthError> {
    let key = throttle::key(kind, &client_addr::throttle_subject(address));
    match state.throttles.take(&key, limit).await {
        Ok(Verdict::Allowed) => Ok(()),
        Ok(Verdict::Refused { retry_after }) => {
            Err(OAuthError::rate_limited(what, limit, retry_after))
        }
        Err(e) => Err(OAuthError::unavailable(e)),
    }
}

/// `POST /api/v1/auth/device` (RFC 8628 §3.1–3.2): issues a device code and a user code,
/// within [`throttle::DEVICE_START_PER_ADDRESS`] (a refused start stores nothing).
#[utoipa::path(post, path = "/auth/device", tag = "auth", operation_id = "device_authorization",
    summary = "Starts a device authorization (RFC 8628 §3.1): show the person `verification_uri_complete`, then poll `POST /auth/token`",
    request_body(description = "Optional: an empty body starts an authorization too", content(
        (crate::auth::openapi::DeviceAuthorizationForm = "application/x-www-form-urlencoded"),
        (crate::auth::openapi::DeviceAuthorizationRequest = "application/json"),
    )),
    responses(
        (status = 200, description = "The codes (`Cache-Control: no-store`)", body = crate::auth::openapi::DeviceAuthorization),
        (status = 400, description = "`invalid_request`: a body that cannot be read, or a label too long; `invalid_scope`: a scope with an unknown word, a dataset not published, neither `read` nor `export`, or over 1,024 bytes", body = crate::auth::openapi::OAuthErrorBody),
        (status = 408, response = crate::http::error::openapi::RequestTimeout),
        (status = 429, description = "`rate_limited`: too many authorizations from this address", body = crate::auth::openapi::OAuthErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 503, description = "`temporarily_unavailable`: the store cannot be reached", body = crate::auth::openapi::OAuthErrorBody),
    ),
    security(())
)]
pub(crate) async fn start(
    State(state): State<AppState>,
    ClientAddr(address): ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, OAuthError> {
    let mut params = parameters(&headers, &body, DEVICE_PARAMETERS)?;
    let device_name = label(&mut params, "device_name")?;
    // A standard OAuth client sends only `client_id`; it names the client then.
    let client = match label(&mut params, "client")? {
        Some(c) => Some(c),
        None => label(&mut params, "client_id")?,
    };
    take_budget(
        &state,
        address,
        "device:ip",
        throttle::DEVICE_START_PER_ADDRESS,
        "device authorizations",
    )
    .await?;
    // RFC 6749 §5.2's `invalid_scope`: an unknown word, a dataset not published, too long.
    let scope = scope::asked(&state.store, params.get("scope").map_or("", String::as_str))
        .await
        .map_err(|e| match e {
            ApiError::InvalidScope { message } => OAuthError::bad(Code::InvalidScope, message),
            other => OAuthError::unavailable(other),
        })?;
    let started = grant::start(&state.store, device_name, client, &scope)
        .await
        .map_err(OAuthError::unavailable)?;
    let site = state.public_url.trim_end_matches('/');
    Ok(no_store(
        StatusCode::OK,
        json!({
            "device_code": started.device_code.expose(),
            "user_code": started.user_code,
            "verification_uri": format!("{site}/device"),
            "verification_uri_complete": format!("{site}/device?code={}", started.user_code),
            "expires_in": started.expires_in,
            "interval": started.interval,
        }),
    ))
}

/// `POST /api/v1/auth/token` (RFC 8628 §3.4–3.5): one poll, within
/// [`throttle::TOKEN_POLL_PER_ADDRESS`].
#[utoipa::path(post, path = "/auth/token", tag = "auth", operation_id = "device_token",
    summary = "Polls a device authorization (RFC 8628 §3.4): the token once the person approved",
    request_body(content(
        (crate::auth::openapi::TokenRequest = "application/x-www-form-urlencoded"),
        (crate::auth::openapi::TokenRequest = "application/json"),
    )),
    responses(
        (status = 200, description = "The token (`Cache-Control: no-store`); the device code is spent", body = crate::auth::openapi::TokenAnswer),
        (status = 400, description = "`authorization_pending` (poll again after `interval`), `slow_down` (the interval grew by 5 s), `access_denied`, `expired_token`, `invalid_grant`, `unsupported_grant_type`, `invalid_request`", body = crate::auth::openapi::OAuthErrorBody),
        (status = 408, response = crate::http::error::openapi::RequestTimeout),
        (status = 429, description = "`rate_limited`: too many polls from this address", body = crate::auth::openapi::OAuthErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 503, description = "`temporarily_unavailable`: the store cannot be reached", body = crate::auth::openapi::OAuthErrorBody),
    ),
    security(())
)]
pub(crate) async fn token(
    State(state): State<AppState>,
    ClientAddr(address): ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, OAuthError> {
    let params = parameters(&headers, &body, TOKEN_PARAMETERS)?;
    let Some(grant_type) = params.get("grant_type") else {
        return Err(OAuthError::bad(
            Code::InvalidRequest,
            format!("grant_type is missing; send grant_type={GRANT_TYPE_URN} (or device_code)."),
        ));
    };
    if grant_type != GRANT_TYPE_URN && grant_type != "device_code" {
        return Err(OAuthError::bad(
            Code::UnsupportedGrantType,
            format!("Only the device code grant is supported: grant_type={GRANT_TYPE_URN}."),
        ));
    }
    let Some(device_code) = params.get("device_code").filter(|c| !c.is_empty()) else {
        return Err(OAuthError::bad(
            Code::InvalidRequest,
            "device_code is missing; send the device_code from POST /api/v1/auth/device.",
        ));
    };
    take_budget(
        &state,
        address,
        "token:ip",
        throttle::TOKEN_POLL_PER_ADDRESS,
        "token requests",
    )
    .await?;
    let outcome = grant::poll(&state.store, device_code)
        .await
        .map_err(OAuthError::unavailable)?;
    Err(match outcome {
        PollOutcome::Issued {
            token,
            expires_in,
            scope,
        } => {
            return Ok(no_store(
                StatusCode::OK,
                json!({
                    "access_token": token.expose(),
                    "token_type": "Bearer",
                    "expires_in": expires_in,
                    "scope": scope,
                }),
            ));
        }
        PollOutcome::Pending => OAuthError::bad(
            Code::AuthorizationPending,
            "The request has not been approved yet; poll again after the interval.",
        ),
        PollOutcome::SlowDown => OAuthError::bad(
            Code::SlowDown,
            "Polled sooner than the interval after the previous poll; the interval is now 5 seconds longer.",
        ),
        PollOutcome::Denied => OAuthError::bad(
            Code::AccessDenied,
            "The person refused this request at the approval page.",
        ),
        PollOutcome::Expired => OAuthError::bad(
            Code::ExpiredToken,
            "The device code has expired; start again with POST /api/v1/auth/device.",
        ),
        PollOutcome::Invalid => OAuthError::bad(
            Code::InvalidGrant,
            "The device code is unknown or has already been used.",
        ),
    })
}
