//! The one route table: every path the service answers, the layers around each group, the
//! 404/405 fallbacks, and next to them the operations the OpenAPI document describes, in the
//! document's order. Front ends give handlers; only this table mounts them, so no front end
//! mounts another.
//!
//! The document's operations are listed by hand ([`ApiPaths`]) rather than registered as routes
//! are added (utoipa-axum's `OpenApiRouter`): the document names paths relative to the API's
//! base URL, while the device flow is mounted at `/api/v1/auth/…` outside the API's layers and
//! the health checks at the site's root, and the GraphQL endpoint is described by two stand-in
//! operations, none of which such a router can express with the document unchanged.

use axum::extract::DefaultBodyLimit;
use axum::extract::{Path, State};
use axum::http::{HeaderName, HeaderValue, Method, header};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use serde_json::json;
use std::sync::atomic::Ordering;
use tower_http::cors::{Any, CorsLayer};
use tower_http::set_header::SetResponseHeaderLayer;
use utoipa::{OpenApi, ToSchema};

use crate::api::{graphql, mcp, openapi, rest};
use crate::auth::http::gate::{self, RATELIMIT, RATELIMIT_POLICY};
use crate::http::error::{ApiError, ErrorBody, HttpError};
use crate::http::resilience;
use crate::state::AppState;

/// The whole HTTP surface.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .merge(crate::site::routes())
        .merge(resilience::limit_form_bodies(
            crate::auth::http::device::routes(),
        ))
        .route(
            "/docs",
            get(|State(state): State<AppState>| openapi::docs_page(state)),
        )
        .route("/assets/{version}/{name}", get(vendored_asset))
        .route("/assets/{version}/images/{name}", get(vendored_image))
        .nest_service("/api/v1", api(state.clone()))
        .fallback(not_found)
        .layer(crate::http::compression::layer())
        .layer(axum::middleware::map_response(
            crate::http::compression::weak_etag_when_encoded,
        ))
        .layer(from_fn_with_state(
            state.clone(),
            crate::http::access_log::access_log,
        ))
        .with_state(state)
}

/// The operator's port (`ODQS_METRICS_LISTEN`): `GET /metrics`, apart from the public API.
pub fn metrics_router(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(state)
}

/// The figures of [`crate::http::metrics`], those read from the state read now.
async fn metrics(State(state): State<AppState>) -> axum::response::Response {
    let resolver = &state.resolver;
    let replicas = resolver.replicas();
    let answered = &replicas.answered;
    let mut pools = vec![("primary".to_string(), pool_use(&state.store.db))];
    pools.extend(
        replicas
            .connections()
            .iter()
            .enumerate()
            .map(|(i, db)| (format!("replica{}", i + 1), pool_use(db))),
    );
    let now = crate::http::metrics::Snapshot {
        indexes: resolver.index_report(),
        reads: [
            ("index", resolver.index_answers()),
            ("replica", answered.replica.load(Ordering::Relaxed)),
            ("primary", answered.primary.load(Ordering::Relaxed)),
        ],
        pools: pools
            .into_iter()
            .zip(replicas.kept_sessions())
            .map(|((name, (idle, in_use)), kept)| (name, [idle, in_use, kept as u32]))
            .collect(),
        replicas_up: replicas
            .health()
            .iter()
            .filter(|h| **h == query::replicas::Health::Up)
            .count() as u64,
    };
    (
        [(header::CONTENT_TYPE, crate::http::metrics::CONTENT_TYPE)],
        state.metrics.encode(now),
    )
        .into_response()
}

/// A store pool's connections: (idle, in use).
fn pool_use(db: &sea_orm::DatabaseConnection) -> (u32, u32) {
    let (size, idle) = match db.get_database_backend() {
        sea_orm::DatabaseBackend::Postgres => {
            let pool = db.get_postgres_connection_pool();
            (pool.size(), pool.num_idle())
        }
        _ => {
            let pool = db.get_sqlite_connection_pool();
            (pool.size(), pool.num_idle())
        }
    };
    let idle = u32::try_from(idle).unwrap_or(u32::MAX);
    (idle, size.saturating_sub(idle))
}

