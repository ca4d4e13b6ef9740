//! What an operator watches: `/metrics` on its own router (the operator's port), counting
//! requests by route and status as the access log sees them, and reading index memory, what
//! answered reads and the store pools from the state; `X-Request-Id` on every answer, kept
//! from a trusted proxy only.

use axum::http::Method;
use query::memory::{DEFAULT_BUDGET_BYTES, IndexPolicy};

use crate::helpers::client::{exchange, request};
use crate::helpers::*;

const DATA: &str = "id,city,people\n1,Taipei,2.6\n2,Tainan,1.8\n3,Taipei,0.4\n";

async fn get(
    router: &axum::Router,
    path: &str,
    token: &str,
) -> (u16, axum::http::HeaderMap, String) {
    let (status, headers, body) =
        exchange(router, request(Method::GET, path, Some(token), &[], None)).await;
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

/// The value of the series `name` (with its labels, as written) in a scrape.
fn series(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

async fn metrics_count_requests_and_read_the_state(store: TestStore) {
    let path = write_file(&store, "cities.csv", DATA.as_bytes());
    import_file(&store, &path, "cities", None, Some("id"))
        .await
        .unwrap();
    let token = api_token(&store).await;
    let state = store.state_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES));
    let router = odqs::app::router(state.clone());
    let metrics = odqs::routes::metrics_router(state.clone());

    let records = "/api/v1/datasets/cities/records?city=Taipei";
    let (status, first, _) = get(&router, records, &token).await;
    assert_eq!(status, 200);
    let (_, second, _) = get(&router, records, &token).await;
    assert_eq!(
        get(&router, "/api/v1/datasets/cities/records?nope=1", &token)
            .await
            .0,
        400
    );
    assert_eq!(get(&router, "/no/such/page", &token).await.0, 404);
    assert_eq!(get(&router, "/api/v1/no/such/thing", &token).await.0, 404);

    // Every answer has an id of its own.
    let id =
        |headers: &axum::http::HeaderMap| headers["x-request-id"].to_str().unwrap().to_string();
    assert!(!id(&first).is_empty());
    assert_ne!(id(&first), id(&second));

    let (status, headers, text) = get(&metrics, "/metrics", "").await;
    assert_eq!(status, 200, "{text}");
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text"),
        "{headers:?}"
    );
    let route = "/api/v1/datasets/{slug}/records";
    assert_eq!(
        series(
            &text,
            &format!("odqs_http_requests_total{{route=\"{route}\",status=\"200\"}}")
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        series(
            &text,
            &format!("odqs_http_requests_total{{route=\"{route}\",status=\"400\"}}")
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        series(
            &text,
            "odqs_http_requests_total{route=\"unmatched\",status=\"404\"}"
        ),
        Some(2.0),
        "made-up paths share one series: {text}"
    );
    assert_eq!(
        series(
            &text,
            &format!("odqs_http_request_duration_seconds_count{{route=\"{route}\"}}")
        ),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        series(&text, "odqs_http_requests_in_flight"),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        series(&text, "odqs_index_bytes{dataset=\"cities\"}"),
        Some(state.resolver.index_bytes() as f64),
        "{text}"
    );
    assert!(
        series(&text, "odqs_index_build_seconds{dataset=\"cities\"}").is_some(),
        "{text}"
    );
    assert!(
        series(&text, "odqs_reads_answered_total{store=\"index\"}").unwrap() >= 2.0,
        "{text}"
    );
    assert!(
        series(
            &text,
            "odqs_store_connections{store=\"primary\",state=\"idle\"}"
        )
        .is_some(),
        "{text}"
    );
    // On PostgreSQL the page's bodies were read on a session kept out of the pool.
    let kept = if store.pg_database().is_some() {
        1.0
    } else {
        0.0
    };
    assert_eq!(
        series(
            &text,
            "odqs_store_connections{store=\"primary\",state=\"kept\"}"
        ),
        Some(kept),
        "{text}"
    );
    assert_eq!(series(&text, "odqs_read_replicas_up"), Some(0.0), "{text}");
    assert!(text.ends_with("# EOF\n"), "{text}");

    // The operator's router answers /metrics only; the public one does not answer it.
    assert_eq!(get(&metrics, records, &token).await.0, 404);
    assert_eq!(get(&router, "/metrics", &token).await.0, 404);
}

both_stores!(metrics_count_requests_and_read_the_state);

/// On a real socket: an id sent by a trusted proxy is kept; from anyone else, replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_ids_are_kept_from_trusted_proxies_only() {
    let store = TestStore::new(Kind::Sqlite).await;
    for (trusted, kept) in [("127.0.0.1", true), ("10.0.0.0/8", false)] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let site = format!("http://{}", listener.local_addr().unwrap());
        let state = odqs::state::AppState::new(store.store.clone(), &site)
            .with_trusted_proxies(odqs::http::client_addr::TrustedProxies::parse(trusted).unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(odqs::app::serve(state, listener, async {
            let _ = stopped.await;
        }));
        let answer = reqwest::Client::new()
            .get(format!("{site}/healthz"))
            .header("x-request-id", "lb-7f3a-1")
            .send()
            .await
            .unwrap();
        let id = answer.headers()["x-request-id"].to_str().unwrap();
        assert_eq!(id == "lb-7f3a-1", kept, "trusted {trusted}: {id}");
        let _ = stop.send(());
    }
}
