//! The API's errors on the wire (contract §7). The codes and messages live in the query layer's
//! [`ApiError`], shared with GraphQL and MCP; this module gives each code its HTTP status and
//! writes it as an HTTP answer: the JSON body, `WWW-Authenticate` on 401, `Retry-After` on 429.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

pub use query::ApiError;

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

/// The HTTP status of each of the contract's codes (contract §7).
pub fn status(error: &ApiError) -> StatusCode {
    match error {
        ApiError::InvalidParameter { .. }
        | ApiError::MissingParameter { .. }
        | ApiError::UnknownField { .. }
        | ApiError::TextFieldExactMatch { .. }
        | ApiError::InvalidGroupBy { .. }
        | ApiError::InvalidField { .. }
        | ApiError::InvalidOperator { .. }
        | ApiError::TooManyGroups { .. } => StatusCode::BAD_REQUEST,
        ApiError::MissingToken | ApiError::InvalidToken => StatusCode::UNAUTHORIZED,
        ApiError::DatasetNotFound { .. } | ApiError::RecordNotFound { .. } | ApiError::NotFound => {
            StatusCode::NOT_FOUND
        }
        ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        ApiError::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
        ApiError::RateLimited { .. } | ApiError::ExportOverBudget { .. } => {
            StatusCode::TOO_MANY_REQUESTS
        }
        ApiError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let error = self.0;
        let status = status(&error);
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
