//! graphql-http's `auditServer` (the GraphQL-over-HTTP reference audits, from the npm package,
//! run with the machine's Node.js) against a served odqs, on both stores: every MUST and SHOULD
//! audit passes (only MAY notices are allowed). The packages are installed once, pinned by
//! `tests/node/package.json`, under `target/node-clients`.

mod common;
mod node;

use std::process::Command;

use common::{TestStore, api_token, load_demo};

async fn graphql_http_audits_pass(store: TestStore) {
    load_demo(&store).await;
    let token = api_token(&store).await;
    let state = odqs::app::AppState::new(store.store.clone(), "http://127.0.0.1");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(odqs::app::serve(state, listener, async move {
        let _ = stopped.await;
    }));

    let dir = node::with_script("graphql-http-audit.mjs");
    let url = format!("http://{addr}/api/v1/graphql");
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg("graphql-http-audit.mjs")
            .arg(&url)
            .arg(&token)
            .current_dir(&dir)
            .output()
            .expect("node is needed for this test")
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let audits: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert!(audits.len() > 50, "{} audits", audits.len());
    let failed: Vec<String> = audits
        .iter()
        .filter(|a| a["status"] != "ok" && a["status"] != "notice")
        .map(|a| format!("{} {}: {}", a["status"], a["name"], a["reason"]))
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");

    let _ = stop.send(());
    server.await.unwrap().unwrap();
}

both_stores!(graphql_http_audits_pass);
