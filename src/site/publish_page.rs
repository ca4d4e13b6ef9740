//! `/publish` (contract §14.2 on the site): an account that holds a grant sees what it may
//! publish, uploads a file (and a schema file) with a progress bar, reads a dataset's versions
//! with their added, removed and changed counts, and removes a dataset after a confirmation.
//! The upload goes to the API (`PUT /api/v1/datasets/{slug}` as a job, `publish.js`) with a
//! short-lived token the page asks for (`POST /publish/token`), so the page publishes exactly
//! as any client does; removal is a form, as revoking a token is.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use minijinja::context;
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::pages::{Empty, message_page, page, store_failed};
use super::visitor::{Posted, Visitor, see_other};
use crate::auth::{account, publishers};
use crate::guides::when;
use crate::import::valid_slug;
use crate::publish;
use crate::state::AppState;

/// Datasets listed on `/publish`, the first by slug.
const LISTED: usize = 100;
/// Versions of a dataset shown with their changes, the newest.
const VERSIONS_SHOWN: usize = 5;

/// `?removed=slug` after a removal's redirect; `?open=slug`, the form that opens a dataset.
#[derive(Deserialize)]
pub struct PublishQuery {
    removed: Option<String>,
    open: Option<String>,
}

/// A dataset the account may publish, as listed.
#[derive(Serialize)]
struct Row {
    slug: String,
    title: String,
    version: i64,
    records: i64,
}

/// `GET /publish`: the account's grants, the datasets they name, and a form to start one.
pub async fn home(
    State(state): State<AppState>,
    visitor: Visitor,
    Query(q): Query<PublishQuery>,
) -> Response {
    let Some(signed_in) = &visitor.signed_in else {
        return see_other("/login?next=/publish");
    };
    if let Some(slug) = q.open.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        return see_other(&format!("/publish/{}", crate::http::url::encode(slug)));
    }
    let patterns = match publishers::publish_patterns(&state.store, signed_in.user.id).await {
        Ok(patterns) => patterns,
        Err(e) => return store_failed(e),
    };
    let rows = match publish::publishable(&state.resolver, &patterns).await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::error!(error = %e, "site: the catalog cannot be read");
            return super::visitor::unavailable();
        }
    };
    let total = rows.len();
    let rows: Vec<Row> = rows
        .into_iter()
        .take(LISTED)
        .map(|(slug, title, version, records)| Row {
            slug,
            title,
            version,
            records,
        })
        .collect();
    page(
        &visitor,
        StatusCode::OK,
        "publish.html",
        context! {
            patterns,
            rows => minijinja::Value::from(minijinja::value::Serde(&rows)),
            total,
            listed => LISTED,
            removed => q.removed,
        },
    )
}

/// One version as the dataset's page shows it.
#[derive(Serialize)]
struct VersionRow {
    version: i64,
    published: String,
    records: i64,
    /// Added, removed and changed against the version before, when both are retained.
    changes: Option<(u64, u64, u64)>,
}

/// `GET /publish/{slug}`: a dataset the account may publish, published or not yet: its
/// versions with their changes, the upload form and the removal button.
pub async fn dataset(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    visitor: Visitor,
) -> Response {
    if let Err(answer) = publisher(&state, &visitor, &slug).await {
        return answer;
    }
    let versions = match versions(&state, &slug).await {
        Ok(versions) => versions,
        Err(e) => {
            tracing::error!(error = %e, "site: a dataset's versions cannot be read");
            return super::visitor::unavailable();
        }
    };
    page(
        &visitor,
        StatusCode::OK,
        "publish_dataset.html",
        context! {
            slug,
            published => !versions.is_empty(),
            versions => minijinja::Value::from(minijinja::value::Serde(&versions)),
        },
    )
}

/// The signed-in account's id if it may publish `slug`; else the answer: the log-in page, or
/// the page refusing it ([`refusal`]).
async fn publisher(state: &AppState, visitor: &Visitor, slug: &str) -> Result<i64, Response> {
    let Some(signed_in) = &visitor.signed_in else {
        return Err(see_other("/login?next=/publish"));
    };
    match refusal(state, visitor, signed_in.user.id, slug).await {
        Some(refused) => Err(refused),
        None => Ok(signed_in.user.id),
    }
}

