//! `GET /datasets/{slug}/records` and `GET /datasets/{slug}/records/{id}` (contract §5).

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use graphql::query::params::split_list;
use graphql::query::{RecordParams, request};

use super::caching::conditional;
use super::query_string::pairs;
use crate::app::AppState;
use crate::auth::bearer::Principal;
use crate::error::{ApiError, HttpError};

/// Searches, filters, sorts and pages through a dataset's records.
#[utoipa::path(get, path = "/datasets/{slug}/records", tag = "records",
    params(
        ("slug" = String, Path, description = "The dataset's slug"),
        ("q" = Option<String>, Query, description = "Full-text search across all text fields; every whitespace-separated term is required, case-insensitively; Chinese matches as substrings"),
        ("q[name]" = Option<String>, Query, description = "Full-text search on the text field `name`"),
        ("<field>" = Option<String>, Query, description = "Exact match on a keyword, number, boolean or date field (dotted names reach nested fields); repeated = OR; a text field gives 400 text_field_exact_match"),
        ("_ids" = Option<String>, Query, description = "Comma-separated record identifiers"),
        ("page" = Option<u64>, Query, description = "Page number, from 1"),
        ("per_page" = Option<u64>, Query, description = "Records per page, 1..=100, default 20"),
        ("sort" = Option<String>, Query, description = "Sort keys, comma-separated: `name<` descending, `name>` or `name` ascending; missing values last; ties in file order"),
        ("fields" = Option<String>, Query, description = "Comma-separated field names to return; `_id` is always returned"),
    ),
    responses(
        (status = 200, description = "One page of matching records", body = graphql::query::views::RecordPage),
        (status = 304, description = "Not modified (If-None-Match)"),
        (status = 400, description = "invalid_parameter / unknown_field / text_field_exact_match", body = super::openapi::ErrorBody),
        (status = 401, description = "missing_token / invalid_token", body = super::openapi::ErrorBody),
        (status = 404, description = "dataset_not_found", body = super::openapi::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn list_records(
    _: Principal,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, HttpError> {
    let params = RecordParams::from_pairs(&pairs(query.as_deref()))?;
    let dataset = state.resolver.dataset(&slug).await?;
    let query = request::record_query(&params, &dataset.schema)?;
    let etag = state.resolver.etag(&dataset, "records", &query);
    conditional(&headers, etag, state.resolver.records(&dataset, &query)).await
}

/// One record by its `_id`; `fields` works here too.
#[utoipa::path(get, path = "/datasets/{slug}/records/{id}", tag = "records",
    params(
        ("slug" = String, Path, description = "The dataset's slug"),
        ("id" = String, Path, description = "The record's `_id`"),
        ("fields" = Option<String>, Query, description = "Comma-separated field names to return"),
    ),
    responses(
        (status = 200, description = "The record", body = Object),
        (status = 304, description = "Not modified (If-None-Match)"),
        (status = 400, description = "invalid_parameter / unknown_field", body = super::openapi::ErrorBody),
        (status = 401, description = "missing_token / invalid_token", body = super::openapi::ErrorBody),
        (status = 404, description = "dataset_not_found / record_not_found", body = super::openapi::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get_record(
    _: Principal,
    State(state): State<AppState>,
    Path((slug, id)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, HttpError> {
    let mut fields = None;
    for (name, value) in pairs(query.as_deref()) {
        if name != "fields" || fields.is_some() {
            return Err(ApiError::invalid(
                name.clone(),
                format!("A single record takes only fields (once), not {name}."),
            )
            .into());
        }
        fields = Some(split_list(&value));
    }
    let dataset = state.resolver.dataset(&slug).await?;
    let fields = request::projection(fields.as_deref(), &dataset.schema)?;
    let etag = state.resolver.etag(&dataset, "record", &(&id, &fields));
    let record = state.resolver.record(&dataset, &id, fields.as_deref());
    conditional(&headers, etag, record).await
}
