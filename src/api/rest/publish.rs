//! Writes (contract §14.2): `PUT /datasets/{slug}/schema.json`, `PUT /datasets/{slug}` and
//! `DELETE /datasets/{slug}`, each by a token with the `publish` scope over a dataset its
//! account's grants name, one write per dataset at a time, under `If-Match` when sent. An
//! upload is published by the import `odqs import` runs: the same checks, the same atomic
//! switch, the same "unchanged" rule.

use std::sync::Arc;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use entity::dataset;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QuerySelect};
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::token::Principal;
use crate::http::error::{ApiError, HttpError};
use crate::import::schema::SchemaFile;
use crate::import::{self, ImportError, ImportRequest, valid_slug};
use crate::publish::serial::Held;
use crate::publish::{self, pending, precondition, upload};

use super::jobs;
use crate::state::AppState;
use crate::store::Store;

/// What a published upload did.
#[derive(Debug, Serialize, ToSchema)]
pub struct Published {
    /// The dataset.
    #[schema(example = "city-parks")]
    pub slug: String,
    /// Its current version: the new one, or the one that already held the same records,
    /// schema and metadata.
    pub version: i64,
    /// Records in that version.
    pub record_count: u64,
    /// The upload held what the current version holds: nothing was published.
    pub unchanged: bool,
    /// Seconds the import took, the upload not included.
    pub seconds: f64,
}

/// The schema kept for a dataset's next version.
#[derive(Debug, Serialize, ToSchema)]
pub struct SchemaKept {
    #[schema(example = "city-parks")]
    pub slug: String,
    /// The schema file, as sent.
    #[schema(value_type = Object)]
    pub schema: serde_json::Value,
}

/// Sets the title, description, licence, source, id field, field types and geo pair of the
/// dataset's next version, in the format of `GET …/schema.json`: the next upload is
/// published with it.
#[utoipa::path(put, path = "/datasets/{slug}/schema.json", tag = "publishing", operation_id = "put_schema_file",
    params(("slug" = String, Path, description = "The dataset's slug", example = "city-parks")),
    request_body(content = query::views::SchemaFile, content_type = "application/json"),
    responses(
        (status = 200, description = "Kept for the next version", body = SchemaKept),
        (status = 400, response = crate::http::error::openapi::BadRequest),
        (status = 401, response = crate::http::error::openapi::Unauthorized),
        (status = 403, response = crate::http::error::openapi::Forbidden),
        (status = 413, response = crate::http::error::openapi::PayloadTooLarge),
        (status = 429, response = crate::http::error::openapi::TooManyRequests),
        (status = 503, response = crate::http::error::openapi::Unavailable),
    ),
    security(("bearer" = []))
)]
pub async fn put_schema_file(
    principal: Principal,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    body: Bytes,
) -> Result<Response, HttpError> {
    checked_slug(&slug)?;
    publish::require(&state.store, &principal, &slug).await?;
    let text = std::str::from_utf8(&body).map_err(|_| ApiError::InvalidFile {
        message: "the schema file is not UTF-8".into(),
    })?;
    SchemaFile::parse(text).map_err(refused)?;
    let schema = serde_json::from_str(text).map_err(|_| ApiError::Internal)?;
    pending::keep(&state.store, &slug, text).await?;
    Ok(Json(SchemaKept { slug, schema }).into_response())
}

