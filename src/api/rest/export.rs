//! `GET /datasets/{slug}/export` (contract §12.3): every matching record in one streamed
//! answer. The query layer ([`query::export`]) validates, plans and encodes; this
//! handler charges the rate limit for the records and writes the headers and the stream.
//!
//! Everything that can fail with a status fails before the first byte (parameters, dataset,
//! planning, the budget), as the contract's JSON errors. After it, a store error ends the body
//! abruptly (no terminating chunk), which every HTTP client reports as an incomplete answer;
//! a client that hangs up drops the stream, and with it the export, so reading stops.
//!
//! Exports are the heaviest requests, so how many run at once is bounded besides the rate
//! limit ([`ExportSlots`](crate::auth::export_slots::ExportSlots)): per token, per account and
//! in all. Over a bound the answer is 429 `rate_limited` with a short `Retry-After`, before any
//! work is done.

use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use query::ExportFormat;
use query::cost::extra_requests;
use query::export::Export;

use super::query_string::{export_params, pairs};
use crate::auth::export_slots::{EXPORT_SLOT_RETRY_SECS, ExportSlot};
use crate::auth::token::Principal;
use crate::http::error::{ApiError, HttpError};
use crate::state::AppState;
use query::Need;

/// `X-Total-Count`: the number of records the export sends, known before the first byte.
pub static X_TOTAL_COUNT: HeaderName = HeaderName::from_static("x-total-count");

/// The media type of a format.
pub fn media_type(format: ExportFormat) -> &'static str {
    match format {
        ExportFormat::Ndjson => "application/x-ndjson",
        ExportFormat::Csv => "text/csv; charset=utf-8",
    }
}

/// Every matching record as NDJSON (default) or CSV, streamed.
#[utoipa::path(get, path = "/datasets/{slug}/export", tag = "records", operation_id = "export_records",
    params(
        ("slug" = String, Path, description = "The dataset's slug", example = "flights"),
        crate::api::rest::parameters::ExportQuery,
    ),
    responses(
        (status = 200, response = crate::api::rest::responses::ExportAnswer),
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
pub async fn export_records(
    principal: Principal,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, HttpError> {
    principal.require(Need::Export, &slug)?;
    let params = export_params(&pairs(query.as_deref()))?;
    let Some(slot) = state.export_slots.take(&principal) else {
        tracing::debug!(
            token_id = principal.token_id,
            "export refused: too many at once"
        );
        return Err(ApiError::RateLimited {
            retry_after: EXPORT_SLOT_RETRY_SECS,
        }
        .into());
    };
    let prepared = state.resolver.prepare_export(&slug, &params).await?;
    let export = state.resolver.run_export(prepared).await?;
    let extra = extra_requests(export.total());
    let charge = match state.rate_limits.weigh(principal.token_id, extra) {
        Ok(charge) => charge,
        Err(refused) => {
            let error = if refused.never {
                ApiError::ExportOverBudget {
                    records: export.total(),
                    limit: refused.limit,
                    retry_after: refused.reset_secs,
                }
            } else {
                ApiError::RateLimited {
                    retry_after: refused.reset_secs,
                }
            };
            let mut response = HttpError(error).into_response();
            response.extensions_mut().insert(refused);
            return Ok(response);
        }
    };
    let described_by = format!(
        "<{}/schema.json>; rel=\"describedby\"",
        state.resolver.dataset_url(export.slug())
    );
    let mut response = stream(export, slot, &described_by);
    if let Some(charge) = charge {
        // The gate announces this later charge in the rate-limit headers.
        response.extensions_mut().insert(charge);
    }
    Ok(response)
}

/// The streamed answer: headers first (type, attachment name, total, the schema file's
/// link), then one chunk per
/// batch the export writes; the export's slot goes with the stream.
fn stream(export: Export, slot: ExportSlot, described_by: &str) -> Response {
    let format = export.format();
    let disposition = format!(
        "attachment; filename=\"{}.{}\"",
        export.slug(),
        format.as_str()
    );
    let total = export.total();
    let version = export.version();
    let body = Body::from_stream(futures_util::stream::try_unfold(
        (export, slot),
        |(mut export, slot)| async move {
            let chunk = export.next_chunk().await?;
            Ok::<_, ApiError>(chunk.map(|bytes| (Bytes::from(bytes), (export, slot))))
        },
    ));
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(media_type(format)),
    );
    // A slug is letters, digits and `-_.~` (checked at import), so it needs no quoting.
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    headers.insert(X_TOTAL_COUNT.clone(), HeaderValue::from(total));
    headers.insert(
        crate::http::caching::DATASET_VERSION.clone(),
        HeaderValue::from(version),
    );
    // The schema that re-imports the file with its types (RFC 8288).
    if let Ok(value) = HeaderValue::from_str(described_by) {
        headers.insert(header::LINK, value);
    }
    response
}
