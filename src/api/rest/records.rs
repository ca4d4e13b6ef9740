//! `GET /datasets/{slug}/records` and `GET /datasets/{slug}/records/{id}` (contract §5).

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use query::params::ProjectionParams;
use query::{RecordParams, cost, request};

use super::query_string::pairs;
use crate::auth::principal::Principal;
use crate::http::caching::conditional_written;
use crate::http::error::{ApiError, HttpError};
use crate::state::AppState;

/// Searches, filters, sorts and pages through a dataset's records.
#[utoipa::path(get, path = "/datasets/{slug}/records", tag = "records", operation_id = "list_records",
    params(
        ("slug" = String, Path, description = "The dataset's slug", example = "flights"),
        crate::api::openapi::RecordsQuery,
    ),
    responses(
        (status = 200, description = "One page of matching records", body = query::views::RecordPage,
            headers(("ETag" = String, description = "The answer's tag, for `If-None-Match`"))),
        (status = 304, response = crate::api::openapi::NotModified),
        (status = 400, response = crate::api::openapi::BadRequest),
        (status = 401, response = crate::api::openapi::Unauthorized),
        (status = 404, response = crate::api::openapi::NotFound),
        (status = 413, response = crate::api::openapi::PayloadTooLarge),
        (status = 429, response = crate::api::openapi::TooManyRequests),
        (status = 503, response = crate::api::openapi::Unavailable),
    ),
    security(("bearer" = []))
)]
pub async fn list_records(
    principal: Principal,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, HttpError> {
    let params = RecordParams::from_pairs(&pairs(query.as_deref()))?;
    let dataset = state.resolver.dataset(&slug).await?;
    let query = request::record_query(&params, &dataset.schema)?;
    // Full text reads the text columns of every record: it weighs like a scan.
    let searches = !query.filter.terms.is_empty() || !query.filter.field_terms.is_empty();
    let charge = if searches {
        let records = u64::try_from(dataset.meta.record_count).unwrap_or(0);
        match state
            .rate_limits
            .weigh(principal.token_id, cost::scan_extra(records))
        {
            Ok(charge) => charge,
            Err(refused) => return Ok(super::refusal(refused)),
        }
    } else {
        None
    };
    let etag = state.resolver.etag(&dataset, "records", &query);
    let page = state.resolver.records(&dataset, &query);
    let mut response = conditional_written(&headers, etag, page, |page, out| {
        page.write_json(&dataset.schema, out)
    })
    .await?;
    if let Some(charge) = charge {
        response.extensions_mut().insert(charge);
    }
    Ok(response)
}

/// One record by its `_id`; `fields` works here too.
#[utoipa::path(get, path = "/datasets/{slug}/records/{id}", tag = "records", operation_id = "get_record",
    params(
        ("slug" = String, Path, description = "The dataset's slug", example = "flights"),
        ("id" = String, Path, description = "The record's `_id`", example = "1"),
        crate::api::openapi::RecordQuery,
    ),
    responses(
        (status = 200, description = "The record", body = query::views::Record,
            headers(("ETag" = String, description = "The answer's tag, for `If-None-Match`"))),
        (status = 304, response = crate::api::openapi::NotModified),
        (status = 400, response = crate::api::openapi::BadRequest),
        (status = 401, response = crate::api::openapi::Unauthorized),
        (status = 404, response = crate::api::openapi::NotFound),
        (status = 413, response = crate::api::openapi::PayloadTooLarge),
        (status = 429, response = crate::api::openapi::TooManyRequests),
        (status = 503, response = crate::api::openapi::Unavailable),
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
        fields = ProjectionParams::parse(Some(&value))?.fields;
    }
    let dataset = state.resolver.dataset(&slug).await?;
    let fields = request::projection(fields.as_deref(), &dataset.schema)?;
    let etag = state.resolver.etag(&dataset, "record", &(&id, &fields));
    let record = state.resolver.record_body(&dataset, &id, fields.as_deref());
    conditional_written(&headers, etag, record, |record, out| record.write_json(out)).await
}
