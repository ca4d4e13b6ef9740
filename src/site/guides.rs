//! The public documents' handlers: the home page `/`, and `/catalog.md` and
//! `/datasets/{slug}/skill.md` (contract §9), served as `text/markdown; charset=utf-8` without a
//! token. The guides' text comes from the guides service ([`crate::guides`]), which MCP's
//! resources call too.

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use minijinja::context;
use minijinja::value::Serde;
use serde::Serialize;

use super::pages::{message_page, page, read_failed};
use super::visitor::Visitor;
use crate::http::error::ApiError;
use crate::http::url::encode;
use crate::state::AppState;

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
    let base_url = state.resolver.base_url();
    let datasets = match state.resolver.catalog().await {
        Ok(d) => d,
        Err(e) => return read_failed(e),
    };
    let items: Vec<HomeItem> = datasets
        .into_iter()
        .map(|d| HomeItem {
            skill_url: format!("{site}/datasets/{}/skill.md", encode(&d.slug)),
            records_url: format!("{base_url}/datasets/{}/records", encode(&d.slug)),
            slug: d.slug,
            title: d.title,
            record_count: d.record_count,
        })
        .collect();
    page(
        &visitor,
        StatusCode::OK,
        "home.html",
        context! { datasets => Serde(&items), base_url },
    )
}

/// `GET /catalog.md`.
pub async fn catalog_md(State(state): State<AppState>) -> Response {
    match state.guides.catalog().await {
        Ok(text) => markdown(text),
        Err(e) => read_failed(e),
    }
}

/// `GET /datasets/{slug}/skill.md`.
pub async fn skill_md(State(state): State<AppState>, Path(slug): Path<String>) -> Response {
    match state.guides.skill(&slug).await {
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