/// Publishes the body, a CSV, NDJSON or JSON file (gzip allowed), as the dataset's next
/// version, exactly as `odqs import` would; with the schema sent for it, else the current
/// version's.
#[utoipa::path(put, path = "/datasets/{slug}", tag = "publishing", operation_id = "put_dataset",
    params(
        ("slug" = String, Path, description = "The dataset's slug", example = "city-parks"),
        ("If-Match" = Option<String>, Header, description = "`\"v<n>\"`: publish only if version n is still the current one; `*`: only if the dataset exists"),
    ),
    request_body(content = String, content_type = "text/csv", description = "The file: `text/csv`, `application/x-ndjson` or `application/json`, optionally with `Content-Encoding: gzip`"),
    responses(
        (status = 200, description = "Published as a new version of the dataset, or unchanged", body = Published),
        (status = 201, description = "Published as the dataset's first version", body = Published),
        (status = 400, response = crate::http::error::openapi::BadRequest),
        (status = 401, response = crate::http::error::openapi::Unauthorized),
        (status = 403, response = crate::http::error::openapi::Forbidden),
        (status = 409, response = crate::http::error::openapi::Conflict),
        (status = 412, response = crate::http::error::openapi::PreconditionFailed),
        (status = 413, response = crate::http::error::openapi::PayloadTooLarge),
        (status = 415, response = crate::http::error::openapi::UnsupportedMediaType),
        (status = 429, response = crate::http::error::openapi::TooManyRequests),
        (status = 503, response = crate::http::error::openapi::Unavailable),
    ),
    security(("bearer" = []))
)]
pub async fn put_dataset(
    principal: Principal,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, HttpError> {
    checked_slug(&slug)?;
    publish::require(&state.store, &principal, &slug).await?;
    let name = upload::file_name(&headers)?;
    let settings = &state.publishing;
    let (held, current) = hold(&state, &slug).await?;
    precondition::check(&headers, current)?;
    let spooled = upload::spool(
        body,
        &name,
        settings.max_upload_bytes,
        settings.upload_dir.as_deref(),
    )
    .await?;
    if jobs::prefers_async(&headers) {
        return jobs::start(state, principal.user_id, slug, current, spooled, held).await;
    }
    let silent = Arc::new(import::progress::Silent);
    let published = publish_upload(&state, &slug, current, &spooled, silent).await;
    held.end().await;
    let published = published?;
    let status = match current {
        None => StatusCode::CREATED,
        Some(_) => StatusCode::OK,
    };
    let version = published.version;
    let mut response = (status, Json(published)).into_response();
    tag(&mut response, version);
    Ok(response)
}

/// Publishes the upload `spooled` as `slug`'s next version, with the schema kept for it (then
/// forgotten), else the current version's (`current`, read under the write's hold), else the
/// types the file shows.
pub(crate) async fn publish_upload(
    state: &AppState,
    slug: &str,
    current: Option<i64>,
    spooled: &upload::Spooled,
    progress: Arc<dyn import::Progress>,
) -> Result<Published, HttpError> {
    let kept = pending::kept(&state.store, slug).await?;
    let schema = match &kept {
        Some(text) => SchemaFile::parse(text).map_err(refused)?,
        None if current.is_some() => current_schema(state, slug).await?,
        None => SchemaFile::default(),
    };
    let request = ImportRequest {
        source: spooled.source.clone(),
        slug: slug.to_string(),
        schema,
        id_field: None,
        title: None,
        description: None,
        max_record_bytes: state.publishing.max_record_bytes,
        store_indexes: false,
    };
    let summary = import::import(&state.store, request, progress)
        .await
        .map_err(refused)?;
    if let Some(text) = &kept {
        pending::used(&state.store, slug, text).await?;
    }
    tracing::info!(
        dataset = %slug,
        version = summary.version,
        records = summary.records,
        unchanged = summary.unchanged,
        bytes = spooled.bytes,
        "published over HTTP"
    );
    Ok(Published {
        slug: summary.slug,
        version: summary.version,
        record_count: summary.records,
        unchanged: summary.unchanged,
        seconds: summary.seconds,
    })
}

/// Unpublishes the dataset, as `odqs datasets remove` does.
#[utoipa::path(delete, path = "/datasets/{slug}", tag = "publishing", operation_id = "delete_dataset",
    params(
        ("slug" = String, Path, description = "The dataset's slug", example = "city-parks"),
        ("If-Match" = Option<String>, Header, description = "`\"v<n>\"`: remove only if version n is still the current one"),
    ),
    responses(
        (status = 204, description = "Removed"),
        (status = 401, response = crate::http::error::openapi::Unauthorized),
        (status = 403, response = crate::http::error::openapi::Forbidden),
        (status = 404, response = crate::http::error::openapi::NotFound),
        (status = 409, response = crate::http::error::openapi::Conflict),
        (status = 412, response = crate::http::error::openapi::PreconditionFailed),
        (status = 429, response = crate::http::error::openapi::TooManyRequests),
        (status = 503, response = crate::http::error::openapi::Unavailable),
    ),
    security(("bearer" = []))
)]
pub async fn delete_dataset(
    principal: Principal,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    headers: HeaderMap,
) -> Result<Response, HttpError> {
    publish::require(&state.store, &principal, &slug).await?;
    let (held, current) = hold(&state, &slug).await?;
    if current.is_none() {
        return Err(ApiError::DatasetNotFound { slug }.into());
    }
    precondition::check(&headers, current)?;
    let removed = publish::remove(&state.store, &slug).await?;
    held.end().await;
    if !removed {
        return Err(ApiError::DatasetNotFound { slug }.into());
    }
    tracing::info!(dataset = %slug, "unpublished over HTTP");
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// A slug a dataset can be published as; 400 `invalid_parameter` otherwise.
fn checked_slug(slug: &str) -> Result<(), ApiError> {
    if valid_slug(slug) {
        return Ok(());
    }
    Err(ApiError::invalid(
        "slug",
        format!("{slug:?} is no slug: {}.", import::SLUG_RULE),
    ))
}

/// The hold on `slug` for a write (409 `publish_in_progress` while another runs) and, under
/// it, the number of the dataset's current version.
async fn hold(state: &AppState, slug: &str) -> Result<(Held, Option<i64>), HttpError> {
    let held = state
        .publishing
        .writes
        .try_hold(&state.store, slug)
        .await?
        .ok_or_else(|| ApiError::PublishInProgress {
            slug: slug.to_string(),
        })?;
    let current = current_version(&state.store, slug).await?;
    Ok((held, current))
}

/// The number of the dataset's current version; `None` when it is not published.
async fn current_version(store: &Store, slug: &str) -> Result<Option<i64>, HttpError> {
    Ok(dataset::Entity::find()
        .select_only()
        .column(dataset::Column::Version)
        .filter(dataset::Column::Slug.eq(slug))
        .into_tuple()
        .one(&store.db)
        .await?)
}

/// The current version's schema file, for an upload sent without one.
async fn current_schema(state: &AppState, slug: &str) -> Result<SchemaFile, HttpError> {
    let file = state.resolver.schema_file(slug).await?;
    let text = serde_json::to_string(&file).map_err(|_| ApiError::Internal)?;
    SchemaFile::parse(&text).map_err(refused)
}

/// An import's failure as the writer sees it: the file's faults as 400 `invalid_file`, the
/// store's as for any request; never a path of this machine.
fn refused(error: ImportError) -> HttpError {
    match error {
        ImportError::Store(e) => e.into(),
        ImportError::Io { source, .. } => {
            tracing::error!(error = %source, "an upload could not be read back");
            ApiError::Internal.into()
        }
        ImportError::InvalidSlug(_) => ApiError::invalid("slug", error.to_string()).into(),
        other => ApiError::InvalidFile {
            message: other.to_string(),
        }
        .into(),
    }
}

/// `Dataset-Version` and the `ETag` `If-Match` compares.
pub(crate) fn tag(response: &mut Response, version: i64) {
    crate::http::caching::set_dataset_version(response, version);
    if let Ok(value) = HeaderValue::from_str(&precondition::version_tag(version)) {
        response.headers_mut().insert(header::ETAG, value);
    }
}
