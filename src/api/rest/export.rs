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
//! limit ([`ExportSlots`]): per token, per account and in all. Over a bound the answer is 429
//! `rate_limited` with a short `Retry-After`, before any work is done.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use query::ExportFormat;
use query::cost::extra_requests;
use query::export::Export;

use super::query_string::{export_params, pairs};
use crate::app::AppState;
use crate::auth::bearer::Principal;
use crate::http::error::{ApiError, HttpError};

/// Exports one token may run at once.
pub const EXPORTS_PER_TOKEN: usize = 2;
/// Exports one account may run at once, whatever the number of its tokens.
pub const EXPORTS_PER_ACCOUNT: usize = 3;
/// Exports this instance runs at once; more wait for a free slot (429). Each holds its list of
/// positions (4 bytes a record) and a batch of bodies, so this bounds their memory too.
pub const EXPORTS_AT_ONCE: usize = 32;
/// `Retry-After` of a refusal for too many exports at once, in seconds.
const EXPORT_SLOT_RETRY_SECS: u64 = 5;

/// The exports running now, by token, by account and in all.
#[derive(Debug, Default)]
pub struct ExportSlots {
    running: std::sync::Mutex<Running>,
}

#[derive(Debug, Default)]
struct Running {
    by_token: HashMap<i64, usize>,
    by_account: HashMap<i64, usize>,
    total: usize,
}

impl ExportSlots {
    /// A slot for one export of `principal`, held until the slot is dropped (the stream ends
    /// or the client goes away); `None` over a bound.
    pub fn take(self: &Arc<Self>, principal: Principal) -> Option<ExportSlot> {
        let mut running = self.running.lock().expect("export slots lock");
        let token = running
            .by_token
            .get(&principal.token_id)
            .copied()
            .unwrap_or(0);
        let account = running
            .by_account
            .get(&principal.user_id)
            .copied()
            .unwrap_or(0);
        if token >= EXPORTS_PER_TOKEN
            || account >= EXPORTS_PER_ACCOUNT
            || running.total >= EXPORTS_AT_ONCE
        {
            return None;
        }
        *running.by_token.entry(principal.token_id).or_insert(0) += 1;
        *running.by_account.entry(principal.user_id).or_insert(0) += 1;
        running.total += 1;
        Some(ExportSlot {
            slots: self.clone(),
            principal,
        })
    }
}

/// One running export's place in [`ExportSlots`].
#[derive(Debug)]
pub struct ExportSlot {
    slots: Arc<ExportSlots>,
    principal: Principal,
}

impl Drop for ExportSlot {
    fn drop(&mut self) {
        let mut running = self.slots.running.lock().expect("export slots lock");
        let Running {
            by_token,
            by_account,
            total,
        } = &mut *running;
        for (map, key) in [
            (by_token, self.principal.token_id),
            (by_account, self.principal.user_id),
        ] {
            if let Some(n) = map.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    map.remove(&key);
                }
            }
        }
        *total -= 1;
    }
}

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
        crate::api::openapi::ExportQuery,
    ),
    responses(
        (status = 200, response = crate::api::openapi::ExportAnswer),
        (status = 400, response = crate::api::openapi::BadRequest),
        (status = 401, response = crate::api::openapi::Unauthorized),
        (status = 404, response = crate::api::openapi::NotFound),
        (status = 413, response = crate::api::openapi::PayloadTooLarge),
        (status = 429, response = crate::api::openapi::TooManyRequests),
        (status = 503, response = crate::api::openapi::Unavailable),
    ),
    security(("bearer" = []))
)]
pub async fn export_records(
    principal: Principal,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, HttpError> {
    let params = export_params(&pairs(query.as_deref()))?;
    let Some(slot) = state.export_slots.take(principal) else {
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
    let mut response = stream(export, slot);
    if let Some(charge) = charge {
        // The gate announces this later charge in the rate-limit headers.
        response.extensions_mut().insert(charge);
    }
    Ok(response)
}

/// The streamed answer: headers first (type, attachment name, total), then one chunk per
/// batch the export writes; the export's slot goes with the stream.
fn stream(export: Export, slot: ExportSlot) -> Response {
    let format = export.format();
    let disposition = format!(
        "attachment; filename=\"{}.{}\"",
        export.slug(),
        format.as_str()
    );
    let total = export.total();
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
    response
}
