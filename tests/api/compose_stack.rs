//! The deployment files brought up for real: `docker-compose.yml` (PostgreSQL and odqs) and
//! `deploy/docker-compose.cluster.yml` (three odqs behind HAProxy, `deploy/haproxy.cfg`), with
//! the images `tests/tier2.sh` built before the tests (`deploy/images/build-base.sh`, then
//! `docker-compose build`): the files a user runs are the files run here. Each stack gets a
//! project name of its own and a free loopback port (`ODQS_HTTP_PORT=127.0.0.1:`), and is taken
//! down with its volumes (`down -v`) when the test ends, failed or not.
//!
//! Without a Docker engine, Compose or the images, these tests fail and say what to run; they
//! never skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a stack may take to answer `GET /readyz` after `up`: the first start migrates the
/// store and loads the demo datasets before it serves (a second or two here), on a machine that
/// is running the rest of the suite at the same time.
const READY_DEADLINE: Duration = Duration::from_secs(180);

/// What to run when the engine, Compose or an image is missing.
const SETUP: &str = "install Debian's docker.io, docker-compose and debootstrap, start \
    `dockerd`, then build the images as tests/tier2.sh does: `bash deploy/images/build-base.sh && \
    docker-compose build odqs` (or run `bash tests/tier2.sh`, which does all of it)";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run(mut command: impl std::borrow::BorrowMut<Command>) -> Output {
    let command = command.borrow_mut();
    command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?} ({e}); {SETUP}"))
}

/// The Compose command: Debian's `docker-compose` (1.29, what CI runs), else the `docker
/// compose` plugin (v2) where it is installed.
fn compose_program() -> Vec<&'static str> {
    let works = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if works("docker-compose", &["version"]) {
        vec!["docker-compose"]
    } else if works("docker", &["compose", "version"]) {
        vec!["docker", "compose"]
    } else {
        panic!("neither docker-compose nor `docker compose` runs here; {SETUP}")
    }
}

/// The engine answers and the images the file names exist.
fn preflight(images: &[&str]) {
    let info = run(Command::new("docker").args(["info", "--format", "{{.ServerVersion}}"]));
    assert!(
        info.status.success(),
        "no Docker engine answers `docker info`: {}; {SETUP}",
        text(&info.stderr).trim()
    );
    for image in images {
        let found =
            run(Command::new("docker").args(["image", "inspect", "--format", "{{.Id}}", image]));
        assert!(
            found.status.success(),
            "the image {image} is missing; {SETUP}"
        );
    }
}

/// One Compose project, taken down with its volumes when dropped.
struct Stack {
    program: Vec<&'static str>,
    project: String,
    file: PathBuf,
}

