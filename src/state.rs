//! The application's state: what every handler, middleware and front end reaches through
//! axum's `State`. A leaf of `src/`: it holds the store, the resolver and the GraphQL schema
//! over it, the guides, auth's budgets and caches and the connection limits, and imports no
//! front end, router or handler, so every floor above can take it without an import circle.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use graphql::OdqsSchema;
use query::Resolver;
use query::memory::IndexPolicy;
use sea_orm::DatabaseConnection;

use crate::auth::export_slots::ExportSlots;
use crate::auth::password::Hashing;
use crate::auth::rate_limit::{DEFAULT_ADDRESS_RATE_LIMIT, DEFAULT_API_RATE_LIMIT, RateLimits};
use crate::auth::throttle::Throttles;
use crate::auth::token::TokenCache;
use crate::auth::token::TokenUsage;
use crate::guides::Guides;
use crate::http::client_addr::TrustedProxies;
use crate::http::metrics::Metrics;
use crate::http::request_id::RequestIds;
use crate::http::server::ConnLimits;
use crate::store::Store;

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
    /// `catalog.md` and each dataset's `skill.md`, written from the same resolver and kept per
    /// dataset version.
    pub guides: Arc<Guides>,
    /// Throttles the "last used" writes of API tokens.
    pub token_usage: Arc<TokenUsage>,
    /// Request budgets per API token and per client address.
    pub rate_limits: Arc<RateLimits>,
    /// Tokens confirmed lately, so a known token costs no store query.
    pub token_cache: Arc<TokenCache>,
    /// Timeouts and caps of connections ([`crate::app::serve`]).
    pub conn_limits: ConnLimits,
    /// Set when shutdown begins: `/readyz` answers 503 from then on.
    pub draining: Arc<AtomicBool>,
    /// Whose `X-Forwarded-For` is believed ([`crate::http::client_addr`]).
    pub trusted_proxies: Arc<TrustedProxies>,
    /// Exports running now, bounded per token, per account and in all.
    pub export_slots: Arc<ExportSlots>,
    /// The site's and the device flow's throttles, answered from memory.
    pub throttles: Arc<Throttles>,
    /// The bounded line of password hashing.
    pub hashing: Arc<Hashing>,
    /// The figures of `/metrics`, counted as requests are answered.
    pub metrics: Arc<Metrics>,
    /// The ids of `X-Request-Id`.
    pub request_ids: Arc<RequestIds>,
    /// Writes' settings, and the datasets being written (contract §14.2).
    pub publishing: Arc<crate::publish::Publishing>,
    /// The resolver's index policy and read replicas, kept to make it anew.
    index_policy: IndexPolicy,
    index_dir: Option<std::path::PathBuf>,
    replicas: Vec<(String, DatabaseConnection)>,
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
        let resolver = Arc::new(Resolver::new(
            store.db.clone(),
            &public_url,
            store.catalog.clone(),
        ));
        AppState(Arc::new(Shared {
            graphql: graphql::build(resolver.clone()),
            guides: Arc::new(Guides::new(resolver.clone(), &public_url)),
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
            metrics: Arc::default(),
            request_ids: Arc::default(),
            publishing: Arc::default(),
            index_policy: IndexPolicy::default(),
            index_dir: None,
            replicas: Vec::new(),
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
        self.shared_mut().index_policy = policy;
        self.with_new_resolver()
    }

    /// The same state keeping in-memory indexes in files in `dir` between runs
    /// (`ODQS_INDEX_DIR`); `None`: not kept.
    pub fn with_index_dir(mut self, dir: Option<std::path::PathBuf>) -> Self {
        self.shared_mut().index_dir = dir;
        self.with_new_resolver()
    }

    /// The same state reading records from `replicas` (name, connection) as well as the
    /// primary (`ODQS_READ_DATABASE_URL`).
    pub fn with_replicas(mut self, replicas: Vec<(String, DatabaseConnection)>) -> Self {
        self.shared_mut().replicas = replicas;
        self.with_new_resolver()
    }

    /// A resolver made anew under the settings of the state, with the GraphQL schema and the
    /// guides over it.
    fn with_new_resolver(mut self) -> Self {
        let resolver = Resolver::new(
            self.store.db.clone(),
            &self.public_url,
            self.store.catalog.clone(),
        )
        .with_index_dir(self.index_dir.clone())
        .with_index_policy(self.index_policy)
        .with_replicas(self.replicas.clone());
        let resolver = Arc::new(resolver);
        let shared = self.shared_mut();
        shared.graphql = graphql::build(resolver.clone());
        shared.guides = Arc::new(Guides::new(resolver.clone(), &shared.public_url));
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

    /// The same state publishing under `publishing`'s settings.
    pub fn with_publishing(mut self, publishing: crate::publish::Publishing) -> Self {
        self.shared_mut().publishing = Arc::new(publishing);
        self
    }

    /// The same state serving connections under `limits`.
    pub fn with_conn_limits(mut self, limits: ConnLimits) -> Self {
        self.shared_mut().conn_limits = limits;
        self
    }
}

/// What the client address extractor ([`crate::http::client_addr::ClientAddr`]) takes from the
/// state.
impl axum::extract::FromRef<AppState> for Arc<TrustedProxies> {
    fn from_ref(state: &AppState) -> Self {
        state.trusted_proxies.clone()
    }
}

/// What the access log takes from the state: the figures it counts.
impl axum::extract::FromRef<AppState> for Arc<Metrics> {
    fn from_ref(state: &AppState) -> Self {
        state.metrics.clone()
    }
}

/// What the access log takes from the state: the maker of request ids.
impl axum::extract::FromRef<AppState> for Arc<RequestIds> {
    fn from_ref(state: &AppState) -> Self {
        state.request_ids.clone()
    }
}
