//! Every snippet of `README.md` and `docs/` runs as written, on SQLite and on PostgreSQL,
//! against odqs on a real socket with the demo datasets. (`docs/spec/` holds the specification
//! as it was written; its examples are not odqs's documentation and are not run.)
//!
//! **Shell blocks** (```` ```sh ````): the blocks of one page run in order as one `bash`
//! script (`set -euo pipefail`), in a scratch directory that links `testdata/` and `demo/`,
//! with the `odqs` this test was built with first on `PATH` and `DATABASE_URL` set to the
//! test's store, so `T=$(odqs token create …)` mints a token the server accepts and
//! `odqs import` publishes into it. One substitution and nothing else is changed:
//! `http://127.0.0.1:8080`, the default public URL, becomes the test server's address.
//!
//! `curl` is a shell function there that runs the real `curl` and keeps each answer (exit
//! status, HTTP status, content type, body) in numbered files before printing the body as
//! curl would. Every answer must have exit status 0, a 2xx status and a JSON body (or, for an
//! export, CSV or NDJSON), with one exception the docs show beside the call: the device-flow
//! poll before anyone has approved answers 400 `authorization_pending` (RFC 8628).
//!
//! **`odqs serve` lines** are started (on a free port: `127.0.0.1:PORT` becomes
//! `127.0.0.1:0`) until they log `odqs is serving`; without `ODQS_PUBLIC_URL` the public URL
//! they log must be the address they listen on. **JSON blocks** must parse; a schema file (one
//! with `fields`) is imported with `demo/flights.csv.gz`. **The Python block** (the MCP client)
//! runs with the `mcp` version pinned in `tests/api/helpers/py/requirements.txt`, which the page
//! must name.
//!
//! **Not run here**, each named in [`NOT_RUN`] with the reason: the set-up and build commands
//! (`cargo …`; the README's test command is checked to be the one `.ci/run` runs), Docker, and
//! servers on a remote PostgreSQL.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::py;
use crate::helpers::{TestStore, load_demo, serve};
use serde_json::Value;

/// A fenced code block of a page.
#[derive(Debug, Clone)]
struct Block {
    /// The page, relative to the repository (`docs/api.md`).
    page: String,
    /// The line of the opening fence.
    line: usize,
    /// The info string (`sh`, `python`, `json`).
    lang: String,
    text: String,
}

