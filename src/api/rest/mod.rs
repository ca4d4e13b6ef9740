//! The API under `/api/v1` (spec §4.1–§4.5, contract §3–§7, §10, §11). Handlers are thin: they
//! read the request, call the query layer (`query`) or the GraphQL schema built on it
//! (`graphql`), and write the answer with the caching headers of contract §11.

pub(crate) mod agg;
pub(crate) mod datasets;
pub mod export;
mod query_string;
pub(crate) mod records;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, HeaderValue, Method, header};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::routing::get;
use tower_http::cors::{Any, CorsLayer};
use tower_http::set_header::SetResponseHeaderLayer;

use crate::auth::http::gate::{self, RATELIMIT, RATELIMIT_POLICY};
use crate::http::error::{ApiError, HttpError};
use crate::state::AppState;

use crate::http::resilience;

/// The 429 answer to a request [`RateLimits::weigh`](crate::auth::rate_limit::RateLimits::weigh)
/// refused, announcing its charge.
pub(crate) fn refusal(refused: crate::auth::rate_limit::Charge) -> axum::response::Response {
    use axum::response::IntoResponse;
    let mut response = HttpError(ApiError::RateLimited {
        retry_after: refused.reset_secs,
    })
    .into_response();
    response.extensions_mut().insert(refused);
    response
}

/// The read API, to be nested at `/api/v1`. Layers, outermost first: CORS and the caching
/// headers; the gate (who asks, within which budget); every error in the contract's JSON
/// shape; one retry of a request a store fault cut; the body limit.
pub fn routes(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/datasets", get(datasets::list_datasets))
        .route("/datasets/{slug}", get(datasets::get_dataset))
        .route("/datasets/{slug}/records", get(records::list_records))
        .route("/datasets/{slug}/records/{id}", get(records::get_record))
        .route("/datasets/{slug}/export", get(export::export_records))
        .route("/datasets/{slug}/agg", get(agg::aggregate))
        .route(
            "/graphql",
            get(crate::api::graphql::endpoint).post(crate::api::graphql::endpoint),
        )
        .route("/openapi.json", get(crate::api::openapi::openapi_json))
        .nest_service(
            "/mcp",
            tower::ServiceBuilder::new()
                .layer(axum::middleware::from_fn(crate::api::mcp::require_token))
                .service(crate::api::mcp::service(state.clone())),
        )
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(resilience::MAX_BODY_BYTES))
        .layer(from_fn(resilience::retry_store_faults))
        .layer(from_fn(resilience::json_errors))
        .layer(from_fn_with_state(state, gate::gate))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CACHE_CONTROL,
            HeaderValue::from_static("private"),
        ))
        .layer(SetResponseHeaderLayer::appending(
            header::VARY,
            HeaderValue::from_static("Authorization"),
        ))
        .layer(cors())
}

/// Contract §11: any origin may call the API with a bearer token; no cookies are involved.
pub fn cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::POST, Method::OPTIONS])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::IF_NONE_MATCH,
        ])
        .expose_headers([
            header::ETAG,
            HeaderName::from_static("retry-after"),
            RATELIMIT_POLICY.clone(),
            RATELIMIT.clone(),
            export::X_TOTAL_COUNT.clone(),
            header::CONTENT_DISPOSITION,
        ])
        .max_age(std::time::Duration::from_secs(3600))
}

async fn method_not_allowed() -> HttpError {
    HttpError(ApiError::MethodNotAllowed)
}
