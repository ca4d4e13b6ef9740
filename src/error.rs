//! The API's errors on the wire (contract §7). The codes, statuses and messages live in the
//! query layer's [`ApiError`], shared with GraphQL; this module writes them as HTTP answers:
//! the JSON body, `WWW-Authenticate` on 401, `Retry-After` on 429.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

pub use graphql::query::ApiError;

use crate::store::StoreError;

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

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let error = self.0;
        let status =
            StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, Json(error.body())).into_response();
        let headers = response.headers_mut();
        match &error {
            ApiError::MissingToken | ApiError::InvalidToken => {
                let challenge = if matches!(error, ApiError::InvalidToken) {
                    "Bearer error=\"invalid_token\""
                } else {
                    "Bearer"
                };
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(challenge),
                );
            }
            ApiError::RateLimited { retry_after }
            | ApiError::ExportOverBudget { retry_after, .. } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
            }
            _ => {}
        }
        response
    }
}
