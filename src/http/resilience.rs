//! What keeps every API answer in the contract whatever goes wrong underneath (contract §7,
//! §12.5):
//!
//! - [`json_errors`]: an error produced outside our handlers — axum refusing a path that is not
//!   UTF-8 after decoding, a body over [`MAX_BODY_BYTES`], a wrong content type — gets the
//!   contract's JSON body instead of axum's plain text;
//! - [`retry_store_faults`]: a read cut by a store fault (a pooled connection killed, the server
//!   restarting) is run once more, on a fresh connection, when the first try failed quickly;
//!   only if that fails too does the client see 503 `unavailable`. Every API request is a read
//!   (GraphQL has no mutations), so running one twice is safe;
//! - [`limit_form_bodies`]: the device flow's form endpoints (`/auth/device`, `/auth/token`)
//!   read at most [`MAX_FORM_BODY_BYTES`], and refuse more with a `413` in OAuth's error shape,
//!   as they answer every other error.

use std::time::{Duration, Instant};

use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::http::error::{ApiError, HttpError};

pub use crate::http::limits::{MAX_BODY_BYTES, MAX_FORM_BODY_BYTES};

/// `routes` (the device flow's) with a body limit of [`MAX_FORM_BODY_BYTES`], whose refusal is
/// `413` with `{"error": "payload_too_large", "error_description", "limit_bytes"}` and
/// `Cache-Control: no-store`: OAuth's shape, which these endpoints answer every error in (their
/// 429 names the API's own `rate_limited` the same way).
pub fn limit_form_bodies<S: Clone + Send + Sync + 'static>(
    routes: axum::Router<S>,
) -> axum::Router<S> {
    routes
        .layer(axum::extract::DefaultBodyLimit::max(MAX_FORM_BODY_BYTES))
        .layer(axum::middleware::from_fn(oauth_too_large))
}

async fn oauth_too_large(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    if response.status() != StatusCode::PAYLOAD_TOO_LARGE || is_json(&response) {
        return response;
    }
    let body = serde_json::json!({
        "error": query::error::Code::PayloadTooLarge.name(),
        "error_description": format!(
            "The request body is larger than {MAX_FORM_BODY_BYTES} bytes, the most these endpoints read."
        ),
        "limit_bytes": MAX_FORM_BODY_BYTES,
    });
    let mut answer = (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(body)).into_response();
    answer.headers_mut().insert(
        header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    answer
}

/// A first try that failed within this is retried; a slower failure (the pool waited for a
/// connection until its timeout) is not, so a store that is down is reported without doubling
/// the wait.
const RETRY_WITHIN: Duration = Duration::from_secs(2);

/// Gives non-JSON error answers the contract's JSON shape.
pub async fn json_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(&response) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = to_bytes(body, 4096).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let error = match status {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge {
            limit_bytes: MAX_BODY_BYTES,
        },
        StatusCode::NOT_FOUND => ApiError::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => ApiError::MethodNotAllowed,
        StatusCode::SERVICE_UNAVAILABLE => ApiError::Unavailable,
        s if s.is_client_error() => ApiError::invalid(
            "request",
            format!(
                "The request could not be read: {}.",
                text.trim().trim_end_matches('.')
            ),
        ),
        _ => {
            tracing::error!(status = %status, body = %query::log_text::clip(&text), "non-JSON error answer");
            ApiError::Internal
        }
    };
    let mut shaped = HttpError(error).into_response();
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            shaped.headers_mut().insert(name, value.clone());
        }
    }
    shaped
}

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.contains("+json"))
}

/// Runs a read once more when a store fault cut its first try (see the module documentation).
pub async fn retry_store_faults(request: Request, next: Next) -> Response {
    if !matches!(*request.method(), Method::GET | Method::HEAD | Method::POST) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let body = match to_bytes(body, MAX_BODY_BYTES).await {
        Ok(body) => body,
        Err(_) => {
            return HttpError(ApiError::PayloadTooLarge {
                limit_bytes: MAX_BODY_BYTES,
            })
            .into_response();
        }
    };
    let again = Request::from_parts(parts.clone(), Body::from(body.clone()));
    let started = Instant::now();
    let response = next
        .clone()
        .run(Request::from_parts(parts, Body::from(body)))
        .await;
    if response.status() != StatusCode::SERVICE_UNAVAILABLE || started.elapsed() > RETRY_WITHIN {
        return response;
    }
    tracing::info!("a store fault cut a read; running it once more");
    next.run(again).await
}
