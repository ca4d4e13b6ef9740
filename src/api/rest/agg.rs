//! `GET /datasets/{slug}/agg` (contract §6).

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::query_string::{agg_params, pairs};
use crate::auth::cost_gate::TokenGate;
use crate::auth::token::Principal;
use crate::http::caching::{conditional_written, set_dataset_version};
use crate::http::error::HttpError;
use crate::state::AppState;

/// Grouped statistics: every group in one answer, by count descending then key.
#[utoipa::path(get, path = "/datasets/{slug}/agg", tag = "agg", operation_id = "aggregate",
    params(
        ("slug" = String, Path, description = "The dataset's slug", example = "flights"),
        crate::api::rest::parameters::AggQuery,
    ),
    responses(
        (status = 200, description = "The groups, by count descending then key; records without a `group_by` value count in `total_records` but in no group", body = query::views::AggResult,
            headers(
                ("ETag" = String, description = "The answer's tag, for `If-None-Match`"),
                ("Dataset-Version" = i64, description = "The number of the dataset version read"),
            )),
        (status = 304, response = crate::api::rest::responses::NotModified),
        (status = 400, response = crate::http::error::openapi::BadRequest),
        (status = 401, response = crate::http::error::openapi::Unauthorized),
        (status = 403, response = crate::http::error::openapi::Forbidden),
        (status = 404, response = crate::http::error::openapi::NotFound),
        (status = 410, response = crate::http::error::openapi::Gone),
        (status = 413, response = crate::http::error::openapi::PayloadTooLarge),
        (status = 429, response = crate::http::error::openapi::TooManyRequests),
        (status = 503, response = crate::http::error::openapi::Unavailable),
    ),
    security(("bearer" = []))
)]
pub async fn aggregate(
    principal: Principal,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, HttpError> {
    let params = agg_params(&pairs(query.as_deref()))?;
    let gate = TokenGate::new(state.rate_limits.clone(), principal.token_id);
    let answer = async {
        let caller = principal.caller(gate.as_ref());
        let ready = state.resolver.call_agg(&caller, &slug, &params).await?;
        let run = ready.run();
        let write = |result: &std::sync::Arc<query::views::AggResult>, out: &mut Vec<u8>| {
            serde_json::to_writer(out, result.as_ref())
        };
        let mut response = conditional_written(&headers, ready.etag().into(), run, write).await?;
        set_dataset_version(&mut response, ready.dataset().version());
        Ok(response)
    };
    Ok(super::charged(&gate, answer.await))
}
