//! The `odqs` binary as an operator runs it: `serve` on an empty directory, `import`,
//! `datasets list|remove`, `token create`, `migrate`, and configuration errors.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::helpers::{TestStore, write_file};
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
    /// The public URL it logged.
    public_url: String,
    log: mpsc::Receiver<String>,
}

impl Server {
    /// Starts `odqs serve` on a free port and waits for its "serving" log line.
    fn start(command: Command) -> Server {
        Server::start_with(
            command,
            &["serve", "--listen", "127.0.0.1:0", "--log-format", "json"],
        )
    }

    /// Starts `odqs` with `args` (which must make it serve with JSON logs) and waits for its
    /// "serving" log line.
    #[allow(clippy::zombie_processes)] // waited for in `terminate` or, on a panic, in `drop`
    fn start_with(mut command: Command, args: &[&str]) -> Server {
        let mut child = command
            .args(args)
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
                    public_url: event["public_url"].as_str().unwrap().to_string(),
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
    let mut command = odqs(dir.path());
    // A small budget for requests without a token, to see refusals in the log.
    command.env("ODQS_ADDRESS_RATE_LIMIT", "3");
    let server = Server::start(command);
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
    let mut statuses = Vec::new();
    for _ in 0..6 {
        let answer = client
            .get(format!("{}/api/v1/datasets", server.base))
            .send()
            .await
            .unwrap();
        statuses.push(answer.status().as_u16());
    }
    assert_eq!(statuses, [401, 401, 401, 429, 429, 429]);

    let (clean, log) = server.terminate();
    assert!(clean, "graceful shutdown exits 0; log: {log:?}");
    assert!(log.iter().any(|l| l.contains("shutting down")), "{log:?}");
    // Structured request logs: one JSON event per request, with its path and status.
    let requests: Vec<Value> = log
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["message"] == odqs::http::access_log::MESSAGE)
        .collect();
    assert!(
        requests.iter().any(|e| e["method"] == "GET"
            && e["path"] == "/nope"
            && e["status"] == 404
            && e["latency_ms"].as_f64().is_some_and(|ms| ms >= 0.0)),
        "{log:?}"
    );
    // Refusals are not written one by one at the default level (a flood's echo); the
    // maintenance tick sums them up instead.
    let api: Vec<u64> = requests
        .iter()
        .filter(|e| e["path"] == "/api/v1/datasets")
        .filter_map(|e| e["status"].as_u64())
        .collect();
    assert_eq!(api, [401, 401, 401], "{log:?}");

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
    let datasets = crate::helpers::stored::datasets(&store.store)
        .await
        .unwrap();
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
        summary.starts_with("imported towns version 1: 3 records, 2 fields in "),
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
    let dataset = crate::helpers::stored::find_dataset(&store.store, "towns")
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
    crate::helpers::import_file(&store, &file, "towns", None, Some("town"))
        .await
        .unwrap();
    let token = crate::helpers::api_token(&store).await;
    let router = store.router();
    let path = "/api/v1/datasets/towns/records";
    let first = crate::helpers::get_with(&router, path, Some(&token), &[]).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let removed =
        run(odqs(dir).args(["datasets", "remove", "towns", "--database-url", &store.url]));
    assert!(removed.status.success(), "{}", stderr(&removed));
    let since = std::time::Instant::now();
    let bound = query::DATASET_FRESH_FOR + Duration::from_secs(2);
    loop {
        let answer = crate::helpers::get_with(&router, path, Some(&token), &[]).await;
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

/// `--scope` and `--expires-in` (contract §13.3): stored as asked, in canonical order; a bad
/// word, a dataset not published, a scope over 1 KB, a malformed or non-positive lifetime are
/// configuration errors naming the flag, and mint nothing.
async fn token_create_with_scope_and_lifetime(store: TestStore) {
    let dir = store.dir.path();
    let path = write_file(&store, "towns.csv", b"code,name\na,Alpha\n");
    crate::helpers::import_file(&store, &path, "towns", None, Some("code"))
        .await
        .unwrap();
    let create = |scope: &str, expires_in: &str| {
        run(odqs(dir).args([
            "token",
            "create",
            "--email",
            "ada@example.org",
            "--scope",
            scope,
            "--expires-in",
            expires_in,
            "--database-url",
            &store.url,
        ]))
    };
    let made = create("dataset:towns read", "30d");
    assert!(made.status.success(), "{}", stderr(&made));
    let token = stdout(&made).trim().to_string();
    let stored = entity::api_token::Entity::find()
        .filter(entity::api_token::Column::TokenHash.eq(odqs::auth::token::hash(&token)))
        .one(&store.store.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.scope, "read dataset:towns");
    let lives = stored.expires_at.unwrap() - stored.created_at;
    assert!(
        (lives - time::Duration::days(30)).abs() < time::Duration::minutes(1),
        "{lives}"
    );
    let long = format!("read {}", "dataset:towns ".repeat(80));
    for (scope, expires_in, flag) in [
        ("read write", "30d", "--scope"),
        ("read dataset:nope", "30d", "--scope"),
        ("dataset:towns", "30d", "--scope"),
        (long.as_str(), "30d", "--scope"),
        ("read", "30", "--expires-in"),
        ("read", "-1d", "--expires-in"),
        ("read", "0d", "--expires-in"),
        ("read", "soon", "--expires-in"),
    ] {
        let bad = create(scope, expires_in);
        assert_eq!(bad.status.code(), Some(2), "{scope} {expires_in}");
        let message = stderr(&bad);
        assert!(message.contains(flag), "{message}");
        assert_eq!(message.lines().count(), 1, "{message}");
        assert!(stdout(&bad).is_empty());
    }
    let count = entity::api_token::Entity::find()
        .all(&store.store.db)
        .await
        .unwrap()
        .len();
    assert_eq!(count, 1, "refusals mint nothing");
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

/// `ODQS_LISTEN` alone moves the public URL with it: links, the device flow's addresses and
/// the site's origin check all use the address the service listens on, so signing up there
/// works.
async fn public_url_follows_listen(store: TestStore) {
    let mut command = odqs(store.dir.path());
    command
        .env("DATABASE_URL", &store.url)
        .env("ODQS_LISTEN", "127.0.0.1:0");
    let server = Server::start_with(command, &["serve", "--log-format", "json"]);
    assert_eq!(server.public_url, server.base, "the start-up log names it");
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();

    let device: Value = client
        .post(format!("{}/api/v1/auth/device", server.base))
        .form(&[("client", "cli-test")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        device["verification_uri"],
        format!("{}/device", server.base),
        "{device}"
    );
    let metadata: Value = client
        .get(format!(
            "{}/.well-known/oauth-authorization-server",
            server.base
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["issuer"], server.base.as_str());

    // Sign-up from the page the browser was given, posted from its origin: not refused.
    let form = client
        .get(format!("{}/signup", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 200);
    let cookie = form
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_string())
        .find(|c| c.starts_with("odqs_csrf="))
        .expect("a pre-session CSRF cookie");
    let page = form.text().await.unwrap();
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the form's CSRF field")
        .to_string();
    let signed_up = client
        .post(format!("{}/signup", server.base))
        .header("origin", &server.base)
        .header("cookie", &cookie)
        .form(&[
            ("csrf", csrf.as_str()),
            ("email", "moved@example.org"),
            ("password", "a long enough password"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(
        signed_up.status(),
        303,
        "{}",
        signed_up.text().await.unwrap_or_default()
    );
    let (clean, _) = server.terminate();
    assert!(clean);
}

/// `odqs grant publish|list|revoke` (contract §14.1): a grant is kept once, listed with its
/// account, right, pattern and granter, and gone once revoked; a bad pattern or e-mail is a
/// configuration error naming its flag, and revoking what was never granted fails.
async fn grant_publish_list_and_revoke(store: TestStore) {
    let dir = store.dir.path();
    let grant = |args: &[&str]| {
        run(odqs(dir)
            .arg("grant")
            .args(args)
            .args(["--database-url", &store.url]))
    };
    let ada = ["--email", "Ada@Example.org", "--datasets", "city-*"];
    let made = grant(&[&["publish"][..], &ada, &["--by", "ops"]].concat());
    assert!(made.status.success(), "{}", stderr(&made));
    assert_eq!(stdout(&made).trim(), "ada@example.org may publish city-*");
    let again = grant(&[&["publish"][..], &ada].concat());
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stdout(&again).contains("already may publish"));
    let bob = grant(&["publish", "--email", "bob@example.org", "--datasets", "*"]);
    assert!(bob.status.success(), "{}", stderr(&bob));
    let listed = stdout(&grant(&["list"]));
    let lines: Vec<Vec<&str>> = listed
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert_eq!(
        lines[0][..4],
        ["ada@example.org", "publish", "city-*", "ops"]
    );
    assert_eq!(lines[1][..4], ["bob@example.org", "publish", "*", "cli"]);
    let revoked = grant(&[&["revoke"][..], &ada].concat());
    assert!(revoked.status.success(), "{}", stderr(&revoked));
    let listed = stdout(&grant(&["list"]));
    assert_eq!(listed.lines().count(), 2, "{listed}");
    assert!(!listed.contains("ada@"), "{listed}");
    let twice = grant(&[&["revoke"][..], &ada].concat());
    assert_eq!(twice.status.code(), Some(1));
    assert!(
        stderr(&twice).contains("holds no grant"),
        "{}",
        stderr(&twice)
    );
    for (args, flag) in [
        (
            ["--email", "ada@example.org", "--datasets", "a b"],
            "--datasets",
        ),
        (
            ["--email", "ada@example.org", "--datasets", "*x"],
            "--datasets",
        ),
        (["--email", "nobody", "--datasets", "*"], "--email"),
    ] {
        let bad = grant(&[&["publish"][..], &args].concat());
        assert_eq!(bad.status.code(), Some(2), "{args:?}");
        let message = stderr(&bad);
        assert!(message.contains(flag), "{message}");
        assert_eq!(message.lines().count(), 1, "{message}");
    }
    let kept = entity::grant::Entity::find()
        .all(&store.store.db)
        .await
        .unwrap();
    assert_eq!(kept.len(), 1, "refusals grant nothing");
}

both_stores!(
    grant_publish_list_and_revoke,
    public_url_follows_listen,
    serve_loads_demo_into_empty_store,
    import_list_and_remove,
    removal_by_another_process_reaches_the_service,
    token_create_prints_only_the_token,
    token_create_with_scope_and_lifetime,
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
    // Each names the setting as it was given, the variable or the flag, on one line.
    for (env, args, expected) in [
        (
            Some(("ODQS_API_RATE_LIMIT", "lots")),
            &["serve"][..],
            "odqs: configuration error: ODQS_API_RATE_LIMIT=lots: invalid digit found in string\n",
        ),
        (
            Some(("ODQS_DEMO_DATA", "maybe")),
            &[][..],
            "odqs: configuration error: ODQS_DEMO_DATA=maybe: must be one of true, false\n",
        ),
        (
            None,
            &["serve", "--api-rate-limit", "lots"][..],
            "odqs: configuration error: --api-rate-limit=lots: invalid digit found in string\n",
        ),
        (
            // The flag wins over the variable, and is the one named.
            Some(("ODQS_MAX_CONNECTIONS", "12")),
            &["serve", "--max-connections=many"][..],
            "odqs: configuration error: --max-connections=many: invalid digit found in string\n",
        ),
        (
            Some(("ODQS_MAX_RECORD_MB", "-1")),
            &["import", "x.csv", "--slug", "x"][..],
            "odqs: configuration error: ODQS_MAX_RECORD_MB=-1: invalid digit found in string\n",
        ),
        (
            Some(("ODQS_LISTEN", "bad")),
            &["serve"][..],
            "odqs: configuration error: ODQS_LISTEN must be a socket address like 127.0.0.1:8080, got \"bad\"\n",
        ),
        (
            None,
            &["serve", "--listen", "bad"][..],
            "odqs: configuration error: --listen must be a socket address like 127.0.0.1:8080, got \"bad\"\n",
        ),
        (
            Some(("ODQS_HEADER_TIMEOUT_SECS", "0")),
            &[][..],
            "odqs: configuration error: ODQS_HEADER_TIMEOUT_SECS must be at least 1, got 0\n",
        ),
        (
            None,
            &["serve", "--bogus"][..],
            "odqs: configuration error: unexpected argument '--bogus' found; `odqs --help` lists the commands and flags\n",
        ),
        (
            None,
            &["import", "x.csv"][..],
            "odqs: configuration error: the following required arguments were not provided: --slug <SLUG>; `odqs --help` lists the commands and flags\n",
        ),
    ] {
        let mut command = odqs(dir.path());
        command.args(args);
        if let Some((name, value)) = env {
            command.env(name, value);
        }
        let output = run(&mut command);
        assert_eq!(output.status.code(), Some(2), "{env:?} {args:?}");
        assert_eq!(stderr(&output), expected, "{env:?} {args:?}");
        assert!(output.stdout.is_empty());
    }
    // Help and the version are not mistakes.
    let help = run(odqs(dir.path()).arg("--help"));
    assert_eq!(help.status.code(), Some(0));
    assert!(stdout(&help).contains("ODQS_API_RATE_LIMIT"));
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

/// `--metrics-listen` opens the operator's port: `/metrics` there, counting what the public
/// port answered; the public port does not answer it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_a_metrics_port() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with(
        odqs(dir.path()),
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
    );
    let metrics = loop {
        let line = server
            .log
            .recv_timeout(Duration::from_secs(60))
            .expect("the metrics port's log line");
        if let Ok(event) = serde_json::from_str::<Value>(&line)
            && event["message"] == "metrics are served at /metrics"
        {
            break format!("http://{}/metrics", event["listen"].as_str().unwrap());
        }
    };
    let client = reqwest::Client::new();
    let health = client
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .unwrap();
    assert!(health.headers().contains_key("x-request-id"));
    let public = client
        .get(format!("{}/metrics", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(public.status(), 404);
    let scraped = client.get(&metrics).send().await.unwrap();
    assert_eq!(scraped.status(), 200);
    let text = scraped.text().await.unwrap();
    assert!(
        text.contains("odqs_http_requests_total{route=\"/healthz\",status=\"200\"} 1"),
        "{text}"
    );
    let (clean, _) = server.terminate();
    assert!(clean);
}
