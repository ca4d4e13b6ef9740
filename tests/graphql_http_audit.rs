//! graphql-http's `auditServer` (the GraphQL-over-HTTP reference audits, from the npm package,
//! run with the machine's Node.js) against a served odqs, on both stores: every MUST and SHOULD
//! audit passes (only MAY notices are allowed). The packages are installed once, pinned by
//! `tests/node/package.json`, under `target/node-clients`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{TestStore, api_token, load_demo};

/// `target/node-clients` with the pinned packages installed (once; later runs reuse it).
fn node_clients() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("target/node-clients");
    let manifest = std::fs::read(root.join("tests/node/package.json")).unwrap();
    let installed = std::fs::read(dir.join("package.json")).ok();
    if installed.as_deref() != Some(&manifest[..])
        || !dir.join("node_modules/graphql-http").exists()
    {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("package.json"), &manifest).unwrap();
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .status()
            .expect("npm is needed for this test (Node.js and npm from Debian or nodejs.org)");
        assert!(status.success(), "npm install failed in {}", dir.display());
    }
    std::fs::copy(
        root.join("tests/node/graphql-http-audit.mjs"),
        dir.join("graphql-http-audit.mjs"),
    )
    .unwrap();
    dir
}

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

    let dir = node_clients();
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
