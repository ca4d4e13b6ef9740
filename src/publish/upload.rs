//! A write's body, spooled to a file as it arrives: the import reads a file twice (types, then
//! records), and a file lets it do so without holding the body in memory. The file's name
//! carries the format, from `Content-Type` and `Content-Encoding`, as a file name does for
//! `odqs import`; the file is removed when the write ends, however it ends.

use std::path::Path;

use axum::body::Body;
use axum::http::{HeaderMap, header};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use crate::import::reader::Source;
use query::ApiError;

/// The size of an upload unless configured (`ODQS_MAX_UPLOAD_MB`), in MiB, as sent.
pub const DEFAULT_MAX_UPLOAD_MB: u64 = 4096;

/// The body types a write takes, and the file name each is imported as.
const TYPES: &[(&str, &str)] = &[
    ("text/csv", "upload.csv"),
    ("application/x-ndjson", "upload.ndjson"),
    ("application/ndjson", "upload.ndjson"),
    ("application/jsonl", "upload.ndjson"),
    ("application/json", "upload.json"),
];

/// An upload on disk, removed when dropped.
#[derive(Debug)]
pub struct Spooled {
    /// The file, named for its format.
    pub source: Source,
    /// Bytes received, as sent.
    pub bytes: u64,
    _dir: tempfile::TempDir,
}

/// The name the body is imported as: its format from `Content-Type`, `.gz` after it with
/// `Content-Encoding: gzip`; 415 `unsupported_media_type` for any other type or encoding.
pub fn file_name(headers: &HeaderMap) -> Result<String, ApiError> {
    let given = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = given
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let refused = || ApiError::UnsupportedMediaType {
        content_type: given.to_string(),
    };
    let name = TYPES
        .iter()
        .find(|(known, _)| *known == media)
        .map(|(_, name)| name.to_string())
        .ok_or_else(refused)?;
    match headers
        .get(header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase())
        .as_deref()
    {
        None | Some("identity") => Ok(name),
        Some("gzip") => Ok(format!("{name}.gz")),
        Some(other) => Err(ApiError::UnsupportedMediaType {
            content_type: format!("{given}; Content-Encoding {other}"),
        }),
    }
}

/// Writes `body` to a new file `name` in a fresh directory under `dir` (the system's
/// temporary directory when `None`); 413 `payload_too_large` past `limit` bytes, 400
/// `invalid_file` when the body ends before its end (the client went away).
pub async fn spool(
    body: Body,
    name: &str,
    limit: u64,
    dir: Option<&Path>,
) -> Result<Spooled, ApiError> {
    let made = match dir {
        Some(dir) => tempfile::Builder::new()
            .prefix("odqs-upload-")
            .tempdir_in(dir),
        None => tempfile::Builder::new().prefix("odqs-upload-").tempdir(),
    };
    let spool_dir = made.map_err(spool_failed)?;
    let path = spool_dir.path().join(name);
    let mut file = tokio::fs::File::create(&path).await.map_err(spool_failed)?;
    let mut stream = body.into_data_stream();
    let mut bytes = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| ApiError::InvalidFile {
            message: "the body ended before its end".into(),
        })?;
        bytes += chunk.len() as u64;
        if bytes > limit {
            return Err(ApiError::PayloadTooLarge {
                limit_bytes: usize::try_from(limit).unwrap_or(usize::MAX),
            });
        }
        file.write_all(&chunk).await.map_err(spool_failed)?;
    }
    file.flush().await.map_err(spool_failed)?;
    Ok(Spooled {
        source: Source::File(path),
        bytes,
        _dir: spool_dir,
    })
}

/// The spool directory or file could not be written: logged here, a 500 for the client (the
/// path is not theirs to see).
fn spool_failed(error: std::io::Error) -> ApiError {
    tracing::error!(%error, "an upload could not be spooled to disk");
    ApiError::Internal
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(content_type: &str, encoding: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_str(content_type).unwrap(),
        );
        if let Some(encoding) = encoding {
            headers.insert(
                header::CONTENT_ENCODING,
                HeaderValue::from_str(encoding).unwrap(),
            );
        }
        headers
    }

    #[test]
    fn the_body_type_names_the_format() {
        assert_eq!(
            file_name(&headers("text/csv; charset=utf-8", None)).unwrap(),
            "upload.csv"
        );
        assert_eq!(
            file_name(&headers("application/x-ndjson", Some("gzip"))).unwrap(),
            "upload.ndjson.gz"
        );
        assert_eq!(
            file_name(&headers("Application/JSON", None)).unwrap(),
            "upload.json"
        );
        for (bad, encoding) in [("text/plain", None), ("text/csv", Some("br")), ("", None)] {
            assert_eq!(
                file_name(&headers(bad, encoding)).unwrap_err().code(),
                "unsupported_media_type",
                "{bad} {encoding:?}"
            );
        }
    }
}
