//! The API's errors on the wire (contract §7). The codes and messages live in the query layer's
//! error table and [`ApiError`], shared with GraphQL and MCP; this module gives each kind of
//! error its HTTP status and writes an error as an HTTP answer: the JSON body,
//! `WWW-Authenticate` on 401 and 403, `Retry-After` on 429. [`ErrorBody`] is that body's shape in the
//! OpenAPI document.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

pub use query::ApiError;
use query::error::{Code, ErrorKind};

use crate::store::StoreError;

pub mod openapi;

pub use openapi::ErrorBody;

/// An [`ApiError`] as an HTTP response; handlers return `Result<_, HttpError>` and use `?` on
/// anything that converts into an `ApiError`.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpError(pub ApiError);

impl From<ApiError> for HttpError {
    fn from(error: ApiError) -> Self {
        HttpError(error)
    }
}

impl From<StoreError> for HttpError {
    fn from(error: StoreError) -> Self {
        HttpError(error.into())
    }
}

impl From<sea_orm::DbErr> for HttpError {
    fn from(error: sea_orm::DbErr) -> Self {
        HttpError(error.into())
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Db(e) => e.into(),
            other => {
                tracing::error!(error = %other, "store error");
                ApiError::Unavailable
            }
        }
    }
}

/// The HTTP status of each kind of error (contract §7): the one place a code meets a status.
pub fn kind_status(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::InvalidRequest | ErrorKind::InvalidDocument => StatusCode::BAD_REQUEST,
        ErrorKind::Auth => StatusCode::UNAUTHORIZED,
        ErrorKind::Forbidden => StatusCode::FORBIDDEN,
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Gone => StatusCode::GONE,
        ErrorKind::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        ErrorKind::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorKind::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
        ErrorKind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The HTTP status of an error: its kind's.
pub fn status(error: &ApiError) -> StatusCode {
    kind_status(error.kind())
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let error = self.0;
        let status = status(&error);
        let mut response = (status, Json(error.body())).into_response();
        let headers = response.headers_mut();
        match error.kind() {
            ErrorKind::Auth => {
                let challenge = if error.error_code() == Code::InvalidToken {
                    "Bearer error=\"invalid_token\""
                } else {
                    "Bearer"
                };
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(challenge),
                );
            }
            ErrorKind::Forbidden => {
                if let ApiError::InsufficientScope { scope } = &error {
                    let challenge =
                        format!("Bearer error=\"insufficient_scope\", scope=\"{scope}\"");
                    if let Ok(value) = HeaderValue::from_str(&challenge) {
                        headers.insert(header::WWW_AUTHENTICATE, value);
                    }
                }
            }
            ErrorKind::RateLimited => {
                if let Some(retry_after) = error.retry_after() {
                    headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
                }
            }
            _ => {}
        }
        response
    }
}
