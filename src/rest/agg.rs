//! `GET /datasets/{slug}/agg` (contract §6).

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use graphql::query::{AggParams, request};

use super::caching::conditional;
use super::query_string::pairs;
use crate::app::AppState;
use crate::auth::bearer::Principal;
use crate::error::HttpError;

/// Grouped statistics: every group in one answer, by count descending then key.
#[utoipa::path(get, path = "/datasets/{slug}/agg", tag = "agg",
    params(
        ("slug" = String, Path, description = "The dataset's slug"),
        ("group_by" = String, Query, description = "A keyword field (dotted paths allowed); required"),
        ("field" = Option<String>, Query, description = "A number field: adds sum, avg, min, max and percentiles 25/50/75 (linear interpolation)"),
        ("q" = Option<String>, Query, description = "Full-text filter, as for records"),
        ("<field>" = Option<String>, Query, description = "Exact-match filters, q[name] and _ids, as for records"),
    ),
    responses(
        (status = 200, description = "The groups", body = graphql::query::views::AggResult),
        (status = 304, description = "Not modified (If-None-Match)"),
        (status = 400, description = "missing_parameter / invalid_group_by / invalid_field / unknown_field / …", body = super::openapi::ErrorBody),
        (status = 401, description = "missing_token / invalid_token", body = super::openapi::ErrorBody),
        (status = 404, description = "dataset_not_found", body = super::openapi::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn aggregate(
    _: Principal,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, HttpError> {
    let params = AggParams::from_pairs(&pairs(query.as_deref()))?;
    let dataset = state.resolver.dataset(&slug).await?;
    let query = request::agg_query(&params, &dataset.schema)?;
    let etag = state.resolver.etag(&dataset, "agg", &query);
    conditional(&headers, etag, state.resolver.agg(&dataset, &query)).await
}