/// The read API, nested at `/api/v1`: REST, the GraphQL endpoint, the OpenAPI document and MCP.
/// Layers, outermost first: CORS and the caching headers; the gate (who asks, within which
/// budget); every error in the contract's JSON shape; one retry of a request a store fault
/// cut; the body limit.
///
/// The layers wrap the API's router once, as one service nested at `/api/v1`, rather than each
/// of its routes (`Router::layer`): a route clones the service it wraps on every request, so
/// layers on each route would be cloned, CORS's lists of headers included, for every answer.
/// A path under `/api/v1` no route matches is therefore answered inside the layers too, as the
/// API's JSON 404.
fn api(
    state: AppState,
) -> impl tower::Service<
    axum::extract::Request,
    Response = axum::response::Response,
    Error = std::convert::Infallible,
    Future: Send + 'static,
> + Clone
+ Send
+ Sync
+ 'static {
    let routes = Router::new()
        .route("/", get(rest::index::index))
        .route("/datasets", get(rest::datasets::list_datasets))
        .route(
            "/datasets/{slug}",
            get(rest::datasets::get_dataset)
                .put(rest::publish::put_dataset)
                .delete(rest::publish::delete_dataset),
        )
        .route(
            "/datasets/{slug}/schema.json",
            get(rest::datasets::get_schema_file).put(rest::publish::put_schema_file),
        )
        .route("/datasets/{slug}/records", get(rest::records::list_records))
        .route(
            "/datasets/{slug}/records/{id}",
            get(rest::records::get_record),
        )
        .route("/datasets/{slug}/export", get(rest::export::export_records))
        .route("/datasets/{slug}/agg", get(rest::agg::aggregate))
        .route(
            "/datasets/{slug}/versions",
            get(rest::versions::list_versions),
        )
        .route(
            "/datasets/{slug}/changes",
            get(rest::versions::list_changes),
        )
        .route("/jobs/{id}", get(rest::jobs::get_job))
        .route("/token", get(crate::auth::http::tokens::describe))
        .route("/graphql", get(graphql::endpoint).post(graphql::endpoint))
        .route(
            "/openapi.json",
            get(|State(state): State<AppState>| openapi::openapi_json(state, ApiPaths::openapi())),
        )
        .nest_service(
            "/mcp",
            tower::ServiceBuilder::new()
                .layer(axum::middleware::from_fn(mcp::require_token))
                .service(mcp::service(state.clone())),
        )
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .route_layer(from_fn(crate::http::metrics::label_route))
        .with_state(state.clone());
    tower::ServiceBuilder::new()
        .layer(cors())
        .layer(SetResponseHeaderLayer::appending(
            header::VARY,
            HeaderValue::from_static("Authorization"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CACHE_CONTROL,
            HeaderValue::from_static("private"),
        ))
        .layer(from_fn_with_state(state, gate::gate))
        .layer(from_fn(resilience::json_errors))
        .layer(from_fn(resilience::retry_store_faults))
        .layer(DefaultBodyLimit::max(resilience::MAX_BODY_BYTES))
        .service(routes)
}

/// The operations of the OpenAPI document, in its order, and the answers REST documents
/// beside its handlers.
#[derive(OpenApi)]
#[openapi(
    components(responses(rest::responses::ExportAnswer, rest::responses::NotModified)),
    paths(
        rest::datasets::list_datasets,
        rest::datasets::get_dataset,
        rest::datasets::get_schema_file,
        rest::records::list_records,
        rest::records::get_record,
        rest::export::export_records,
        rest::agg::aggregate,
        rest::versions::list_versions,
        rest::versions::list_changes,
        rest::publish::put_schema_file,
        rest::publish::put_dataset,
        rest::publish::delete_dataset,
        rest::jobs::get_job,
        rest::index::index,
        openapi::graphql::graphql_get,
        openapi::graphql::graphql_post,
        crate::auth::http::device::start,
        crate::auth::http::device::token,
        crate::auth::http::tokens::revoke,
        crate::auth::http::tokens::describe,
        healthz,
        readyz,
    )
)]
pub struct ApiPaths;

/// Contract §11: any origin may call the API with a bearer token; no cookies are involved.
pub fn cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::OPTIONS,
        ])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::IF_NONE_MATCH,
            header::IF_MATCH,
            header::CONTENT_ENCODING,
        ])
        .expose_headers([
            header::ETAG,
            HeaderName::from_static("retry-after"),
            RATELIMIT_POLICY.clone(),
            RATELIMIT.clone(),
            rest::export::X_TOTAL_COUNT.clone(),
            header::CONTENT_DISPOSITION,
            header::LINK,
            crate::http::caching::DATASET_VERSION.clone(),
            rest::versions::X_ADDED.clone(),
            rest::versions::X_REMOVED.clone(),
            rest::versions::X_CHANGED.clone(),
        ])
        .max_age(std::time::Duration::from_secs(3600))
}

