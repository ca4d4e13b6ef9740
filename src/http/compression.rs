//! Compressed answers (contract §12.5): `gzip`, `br` and `zstd`, as the client's
//! `Accept-Encoding` asks (tower-http's `CompressionLayer`, which also skips bodies too small to
//! gain and adds `Vary: Accept-Encoding`). A compressed answer's bytes depend on the encoder,
//! so its `ETag` turns weak (`W/"…"`, RFC 9110 §8.8.1); `If-None-Match` compares weakly, so a
//! client that cached either form still gets its `304`.

use axum::body::Body;
use axum::http::{HeaderValue, Response, header};
use tower_http::compression::CompressionLayer;

/// The layer: every encoding the build has, at the default (fast) levels.
pub fn layer() -> CompressionLayer {
    CompressionLayer::new()
}

/// Marks the `ETag` of an encoded answer weak (a response-mapping middleware, outside the
/// compression layer).
pub async fn weak_etag_when_encoded(mut response: Response<Body>) -> Response<Body> {
    let headers = response.headers_mut();
    if headers.contains_key(header::CONTENT_ENCODING)
        && let Some(tag) = headers.get(header::ETAG).and_then(|t| t.to_str().ok())
        && !tag.starts_with("W/")
        && let Ok(weak) = HeaderValue::from_str(&format!("W/{tag}"))
    {
        headers.insert(header::ETAG, weak);
    }
    response
}
