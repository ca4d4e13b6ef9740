//! Asynchronous writes over HTTP (contract §14.2): `Prefer: respond-async` on `PUT
//! /datasets/{slug}` answers 202 once the upload is received, with the job's URL in
//! `Location`, and `GET /jobs/{id}` tells how it goes (see `publish::jobs`).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::publish::publish_upload;
use crate::auth::token::Principal;
use crate::http::error::HttpError;
use crate::publish::jobs::{self as store_jobs, JobProgress, JobView};
use crate::publish::serial::Held;
use crate::publish::upload::Spooled;
use crate::state::AppState;

/// The preference that asks for a job (RFC 7240 §4.1).
const RESPOND_ASYNC: &str = "respond-async";

/// Whether `Prefer` asks for an asynchronous answer.
pub(crate) fn prefers_async(headers: &HeaderMap) -> bool {
    headers
        .get_all("prefer")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| {
            p.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case(RESPOND_ASYNC)
        })
}

/// Starts a job publishing `spooled` as `slug`'s next version, holding the dataset until it
/// ends, and answers 202 with the job.
pub(crate) async fn start(
    state: AppState,
    user_id: i64,
    slug: String,
    current: Option<i64>,
    spooled: Spooled,
    held: Held,
) -> Result<Response, HttpError> {
    let job = store_jobs::start(&state.store, user_id, &slug, spooled.bytes).await?;
    let view = store_jobs::JobView::of(job.clone());
    let id = job.id.clone();
    tokio::spawn(async move {
        let progress = Arc::new(JobProgress::default());
        let beat = tokio::spawn(store_jobs::heartbeat(
            state.store.clone(),
            id.clone(),
            progress.clone(),
        ));
        let published = publish_upload(&state, &slug, current, &spooled, progress.clone()).await;
        held.end().await;
        drop(spooled);
        beat.abort();
        let (records, ended) = match published {
            Ok(published) => (
                published.record_count,
                serde_json::to_value(&published).map_err(|_| query::ApiError::Internal),
            ),
            Err(HttpError(error)) => (progress.records_read(), Err(error)),
        };
        if let Err(error) = store_jobs::finish(&state.store, &id, records, ended).await {
            tracing::error!(%error, job = %id, "a job's end could not be written");
        }
    });
    tracing::info!(job = %job.id, dataset = %job.slug, first = current.is_none(), "a write runs as a job");
    let mut response = (StatusCode::ACCEPTED, Json(view)).into_response();
    let location = format!("/api/v1/jobs/{}", job.id);
    if let Ok(value) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response.headers_mut().insert(
        "preference-applied",
        HeaderValue::from_static(RESPOND_ASYNC),
    );
    Ok(response)
}

/// An asynchronous write of the token's account: its state, phase, records and bytes read,
/// and once ended its answer or error.
#[utoipa::path(get, path = "/jobs/{id}", tag = "publishing", operation_id = "get_job",
    params(("id" = String, Path, description = "The job's id, from the write's `Location`")),
    responses(
        (status = 200, description = "The job", body = JobView),
        (status = 401, response = crate::http::error::openapi::Unauthorized),
        (status = 404, response = crate::http::error::openapi::NotFound),
        (status = 429, response = crate::http::error::openapi::TooManyRequests),
        (status = 503, response = crate::http::error::openapi::Unavailable),
    ),
    security(("bearer" = []))
)]
pub async fn get_job(
    principal: Principal,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    let view: JobView = store_jobs::view(&state.store, &id, principal.user_id).await?;
    Ok(Json(view).into_response())
}
