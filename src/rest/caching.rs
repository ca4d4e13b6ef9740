//! Conditional answers (contract §11): record and agg answers carry an `ETag` computed from the
//! dataset version and the normalized request, before any query runs, so a matching
//! `If-None-Match` costs no query at all.

use axum::Json;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// Whether the client already holds the answer tagged `etag`.
pub fn not_modified(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().trim_start_matches("W/"))
        .any(|v| v == etag || v == "*")
}

/// `304 Not Modified` with the tag.
pub fn not_modified_response(etag: &str) -> Response {
    let mut response = StatusCode::NOT_MODIFIED.into_response();
    set_etag(&mut response, etag);
    response
}

/// `200` with a JSON body and its tag.
pub fn tagged_json(etag: &str, body: &impl Serialize) -> Response {
    let mut response = Json(body).into_response();
    set_etag(&mut response, etag);
    response
}

fn set_etag(response: &mut Response, etag: &str) {
    if let Ok(value) = HeaderValue::from_str(etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
}