/// `/healthz` and `/readyz`.
#[derive(Serialize, ToSchema)]
pub struct Health {
    /// `ok` (alive) or `ready` (the store answers).
    pub status: String,
    /// `/readyz` with read replicas configured (`ODQS_READ_DATABASE_URL`): each one's standing,
    /// in the order listed: `up` (reads of the versions it has replayed go to it), `down`
    /// (the primary answers its reads), `refused` (not a replica of the store's database,
    /// never read) or `unknown` (not checked yet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<Vec<String>>,
    /// `/readyz`: the datasets the store answers because their in-memory index would be
    /// beyond this instance's memory budget (`ODQS_INDEX_MEMORY_MB`), as the last index
    /// refresh found them; left out when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beyond_memory_budget: Option<Vec<BeyondMemoryBudget>>,
}

/// A dataset answered by the store because its index would be beyond the memory budget.
#[derive(Serialize, ToSchema)]
pub struct BeyondMemoryBudget {
    pub dataset: String,
    /// The index's estimated size, MiB: a budget this large would hold it.
    pub index_mib: u64,
    /// The budget in force, MiB.
    pub budget_mib: u64,
}

/// Process alive.
#[utoipa::path(get, path = "/healthz", tag = "operations", operation_id = "healthz",
    responses((status = 200, description = "The process is alive", body = Health)),
    security(())
)]
pub(crate) async fn healthz() -> impl IntoResponse {
    Json(json!({"status": "ok"}))
}

/// Store reachable, the catalog search's index loaded (waited for when it is not: a search
/// would wait for it), and not shutting down (a load balancer stops sending new requests).
#[utoipa::path(get, path = "/readyz", tag = "operations", operation_id = "readyz",
    responses(
        (status = 200, description = "The store answers", body = Health),
        (status = 503, description = "`unavailable`: the store cannot be reached, the catalog search's index cannot be loaded, or the process is shutting down", body = ErrorBody),
    ),
    security(())
)]
pub(crate) async fn readyz(State(state): State<AppState>) -> axum::response::Response {
    if state.draining.load(Ordering::SeqCst) {
        return HttpError(ApiError::Unavailable).into_response();
    }
    if !state.resolver.catalog_loaded() && state.resolver.refresh_catalog().await.is_err() {
        return HttpError(ApiError::Unavailable).into_response();
    }
    if state.store.ping().await {
        let replicas = state.resolver.replicas();
        // Which store answers reads: each replica's standing, by its place in
        // ODQS_READ_DATABASE_URL (not its address, which is not the public's to know).
        let replicas = replicas.any().then(|| {
            replicas
                .health()
                .iter()
                .map(|h| h.word().to_string())
                .collect()
        });
        let beyond: Vec<BeyondMemoryBudget> = state
            .resolver
            .beyond_budget()
            .into_iter()
            .map(|b| BeyondMemoryBudget {
                index_mib: b.budget_mib_needed(),
                budget_mib: b.budget_bytes >> 20,
                dataset: b.slug,
            })
            .collect();
        Json(Health {
            status: "ready".into(),
            replicas,
            beyond_memory_budget: (!beyond.is_empty()).then_some(beyond),
        })
        .into_response()
    } else {
        HttpError(ApiError::Unavailable).into_response()
    }
}

/// `GET /assets/{version}/{name}`: a file of a vendored front end (GraphiQL for the IDE, Redoc
/// for `/docs`), cached for a year: the version is in the path.
async fn vendored_asset(Path((version, name)): Path<(String, String)>) -> axum::response::Response {
    let bundles = [
        &crate::site::ide::GRAPHIQL,
        &openapi::docs::REDOC,
        &crate::site::explore::LEAFLET,
    ];
    let found = bundles.iter().find_map(|b| b.file(&version, &name));
    match found {
        Some((media, bytes)) => (
            [
                (header::CONTENT_TYPE, media),
                (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
            ],
            bytes,
        )
            .into_response(),
        None => HttpError(ApiError::NotFound).into_response(),
    }
}

/// `GET /assets/{version}/images/{name}`: a vendored stylesheet's image (Leaflet's).
async fn vendored_image(Path((version, name)): Path<(String, String)>) -> axum::response::Response {
    vendored_asset(Path((version, format!("images/{name}")))).await
}

async fn not_found() -> HttpError {
    HttpError(ApiError::NotFound)
}

async fn method_not_allowed() -> HttpError {
    HttpError(ApiError::MethodNotAllowed)
}
