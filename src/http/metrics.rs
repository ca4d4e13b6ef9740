//! What an operator watches: the figures `GET /metrics` gives in the OpenMetrics text format
//! that Prometheus scrapes, served on a listener of its own (`ODQS_METRICS_LISTEN`), never on
//! the public API's port. Written with `prometheus-client`, not by hand.
//!
//! Counted as requests are answered (by the access log, [`crate::http::access_log`]): requests
//! by route and status, their latency by route, requests in flight, refusals by a rate limit.
//! Read from the state when scraped: each dataset's index memory and build time, which store
//! answered reads (the index, a replica, the primary), the store pools' connections, and each
//! replica's standing.

use std::sync::atomic::AtomicU64;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The content type of the answer (the OpenMetrics text format, which Prometheus reads).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A route's label: the path pattern it was matched by (`/api/v1/datasets/{slug}/records`),
/// never the path as asked, so the number of series stays bounded.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    pub route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub route: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DatasetLabels {
    pub dataset: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StoreLabels {
    pub store: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PoolLabels {
    pub store: String,
    pub state: String,
}

/// The label of requests no route matched (404s of made-up paths).
pub const UNMATCHED: &str = "unmatched";

/// The route a nested router matched, put on its answer by [`label_route`] for the access log
/// (which runs outside the nesting, where only the nest's own pattern is known).
#[derive(Clone, Debug)]
pub struct MatchedRoute(pub MatchedPath);

/// Marks an answer with the route that matched its request (install with `route_layer` on a
/// nested router).
pub async fn label_route(request: Request, next: Next) -> Response {
    // A clone of the matched path shares its text: nothing is copied per request.
    let route = request.extensions().get::<MatchedPath>().cloned();
    let mut response = next.run(request).await;
    if let Some(route) = route {
        response.extensions_mut().insert(MatchedRoute(route));
    }
    response
}

/// The instruments of one serving state.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    pub requests: Family<RequestLabels, Counter>,
    pub latency: Family<RouteLabels, Histogram>,
    pub in_flight: Gauge,
    pub rate_limited: Counter,
    index_bytes: Family<DatasetLabels, Gauge>,
    index_build_seconds: Family<DatasetLabels, Gauge<f64, AtomicU64>>,
    index_loaded: Family<DatasetLabels, Gauge>,
    reads: Family<StoreLabels, Counter>,
    pool: Family<PoolLabels, Gauge>,
    replicas_up: Gauge,
}

/// Latency buckets: 0.1 ms to about 3.3 s, doubling.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 16))
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("odqs");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "Requests answered, by route and status",
            requests.clone(),
        );
        let latency = Family::<RouteLabels, Histogram>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        registry.register(
            "http_request_duration_seconds",
            "Time from the request's head read to its answer's head, by route",
            latency.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "http_requests_in_flight",
            "Requests being answered",
            in_flight.clone(),
        );
        let rate_limited = Counter::default();
        registry.register(
            "rate_limited",
            "Requests refused by a rate limit (429)",
            rate_limited.clone(),
        );
        let index_bytes = Family::<DatasetLabels, Gauge>::default();
        registry.register(
            "index_bytes",
            "Memory held by the dataset's in-memory index",
            index_bytes.clone(),
        );
        let index_build_seconds = Family::<DatasetLabels, Gauge<f64, AtomicU64>>::default();
        registry.register(
            "index_build_seconds",
            "How long the dataset's in-memory index took to be ready: built from the store, or loaded from its file",
            index_build_seconds.clone(),
        );
        let index_loaded = Family::<DatasetLabels, Gauge>::default();
        registry.register(
            "index_loaded",
            "1 when the dataset's in-memory index was loaded from its file (ODQS_INDEX_DIR), 0 when built from the store",
            index_loaded.clone(),
        );
        let reads = Family::<StoreLabels, Counter>::default();
        registry.register(
            "reads_answered",
            "Reads answered since start, by what answered them: the in-memory index, a read replica or the primary",
            reads.clone(),
        );
        let pool = Family::<PoolLabels, Gauge>::default();
        registry.register(
            "store_connections",
            "Connections to the store, by store and state (idle or in use in its pool, kept out of it for body reads)",
            pool.clone(),
        );
        let replicas_up = Gauge::default();
        registry.register(
            "read_replicas_up",
            "Read replicas that answer reads now",
            replicas_up.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
            in_flight,
            rate_limited,
            index_bytes,
            index_build_seconds,
            index_loaded,
            reads,
            pool,
            replicas_up,
        }
    }
}

/// What is read from the state when the figures are scraped.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Per dataset: index bytes, seconds to be ready, whether loaded from its file.
    pub indexes: Vec<query::memory::Held>,
    /// Reads answered by the index, replicas, the primary.
    pub reads: [(&'static str, u64); 3],
    /// Per store (`primary`, `replica1`…): connections idle and in use in its pool, and
    /// sessions kept out of it for body reads.
    pub pools: Vec<(String, [u32; 3])>,
    pub replicas_up: u64,
}

impl Metrics {
    /// Counts an answered request.
    pub fn answered(&self, route: &str, status: u16, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels {
                route: route.to_string(),
                status,
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels {
                route: route.to_string(),
            })
            .observe(seconds);
    }

    /// The text of `GET /metrics`, with the figures of `now`.
    pub fn encode(&self, now: Snapshot) -> String {
        self.index_bytes.clear();
        self.index_build_seconds.clear();
        self.index_loaded.clear();
        for held in now.indexes {
            let labels = DatasetLabels { dataset: held.slug };
            self.index_bytes
                .get_or_create(&labels)
                .set(i64::try_from(held.bytes).unwrap_or(i64::MAX));
            self.index_build_seconds
                .get_or_create(&labels)
                .set(held.seconds);
            self.index_loaded
                .get_or_create(&labels)
                .set(i64::from(held.loaded));
        }
        for (store, n) in now.reads {
            // The counts are kept where the reads happen; the counter follows them.
            let counter = self.reads.get_or_create(&StoreLabels {
                store: store.into(),
            });
            counter.inc_by(n.saturating_sub(counter.get()));
        }
        self.pool.clear();
        for (store, [idle, in_use, kept]) in now.pools {
            for (state, n) in [("idle", idle), ("in_use", in_use), ("kept", kept)] {
                self.pool
                    .get_or_create(&PoolLabels {
                        store: store.clone(),
                        state: state.into(),
                    })
                    .set(i64::from(n));
            }
        }
        self.replicas_up
            .set(i64::try_from(now.replicas_up).unwrap_or(i64::MAX));
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}
