//! The HTTP application: shared state, the router with its layers, and serving with a graceful
//! shutdown. Tests build the same router and drive it in-process or on a bound socket.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::{ConnectInfo, State};
use axum::http::Request;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::serve::IncomingStream;
use axum::{Json, Router};
use serde_json::json;
use tokio::net::TcpListener;
use tower_http::add_extension::AddExtension;
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::Level;

use graphql::query::Resolver;
use graphql::query::memory::IndexPolicy;
use graphql::schema::OdqsSchema;

use crate::auth::bearer::TokenUsage;
use crate::auth::rate_limit::RateLimiter;
use crate::config::DEFAULT_API_RATE_LIMIT;
use crate::error::{ApiError, HttpError};
use crate::request_line::RawQueryListener;
use crate::rest;
use crate::store::{Store, gc};

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    /// `{site_url}`, without a trailing slash.
    pub public_url: Arc<str>,
    /// The query layer REST and GraphQL call into.
    pub resolver: Arc<Resolver>,
    /// The GraphQL schema over the same resolver.
    pub graphql: OdqsSchema,
    /// Throttles the "last used" writes of API tokens.
    pub token_usage: Arc<TokenUsage>,
    /// Request budgets per API token.
    pub rate_limiter: Arc<RateLimiter>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The GraphQL schema has no `Debug` of its own.
        f.debug_struct("AppState")
            .field("store", &self.store)
            .field("public_url", &self.public_url)
            .field("resolver", &self.resolver)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// The state for serving `store` at `public_url` (`{site_url}`).
    pub fn new(store: Store, public_url: &str) -> Self {
        let public_url: Arc<str> = public_url.trim_end_matches('/').into();
        let resolver = Arc::new(Resolver::new(store.db.clone(), &public_url));
        AppState {
            graphql: graphql::schema::build(resolver.clone()),
            resolver,
            store,
            public_url,
            token_usage: Arc::default(),
            rate_limiter: Arc::new(RateLimiter::new(DEFAULT_API_RATE_LIMIT)),
        }
    }

    /// The same state with in-memory query indexes under `policy` (the default: background
    /// builds within [`graphql::query::memory::DEFAULT_BUDGET_BYTES`]).
    pub fn with_index_policy(mut self, policy: IndexPolicy) -> Self {
        let resolver = Resolver::new(self.store.db.clone(), &self.public_url);
        self.resolver = Arc::new(resolver.with_index_policy(policy));
        self.graphql = graphql::schema::build(self.resolver.clone());
        self
    }

    /// The same state with `per_minute` API requests a minute per token (0: no limit).
    pub fn with_api_rate_limit(mut self, per_minute: u32) -> Self {
        self.rate_limiter = Arc::new(RateLimiter::new(per_minute));
        self
    }
}

/// The whole HTTP surface.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .merge(crate::site::routes())
        .merge(crate::auth::device::routes())
        .route("/docs", get(rest::openapi::docs_page))
        .nest("/api/v1", rest::routes())
        .fallback(not_found)
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request<_>| {
                    tracing::info_span!(
                        "request",
                        method = %request.method(),
                        path = %request.uri().path(),
                    )
                })
                // One event per request, with status and latency, at the default log level.
                .on_response(DefaultOnResponse::new().level(Level::INFO)),
        )
        .with_state(state)
}

/// Process alive.
async fn healthz() -> impl IntoResponse {
    Json(json!({"status": "ok"}))
}

/// Store reachable.
async fn readyz(State(state): State<AppState>) -> axum::response::Response {
    if state.store.ping().await {
        Json(json!({"status": "ready"})).into_response()
    } else {
        HttpError(ApiError::Unavailable).into_response()
    }
}

async fn not_found() -> HttpError {
    HttpError(ApiError::NotFound)
}

/// Serves `state` on `listener` until `shutdown` resolves, then lets in-flight requests finish.
/// Retired dataset versions are dropped in the background meanwhile.
pub async fn serve(
    state: AppState,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let store = state.store.clone();
    let resolver = state.resolver.clone();
    let collector = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(30));
        loop {
            // The first tick is immediate: indexes start building as serving begins.
            tick.tick().await;
            if let Err(e) = resolver.refresh_indexes().await {
                tracing::warn!(error = %e.message(), "in-memory index refresh failed");
            }
            match gc::collect(&store, gc::RETIRED_GRACE).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(versions = n, "dropped retired dataset versions"),
                Err(e) => tracing::warn!(error = %e, "garbage collection failed"),
            }
        }
    });
    // Raw `<`/`>` in queries (`sort=name<`) reach the router (contract §5).
    let listener = RawQueryListener::new(listener);
    let result = axum::serve(listener, WithPeerAddr(router(state)))
        .with_graceful_shutdown(shutdown)
        .await;
    collector.abort();
    result
}

/// Hands each connection the router with the peer's address as `ConnectInfo<SocketAddr>`, so
/// the site can throttle per client address. (axum's own `into_make_service_with_connect_info`
/// only knows its plain `TcpListener`, not the [`RawQueryListener`] around it.)
#[derive(Clone)]
struct WithPeerAddr(Router);

impl<'a> tower::Service<IncomingStream<'a, RawQueryListener>> for WithPeerAddr {
    type Response = AddExtension<Router, ConnectInfo<SocketAddr>>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, incoming: IncomingStream<'a, RawQueryListener>) -> Self::Future {
        let peer = ConnectInfo(*incoming.remote_addr());
        std::future::ready(Ok(AddExtension::new(self.0.clone(), peer)))
    }
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed when this is called, not when
/// the future is first polled, so a signal that arrives right after start-up is not lost (and
/// does not kill the process without draining).
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate()).ok();
        let mut interrupt = signal(SignalKind::interrupt()).ok();
        async move {
            let terminate = async {
                match terminate.as_mut() {
                    Some(s) => drop(s.recv().await),
                    None => std::future::pending().await,
                }
            };
            let interrupt = async {
                match interrupt.as_mut() {
                    Some(s) => drop(s.recv().await),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = terminate => {},
                () = interrupt => {},
            }
            tracing::info!("shutting down: finishing in-flight requests");
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down: finishing in-flight requests");
    }
}
