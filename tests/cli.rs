//! The `odqs` binary as an operator runs it: `serve` on an empty directory, `import`,
//! `datasets list|remove`, `token create`, `migrate`, and configuration errors.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{TestStore, write_file};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::Value;

/// The binary with a clean environment: no configuration leaks in from the caller.
fn odqs(dir: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_odqs"));
    command.current_dir(dir);
    for (key, _) in std::env::vars() {
        if key == "DATABASE_URL" || key.starts_with("ODQS_") {
            command.env_remove(key);
        }
    }
    command
}

fn run(command: &mut Command) -> Output {
    command.output().expect("run odqs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A running `odqs serve` and the address it bound.
struct Server {
    child: Child,
    base: String,
    log: mpsc::Receiver<String>,
}

impl Server {
    /// Starts `odqs serve` on a free port and waits for its "serving" log line.
    #[allow(clippy::zombie_processes)] // waited for in `terminate` or, on a panic, in `drop`
    fn start(mut command: Command) -> Server {
        let mut child = command
            .args(["serve", "--listen", "127.0.0.1:0", "--log-format", "json"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("start odqs serve");
        let (sender, log) = mpsc::channel();
        let reader = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in reader.lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut seen = Vec::new();
        loop {
            let line = log
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|_| {
                    panic!("odqs serve did not start; it said:\n{}", seen.join("\n"))
                });
            if let Ok(event) = serde_json::from_str::<Value>(&line)
                && event["message"] == "odqs is serving"
            {
                let listen = event["listen"].as_str().unwrap().to_string();
                return Server {
                    child,
                    base: format!("http://{listen}"),
                    log,
                };
            }
            seen.push(line);
        }
    }

    /// Sends SIGTERM and returns whether the process exited cleanly, with its remaining log.
    fn terminate(mut self) -> (bool, Vec<String>) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = self.child.wait().unwrap();
        (exit.success(), self.log.try_iter().collect())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_on_an_empty_directory() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(odqs(dir.path()));
    assert!(
        dir.path().join("data/odqs.db").is_file(),
        "the embedded default store"
    );

    let client = reqwest::Client::new();
    let health = client
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(health.json::<Value>().await.unwrap()["status"], "ok");
    let ready = client
        .get(format!("{}/readyz", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    let missing = client
        .get(format!("{}/nope", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["error"], "not_found");
    assert!(body["message"].as_str().unwrap().len() > 10);

    let (clean, log) = server.terminate();
    assert!(clean, "graceful shutdown exits 0; log: {log:?}");
    assert!(log.iter().any(|l| l.contains("shutting down")), "{log:?}");
    // Structured request logs: one JSON event per request, with its path and status.
    let requests: Vec<Value> = log
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["message"] == odqs::access_log::MESSAGE)
        .collect();
    assert!(
        requests.iter().any(|e| e["method"] == "GET"
            && e["path"] == "/nope"
            && e["status"] == 404
            && e["latency_ms"].as_f64().is_some_and(|ms| ms >= 0.0)),
        "{log:?}"
    );

    // The demo datasets were loaded into the empty store, and only once.
    let list = run(odqs(dir.path()).args(["datasets", "list"]));
    assert!(list.status.success(), "{}", stderr(&list));
    let text = stdout(&list);
    assert!(text.contains("flights") && text.contains("2005"), "{text}");
    assert!(
        text.contains("tw-scenic-spots") && text.contains("507"),
        "{text}"
    );
    let again = Server::start(odqs(dir.path()));
    let (clean, log) = again.terminate();
    assert!(clean);
    assert!(
        !log.iter().any(|l| l.contains("loaded demo dataset")),
        "{log:?}"
    );
}

async fn serve_loads_demo_into_empty_store(store: TestStore) {
    let mut command = odqs(store.dir.path());
    command.env("DATABASE_URL", &store.url);
    let server = Server::start(command);
    let ready = reqwest::get(format!("{}/readyz", server.base))
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    let (clean, _) = server.terminate();
    assert!(clean);
    let datasets = common::stored::datasets(&store.store).await.unwrap();
    let slugs: Vec<_> = datasets.iter().map(|d| d.slug.as_str()).collect();
    assert_eq!(slugs, ["flights", "tw-scenic-spots"]);
    let spots = &datasets[1];
    assert_eq!(
        spots.license.as_deref(),
        Some("Open Government Data License, version 1.0 (Taiwan)")
    );
    assert_eq!(spots.record_count, 507);
}

async fn import_list_and_remove(store: TestStore) {
    let dir = store.dir.path();
    let file = write_file(
        &store,
        "towns.csv",
        b"town,people\nNorth,10\nSouth,20\nEast,\n",
    );
    let output = run(odqs(dir).args(["import"]).arg(&file).args([
        "--slug",
        "towns",
        "--id-field",
        "town",
        "--title",
        "Towns",
        "--database-url",
        &store.url,
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    let summary = stdout(&output);
    assert!(
        summary.starts_with("imported towns: 3 records, 2 fields in "),
        "{summary}"
    );
    let list = run(odqs(dir).args(["datasets", "list", "--database-url", &store.url]));
    let text = stdout(&list);
    let row = text.lines().find(|l| l.starts_with("towns ")).expect(&text);
    assert!(row.contains(" 3 ") && row.ends_with("Towns"), "{row}");

    let bad = write_file(&store, "bad.csv", b"town,people\nWest,1\nNorth,2,3\n");
    let output = run(odqs(dir).arg("import").arg(&bad).args([
        "--slug",
        "towns",
        "--database-url",
        &store.url,
    ]));
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.contains("line 3 has 3 columns where the header has 2"),
        "{message}"
    );
    let dataset = common::stored::find_dataset(&store.store, "towns")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        dataset.record_count, 3,
        "the failed import left the old version"
    );

    let removed =
        run(odqs(dir).args(["datasets", "remove", "towns", "--database-url", &store.url]));
    assert_eq!(stdout(&removed), "removed towns\n");
    let again = run(odqs(dir).args(["datasets", "remove", "towns", "--database-url", &store.url]));
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(stderr(&again).lines().count(), 1, "{}", stderr(&again));
}

/// A removal made by another process (`odqs datasets remove` beside a running service) reaches
/// the service within `DATASET_FRESH_FOR` (README "Re-imports and removals"); until then the
/// old version answers, whole.
async fn removal_by_another_process_reaches_the_service(store: TestStore) {
    let dir = store.dir.path();
    let file = write_file(&store, "towns.csv", b"town,people\nNorth,10\nSouth,20\n");
    common::import_file(&store, &file, "towns", None, Some("town"))
        .await
        .unwrap();
    let token = common::api_token(&store).await;
    let router = store.router();
    let path = "/api/v1/datasets/towns/records";
    let first = common::get_with(&router, path, Some(&token), &[]).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let removed =
        run(odqs(dir).args(["datasets", "remove", "towns", "--database-url", &store.url]));
    assert!(removed.status.success(), "{}", stderr(&removed));
    let since = std::time::Instant::now();
    let bound = graphql::query::cache::DATASET_FRESH_FOR + Duration::from_secs(2);
    loop {
        let answer = common::get_with(&router, path, Some(&token), &[]).await;
        match answer.status {
            404 => break,
            200 => assert_eq!(answer.body["total"], 2, "the old version, whole"),
            other => panic!("{other}: {}", answer.body),
        }
        let waited = since.elapsed();
        assert!(waited < bound, "still served {waited:?} after the removal");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn token_create_prints_only_the_token(store: TestStore) {
    let dir = store.dir.path();
    let create = |name: &str| {
        run(odqs(dir).args([
            "token",
            "create",
            "--email",
            " Ada@Example.org",
            "--name",
            name,
            "--database-url",
            &store.url,
        ]))
    };
    let first = create("laptop");
    assert!(first.status.success(), "{}", stderr(&first));
    let token = stdout(&first);
    let token = token.strip_suffix('\n').expect("one line");
    assert!(token.starts_with("odqs_") && token.len() == 48, "{token:?}");
    assert!(token[5..].chars().all(|c| c.is_ascii_alphanumeric()));
    let second = create("ci");
    let other = stdout(&second);
    assert_ne!(other.trim(), token);

    let users = entity::user::Entity::find()
        .all(&store.store.db)
        .await
        .unwrap();
    assert_eq!(users.len(), 1, "the account is created once");
    assert_eq!(users[0].email, "ada@example.org");
    let stored = entity::api_token::Entity::find()
        .filter(entity::api_token::Column::TokenHash.eq(odqs::auth::token::hash(token)))
        .one(&store.store.db)
        .await
        .unwrap()
        .expect("stored by its hash");
    assert_eq!(stored.name, "laptop");
    assert_eq!(stored.last4, token[token.len() - 4..]);
    assert_eq!(stored.expires_at, None, "CLI tokens never expire");
    assert_eq!(stored.user_id, users[0].id);
    let all = entity::api_token::Entity::find()
        .all(&store.store.db)
        .await
        .unwrap();
    assert!(all.iter().all(|t| !t.token_hash.contains(&token[5..])));

    let bad = run(odqs(dir).args([
        "token",
        "create",
        "--email",
        "nobody",
        "--database-url",
        &store.url,
    ]));
    assert_eq!(bad.status.code(), Some(2));
}

async fn migrate_from_empty(store: TestStore) {
    use sea_orm::PaginatorTrait;
    // The fixture already migrated its store; this one starts from nothing.
    let fresh = TestStore::unmigrated(store.kind).await;
    assert!(
        entity::user::Entity::find()
            .count(&fresh.store.db)
            .await
            .is_err()
    );
    for _ in 0..2 {
        let output = run(odqs(fresh.dir.path()).args(["migrate", "--database-url", &fresh.url]));
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(stdout(&output), "migrations applied\n");
    }
    let db = &fresh.store.db;
    assert_eq!(entity::dataset::Entity::find().count(db).await.unwrap(), 0);
    assert_eq!(
        entity::dataset_version::Entity::find()
            .count(db)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        entity::dataset_field::Entity::find()
            .count(db)
            .await
            .unwrap(),
        0
    );
    assert_eq!(entity::user::Entity::find().count(db).await.unwrap(), 0);
    assert_eq!(
        entity::api_token::Entity::find().count(db).await.unwrap(),
        0
    );
    assert_eq!(
        entity::device_grant::Entity::find()
            .count(db)
            .await
            .unwrap(),
        0
    );
}

both_stores!(
    serve_loads_demo_into_empty_store,
    import_list_and_remove,
    removal_by_another_process_reaches_the_service,
    token_create_prints_only_the_token,
    migrate_from_empty,
);

#[test]
fn configuration_errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["serve", "--listen", "nowhere"][..],
        &["serve", "--public-url", "example.org"][..],
        &["serve", "--database-url", "mysql://root:secret@db/odqs"][..],
        &["--log-format", "xml"][..],
    ] {
        let output = run(odqs(dir.path()).args(args));
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let message = stderr(&output);
        assert_eq!(message.lines().count(), 1, "{args:?}: {message}");
        assert!(
            message.starts_with("odqs: configuration error: "),
            "{message}"
        );
        assert!(!message.contains("secret"), "{message}");
    }
    let output = run(odqs(dir.path()).args(["serve"]).env("ODQS_LISTEN", "bad"));
    assert!(stderr(&output).contains("ODQS_LISTEN"));
    // A port that is taken is one line too, before the store is touched.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let output = run(odqs(dir.path()).args(["serve", "--listen", &address]));
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert_eq!(message.lines().count(), 1, "{message}");
    assert!(
        message.contains(&format!("cannot listen on {address}")),
        "{message}"
    );
    assert!(
        !dir.path().join("data").exists(),
        "nothing starts on a configuration error"
    );
}