/// The page refusing `slug` to account `user_id`: not a slug, or no grant names it.
async fn refusal(
    state: &AppState,
    visitor: &Visitor,
    user_id: i64,
    slug: &str,
) -> Option<Response> {
    if !valid_slug(slug) {
        return Some(message_page(
            StatusCode::BAD_REQUEST,
            Some(visitor),
            "Not a slug",
            &format!("A slug must {}.", crate::import::SLUG_RULE),
        ));
    }
    match publishers::may_publish(&state.store, user_id, slug).await {
        Ok(true) => None,
        Ok(false) => Some(message_page(
            StatusCode::FORBIDDEN,
            Some(visitor),
            "Not yours to publish",
            "This account holds no grant to publish this dataset; the operator of this service grants one (odqs grant publish).",
        )),
        Err(e) => Some(store_failed(e)),
    }
}

/// The dataset's newest versions, each with its changes against the one before; none when it
/// is not published.
async fn versions(state: &AppState, slug: &str) -> Result<Vec<VersionRow>, query::ApiError> {
    let list = match state.resolver.versions(slug).await {
        Ok(list) => list,
        Err(query::ApiError::DatasetNotFound { .. }) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut rows = Vec::new();
    for (i, item) in list.versions.iter().take(VERSIONS_SHOWN).enumerate() {
        let before = list
            .versions
            .get(i + 1)
            .filter(|b| b.retained && item.retained);
        let changes = match before {
            Some(before) => {
                let from = u64::try_from(before.version).unwrap_or(0);
                let to = u64::try_from(item.version).ok();
                let found = state.resolver.changes(slug, from, to).await?;
                Some((found.added, found.removed, found.changed))
            }
            None => None,
        };
        let published = OffsetDateTime::parse(&item.published_at, &Rfc3339)
            .map(when)
            .unwrap_or_else(|_| item.published_at.clone());
        rows.push(VersionRow {
            version: item.version,
            published,
            records: item.record_count,
            changes,
        });
    }
    Ok(rows)
}

/// `POST /publish/{slug}/token`: a short-lived token that publishes `slug` alone, for the
/// page's upload (JSON `{token}`), if a grant of the account names it.
pub async fn upload_token(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    posted: Posted<Empty>,
) -> Response {
    let visitor = posted.visitor;
    let Some(signed_in) = &visitor.signed_in else {
        let code = query::error::Code::NotSignedIn;
        let body = json!({"error": code.name(), "message": "Log in again to publish."});
        return (crate::http::error::code_status(code), Json(body)).into_response();
    };
    if let Some(refused) = refusal(&state, &visitor, signed_in.user.id, &slug).await {
        return refused;
    }
    match account::upload_token(&state.store, signed_in.user.id, &slug).await {
        Ok((secret, _)) => visitor.finish(Json(json!({"token": secret.expose()})).into_response()),
        Err(e) => store_failed(e),
    }
}

/// `GET /publish/{slug}/remove`: what removing the dataset does, and the button.
pub async fn confirm_remove(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    visitor: Visitor,
) -> Response {
    if let Err(answer) = publisher(&state, &visitor, &slug).await {
        return answer;
    }
    page(
        &visitor,
        StatusCode::OK,
        "publish_remove.html",
        context! { slug },
    )
}

/// `POST /publish/{slug}/remove`: unpublishes the dataset and returns to `/publish`.
pub async fn remove(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    posted: Posted<Empty>,
) -> Response {
    let visitor = posted.visitor;
    if let Err(answer) = publisher(&state, &visitor, &slug).await {
        return answer;
    }
    match publish::remove(&state.store, &slug).await {
        Ok(_) => {
            let to = format!("/publish?removed={}", crate::http::url::encode(&slug));
            visitor.finish(see_other(&to))
        }
        Err(e) => store_failed(e),
    }
}

/// `GET /assets/publish.js`: the upload with its progress bar.
pub async fn script() -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/javascript; charset=utf-8"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        include_str!("publish.js"),
    )
        .into_response()
}
