//! `GET /datasets/{slug}/versions` and `GET /datasets/{slug}/changes` (contract §13.1): the
//! versions a dataset has published, and the records that differ between two of them,
//! streamed as NDJSON with the counts in the headers.

use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use query::cost::extra_requests;
use query::params::{parse_count, version_number};
use query::versions::Changes;

use super::query_string::{once, pairs};
use crate::auth::export_slots::{EXPORT_SLOT_RETRY_SECS, ExportSlot};
use crate::auth::token::Principal;
use crate::http::caching::{json_response, set_dataset_version};
use crate::http::error::{ApiError, HttpError};
use crate::state::AppState;
use query::Need;

/// `X-Added`, `X-Removed`, `X-Changed`: the lines of each kind a changes answer holds.
pub static X_ADDED: HeaderName = HeaderName::from_static("x-added");
/// See [`X_ADDED`].
pub static X_REMOVED: HeaderName = HeaderName::from_static("x-removed");
/// See [`X_ADDED`].
pub static X_CHANGED: HeaderName = HeaderName::from_static("x-changed");

/// Every version the dataset has published, newest first, with its content hash and whether
/// `version=` still reads it.
#[utoipa::path(get, path = "/datasets/{slug}/versions", tag = "datasets", operation_id = "list_versions",
    params(("slug" = String, Path, description = "The dataset's slug", example = "flights")),
    responses(
        (status = 200, description = "The versions, newest first", body = query::views::VersionList,
            headers(("Dataset-Version" = i64, description = "The live version's number"))),
        (status = 400, response = crate::http::error::openapi::BadRequest),
        (status = 401, response = crate::http::error::openapi::Unauthorized),
        (status = 403, response = crate::http::error::openapi::Forbidden),
        (status = 404, response = crate::http::error::openapi::NotFound),
        (status = 429, response = crate::http::error::openapi::TooManyRequests),
        (status = 503, response = crate::http::error::openapi::Unavailable),
    ),
    security(("bearer" = []))
)]
pub async fn list_versions(
    principal: Principal,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, HttpError> {
    principal.require(Need::Read, &slug)?;
    super::query_string::no_parameters(query.as_deref(), "A dataset's versions")?;
    let list = state.resolver.versions(&slug).await?;
    let mut response = json_response(&list);
    set_dataset_version(&mut response, list.current);
    Ok(response)
}

/// The records that differ between versions `from` and `to` (default: the live one), in
/// `_id` order: one NDJSON line each, `{"op": "add"|"remove"|"change", "_id", "record"}`
/// (`record` as in `to`; none for `remove`). The whole dataset is compared; the rate limit
/// counts it as an export of its lines.
#[utoipa::path(get, path = "/datasets/{slug}/changes", tag = "datasets", operation_id = "list_changes",
    params(
        ("slug" = String, Path, description = "The dataset's slug", example = "flights"),
        ("from" = u64, Query, description = "The earlier version", minimum = 1),
        ("to" = Option<u64>, Query, description = "The later version; default: the live one", minimum = 1),
    ),
    responses(
        (status = 200, description = "One NDJSON line per record that differs, in `_id` order",
            content_type = "application/x-ndjson", body = String,
            headers(
                ("Dataset-Version" = i64, description = "The version `to`"),
                ("X-Added" = u64, description = "Lines with op `add`"),
                ("X-Removed" = u64, description = "Lines with op `remove`"),
                ("X-Changed" = u64, description = "Lines with op `change`"),
            )),
        (status = 400, response = crate::http::error::openapi::BadRequest),
        (status = 401, response = crate::http::error::openapi::Unauthorized),
        (status = 403, response = crate::http::error::openapi::Forbidden),
        (status = 404, response = crate::http::error::openapi::NotFound),
        (status = 410, response = crate::http::error::openapi::Gone),
        (status = 429, response = crate::http::error::openapi::TooManyRequests),
        (status = 503, response = crate::http::error::openapi::Unavailable),
    ),
    security(("bearer" = []))
)]
pub async fn list_changes(
    principal: Principal,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, HttpError> {
    principal.require(Need::Export, &slug)?;
    let (mut from, mut to) = (None, None);
    for (name, value) in pairs(query.as_deref()) {
        match name.as_str() {
            "from" => once(&mut from, &name, &value)?,
            "to" => once(&mut to, &name, &value)?,
            _ => {
                return Err(ApiError::invalid(
                    name.clone(),
                    format!("Changes take only from and to, not {name}."),
                )
                .into());
            }
        }
    }
    let from = from.ok_or(ApiError::MissingParameter { parameter: "from" })?;
    let from = at_least_one("from", &from)?;
    let to = to.map(|to| at_least_one("to", &to)).transpose()?;
    let Some(slot) = state.export_slots.take(&principal) else {
        return Err(ApiError::RateLimited {
            retry_after: EXPORT_SLOT_RETRY_SECS,
        }
        .into());
    };
    let changes = Box::pin(state.resolver.changes(&slug, from, to)).await?;
    let charge = match state
        .rate_limits
        .weigh(principal.token_id, extra_requests(changes.total()))
    {
        Ok(charge) => charge,
        Err(refused) => return Ok(super::refusal(refused)),
    };
    let mut response = stream(changes, slot);
    if let Some(charge) = charge {
        response.extensions_mut().insert(charge);
    }
    Ok(response)
}

/// A version number as the query string gives it.
fn at_least_one(name: &str, value: &str) -> Result<u64, ApiError> {
    version_number(name, parse_count(name, value)?)
}

/// The streamed answer: the counts in the headers, then a chunk of lines at a time.
fn stream(changes: Changes, slot: ExportSlot) -> Response {
    let counts = [
        (&X_ADDED, changes.added),
        (&X_REMOVED, changes.removed),
        (&X_CHANGED, changes.changed),
    ];
    let version = changes.dataset().version();
    let body = Body::from_stream(futures_util::stream::try_unfold(
        (changes, slot),
        |(mut changes, slot)| async move {
            let chunk = changes.next_chunk().await?;
            Ok::<_, ApiError>(chunk.map(|bytes| (Bytes::from(bytes), (changes, slot))))
        },
    ));
    let mut response = body.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    for (name, count) in counts {
        response
            .headers_mut()
            .insert(name.clone(), HeaderValue::from(count));
    }
    set_dataset_version(&mut response, version);
    response
}
