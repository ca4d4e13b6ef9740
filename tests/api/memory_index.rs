//! The in-memory indexes: built per live version within the memory budget, replaced after a
//! re-import, dropped with their dataset, and never changing an answer (the store path gives
//! the same one). The answers themselves are checked against a model in `property.rs` and
//! across stores and paths in `parity.rs`.

use std::time::{Duration, Instant};

use crate::helpers::{TestStore, api_token, get_with, import_file, write_file};
use query::memory::{DEFAULT_BUDGET_BYTES, IndexPolicy};
use serde_json::{Value, json};

const SCHEMA: &str = r#"{
  "title": "Cities", "id_field": "id",
  "fields": [
    {"name": "id", "type": "keyword"},
    {"name": "city", "type": "keyword"},
    {"name": "people", "type": "number"},
    {"name": "about", "type": "text"}
  ]
}"#;

/// `n` cities, every third without a population.
fn cities(n: usize, names: &[&str]) -> String {
    (0..n)
        .map(|i| {
            let mut record = json!({
                "id": format!("c{i:04}"),
                "city": names[i % names.len()],
                "about": format!("city number {i} of {}", names[i % names.len()]),
            });
            if i % 3 != 0 {
                record["people"] = json!((i * 37 % 101) as f64 / 4.0);
            }
            record.to_string() + "\n"
        })
        .collect()
}

async fn import(store: &TestStore, data: &str) {
    let path = write_file(store, "cities.ndjson", data.as_bytes());
    import_file(store, &path, "cities", Some(SCHEMA), None)
        .await
        .expect("import");
}

/// Requests whose answers must not depend on the path.
const PATHS: &[&str] = &[
    "/api/v1/datasets/cities/records?sort=people%3C,city&per_page=7&page=3",
    "/api/v1/datasets/cities/records?city=Taipei&q=number",
    "/api/v1/datasets/cities/agg?group_by=city&field=people",
];

async fn answers(router: &axum::Router, token: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for path in PATHS {
        let answer = get_with(router, path, Some(token), &[]).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
        out.push(answer.body);
    }
    out
}

async fn indexes_follow_versions_within_the_budget(store: TestStore) {
    import(&store, &cities(300, &["Taipei", "Tainan", "Keelung"])).await;
    let token = api_token(&store).await;
    let state = store.state_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES));
    let router = odqs::app::router(state.clone());
    let store_router = store.router_with(IndexPolicy::OFF);

    assert_eq!(
        state.resolver.index_bytes(),
        0,
        "nothing is built before a request"
    );
    let first = answers(&router, &token).await;
    let built = state.resolver.index_bytes();
    assert!(
        built > 300 * 8,
        "an index of 300 rows takes more than {built} bytes"
    );
    assert_eq!(first, answers(&store_router, &token).await);
    assert_eq!(first[1]["total"], 100);

    // A re-import: the next request is answered from the new version, by a new index that
    // replaces the old one.
    import(&store, &cities(900, &["Taipei", "Hualien"])).await;
    let second = answers(&router, &token).await;
    assert_eq!(second[1]["total"], 450);
    assert_eq!(second, answers(&store_router, &token).await);
    let rebuilt = state.resolver.index_bytes();
    assert!(
        rebuilt > built,
        "{rebuilt} bytes for 900 rows, {built} for 300"
    );

    // A budget too small for the dataset: the store answers, nothing is kept.
    let small = store.state_with(IndexPolicy::waiting(1024));
    let small_router = odqs::app::router(small.clone());
    assert_eq!(second, answers(&small_router, &token).await);
    assert_eq!(small.resolver.index_bytes(), 0);
    // The metadata says why, and what budget would hold it; `/readyz` once a refresh has
    // noted it (the estimate of 900 rows: about 30 KB, so 1 MiB; the budget: 1 KiB, so 0 MiB).
    let why = json!({"answered_by": "store", "because": "beyond_memory_budget",
        "index_mib": 1, "budget_mib": 0});
    let detail = get_with(&small_router, "/api/v1/datasets/cities", Some(&token), &[]).await;
    assert_eq!(detail.body["index"], why, "{}", detail.body);
    let graphql = crate::helpers::post_graphql(
        &small_router,
        Some(&token),
        "{ dataset(slug: \"cities\") { index { answeredBy because indexMib budgetMib } } }",
        json!({}),
    )
    .await;
    assert_eq!(
        graphql.body["data"]["dataset"]["index"],
        json!({"answeredBy": "store", "because": "beyond_memory_budget", "indexMib": 1, "budgetMib": 0})
    );
    let ready = get_with(&small_router, "/readyz", None, &[]).await;
    assert_eq!(
        ready.body,
        json!({"status": "ready"}),
        "nothing noted before a refresh"
    );
    small.resolver.refresh_indexes().await.expect("refresh");
    let ready = get_with(&small_router, "/readyz", None, &[]).await;
    assert_eq!(
        ready.body["beyond_memory_budget"],
        json!([{"dataset": "cities", "index_mib": 1, "budget_mib": 0}])
    );
    // Within the budget: neither says anything.
    let detail = get_with(&router, "/api/v1/datasets/cities", Some(&token), &[]).await;
    assert!(detail.body.get("index").is_none(), "{}", detail.body);
    state.resolver.refresh_indexes().await.expect("refresh");
    let ready = get_with(&router, "/readyz", None, &[]).await;
    assert_eq!(ready.body, json!({"status": "ready"}));

    // A removed dataset's index goes at the next refresh.
    odqs::store::catalog::remove(&store.store, "cities")
        .await
        .expect("remove");
    state.resolver.refresh_indexes().await.expect("refresh");
    assert_eq!(state.resolver.index_bytes(), 0);
    small.resolver.refresh_indexes().await.expect("refresh");
    let ready = get_with(&small_router, "/readyz", None, &[]).await;
    assert_eq!(
        ready.body,
        json!({"status": "ready"}),
        "a removed dataset is not listed"
    );
}