/// The pages whose snippets run: `README.md` and every Markdown file under `docs/` but the
/// specification's.
fn pages() -> Vec<PathBuf> {
    let root = py::package_dir();
    let mut pages = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "spec") {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

/// Every fenced block of `text`.
fn blocks_of(page: &str, text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut current: Option<Block> = None;
    for (n, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        match current.as_mut() {
            None if fence => {
                current = Some(Block {
                    page: page.to_string(),
                    line: n + 1,
                    lang: line.trim().trim_start_matches('`').trim().to_string(),
                    text: String::new(),
                })
            }
            Some(_) if fence => blocks.push(current.take().unwrap()),
            Some(block) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            None => {}
        }
    }
    assert!(current.is_none(), "{page}: a code block is not closed");
    blocks
}

/// Every block of every page.
fn all_blocks() -> Vec<Block> {
    let root = py::package_dir();
    pages()
        .iter()
        .flat_map(|path| {
            let page = path.strip_prefix(root).unwrap().display().to_string();
            blocks_of(&page, &std::fs::read_to_string(path).unwrap())
        })
        .collect()
}

/// Shell lines this test does not run, by how they start, and why.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "cargo run --release -- serve",
        "the README's first set-up command: builds the release binary and serves on port 8080 until stopped; the served binary is what every other snippet runs",
    ),
    (
        "cargo test --workspace --no-fail-fast",
        "the README's second set-up command, the test suite itself: checked to be exactly what .ci/run runs",
    ),
    (
        "cargo test --test api",
        "runs part of the test suite (docs/development.md's example of one test); the suite is run as a whole",
    ),
    (
        "bash tests/tier2.sh",
        "tier 2 of the tests, this test among them; .ci/run runs it after tier 1",
    ),
    (
        "cargo install --path .",
        "builds and installs the release binary into ~/.cargo/bin; the snippets run the binary under test as odqs",
    ),
    (
        "cargo bench --bench mix",
        "the benchmark: minutes of release-build load; run by hand (docs/benchmark.md)",
    ),
    (
        "cargo bench --bench catalog",
        "the catalog benchmark: thousands of imports in a release build; run by hand (docs/benchmark.md)",
    ),
    (
        "cargo build --release --bin odqs",
        "builds the release binary the flood script drives; the snippets run the binary under test",
    ),
    (
        "python3 benches/floods.py",
        "the flood test: minutes of attacks on a release build, 2 cores' worth of load; run by hand (docs/security.md)",
    ),
    (
        "git worktree add",
        "checks out another commit beside the repository; run by hand (docs/benchmark.md)",
    ),
    (
        "cargo build --release --bin odqs --manifest-path",
        "builds another commit's release binary; run by hand (docs/benchmark.md)",
    ),
    (
        "python3 benches/compare.py",
        "compares two release builds answer by answer: minutes of imports and requests; run by hand (docs/benchmark.md)",
    ),
    (
        "docker compose up -d --build",
        "Docker Compose: tests/api/compose_stack.rs brings docker-compose.yml up (with the images tests/tier2.sh builds)",
    ),
    (
        "docker compose exec -T odqs odqs token create",
        "Docker Compose: tests/api/compose_stack.rs mints its token this way",
    ),
    (
        "docker compose -f deploy/docker-compose.cluster.yml up",
        "Docker Compose: tests/api/compose_stack.rs brings the HAProxy cluster up",
    ),
    (
        "bash deploy/images/build-base.sh",
        "builds the stand-in base images (minutes, needs a Docker engine); tests/tier2.sh runs it before the tests",
    ),
    (
        "docker-compose build odqs",
        "the odqs image's release build (minutes); tests/tier2.sh runs it before the tests",
    ),
    (
        "DATABASE_URL=postgres://odqs:secret@db.example.org/",
        "a PostgreSQL server of the reader's own; tests/api/tls.rs checks every sslmode against a real server",
    ),
    (
        "DATABASE_URL='postgres://odqs:secret@db.example.org/",
        "a PostgreSQL server of the reader's own; tests/api/tls.rs checks every sslmode against a real server",
    ),
    (
        "DATABASE_URL='postgres://odqs:secret@ep-x.neon.tech/",
        "a hosted PostgreSQL of the reader's own; tests/api/tls.rs checks sslrootcert=system",
    ),
    (
        "apt-get install -y chromium chromium-driver",
        "installs the browser; tests/tier2.sh installs it before the tests",
    ),
    (
        "cargo build --bin odqs",
        "builds the debug binary the screenshot script drives; the snippets run the binary under test",
    ),
    (
        "python3 docs/screenshots/shoot.py",
        "takes the site's pictures in Chromium (a minute); run by hand (docs/screenshots/README.md); the browser tests check the same pages",
    ),
];

/// The reason `line` is not run, if it is one of [`NOT_RUN`].
fn not_run(line: &str) -> Option<&'static str> {
    NOT_RUN
        .iter()
        .find(|(start, _)| line.trim_start().starts_with(start))
        .map(|(_, why)| *why)
}

/// The code lines of a shell block: neither blank nor comments.
fn code_lines(block: &str) -> impl Iterator<Item = &str> {
    block
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
}

/// A line that starts `odqs serve` in the foreground (after optional `NAME=value` settings).
fn is_serve(line: &str) -> bool {
    let command = line.split('#').next().unwrap_or_default();
    let words: Vec<&str> = command
        .split_whitespace()
        .skip_while(|w| w.contains('=') && !w.starts_with('-'))
        .collect();
    words.first() == Some(&"odqs") && words.get(1) == Some(&"serve")
}

