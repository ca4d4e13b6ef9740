//! Serving the application: the accept loop under a graceful shutdown, and the maintenance
//! tick that runs beside it (index refreshes, dropping retired dataset versions, forgetting idle
//! budgets and stale cached tokens). Tests serve the same way on a bound socket.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::net::TcpListener;

use crate::http::server;
pub use crate::routes::router;
use crate::state::AppState;
use crate::store::gc;

/// Serves `state` on `listener` until `shutdown` resolves, then lets in-flight requests finish
/// within the drain deadline ([`server`] owns connections). Maintenance runs in the background
/// meanwhile: the catalog search's index kept fresh, index refreshes, dropping retired dataset
/// versions, forgetting idle rate-limit keys and stale cached tokens.
pub async fn serve(
    state: AppState,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let maintenance = tokio::spawn(maintain(state.clone()));
    let replicas = tokio::spawn(check_replicas(state.clone()));
    let catalog = tokio::spawn(keep_catalog(state.clone()));
    let draining = state.draining.clone();
    let shutdown = async move {
        shutdown.await;
        draining.store(true, Ordering::SeqCst);
    };
    let limits = state.conn_limits.fitted_to_fd_limit();
    let result = server::run(listener, router(state), limits, shutdown).await;
    maintenance.abort();
    replicas.abort();
    catalog.abort();
    result
}

/// Loads the catalog search's index as serving begins, then keeps it checked every
/// [`CATALOG_EVERY`], so that searches seldom wait for the store.
async fn keep_catalog(state: AppState) {
    let mut tick = tokio::time::interval(CATALOG_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = state.resolver.refresh_catalog().await {
            tracing::warn!(error = %e.message(), "catalog index refresh failed");
        }
    }
}

/// How often [`keep_catalog`] checks the catalog (one small statement when nothing changed).
const CATALOG_EVERY: Duration = Duration::from_secs(5);

/// Serves the operator's port (`ODQS_METRICS_LISTEN`): `/metrics` only, for a scraper on a
/// private network, so neither the public server's limits nor its layers apply.
pub async fn serve_metrics(state: AppState, listener: TcpListener) {
    if let Err(error) = axum::serve(listener, crate::routes::metrics_router(state)).await {
        tracing::warn!(%error, "the metrics port stopped");
    }
}

/// Checks the read replicas every [`REPLICAS_EVERY`]: whether each answers, is a replica of
/// the store's database, and how far it has replayed (`query::replicas`).
async fn check_replicas(state: AppState) {
    let replicas = state.resolver.replicas().clone();
    if !replicas.any() {
        return;
    }
    let mut tick = tokio::time::interval(REPLICAS_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        replicas.check().await;
    }
}

/// How often [`check_replicas`] runs; a replica not checked for
/// `query::replicas::STALE_AFTER` is not read.
const REPLICAS_EVERY: Duration = Duration::from_secs(1);

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
