//! `/healthz` and `/readyz` through the real router, including a store outage and recovery.

use crate::helpers::{Kind, TestStore, get_json, get_with, pg_admin_url};
use sqlx::Connection;

async fn health_and_readiness(store: TestStore) {
    let router = store.router();
    assert_eq!(
        get_json(&router, "/healthz").await,
        (200, serde_json::json!({"status": "ok"}))
    );
    assert_eq!(
        get_json(&router, "/readyz").await,
        (200, serde_json::json!({"status": "ready"}))
    );
    let (status, body) = get_json(&router, "/api/v1/nothing-here").await;
    assert_eq!(status, 404);
    assert_eq!(body["error"], "not_found");
}

both_stores!(health_and_readiness);

/// An instance says it is ready only once its catalog search's index is loaded, so the first
/// search a load balancer sends it does not wait for the whole catalog to be read.
async fn readiness_waits_for_the_catalog_search(store: TestStore) {
    let path = crate::helpers::write_file(&store, "towns.csv", b"code,name\nT1,Ayr\nT2,Elgin\n");
    crate::helpers::import_file(&store, &path, "towns", None, Some("code"))
        .await
        .unwrap();
    let state = store.state_with(query::memory::IndexPolicy::OFF);
    assert!(!state.resolver.catalog_loaded());
    let router = odqs::app::router(state.clone());
    assert_eq!(get_json(&router, "/readyz").await.0, 200);
    assert!(state.resolver.catalog_loaded());
}

both_stores!(readiness_waits_for_the_catalog_search);

/// When PostgreSQL stops accepting connections, `/readyz` says 503 `unavailable` (and the
/// process lives on); when it comes back, the pool reconnects by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_the_store() {
    let store = TestStore::new(Kind::Postgres).await;
    let name = store.pg_database().unwrap().to_string();
    let router = store.router();
    assert_eq!(get_json(&router, "/readyz").await.0, 200);
    let token = crate::helpers::api_token(&store).await;
    let api = "/api/v1/datasets";
    assert_eq!(get_with(&router, api, Some(&token), &[]).await.status, 200);

    let mut admin = sqlx::PgConnection::connect(&pg_admin_url()).await.unwrap();
    let exec = |sql: String| sqlx::query(sqlx::AssertSqlSafe(sql));
    exec(format!("ALTER DATABASE \"{name}\" ALLOW_CONNECTIONS false"))
        .execute(&mut admin)
        .await
        .unwrap();
    exec(format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
    ))
    .execute(&mut admin)
    .await
    .unwrap();

    let (status, body) = get_json(&router, "/readyz").await;
    assert_eq!(status, 503);
    assert_eq!(body["error"], "unavailable");
    assert!(!body["message"].as_str().unwrap().contains(&name), "{body}");
    assert_eq!(
        get_json(&router, "/healthz").await.0,
        200,
        "the process is alive"
    );
    // The API says so too, in the contract's shape, with nothing about the store in it.
    let answer = get_with(&router, api, Some(&token), &[]).await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert_eq!(answer.body["error"], "unavailable");
    let text = answer.body.to_string();
    assert!(!text.contains(&name) && !text.contains("sqlx"), "{text}");

    exec(format!("ALTER DATABASE \"{name}\" ALLOW_CONNECTIONS true"))
        .execute(&mut admin)
        .await
        .unwrap();
    assert_eq!(
        get_json(&router, "/readyz").await.0,
        200,
        "recovered without a restart"
    );
    assert_eq!(get_with(&router, api, Some(&token), &[]).await.status, 200);
}