/// What a page's blocks ask of the test.
#[derive(Default)]
struct Plan {
    /// Each page's runnable shell blocks, concatenated in order.
    scripts: Vec<(String, String)>,
    serve_lines: Vec<(String, String)>,
    json: Vec<Block>,
    python: Vec<Block>,
    skipped: Vec<(String, &'static str)>,
}

fn plan() -> Plan {
    let mut plan = Plan::default();
    for block in all_blocks() {
        let at = format!("{}:{}", block.page, block.line);
        match block.lang.as_str() {
            "sh" => {
                let lines: Vec<&str> = code_lines(&block.text).collect();
                let skipped: Vec<&str> = lines
                    .iter()
                    .copied()
                    .filter(|l| not_run(l).is_some())
                    .collect();
                let serving: Vec<&str> = lines
                    .iter()
                    .copied()
                    .filter(|l| not_run(l).is_none() && is_serve(l))
                    .collect();
                if !skipped.is_empty() || !serving.is_empty() {
                    // A block is run whole or not at all: no mixing.
                    assert_eq!(
                        skipped.len() + serving.len(),
                        lines.len(),
                        "{at}: a block with a line this test does not run (or a server) holds other commands too; split it:\n{}",
                        block.text
                    );
                    for line in skipped {
                        plan.skipped
                            .push((line.to_string(), not_run(line).unwrap()));
                    }
                    for line in serving {
                        plan.serve_lines.push((at.clone(), line.to_string()));
                    }
                    continue;
                }
                assert!(
                    !lines.iter().any(|l| l.trim_start().starts_with("cargo ")),
                    "{at}: a cargo command this test does not know; run it or add it to NOT_RUN with the reason"
                );
                match plan.scripts.last_mut() {
                    Some((page, script)) if *page == block.page => script.push_str(&block.text),
                    _ => plan.scripts.push((block.page.clone(), block.text.clone())),
                }
            }
            "json" => plan.json.push(block),
            "python" => plan.python.push(block),
            other => panic!("{at}: a ```{other} block; this test runs sh, json and python blocks"),
        }
    }
    plan
}

/// How many times a block calls `curl`: lines that start with it or substitute its output.
fn curl_calls(block: &str) -> usize {
    block
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| usize::from(l.trim_start().starts_with("curl ")) + l.matches("$(curl ").count())
        .sum()
}

/// Defines `curl` as the real one that also records each answer under `$ANSWERS` (and writes
/// it where `-o FILE` says, or prints it, as curl does).
const PREAMBLE: &str = r#"set -euo pipefail
curl() {
  local n status=0 out="" previous=""
  for argument in "$@"; do
    case "$previous" in -o|--output) out="$argument" ;; esac
    previous="$argument"
  done
  n=$(( $(cat "$ANSWERS/count") + 1 ))
  echo "$n" > "$ANSWERS/count"
  printf '%q ' curl "$@" > "$ANSWERS/$n.command"
  command curl --silent --show-error --output "$ANSWERS/$n.body" \
    --write-out '%{http_code}\n%{content_type}\n' "$@" > "$ANSWERS/$n.status" 2> "$ANSWERS/$n.stderr" || status=$?
  echo "$status" > "$ANSWERS/$n.exit"
  if [ -n "$out" ]; then cp "$ANSWERS/$n.body" "$out"; else cat "$ANSWERS/$n.body"; fi
  return "$status"
}
"#;

/// A scratch directory as a reader's checkout looks: `testdata/` and `demo/` beside, and a
/// `bin/odqs` that is the binary under test.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = py::package_dir();
    for name in ["testdata", "demo"] {
        std::os::unix::fs::symlink(root.join(name), dir.path().join(name)).unwrap();
    }
    std::fs::create_dir(dir.path().join("bin")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_odqs"), dir.path().join("bin/odqs")).unwrap();
    dir
}

/// `bash` in `dir` (made by [`scratch`]) with its `odqs` first on `PATH`, the test's store as
/// `DATABASE_URL`, and no other odqs setting from the caller.
fn shell(dir: &Path, store: &TestStore) -> Command {
    let mut command = Command::new("bash");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![dir.join("bin")];
    paths.extend(std::env::split_paths(&path));
    for (key, _) in std::env::vars() {
        if key.starts_with("ODQS_") {
            command.env_remove(key);
        }
    }
    command
        .current_dir(dir)
        .env("PATH", std::env::join_paths(paths).unwrap())
        .env("DATABASE_URL", &store.url)
        .env("ODQS_LOG", "warn");
    command
}

