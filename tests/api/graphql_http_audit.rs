//! graphql-http's `auditServer` (the GraphQL-over-HTTP reference audits, from the npm package,
//! run with the machine's Node.js) against a served odqs, on both stores: every MUST and SHOULD
//! audit passes (only MAY notices are allowed). The packages are installed once, pinned by
//! `tests/api/helpers/node/package.json`, under `target/node-clients`.

use crate::helpers::node;
use crate::helpers::{TestStore, api_token, load_demo};

async fn graphql_http_audits_pass(store: TestStore) {
    load_demo(&store).await;
    let token = api_token(&store).await;
    let state = odqs::state::AppState::new(store.store.clone(), "http://127.0.0.1");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(odqs::app::serve(state, listener, async move {
        let _ = stopped.await;
    }));

    let url = format!("http://{addr}/api/v1/graphql");
    let audits = node::run_json("graphql-http-audit.mjs", vec![url, token]).await;
    let audits = audits.as_array().unwrap();
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

both_stores!(tier2: graphql_http_audits_pass);
