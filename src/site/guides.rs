//! The public documents' handlers: the home page `/`, and `/catalog.md` and
//! `/datasets/{slug}/skill.md` (contract §9), served as `text/markdown; charset=utf-8` without a
//! token, and the same guides drawn as HTML pages for browsers at `/catalog` and
//! `/datasets/{slug}/skill` ([`super::markdown`]). The guides' text comes from the guides service ([`crate::guides`]), which MCP's
//! resources call too.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use minijinja::context;
use minijinja::value::Serde;
use serde::Serialize;

use super::pages::{message_page, page, read_failed};
use super::visitor::Visitor;
use crate::guides::catalog::CatalogAsk;
use crate::http::error::{ApiError, HttpError, status};
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
    /// The guide's HTML page.
    guide_url: String,
    records_url: String,
}

/// Datasets the home page lists: the most recently published; the catalog has the rest.
const HOME_DATASETS: u64 = 20;

/// `GET /`: what the service is, with links to everything.
pub async fn home(State(state): State<AppState>, visitor: Visitor) -> Response {
    let site = state.public_url.trim_end_matches('/');
    let base_url = state.resolver.base_url();
    let (datasets, total) = match state.resolver.recent_datasets(0, HOME_DATASETS).await {
        Ok(found) => found,
        Err(e) => return read_failed(e),
    };
    let items: Vec<HomeItem> = datasets
        .into_iter()
        .map(|d| HomeItem {
            skill_url: format!("{site}/datasets/{}/skill.md", encode(&d.slug)),
            guide_url: format!("{site}/datasets/{}/skill", encode(&d.slug)),
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
        context! { datasets => Serde(&items), base_url, total, more => total > HOME_DATASETS },
    )
}

/// `GET /catalog.md` (`?page=`, `?q=`): a bad parameter is the API's 400 answer.
pub async fn catalog_md(
    State(state): State<AppState>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Response {
    let text = match CatalogAsk::read(pairs) {
        Ok(ask) => state.guides.catalog(&ask).await,
        Err(e) => Err(e),
    };
    match text {
        Ok(text) => markdown(text),
        Err(e) if status(&e).is_client_error() => HttpError(e).into_response(),
        Err(e) => read_failed(e),
    }
}

/// A guide drawn as an HTML page: its Markdown (found at `markdown_url`) rendered inside the
/// site's layout.
fn guide_page(
    visitor: &Visitor,
    site: &str,
    title: &str,
    markdown_url: &str,
    text: &str,
) -> Response {
    let body = super::markdown::to_html(text, site);
    page(
        visitor,
        StatusCode::OK,
        "guide.html",
        context! { title, markdown_url, body },
    )
}

/// `GET /catalog` (`?page=`, `?q=`): `catalog.md` for a browser, with a search box; a bad
/// parameter is a 400 page saying what is wrong.
pub async fn catalog_page(
    State(state): State<AppState>,
    visitor: Visitor,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Response {
    let site = state.public_url.trim_end_matches('/');
    let ask = CatalogAsk::read(pairs);
    let text = match &ask {
        Ok(ask) => state.guides.catalog(ask).await,
        Err(e) => Err(e.clone()),
    };
    match text {
        Ok(text) => {
            let ask = ask.unwrap_or_default();
            let markdown_url = format!("{site}/catalog.md{}", ask.at(ask.page));
            let body = super::markdown::to_html(&text, site);
            page(
                &visitor,
                StatusCode::OK,
                "guide.html",
                context! {
                    title => "Catalog",
                    markdown_url,
                    body,
                    catalog => true,
                    search => ask.q.unwrap_or_default(),
                    max_q => query::params::MAX_CATALOG_QUERY_CHARS,
                },
            )
        }
        Err(e) if status(&e).is_client_error() => message_page(
            status(&e),
            Some(&visitor),
            "Not a catalog search",
            &e.message(),
        ),
        Err(e) => read_failed(e),
    }
}

/// `GET /datasets/{slug}/skill`: the dataset's `skill.md` for a browser.
pub async fn skill_page(
    State(state): State<AppState>,
    visitor: Visitor,
    Path(slug): Path<String>,
) -> Response {
    let site = state.public_url.trim_end_matches('/');
    match state.guides.skill(&slug).await {
        Ok(text) => {
            let url = format!("{site}/datasets/{}/skill.md", encode(&slug));
            guide_page(&visitor, site, &slug, &url, text.as_str())
        }
        Err(ApiError::DatasetNotFound { .. }) => no_such_dataset(Some(&visitor)),
        Err(e) => read_failed(e),
    }
}

/// The 404 page of a slug nothing is published under.
fn no_such_dataset(visitor: Option<&Visitor>) -> Response {
    message_page(
        StatusCode::NOT_FOUND,
        visitor,
        "No such dataset",
        "No dataset is published under this slug; see /catalog for the list.",
    )
}

/// `GET /datasets/{slug}/skill.md`.
pub async fn skill_md(State(state): State<AppState>, Path(slug): Path<String>) -> Response {
    match state.guides.skill(&slug).await {
        Ok(text) => markdown(text.as_str().to_string()),
        Err(ApiError::DatasetNotFound { .. }) => no_such_dataset(None),
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
