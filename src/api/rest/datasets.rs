//! `GET /datasets` and `GET /datasets/{slug}` (contract §3).

use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use query::Paging;
use query::params::{catalog_words, parse_count};

use super::query_string::{no_parameters, once, pairs};
use crate::auth::token::Principal;
use crate::http::error::{ApiError, HttpError};
use crate::state::AppState;
use query::Need;

/// Lists the datasets, by slug; `page` and `per_page` as for records; `q` finds datasets by
/// words in their title, description, field names and field descriptions.
#[utoipa::path(get, path = "/datasets", tag = "datasets", operation_id = "list_datasets",
    params(crate::api::rest::parameters::DatasetsQuery),
    responses(
        (status = 200, description = "One page of the datasets", body = query::views::DatasetList),
        (status = 400, response = crate::http::error::openapi::BadRequest),
        (status = 401, response = crate::http::error::openapi::Unauthorized),
        (status = 403, response = crate::http::error::openapi::Forbidden),
        (status = 413, response = crate::http::error::openapi::PayloadTooLarge),
        (status = 429, response = crate::http::error::openapi::TooManyRequests),
        (status = 503, response = crate::http::error::openapi::Unavailable),
    ),
    security(("bearer" = []))
)]
pub async fn list_datasets(
    principal: Principal,
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
) -> Result<Response, HttpError> {
    principal.scope.require(Need::Read, None)?;
    let (mut page, mut per_page, mut q) = (None, None, None);
    for (name, value) in pairs(query.as_deref()) {
        match name.as_str() {
            "page" => once(&mut page, &name, &value)?,
            "per_page" => once(&mut per_page, &name, &value)?,
            "q" => once(&mut q, &name, &value)?,
            _ => {
                return Err(ApiError::invalid(
                    name.clone(),
                    format!("The dataset list takes only q, page and per_page, not {name}."),
                )
                .into());
            }
        }
    }
    let page = page.map(|p| parse_count("page", &p)).transpose()?;
    let per_page = per_page.map(|p| parse_count("per_page", &p)).transpose()?;
    let words = catalog_words(q.as_deref())?;
    let list = state
        .resolver
        .list_datasets(Paging::new(page, per_page)?, &words, &principal.scope)
        .await?;
    Ok(crate::http::caching::json_response(&list))
}

/// One dataset's metadata: the list item plus licence, source, schema entries and links.
#[utoipa::path(get, path = "/datasets/{slug}", tag = "datasets", operation_id = "get_dataset",
    params(("slug" = String, Path, description = "The dataset's slug (may contain dots and tildes)", example = "flights")),
    responses(
        (status = 200, description = "The dataset's metadata", body = query::views::DatasetDetail),
        (status = 400, response = crate::http::error::openapi::BadRequest),
        (status = 401, response = crate::http::error::openapi::Unauthorized),
        (status = 403, response = crate::http::error::openapi::Forbidden),
        (status = 404, response = crate::http::error::openapi::NotFound),
        (status = 413, response = crate::http::error::openapi::PayloadTooLarge),
        (status = 429, response = crate::http::error::openapi::TooManyRequests),
        (status = 503, response = crate::http::error::openapi::Unavailable),
    ),
    security(("bearer" = []))
)]
pub async fn get_dataset(
    principal: Principal,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, HttpError> {
    principal.require(Need::Read, &slug)?;
    no_parameters(query.as_deref(), "A dataset's metadata")?;
    let detail = state.resolver.dataset_detail(&slug).await?;
    let mut response = crate::http::caching::json_response(&detail);
    crate::http::caching::set_dataset_version(&mut response, detail.version);
    Ok(response)
}

/// The dataset's schema in the format `odqs import --schema` reads: with an export, it
/// publishes the same records with the same types
/// (`odqs import export.csv --schema schema.json --id-field _id`).
#[utoipa::path(get, path = "/datasets/{slug}/schema.json", tag = "datasets", operation_id = "get_schema_file",
    params(("slug" = String, Path, description = "The dataset's slug (may contain dots and tildes)", example = "flights")),
    responses(
        (status = 200, description = "The dataset's schema file", body = query::views::SchemaFile),
        (status = 400, response = crate::http::error::openapi::BadRequest),
        (status = 401, response = crate::http::error::openapi::Unauthorized),
        (status = 403, response = crate::http::error::openapi::Forbidden),
        (status = 404, response = crate::http::error::openapi::NotFound),
        (status = 413, response = crate::http::error::openapi::PayloadTooLarge),
        (status = 429, response = crate::http::error::openapi::TooManyRequests),
        (status = 503, response = crate::http::error::openapi::Unavailable),
    ),
    security(("bearer" = []))
)]
pub async fn get_schema_file(
    principal: Principal,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, HttpError> {
    principal.require(Need::Read, &slug)?;
    no_parameters(query.as_deref(), "A dataset's schema file")?;
    Ok(crate::http::caching::json_response(
        &state.resolver.schema_file(&slug).await?,
    ))
}