async fn background_builds_answer_alike(store: TestStore) {
    import(&store, &cities(500, &["Taipei", "Tainan"])).await;
    let token = api_token(&store).await;
    let state = store.state_with(IndexPolicy::background(DEFAULT_BUDGET_BYTES));
    let router = odqs::app::router(state.clone());
    // Before and while the index is built, the store answers; after, the index. Both alike.
    let before = answers(&router, &token).await;
    state.resolver.refresh_indexes().await.expect("refresh");
    let deadline = Instant::now() + Duration::from_secs(60);
    while state.resolver.index_bytes() == 0 {
        assert!(Instant::now() < deadline, "the index was never built");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(before, answers(&router, &token).await);

    // A re-import: the first request that sees the new version starts its build (no refresh
    // tick needed), and answers from the store meanwhile.
    let built = state.resolver.index_bytes();
    import(&store, &cities(1500, &["Taipei", "Tainan"])).await;
    let during = answers(&router, &token).await;
    assert_eq!(during[1]["total"], 750);
    let deadline = Instant::now() + Duration::from_secs(60);
    while state.resolver.index_bytes() <= built {
        assert!(
            Instant::now() < deadline,
            "the new version was never indexed"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(during, answers(&router, &token).await);
}

/// The bytes of index an instance holds after answering `paths`.
async fn held_after(state: &odqs::state::AppState, paths: &[&str], token: &str) -> u64 {
    let router = odqs::app::router(state.clone());
    for path in paths {
        let answer = get_with(&router, path, Some(token), &[]).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
    }
    state.resolver.index_bytes()
}

async fn indexes_are_built_when_asked_and_the_least_recently_used_goes(store: TestStore) {
    import(&store, &cities(400, &["Taipei", "Tainan"])).await;
    let path = write_file(
        &store,
        "towns.ndjson",
        cities(400, &["Taipei", "Tainan"]).as_bytes(),
    );
    import_file(&store, &path, "towns", Some(SCHEMA), None)
        .await
        .expect("import");
    let token = api_token(&store).await;
    let cities_page = "/api/v1/datasets/cities/records?city=Taipei";
    let towns_page = "/api/v1/datasets/towns/records?city=Tainan";

    // One index's size, and a budget that holds one but not two.
    let probe = store.state_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES));
    let one = held_after(&probe, &[cities_page], &token).await;
    assert_eq!(held_after(&probe, &[towns_page], &token).await, 2 * one);
    let budget = one * 3 / 2;

    // Nothing is built before it is asked for, not even by the refresh.
    let state = store.state_with(IndexPolicy::waiting(budget).evicting_after(Duration::ZERO));
    state.resolver.refresh_indexes().await.expect("refresh");
    assert_eq!(
        state.resolver.index_bytes(),
        0,
        "an index was built unasked"
    );
    assert_eq!(held_after(&state, &[cities_page], &token).await, one);
    // Asked for towns, the instance lets cities (used least recently) go.
    assert_eq!(held_after(&state, &[towns_page], &token).await, one);
    let router = odqs::app::router(state.clone());
    let store_router = store.router_with(IndexPolicy::OFF);
    for path in [cities_page, towns_page] {
        let got = get_with(&router, path, Some(&token), &[]).await;
        let want = get_with(&store_router, path, Some(&token), &[]).await;
        assert_eq!(got.body, want.body, "{path}");
    }

    // An index used lately is kept: the other dataset is answered by the store.
    let busy = store.state_with(IndexPolicy::waiting(budget));
    assert_eq!(held_after(&busy, &[cities_page], &token).await, one);
    assert_eq!(held_after(&busy, &[towns_page], &token).await, one);
    let router = odqs::app::router(busy.clone());
    let got = get_with(&router, towns_page, Some(&token), &[]).await;
    let want = get_with(&store_router, towns_page, Some(&token), &[]).await;
    assert_eq!(got.body, want.body);
}

both_stores!(
    indexes_follow_versions_within_the_budget,
    background_builds_answer_alike,
    indexes_are_built_when_asked_and_the_least_recently_used_goes
);
