//! The public documents: the home page `/`, `/catalog.md` and `/datasets/{slug}/skill.md`
//! (contract §9), served as `text/markdown; charset=utf-8` without a token.
//!
//! A guide reads statistics over whole columns, so it is cached per dataset version (datasets
//! change only by import, and a new import is a new version): the first request after an
//! import pays, later ones are free.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use minijinja::context;
use minijinja::value::Serde;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Serialize;

use super::pages::{message_page, page, read_failed};
use super::skill;
use super::visitor::Visitor;
use crate::app::AppState;
use crate::http::error::ApiError;

/// Everything but RFC 3986's unreserved characters is percent-encoded (as UTF-8).
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes one URL component (a path segment, a query name or value).
pub fn encode(text: &str) -> String {
    utf8_percent_encode(text, COMPONENT).to_string()
}

/// Guides by (public URL, slug, version, update time): the version alone is not unique
/// across stores, and tests open many stores in one process.
type GuideKey = (String, String, i64, i128);
static GUIDES: LazyLock<Mutex<HashMap<GuideKey, Arc<String>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));
/// Guides kept at most; the cache is cleared when it grows past this.
const MAX_CACHED: usize = 256;

fn markdown(body: String) -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/markdown; charset=utf-8"),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=60"),
            ),
        ],
        body,
    )
        .into_response()
}

/// A dataset on the home page.
#[derive(Serialize)]
struct HomeItem {
    slug: String,
    title: String,
    record_count: i64,
    skill_url: String,
    records_url: String,
}

/// `GET /`: what the service is, with links to everything.
pub async fn home(State(state): State<AppState>, visitor: Visitor) -> Response {
    let site = state.public_url.trim_end_matches('/');
    let datasets = match state.resolver.catalog().await {
        Ok(d) => d,
        Err(e) => return read_failed(e),
    };
    let items: Vec<HomeItem> = datasets
        .into_iter()
        .map(|d| HomeItem {
            skill_url: format!("{site}/datasets/{}/skill.md", encode(&d.slug)),
            records_url: format!("{site}/api/v1/datasets/{}/records", encode(&d.slug)),
            slug: d.slug,
            title: d.title,
            record_count: d.record_count,
        })
        .collect();
    page(
        &visitor,
        StatusCode::OK,
        "home.html",
        context! { datasets => Serde(&items), base_url => format!("{site}/api/v1") },
    )
}

/// `GET /catalog.md`.
pub async fn catalog_md(State(state): State<AppState>) -> Response {
    match state.resolver.catalog().await {
        Ok(datasets) => markdown(skill::catalog_md(
            &datasets,
            state.public_url.trim_end_matches('/'),
        )),
        Err(e) => read_failed(e),
    }
}

/// `GET /datasets/{slug}/skill.md`.
pub async fn skill_md(State(state): State<AppState>, Path(slug): Path<String>) -> Response {
    match skill_text(&state, &slug).await {
        Ok(text) => markdown(text.as_str().to_string()),
        Err(ApiError::DatasetNotFound { .. }) => message_page(
            StatusCode::NOT_FOUND,
            None,
            "No such dataset",
            "No dataset is published under this slug; see /catalog.md for the list.",
        ),
        Err(e) => read_failed(e),
    }
}

/// A dataset's `skill.md`, written once per live version (and public URL) from the resolver
/// layer's facts; the page and the MCP resource of the same name serve this text.
pub async fn skill_text(state: &AppState, slug: &str) -> Result<Arc<String>, ApiError> {
    let site = state.public_url.trim_end_matches('/');
    let dataset = state.resolver.dataset(slug).await?;
    let key = (
        site.to_string(),
        dataset.meta.slug.clone(),
        dataset.meta.version_id,
        dataset.meta.updated_at.unix_timestamp_nanos(),
    );
    if let Some(cached) = GUIDES.lock().expect("guide cache").get(&key).cloned() {
        return Ok(cached);
    }
    let guide = state.resolver.facts(&dataset).await?;
    let body = Arc::new(skill::skill_md(&guide, site));
    let mut cache = GUIDES.lock().expect("guide cache");
    if cache.len() >= MAX_CACHED {
        cache.clear();
    }
    cache.insert(key, body.clone());
    Ok(body)
}

/// `GET /assets/site.js`: the copy button of the account page.
pub async fn site_js() -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/javascript; charset=utf-8"),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=3600"),
            ),
        ],
        include_str!("assets.js"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    #[test]
    fn encoding() {
        assert_eq!(super::encode("dep_delay<"), "dep_delay%3C");
        assert_eq!(super::encode("q[Name]"), "q%5BName%5D");
        assert_eq!(super::encode("臺東"), "%E8%87%BA%E6%9D%B1");
        assert_eq!(super::encode("a b/c"), "a%20b%2Fc");
    }
}
