//! The HTTP application: shared state, and serving the route table ([`crate::routes`]) with a
//! graceful shutdown. Tests build the same router and drive it in-process or on a bound socket.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::net::TcpListener;

use graphql::OdqsSchema;
use query::Resolver;
use query::memory::IndexPolicy;

use crate::auth::bearer::TokenUsage;
use crate::auth::password::Hashing;
use crate::auth::rate_limit::RateLimits;
use crate::auth::throttle::Throttles;
use crate::auth::token_cache::TokenCache;
use crate::config::{DEFAULT_ADDRESS_RATE_LIMIT, DEFAULT_API_RATE_LIMIT};
use crate::http::client_addr::TrustedProxies;
use crate::http::server::{self, ConnLimits};
use crate::store::{Store, gc};

/// What every handler can reach: one shared allocation, so the extractors that take it (the
/// gate, each handler) clone one pointer rather than every member.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The members of [`AppState`].
#[derive(Clone)]
pub struct Shared {
    pub store: Store,
    /// `{site_url}`, without a trailing slash.
    pub public_url: Arc<str>,
    /// The query layer REST and GraphQL call into.
    pub resolver: Arc<Resolver>,
    /// The GraphQL schema over the same resolver.
    pub graphql: OdqsSchema,
    /// Throttles the "last used" writes of API tokens.
    pub token_usage: Arc<TokenUsage>,
    /// Request budgets per API token and per client address.
    pub rate_limits: Arc<RateLimits>,
    /// Tokens confirmed lately, so a known token costs no store query.
    pub token_cache: Arc<TokenCache>,
    /// Timeouts and caps of connections ([`serve`]).
    pub conn_limits: ConnLimits,
    /// Set when shutdown begins: `/readyz` answers 503 from then on.
    pub draining: Arc<AtomicBool>,
    /// Whose `X-Forwarded-For` is believed ([`crate::http::client_addr`]).
    pub trusted_proxies: Arc<TrustedProxies>,
    /// Exports running now, bounded per token, per account and in all.
    pub export_slots: Arc<crate::api::rest::export::ExportSlots>,
    /// The site's and the device flow's throttles, answered from memory.
    pub throttles: Arc<Throttles>,
    /// The bounded line of password hashing.
    pub hashing: Arc<Hashing>,
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
        AppState(Arc::new(Shared {
            graphql: graphql::build(resolver.clone()),
            resolver,
            store: store.clone(),
            public_url,
            token_usage: Arc::default(),
            rate_limits: Arc::new(RateLimits::new(
                DEFAULT_API_RATE_LIMIT,
                DEFAULT_ADDRESS_RATE_LIMIT,
            )),
            token_cache: Arc::default(),
            conn_limits: ConnLimits::default(),
            draining: Arc::default(),
            trusted_proxies: Arc::default(),
            export_slots: Arc::default(),
            throttles: Arc::new(Throttles::new(store)),
            hashing: Arc::new(Hashing::sized_to_machine()),
        }))
    }

    /// The members, to change while the state is being set up.
    fn shared_mut(&mut self) -> &mut Shared {
        Arc::make_mut(&mut self.0)
    }

    /// The same state believing `X-Forwarded-For` from `proxies` (`ODQS_TRUSTED_PROXIES`).
    pub fn with_trusted_proxies(mut self, proxies: TrustedProxies) -> Self {
        self.shared_mut().trusted_proxies = Arc::new(proxies);
        self
    }

    /// The same state with in-memory query indexes under `policy` (the default: background
    /// builds within [`query::memory::DEFAULT_BUDGET_BYTES`]).
    pub fn with_index_policy(mut self, policy: IndexPolicy) -> Self {
        let resolver = Resolver::new(self.store.db.clone(), &self.public_url);
        let resolver = Arc::new(resolver.with_index_policy(policy));
        let shared = self.shared_mut();
        shared.graphql = graphql::build(resolver.clone());
        shared.resolver = resolver;
        self
    }

    /// The same state with `per_minute` API requests a minute per token (0: no limit).
    pub fn with_api_rate_limit(self, per_minute: u32) -> Self {
        let per_address = self.rate_limits.addresses.per_minute();
        self.with_rate_limits(per_minute, per_address)
    }

    /// The same state with `per_token` API requests a minute per token and `per_address` per
    /// client address for requests without a known token (0: no limit).
    pub fn with_rate_limits(mut self, per_token: u32, per_address: u32) -> Self {
        self.shared_mut().rate_limits = Arc::new(RateLimits::new(per_token, per_address));
        self
    }

    /// The same state hashing passwords through `hashing` (tests: a full or closed line).
    pub fn with_hashing(mut self, hashing: Hashing) -> Self {
        self.shared_mut().hashing = Arc::new(hashing);
        self
    }

    /// The same state serving connections under `limits`.
    pub fn with_conn_limits(mut self, limits: ConnLimits) -> Self {
        self.shared_mut().conn_limits = limits;
        self
    }
}

pub use crate::routes::router;

/// Serves `state` on `listener` until `shutdown` resolves, then lets in-flight requests finish
/// within the drain deadline ([`server`] owns connections). Maintenance runs in the background
/// meanwhile: index refreshes, dropping retired dataset versions, forgetting idle rate-limit
/// keys and stale cached tokens.
pub async fn serve(
    state: AppState,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let maintenance = tokio::spawn(maintain(state.clone()));
    let draining = state.draining.clone();
    let shutdown = async move {
        shutdown.await;
        draining.store(true, Ordering::SeqCst);
    };
    let limits = state.conn_limits.fitted_to_fd_limit();
    let result = server::run(listener, router(state), limits, shutdown).await;
    maintenance.abort();
    result
}

/// The maintenance tick.
async fn maintain(state: AppState) {
    let mut tick = tokio::time::interval(MAINTENANCE_EVERY);
    loop {
        // The first tick is immediate: indexes start building as serving begins.
        tick.tick().await;
        if let Err(e) = state.resolver.refresh_indexes().await {
            tracing::warn!(error = %e.message(), "in-memory index refresh failed");
        }
        match gc::collect(&state.store, gc::RETIRED_GRACE).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(versions = n, "dropped retired dataset versions"),
            Err(e) => tracing::warn!(error = %e, "garbage collection failed"),
        }
        crate::auth::purge::on_tick(&state.store).await;
        state.rate_limits.forget_idle();
        state.throttles.forget_idle();
        state.token_cache.forget_stale();
        let refused = crate::http::access_log::take_refused();
        if refused > 0 {
            tracing::info!(
                refused,
                seconds = MAINTENANCE_EVERY.as_secs(),
                "requests refused with 429 since the last tick"
            );
        }
    }
}

/// How often [`maintain`] runs.
const MAINTENANCE_EVERY: Duration = Duration::from_secs(30);

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