/// Runs `script` as described above; returns how many answers it recorded.
fn run_script(script: &str, site: &str, store: &TestStore, dir: &Path) -> usize {
    let answers = dir.join("answers");
    let _ = std::fs::remove_dir_all(&answers);
    std::fs::create_dir_all(&answers).unwrap();
    std::fs::write(answers.join("count"), "0").unwrap();
    let script = script.replace("http://127.0.0.1:8080", site);
    let output = shell(dir, store)
        .arg("-c")
        .arg(format!("{PREAMBLE}{script}"))
        .env("ANSWERS", &answers)
        .output()
        .expect("run bash");
    assert!(
        output.status.success(),
        "the examples failed ({}):\n{script}\nstdout:\n{}\nstderr:\n{}",
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
        // A guide (`catalog.md`, `skill.md`) answers Markdown: 2xx and a page under its title.
        if content_type.starts_with("text/markdown") {
            let body = read("body");
            assert!((200..300).contains(&code), "{command}: {code} {body}");
            assert!(body.starts_with("# "), "{command}: {body}");
            continue;
        }
        // A removal (contract §14.2) answers 204 with no body at all.
        if code == 204 {
            assert!(read("body").is_empty(), "{command}: a body with 204");
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

/// Starts a documented `odqs serve` line on a free port until it serves; checks the public URL
/// it logs.
fn serve_line(at: &str, line: &str, store: &TestStore, dir: &Path) {
    let listen = regex_free_port(line);
    let mut command = shell(dir, store);
    command
        .arg("-c")
        .arg(&listen)
        .env("ODQS_LOG_FORMAT", "json")
        .env("ODQS_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if !listen.contains("ODQS_LISTEN") && !listen.contains("--listen") {
        // The default port may be taken: the line's own settings are kept, the port is free.
        command.env("ODQS_LISTEN", "127.0.0.1:0");
    }
    // Its own process group, so that stopping it stops odqs and not only the shell.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(50);
    let mut said = Vec::new();
    let mut serving = None;
    for log_line in stderr.lines().map_while(Result::ok) {
        if let Ok(event) = serde_json::from_str::<Value>(&log_line)
            && event["message"] == "odqs is serving"
        {
            serving = Some(event);
            break;
        }
        said.push(log_line);
        if Instant::now() > deadline {
            break;
        }
    }
    // SAFETY: kill(2) on the group this test started; no memory is involved.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait();
    let event = serving.unwrap_or_else(|| {
        panic!(
            "{at}: `{line}` did not serve; it said:\n{}",
            said.join("\n")
        )
    });
    if !line.contains("ODQS_PUBLIC_URL") && !line.contains("--public-url") {
        assert_eq!(
            event["public_url"].as_str().unwrap(),
            format!("http://{}", event["listen"].as_str().unwrap()),
            "{at}: without ODQS_PUBLIC_URL the public URL follows the listen address"
        );
    }
}

/// `line` with each `127.0.0.1:PORT` on port 0, so that it binds a free port.
fn regex_free_port(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find("127.0.0.1:") {
        let (before, after) = rest.split_at(i + "127.0.0.1:".len());
        out.push_str(before);
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        out.push('0');
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// A JSON block parses; a schema file is imported with the demo flights.
fn json_block(block: &Block, store: &TestStore, dir: &Path) {
    let at = format!("{}:{}", block.page, block.line);
    let value: Value = serde_json::from_str(&block.text)
        .unwrap_or_else(|e| panic!("{at}: not JSON ({e}):\n{}", block.text));
    if value.get("fields").is_some() {
        let schema = dir.join(format!("schema-{}.json", block.line));
        std::fs::write(&schema, &block.text).unwrap();
        let output = shell(dir, store)
            .arg("-c")
            .arg(format!(
                "odqs import demo/flights.csv.gz --slug schema-example --schema '{}'",
                schema.display()
            ))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{at}: the schema file does not import: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// The MCP client script runs with the pinned `mcp`, as the page says to install it.
fn python_block(block: &Block, site: &str, store: &TestStore, dir: &Path) {
    let at = format!("{}:{}", block.page, block.line);
    let pinned = include_str!("helpers/py/requirements.txt")
        .lines()
        .find(|l| l.starts_with("mcp=="))
        .expect("mcp is pinned in tests/api/helpers/py/requirements.txt");
    let page = std::fs::read_to_string(py::package_dir().join(&block.page)).unwrap();
    assert!(
        page.contains(&format!("pip install {pinned}")),
        "{at}: the page must say `pip install {pinned}`, the version the tests use"
    );
    let token = shell(dir, store)
        .arg("-c")
        .arg("odqs token create --email python@example.org")
        .output()
        .unwrap();
    assert!(token.status.success());
    let script = dir.join(format!("snippet-{}.py", block.line));
    std::fs::write(&script, block.text.replace("http://127.0.0.1:8080", site)).unwrap();
    let venv = py::venv();
    let output = venv
        .command("python")
        .arg(&script)
        .env(
            "ODQS_TOKEN",
            String::from_utf8(token.stdout).unwrap().trim(),
        )
        .output()
        .unwrap();
    py::check(&at, &output);
    let printed = String::from_utf8_lossy(&output.stdout);
    // The demo flights leave from three airports.
    let airports: Vec<&str> = printed
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(airports.len(), 3, "{at}: {printed}");
    for airport in ["EWR", "JFK", "LGA"] {
        assert!(airports.contains(&airport), "{at}: {printed}");
    }
}

async fn docs_snippets_run(store: TestStore) {
    load_demo(&store).await;
    let (site, stop) = serve(&store).await;
    let plan = plan();
    assert!(
        plan.scripts.iter().any(|(page, _)| page == "README.md"),
        "the README's first query"
    );
    let dir = scratch();
    let store = std::sync::Arc::new(store);
    let mut ran = 0;
    for (page, script) in plan.scripts {
        let (site, store, path) = (site.clone(), store.clone(), dir.path().to_path_buf());
        let calls = curl_calls(&script);
        let answers =
            tokio::task::spawn_blocking(move || run_script(&script, &site, &store, &path))
                .await
                .unwrap();
        // At least: a loop (reading pages by their `Link`) runs its curl more than once.
        assert!(
            answers >= calls,
            "{page}: every curl of its blocks ran ({answers} of {calls})"
        );
        ran += answers;
    }
    assert!(ran >= 20, "{ran} curl examples");
    for (at, line) in &plan.serve_lines {
        let (at, line, store, path) = (
            at.clone(),
            line.clone(),
            store.clone(),
            dir.path().to_path_buf(),
        );
        tokio::task::spawn_blocking(move || serve_line(&at, &line, &store, &path))
            .await
            .unwrap();
    }
    assert!(!plan.serve_lines.is_empty(), "a documented odqs serve line");
    for block in plan.json {
        let (store, path) = (store.clone(), dir.path().to_path_buf());
        tokio::task::spawn_blocking(move || json_block(&block, &store, &path))
            .await
            .unwrap();
    }
    assert_eq!(plan.python.len(), 1, "the MCP client script");
    for block in plan.python {
        let (site, store, path) = (site.clone(), store.clone(), dir.path().to_path_buf());
        tokio::task::spawn_blocking(move || python_block(&block, &site, &store, &path))
            .await
            .unwrap();
    }
    // Every reason not to run a line is still needed, so the list cannot hide a snippet.
    for (start, _) in NOT_RUN {
        assert!(
            plan.skipped
                .iter()
                .any(|(line, _)| line.trim_start().starts_with(start)),
            "NOT_RUN names `{start}`, which no page has any more"
        );
    }
    eprintln!("{ran} curl calls; not run: {:#?}", plan.skipped);
    let _ = stop.send(());
}

both_stores!(tier2: docs_snippets_run);

/// The README's test commands (tier 1 and tier 2) are exactly what CI runs, and the README's set-up commands come
/// before any `odqs` command, after it says how to get the binary.
#[test]
fn readme_set_up_is_what_ci_runs() {
    let root = py::package_dir();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    let blocks = blocks_of("README.md", &readme);
    let test_command = blocks
        .iter()
        .flat_map(|b| code_lines(&b.text).map(str::to_string).collect::<Vec<_>>())
        .find(|l| l.starts_with("cargo test"))
        .expect("the README's test command");
    let test_command = test_command.split('#').next().unwrap().trim();
    let tier2_command = "bash tests/tier2.sh";
    assert!(readme.contains(&format!("```sh\n{tier2_command}\n```")));
    for command in [test_command, tier2_command] {
        assert!(
            ci.lines().any(|l| l.trim() == command),
            "`{command}` is not a line of .ci/run"
        );
    }
    let first_odqs = blocks
        .iter()
        .position(|b| {
            code_lines(&b.text)
                .any(|l| l.trim_start().starts_with("odqs ") || l.contains("$(odqs "))
        })
        .expect("an odqs command");
    let how = blocks
        .iter()
        .position(|b| b.text.contains("cargo install --path ."))
        .expect("how to get the binary");
    assert!(
        how < first_odqs,
        "the README says how to get odqs before using it"
    );
    assert!(readme.contains("target/release/odqs"));
    let words = readme.split_whitespace().count();
    assert!(words <= 1_600, "the README is a front page: {words} words");
    // Nothing points outside the repository.
    for path in pages().iter().chain([&root.join("ARCHITECTURE.md")]) {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(
            !text.contains("../shared"),
            "{} points outside the repository",
            path.display()
        );
    }
}
