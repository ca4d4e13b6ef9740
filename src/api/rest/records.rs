//! `GET /datasets/{slug}/records` and `GET /datasets/{slug}/records/{id}` (contract §5).

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use query::params::ProjectionParams;

use super::query_string::{once, pairs, record_params, version_of};
use crate::auth::cost_gate::TokenGate;
use crate::auth::token::Principal;
use crate::http::caching::{conditional_written, set_dataset_version};
use crate::http::error::{ApiError, HttpError};
use crate::state::AppState;

/// Searches, filters, sorts and pages through a dataset's records.
#[utoipa::path(get, path = "/datasets/{slug}/records", tag = "records", operation_id = "list_records",
    params(
        ("slug" = String, Path, description = "The dataset's slug", example = "flights"),
        crate::api::rest::parameters::RecordsQuery,
    ),
    responses(
        (status = 200, description = "One page of matching records", body = query::views::RecordPage,
            headers(
                ("ETag" = String, description = "The answer's tag, for `If-None-Match`"),
                ("Dataset-Version" = i64, description = "The number of the dataset version read"),
                ("Link" = String, description = "`<URL>; rel=\"next\"`: the next page's URL with its `cursor`; absent on the last page"),
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
pub async fn list_records(
    principal: Principal,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, HttpError> {
    let params = record_params(&pairs(query.as_deref()))?;
    let gate = TokenGate::new(state.rate_limits.clone(), principal.token_id);
    let answer = async {
        let caller = principal.caller(gate.as_ref());
        let ready = state.resolver.call_records(&caller, &slug, &params).await?;
        let mut next_cursor = None;
        let schema = &ready.dataset().schema;
        let mut response =
            conditional_written(&headers, ready.etag().into(), ready.run(), |page, out| {
                next_cursor.clone_from(&page.next_cursor);
                page.write_json(schema, out)
            })
            .await?;
        set_dataset_version(&mut response, ready.dataset().version());
        if let Some(cursor) = next_cursor {
            let next = next_url(
                &state.resolver.dataset_url(&slug),
                query.as_deref(),
                &cursor,
            );
            if let Ok(value) = HeaderValue::from_str(&format!("<{next}>; rel=\"next\"")) {
                response.headers_mut().insert(header::LINK, value);
            }
        }
        Ok(response)
    };
    Ok(super::charged(&gate, answer.await))
}

/// The URL of the page after this one (RFC 8288 `rel="next"`): the request's own parameters
/// without `page` or `cursor`, and the cursor. A parameter already written in safe characters
/// is copied as the client sent it; only one that is not (`sort=dep_delay<` sent raw, `[` of
/// an operator) is decoded and written again, so a page writes its `Link` without decoding
/// the whole query.
fn next_url(dataset_url: &str, raw: Option<&str>, cursor: &str) -> String {
    let raw = raw.unwrap_or_default();
    let mut url = String::with_capacity(dataset_url.len() + raw.len() + cursor.len() + 17);
    url.push_str(dataset_url);
    url.push_str("/records?");
    for piece in raw.split('&').filter(|piece| !piece.is_empty()) {
        let mut pairs = form_urlencoded::parse(piece.as_bytes());
        let Some((name, value)) = pairs.next() else {
            continue;
        };
        if matches!(name.as_ref(), "page" | "cursor") {
            continue;
        }
        let safe = piece
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~%=+,".contains(&b));
        if safe {
            url.push_str(piece);
        } else {
            let encode = crate::http::url::encode;
            url.push_str(&encode(&name));
            url.push('=');
            url.push_str(&encode(&value));
        }
        url.push('&');
    }
    url.push_str("cursor=");
    url.push_str(cursor);
    url
}

/// One record by its `_id`; `fields` works here too.
#[utoipa::path(get, path = "/datasets/{slug}/records/{id}", tag = "records", operation_id = "get_record",
    params(
        ("slug" = String, Path, description = "The dataset's slug", example = "flights"),
        ("id" = String, Path, description = "The record's `_id`", example = "1"),
        crate::api::rest::parameters::RecordQuery,
    ),
    responses(
        (status = 200, description = "The record", body = query::views::Record,
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
pub async fn get_record(
    principal: Principal,
    State(state): State<AppState>,
    Path((slug, id)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, HttpError> {
    let (mut fields, mut version) = (None, None);
    for (name, value) in pairs(query.as_deref()) {
        match name.as_str() {
            "fields" if fields.is_none() => {
                fields = Some(ProjectionParams::parse(Some(&value))?.fields)
            }
            "version" => once(&mut version, &name, &value)?,
            _ => {
                return Err(ApiError::invalid(
                    name.clone(),
                    format!(
                        "A single record takes only fields and version (each once), not {name}."
                    ),
                )
                .into());
            }
        }
    }
    let fields = fields.flatten();
    let gate = TokenGate::new(state.rate_limits.clone(), principal.token_id);
    let caller = principal.caller(gate.as_ref());
    let ready = state
        .resolver
        .call_record(
            &caller,
            &slug,
            (&id, fields.as_deref()),
            version_of(version)?,
        )
        .await?;
    let run = ready.run_body();
    let mut response = conditional_written(&headers, ready.etag().into(), run, |record, out| {
        record.write_json(out)
    })
    .await?;
    set_dataset_version(&mut response, ready.dataset().version());
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::next_url;

    #[test]
    fn the_next_url_keeps_the_request_but_its_page() {
        let base = "http://h/api/v1/datasets/flights";
        assert_eq!(
            next_url(base, None, "ab12"),
            "http://h/api/v1/datasets/flights/records?cursor=ab12"
        );
        assert_eq!(
            next_url(
                base,
                Some("carrier=UA&page=3&q=new+york&cursor=old&per_page=5&&sort=dep_delay%3C"),
                "ab12"
            ),
            "http://h/api/v1/datasets/flights/records?carrier=UA&q=new+york&per_page=5&sort=dep_delay%3C&cursor=ab12"
        );
        // Characters a Link header or a URL cannot carry as they are are written again.
        let next = next_url(
            base,
            Some("sort=dep_delay<&dep_delay[gte]=60&pag%65=2"),
            "c",
        );
        assert_eq!(
            next,
            "http://h/api/v1/datasets/flights/records?sort=dep_delay%3C&dep_delay%5Bgte%5D=60&cursor=c"
        );
    }
}