impl Stack {
    /// `up -d` without `--build`: the images are the ones CI built before the tests.
    fn up(file: &Path, images: &[&str]) -> Stack {
        static N: AtomicUsize = AtomicUsize::new(0);
        preflight(images);
        let stack = Stack {
            program: compose_program(),
            project: format!(
                "odqstest{}x{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ),
            file: file.to_path_buf(),
        };
        let up = run(stack.compose(&["up", "-d", "--no-build"]));
        assert!(
            up.status.success(),
            "{} up failed: {}\n{}",
            stack.file.display(),
            text(&up.stderr),
            stack.logs()
        );
        stack
    }

    fn compose(&self, args: &[&str]) -> Command {
        let mut command = Command::new(self.program[0]);
        command
            .args(&self.program[1..])
            .arg("-p")
            .arg(&self.project)
            .arg("-f")
            .arg(&self.file)
            .args(args)
            .current_dir(repo())
            // A free port on the loopback interface, read back with `port`.
            .env("ODQS_HTTP_PORT", "127.0.0.1:")
            .env_remove("ODQS_PUBLIC_URL");
        command
    }

    /// `http://127.0.0.1:PORT` where the host publishes `service`'s port 8080.
    fn base(&self, service: &str) -> String {
        let port = run(self.compose(&["port", service, "8080"]));
        let address = text(&port.stdout).trim().to_string();
        assert!(
            port.status.success() && address.starts_with("127.0.0.1:"),
            "no published port for {service}: {address:?} {}",
            text(&port.stderr)
        );
        format!("http://{address}")
    }

    /// The last lines of every service's log, for a failure message.
    fn logs(&self) -> String {
        let logs = run(self.compose(&["logs", "--no-color", "--tail", "40"]));
        format!("--- logs of {}:\n{}", self.project, text(&logs.stdout))
    }

    /// `odqs token create` run inside `service`, against the stack's own store.
    fn token(&self, service: &str, name: &str) -> String {
        let created = run(self.compose(&[
            "exec",
            "-T",
            service,
            "odqs",
            "token",
            "create",
            "--email",
            "compose@example.org",
            "--name",
            name,
        ]));
        assert!(
            created.status.success(),
            "token create in {service} failed: {}\n{}",
            text(&created.stderr),
            self.logs()
        );
        let token = text(&created.stdout).trim().to_string();
        assert!(
            !token.is_empty() && !token.contains(char::is_whitespace),
            "{token:?}"
        );
        token
    }

    /// Polls `GET {base}/readyz` until it answers 200, within [`READY_DEADLINE`].
    async fn wait_ready(&self, client: &reqwest::Client, base: &str) -> Duration {
        let started = Instant::now();
        let mut last = String::new();
        while started.elapsed() < READY_DEADLINE {
            match client
                .get(format!("{base}/readyz"))
                .timeout(Duration::from_secs(5))
                .send()
                .await
            {
                Ok(answer) if answer.status() == 200 => return started.elapsed(),
                Ok(answer) => last = format!("status {}", answer.status()),
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        panic!(
            "{base}/readyz did not answer 200 within {READY_DEADLINE:?} (last: {last})\n{}",
            self.logs()
        )
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let down = self
            .compose(&["down", "-v", "--remove-orphans", "--timeout", "5"])
            .output();
        match down {
            Ok(out) if out.status.success() => {}
            Ok(out) => eprintln!("{} down failed: {}", self.project, text(&out.stderr)),
            Err(e) => eprintln!("{} down failed: {e}", self.project),
        }
    }
}

async fn get(client: &reqwest::Client, url: &str, token: Option<&str>) -> reqwest::Response {
    let mut request = client.get(url).timeout(Duration::from_secs(60));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"))
}

/// The two demo datasets, listed to a token and refused without one.
async fn assert_token_query(client: &reqwest::Client, base: &str, token: &str) {
    let refused = get(client, &format!("{base}/api/v1/datasets"), None).await;
    assert_eq!(refused.status(), 401);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "missing_token", "{body}");

    let listed = get(client, &format!("{base}/api/v1/datasets"), Some(token)).await;
    assert_eq!(listed.status(), 200);
    let body: Value = listed.json().await.unwrap();
    let mut slugs: Vec<&str> = body["datasets"]
        .as_array()
        .unwrap_or_else(|| panic!("no datasets in {body}"))
        .iter()
        .map(|d| d["slug"].as_str().unwrap())
        .collect();
    slugs.sort_unstable();
    assert_eq!(slugs, ["flights", "tw-scenic-spots"], "{body}");
    assert_eq!(body["total"], 2);
}

tier2! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn compose_up_answers_a_token_query() {
        compose_up().await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cluster_routes_by_slug_behind_haproxy() {
        cluster_behind_haproxy().await
    }
}

/// `docker-compose up` brings up PostgreSQL and odqs; odqs loads the demo datasets into
/// PostgreSQL, a token minted with `odqs token create` in the container lists them, and a
/// request without one is refused. `odqs import` in the container publishes the whole of
/// flights; then odqs is killed in the middle of its export: the client sees the stream cut
/// (an error reading the body), never a well-formed shorter answer.
async fn compose_up() {
    let stack = Stack::up(&repo().join("docker-compose.yml"), &["odqs", "postgres:15"]);
    let client = reqwest::Client::new();
    let base = stack.base("odqs");
    let took = stack.wait_ready(&client, &base).await;
    eprintln!("compose: {base}/readyz answered 200 {took:?} after up");

    let token = stack.token("odqs", "compose");
    assert_token_query(&client, &base, &token).await;
    // The whole of flights (testdata/, 336,776 records: a 150 MB export, more than every
    // buffer between odqs and the client holds), imported with `odqs import` in the container.
    let file = std::fs::File::open(repo().join("testdata/flights.csv.gz")).unwrap();
    let copied = run(stack
        .compose(&[
            "exec",
            "-T",
            "odqs",
            "sh",
            "-c",
            "cat > /tmp/flights.csv.gz",
        ])
        .stdin(file));
    assert!(copied.status.success(), "{}", text(&copied.stderr));
    let imported = run(stack.compose(&[
        "exec",
        "-T",
        "odqs",
        "odqs",
        "import",
        "/tmp/flights.csv.gz",
        "--slug",
        "flights-full",
    ]));
    assert!(imported.status.success(), "{}", text(&imported.stderr));
    let full = get(
        &client,
        &format!("{base}/api/v1/datasets/flights-full"),
        Some(&token),
    )
    .await;
    assert_eq!(full.status(), 200);
    let full: Value = full.json().await.unwrap();
    assert_eq!(full["record_count"], 336_776, "{full}");

    // An instance killed mid-export.
    let mut export = get(
        &client,
        &format!("{base}/api/v1/datasets/flights-full/export?format=ndjson"),
        Some(&token),
    )
    .await;
    assert_eq!(export.status(), 200);
    assert!(
        export.content_length().is_none(),
        "an export is streamed, without a length"
    );
    let mut received = 0usize;
    let first = export.chunk().await.expect("the export's first bytes");
    received += first.map_or(0, |c| c.len());
    let killed = run(stack.compose(&["kill", "odqs"]));
    assert!(killed.status.success(), "{}", text(&killed.stderr));
    let ending = loop {
        match export.chunk().await {
            Ok(Some(chunk)) => received += chunk.len(),
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    let error = ending.expect_err(
        "the export of a killed instance must end in a read error (a cut stream), \
         not a well-formed end",
    );
    eprintln!("compose: export cut after {received} bytes: {error:?}");
    assert!(
        received < 150_000_000,
        "the whole export arrived ({received} bytes) before the kill"
    );
}

/// The cluster: three odqs behind HAProxy. The token query answers through HAProxy; a
/// dataset's requests all land on one instance and slugs spread over the instances (consistent
/// hashing on `/api/v1/datasets/{slug}`), other paths go round-robin to all three; an instance
/// stopped is taken out by the health checks, its slugs move and the others' stay.
async fn cluster_behind_haproxy() {
    let stack = Stack::up(
        &repo().join("deploy/docker-compose.cluster.yml"),
        &["odqs", "postgres:15", "haproxy:2.6"],
    );
    let client = reqwest::Client::new();
    let base = stack.base("haproxy");
    let took = stack.wait_ready(&client, &base).await;
    eprintln!("cluster: {base}/readyz answered 200 {took:?} after up");
    let token = stack.token("odqs-1", "cluster");

    let instance = |answer: &reqwest::Response| {
        answer
            .headers()
            .get("x-odqs-instance")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no X-Odqs-Instance in {:?}", answer.headers()))
    };

    // Round-robin: wait (bounded) until HAProxy's checks have all three instances up.
    let started = Instant::now();
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < 3 {
        assert!(
            started.elapsed() < READY_DEADLINE,
            "round-robin reached only {seen:?}\n{}",
            stack.logs()
        );
        let answer = get(&client, &format!("{base}/readyz"), None).await;
        if answer.status() == 200 {
            seen.insert(instance(&answer));
        } else {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    assert_token_query(&client, &base, &token).await;
    // The dataset backend checks its servers on its own: wait (bounded) until its checks have
    // all three up too, seen as slugs answered by three instances.
    let slugs: Vec<String> = (0..24).map(|i| format!("slug-{i}")).collect();
    let mut spread = std::collections::BTreeSet::new();
    while spread.len() < 3 {
        assert!(
            started.elapsed() < READY_DEADLINE,
            "the dataset backend reached only {spread:?}\n{}",
            stack.logs()
        );
        spread.clear();
        for slug in &slugs {
            let url = format!("{base}/api/v1/datasets/{slug}/schema.json");
            spread.insert(instance(&get(&client, &url, Some(&token)).await));
        }
    }

    // Every request of one slug, whatever follows it, lands on one instance.
    let mut home = std::collections::BTreeMap::new();
    for slug in (0..24)
        .map(|i| format!("slug-{i}"))
        .chain(["flights".into()])
    {
        let mut instances = std::collections::BTreeSet::new();
        for path in ["", "/records?per_page=1", "/agg?group_by=x", "/schema.json"] {
            let answer = get(
                &client,
                &format!("{base}/api/v1/datasets/{slug}{path}"),
                Some(&token),
            )
            .await;
            // Unknown slugs answer 404 and a bad `agg` 400: what matters is who answered.
            assert!(
                answer.status().as_u16() < 500,
                "{slug}{path}: {}",
                answer.status()
            );
            instances.insert(instance(&answer));
        }
        assert_eq!(instances.len(), 1, "{slug} answered by {instances:?}");
        home.insert(slug, instances.pop_first().unwrap());
    }
    let used: std::collections::BTreeSet<_> = home.values().cloned().collect();
    assert_eq!(used.len(), 3, "25 slugs hashed onto {used:?}");

    // Stop the instance that serves flights: its slugs move, once the checks have taken it out
    // (bounded), and every other slug stays where it was.
    let gone = home["flights"].clone();
    let stopped = run(stack.compose(&["stop", "--timeout", "5", &gone]));
    assert!(stopped.status.success(), "{}", text(&stopped.stderr));
    let started = Instant::now();
    loop {
        let answer = get(
            &client,
            &format!("{base}/api/v1/datasets/flights"),
            Some(&token),
        )
        .await;
        // 503 (no header) while HAProxy still counts the stopped instance in.
        if answer.status() == 200 && instance(&answer) != gone {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "flights still not served by another instance than {gone}: {}",
            answer.status()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    for (slug, was) in &home {
        let answer = get(
            &client,
            &format!("{base}/api/v1/datasets/{slug}"),
            Some(&token),
        )
        .await;
        let now = instance(&answer);
        if *was == gone {
            assert_ne!(now, gone, "{slug}");
        } else {
            assert_eq!(&now, was, "{slug} moved although its instance is up");
        }
    }
}
