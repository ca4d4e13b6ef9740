//! The API's errors on the wire (contract §7). The codes, their statuses and messages live in
//! the query layer's error table and [`ApiError`], shared with GraphQL and MCP; this module
//! writes an error as an HTTP answer: the JSON body,
//! `WWW-Authenticate` on 401 and 403, `Retry-After` on 429. [`ErrorBody`] is that body's shape in the
//! OpenAPI document.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

pub use query::ApiError;
use query::error::Code;

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

/// The HTTP status of an error: its code's, from the error table (contract §7).
pub fn status(error: &ApiError) -> StatusCode {
    code_status(error.error_code())
}

/// The HTTP status of `code`.
pub fn code_status(code: Code) -> StatusCode {
    StatusCode::from_u16(code.status()).expect("the error table holds valid statuses")
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let error = self.0;
        let status = status(&error);
        let mut response = (status, Json(error.body())).into_response();
        let headers = response.headers_mut();
        match &error {
            ApiError::MissingToken => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            ApiError::InvalidToken => {
                let challenge = "Bearer error=\"invalid_token\"";
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(challenge),
                );
            }
            ApiError::InsufficientScope { scope } => {
                let challenge = format!("Bearer error=\"insufficient_scope\", scope=\"{scope}\"");
                if let Ok(value) = HeaderValue::from_str(&challenge) {
                    headers.insert(header::WWW_AUTHENTICATE, value);
                }
            }
            _ => {}
        }
        if let Some(retry_after) = error.retry_after() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
        }
        response
    }
}
