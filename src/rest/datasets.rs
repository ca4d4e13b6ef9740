//! `GET /datasets` and `GET /datasets/{slug}` (contract §3).

use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use graphql::query::Paging;
use graphql::query::params::parse_count;

use super::query_string::pairs;
use crate::app::AppState;
use crate::auth::bearer::Principal;
use crate::error::{ApiError, HttpError};

/// Lists the datasets, by slug; `page` and `per_page` as for records.
#[utoipa::path(get, path = "/datasets", tag = "datasets",
    params(
        ("page" = Option<u64>, Query, description = "Page number, from 1"),
        ("per_page" = Option<u64>, Query, description = "Datasets per page, 1..=100, default 20"),
    ),
    responses(
        (status = 200, description = "One page of the datasets", body = graphql::query::views::DatasetList),
        (status = 400, description = "invalid_parameter", body = super::openapi::ErrorBody),
        (status = 401, description = "missing_token / invalid_token", body = super::openapi::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn list_datasets(
    _: Principal,
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
) -> Result<Response, HttpError> {
    let (mut page, mut per_page) = (None, None);
    for (name, value) in pairs(query.as_deref()) {
        match name.as_str() {
            "page" => page = Some(parse_count("page", &value)?),
            "per_page" => per_page = Some(parse_count("per_page", &value)?),
            _ => {
                return Err(ApiError::invalid(
                    name.clone(),
                    format!("The dataset list takes only page and per_page, not {name}."),
                )
                .into());
            }
        }
    }
    let list = state
        .resolver
        .list_datasets(Paging::new(page, per_page)?)
        .await?;
    Ok(Json(list).into_response())
}

/// One dataset's metadata: the list item plus licence, source, schema entries and links.
#[utoipa::path(get, path = "/datasets/{slug}", tag = "datasets",
    params(("slug" = String, Path, description = "The dataset's slug (may contain dots and tildes)")),
    responses(
        (status = 200, description = "The dataset's metadata", body = graphql::query::views::DatasetDetail),
        (status = 401, description = "missing_token / invalid_token", body = super::openapi::ErrorBody),
        (status = 404, description = "dataset_not_found", body = super::openapi::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get_dataset(
    _: Principal,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, HttpError> {
    if let Some((name, _)) = pairs(query.as_deref()).into_iter().next() {
        return Err(ApiError::invalid(
            name.clone(),
            format!("A dataset's metadata takes no parameters, not {name}."),
        )
        .into());
    }
    let dataset = state.resolver.dataset(&slug).await?;
    Ok(Json(state.resolver.detail(&dataset)).into_response())
}
