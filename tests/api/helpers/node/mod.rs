//! The npm packages the tests run with the machine's Node.js (third-party clients nobody here
//! wrote), pinned by `tests/api/helpers/node/package.json` and installed once under
//! `target/node-clients`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Runs `script` (a file of `tests/api/helpers/node/`) with Node.js and `args`, off the async
/// runtime, and reads the JSON it prints; fails the test when it fails.
pub async fn run_json(script: &'static str, args: Vec<String>) -> serde_json::Value {
    let output = tokio::task::spawn_blocking(move || {
        let dir = with_script(script);
        Command::new("node")
            .arg(script)
            .args(&args)
            .current_dir(&dir)
            .output()
            .expect("node is needed for this test")
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the script prints JSON")
}

/// `target/node-clients` with the pinned packages installed and `script` (a file of
/// `tests/api/helpers/node/`) copied beside them.
pub fn with_script(script: &str) -> PathBuf {
    let dir = installed();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(
        root.join("tests/api/helpers/node").join(script),
        dir.join(script),
    )
    .unwrap();
    dir
}

/// The source of axe-core (`axe.min.js`), the accessibility audit the browser tests run in
/// each page.
pub fn axe_source() -> String {
    std::fs::read_to_string(installed().join("node_modules/axe-core/axe.min.js")).unwrap()
}

/// `target/node-clients` with the pinned packages installed (once; later runs reuse it). Tests
/// in one process wait on a mutex, test processes on a lock file, so npm installs once and
/// nobody reads a half-made `node_modules`.
fn installed() -> PathBuf {
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _in_process = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("target/node-clients");
    std::fs::create_dir_all(&dir).unwrap();
    let lock = std::fs::File::create(root.join("target/node-clients.lock")).unwrap();
    lock.lock().unwrap();
    let manifest = std::fs::read(root.join("tests/api/helpers/node/package.json")).unwrap();
    let installed = std::fs::read(dir.join("package.json")).ok();
    let complete = ["graphql", "axe-core"]
        .iter()
        .all(|package| dir.join("node_modules").join(package).exists());
    if installed.as_deref() != Some(&manifest[..]) || !complete {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("package.json"), &manifest).unwrap();
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .status()
            .expect("npm is needed for this test (Node.js and npm from Debian or nodejs.org)");
        assert!(status.success(), "npm install failed in {}", dir.display());
    }
    dir
}
