//! `If-Match` on a write (contract §14.2): the dataset's current version as `"v<n>"`, or `*`
//! for "any version"; a write whose condition no longer holds publishes nothing (412).

use axum::http::{HeaderMap, header};

use query::ApiError;

/// The tag `If-Match` names version `number` by, as writes answer it in `ETag`.
pub fn version_tag(number: i64) -> String {
    format!("\"v{number}\"")
}

/// Whether the request's `If-Match` (if any) holds for a dataset whose current version is
/// `current` (`None`: it has none).
pub fn check(headers: &HeaderMap, current: Option<i64>) -> Result<(), ApiError> {
    let mut tags = headers
        .get_all(header::IF_MATCH)
        .iter()
        .flat_map(|v| v.to_str().unwrap_or("\u{0}").split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .peekable();
    if tags.peek().is_none() {
        return Ok(());
    }
    let current_tag = current.map(version_tag);
    let holds = |tag: &str| match &current_tag {
        Some(current) => tag == "*" || tag == current,
        None => false,
    };
    if tags.any(holds) {
        return Ok(());
    }
    Err(ApiError::PreconditionFailed {
        current: current_tag,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::IF_MATCH, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn if_match_names_the_current_version_or_any() {
        assert!(check(&HeaderMap::new(), None).is_ok());
        assert!(check(&HeaderMap::new(), Some(3)).is_ok());
        assert!(check(&with("\"v3\""), Some(3)).is_ok());
        assert!(check(&with("\"v1\", \"v3\""), Some(3)).is_ok());
        assert!(check(&with("*"), Some(3)).is_ok());
        assert_eq!(
            check(&with("\"v2\""), Some(3)),
            Err(ApiError::PreconditionFailed {
                current: Some("\"v3\"".into())
            })
        );
        assert_eq!(
            check(&with("*"), None),
            Err(ApiError::PreconditionFailed { current: None })
        );
        assert!(check(&with("v3"), Some(3)).is_err(), "a tag is quoted");
    }
}
