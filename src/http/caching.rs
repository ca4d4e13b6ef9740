//! Conditional answers (contract §11): record and agg answers carry an `ETag` computed from the
//! dataset version and the normalized request, before any query runs, so a matching
//! `If-None-Match` costs no query at all.

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::http::error::{ApiError, HttpError};

/// Answers `304` when the client holds the answer tagged `etag`; otherwise runs `answer` and
/// sends it with the tag.
pub async fn conditional<T: Serialize>(
    headers: &HeaderMap,
    etag: String,
    answer: impl Future<Output = Result<T, ApiError>>,
) -> Result<Response, HttpError> {
    conditional_written(headers, etag, answer, |body, out| {
        serde_json::to_writer(out, body)
    })
    .await
}

/// [`conditional`] for an answer that writes its own JSON (a page of records assembled from
/// stored bytes, [`query::views::RecordPage::write_json`]).
pub async fn conditional_written<T>(
    headers: &HeaderMap,
    etag: String,
    answer: impl Future<Output = Result<T, ApiError>>,
    write: impl FnOnce(&T, &mut Vec<u8>) -> serde_json::Result<()>,
) -> Result<Response, HttpError> {
    if not_modified(headers, &etag) {
        return Ok(not_modified_response(&etag));
    }
    let body = answer.await?;
    let mut response = written_json(|out| write(&body, out));
    set_etag(&mut response, &etag);
    Ok(response)
}

/// Whether the client already holds the answer tagged `etag`.
fn not_modified(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().trim_start_matches("W/"))
        .any(|v| v == etag || v == "*")
}

/// `304 Not Modified` with the tag.
fn not_modified_response(etag: &str) -> Response {
    let mut response = StatusCode::NOT_MODIFIED.into_response();
    set_etag(&mut response, etag);
    response
}

/// A JSON answer's first buffer: a page of flights is 12 KB.
const JSON_BUFFER_BYTES: usize = 16 * 1024;

/// `200` with `body` as JSON, written into one buffer: axum's `Json` starts small and copies a
/// page's JSON up through every doubling, in small writes, which costs a small page much of its
/// CPU.
pub fn json_response(body: &impl Serialize) -> Response {
    written_json(|out| serde_json::to_writer(out, body))
}

/// `200` with the JSON that `write` puts into one buffer.
fn written_json(write: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>) -> Response {
    let mut buffer = Vec::with_capacity(JSON_BUFFER_BYTES);
    match write(&mut buffer) {
        Ok(()) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            buffer,
        )
            .into_response(),
        Err(_) => HttpError(ApiError::Internal).into_response(),
    }
}

/// `Dataset-Version`: the number of the dataset version an answer about one dataset was read
/// from (contract §13.1).
pub static DATASET_VERSION: HeaderName = HeaderName::from_static("dataset-version");

/// Says which version of its dataset `response` answers from.
pub fn set_dataset_version(response: &mut Response, version: i64) {
    response
        .headers_mut()
        .insert(DATASET_VERSION.clone(), HeaderValue::from(version));
}

fn set_etag(response: &mut Response, etag: &str) {
    if let Ok(value) = HeaderValue::from_str(etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
}
