//! The README's `curl` examples run as written (issue 12), with the real `curl`, against odqs
//! on a real socket with the demo datasets, on SQLite and on PostgreSQL.
//!
//! **Which blocks count**: every fenced ```` ```sh ```` block of `README.md` that has a line
//! starting with `curl` (the REST, GraphQL and device-flow examples). Each such block runs as
//! one `bash` script (`set -euo pipefail`), in a scratch directory, with two substitutions
//! and nothing else changed:
//!
//! - `http://127.0.0.1:8080`, the default public URL, becomes the test server's address;
//! - `cargo run --release --` becomes the `odqs` binary this test was built with, run with
//!   `DATABASE_URL` set to the test's store (so `T=$(cargo run --release -- token create …)`
//!   mints a real token the server accepts).
//!
//! `curl` is a shell function there that runs the real `curl` and keeps each answer (exit
//! status, HTTP status, content type, body) in numbered files before printing the body as
//! curl would. Every answer must have exit status 0, a 2xx status and a JSON body, with one
//! exception the README documents beside the call: the device-flow poll before anyone has
//! approved answers 400 `authorization_pending` (RFC 8628).

mod common;

use std::path::Path;
use std::process::Command;

use common::{TestStore, load_demo, serve};
use serde_json::Value;

/// The body of every fenced `sh` block of `readme` with a line starting with `curl`.
fn curl_blocks(readme: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme.lines() {
        let fence = line.trim_start().starts_with("```");
        match current.as_mut() {
            None if line.trim() == "```sh" => current = Some(String::new()),
            Some(_) if fence => {
                let block = current.take().unwrap();
                if block.lines().any(|l| l.trim_start().starts_with("curl ")) {
                    blocks.push(block);
                }
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

/// How many times a block calls `curl`: lines that start with it or substitute its output.
fn curl_calls(block: &str) -> usize {
    block
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| usize::from(l.trim_start().starts_with("curl ")) + l.matches("$(curl ").count())
        .sum()
}

/// Defines `curl` as the real one that also records each answer under `$ANSWERS`.
const PREAMBLE: &str = r#"set -euo pipefail
curl() {
  local n status=0
  n=$(( $(cat "$ANSWERS/count") + 1 ))
  echo "$n" > "$ANSWERS/count"
  printf '%q ' curl "$@" > "$ANSWERS/$n.command"
  command curl --silent --show-error --output "$ANSWERS/$n.body" \
    --write-out '%{http_code}\n%{content_type}\n' "$@" > "$ANSWERS/$n.status" || status=$?
  echo "$status" > "$ANSWERS/$n.exit"
  cat "$ANSWERS/$n.body"
  return "$status"
}
"#;

/// Runs `script` as described above; returns how many answers it recorded.
fn run_script(script: &str, site: &str, store: &TestStore, dir: &Path) -> usize {
    let answers = dir.join("answers");
    let _ = std::fs::remove_dir_all(&answers);
    std::fs::create_dir_all(&answers).unwrap();
    std::fs::write(answers.join("count"), "0").unwrap();
    let binary = env!("CARGO_BIN_EXE_odqs");
    let script = script
        .replace("http://127.0.0.1:8080", site)
        .replace("cargo run --release --", &format!("'{binary}'"));
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!("{PREAMBLE}{script}"))
        .current_dir(dir)
        .env("ANSWERS", &answers)
        .env("DATABASE_URL", &store.url)
        .env("ODQS_LOG", "warn")
        .output()
        .expect("run bash");
    assert!(
        output.status.success(),
        "the README examples failed ({}):\n{script}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let count: usize = std::fs::read_to_string(answers.join("count"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for n in 1..=count {
        let read = |ext: &str| std::fs::read_to_string(answers.join(format!("{n}.{ext}"))).unwrap();
        let command = read("command");
        assert_eq!(read("exit").trim(), "0", "{command}");
        let status = read("status");
        let mut lines = status.lines();
        let code: u16 = lines.next().unwrap().parse().unwrap();
        let content_type = lines.next().unwrap_or_default();
        // An export (contract §12.3) answers CSV or NDJSON: 2xx and a body of that shape.
        if content_type.starts_with("text/csv") || content_type.starts_with("application/x-ndjson")
        {
            let body = read("body");
            assert!((200..300).contains(&code), "{command}: {code} {body}");
            assert!(body.lines().count() > 1, "{command}: an empty export");
            if content_type.starts_with("application/x-ndjson") {
                for line in body.lines() {
                    serde_json::from_str::<Value>(line)
                        .unwrap_or_else(|e| panic!("{command}: a line is not JSON ({e}): {line}"));
                }
            }
            continue;
        }
        let body: Value = serde_json::from_str(&read("body"))
            .unwrap_or_else(|e| panic!("{command}: not JSON ({e}): {}", read("body")));
        assert!(content_type.contains("json"), "{command}: {content_type}");
        let pending_poll = command.contains("/auth/token")
            && code == 400
            && body["error"] == "authorization_pending";
        assert!(
            (200..300).contains(&code) || pending_poll,
            "{command}: {code} {body}"
        );
    }
    count
}

async fn readme_curl_examples_run(store: TestStore) {
    load_demo(&store).await;
    let (site, stop) = serve(&store).await;
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let blocks = curl_blocks(&readme);
    assert!(
        blocks.len() >= 3,
        "the REST, GraphQL and device-flow examples"
    );
    let dir = tempfile::tempdir().unwrap();
    let script = blocks.concat();
    let ran = run_script(&script, &site, &store, dir.path());
    assert_eq!(
        ran,
        curl_calls(&script),
        "every curl of the blocks ran:\n{script}"
    );
    eprintln!("{ran} curl examples from {} README blocks", blocks.len());
    let _ = stop.send(());
}

both_stores!(readme_curl_examples_run);
