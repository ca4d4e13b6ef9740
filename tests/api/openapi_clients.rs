//! The OpenAPI document as third-party tools use it (contract §12.5), on both stores,
//! against a real server on a socket with the bundled demo datasets:
//!
//! - the document validates as OpenAPI 3 (`openapi-spec-validator`);
//! - schemathesis finds no failure of any check, a bounded number of cases per operation;
//! - a client that `openapi-python-client` generates from the live document lists datasets,
//!   filters flights with `carrier=UA` and a sort, reads a record and aggregates.
//!
//! The Python tools come from a venv the tests make (`tests/api/helpers/py/mod.rs`), pinned in
//! `tests/api/helpers/py/requirements.txt`.

use std::net::SocketAddr;
use std::process::Output;
use std::time::Instant;

use crate::helpers::py;
use crate::helpers::{TestStore, api_token, load_demo};
use odqs::state::AppState;
use query::memory::{DEFAULT_BUDGET_BYTES, IndexPolicy};
use query::params::{MAX_PAGE, MAX_PER_PAGE};
use serde_json::Value;
use tokio::net::TcpListener;

/// Cases schemathesis generates per operation and phase: enough to reach every parameter's
/// edges, few enough that a run takes seconds.
const MAX_EXAMPLES: &str = "30";
/// A fixed seed, so a failure is reproduced by running the test again;
/// `ODQS_SCHEMATHESIS_SEED` explores other cases.
const DEFAULT_SEED: &str = "20251";

/// A server on a socket with the demo datasets, a token, and budgets high enough that a
/// checker is never throttled (429 stays documented and is tested in `security_http`).
struct Served {
    addr: SocketAddr,
    token: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Served {
    async fn start(store: &TestStore, policy: IndexPolicy) -> Self {
        load_demo(store).await;
        let token = api_token(store).await;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = AppState::new(store.store.clone(), &format!("http://{addr}"))
            .with_index_policy(policy)
            .with_rate_limits(1_000_000, 1_000_000);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(odqs::app::serve(state, listener, async move {
            let _ = stopped.await;
        }));
        Served {
            addr,
            token,
            stop: Some(stop),
            task,
        }
    }

    fn base_url(&self) -> String {
        format!("http://{}/api/v1", self.addr)
    }

    /// The live document, as a client fetches it.
    async fn document(&self) -> Value {
        let response = reqwest::get(format!("{}/openapi.json", self.base_url()))
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    }

    /// Runs a blocking command (a Python tool) without stalling the server's runtime.
    async fn run(&self, command: std::process::Command) -> Output {
        let mut command = command;
        tokio::task::spawn_blocking(move || command.output().expect("run a Python tool"))
            .await
            .unwrap()
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        (&mut self.task).await.unwrap().unwrap();
    }
}

fn text(output: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The query parameter `name` of the operation at `path`.
fn parameter<'a>(doc: &'a Value, path: &str, name: &str) -> &'a Value {
    doc["paths"][path]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("{path} has no parameter {name}"))
}

/// The document validates as OpenAPI 3.x, and says what generators need to hear.
async fn document_validates(store: TestStore) {
    let venv = tokio::task::spawn_blocking(py::venv).await.unwrap();
    let served = Served::start(&store, IndexPolicy::OFF).await;
    let doc = served.document().await;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));

    let file = store.dir.path().join("openapi.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let mut validate = venv.command("openapi-spec-validator");
    validate.arg(&file);
    let output = served.run(validate).await;
    py::check("openapi-spec-validator", &output);
    assert!(text(&output).contains("OK"), "{}", text(&output));

    // Filters: one form/explode object whose members are sent as plain pairs.
    for path in ["/datasets/{slug}/records", "/datasets/{slug}/agg"] {
        let filters = parameter(&doc, path, "filters");
        assert_eq!(filters["in"], "query");
        assert_eq!(filters["style"], "form");
        assert_eq!(filters["explode"], true);
        assert_eq!(filters["schema"]["type"], "object");
        assert_eq!(
            filters["schema"]["additionalProperties"]["type"], "string",
            "{path}"
        );
        let params = doc["paths"][path]["get"]["parameters"].as_array().unwrap();
        assert!(
            params
                .iter()
                .all(|p| !p["name"].as_str().unwrap().contains(['<', '['])),
            "{path}: a parameter named like a placeholder"
        );
        for status in ["200", "304", "400", "401", "404", "413", "429", "503"] {
            assert!(
                doc["paths"][path]["get"]["responses"][status].is_object(),
                "{path} lacks {status}"
            );
        }
    }
    // Bounds, as the server enforces them.
    let page = &parameter(&doc, "/datasets/{slug}/records", "page")["schema"];
    assert_eq!(page["minimum"], 1);
    assert_eq!(page["maximum"], MAX_PAGE);
    let per_page = &parameter(&doc, "/datasets/{slug}/records", "per_page")["schema"];
    assert_eq!(per_page["minimum"], 1);
    assert_eq!(per_page["maximum"], MAX_PER_PAGE);
    let group_by = parameter(&doc, "/datasets/{slug}/agg", "group_by");
    assert_eq!(group_by["required"], true);
    assert_eq!(group_by["schema"]["minLength"], 1);
    // The error body has every member the server sends; 429 keeps Retry-After.
    let error = &doc["components"]["schemas"]["ErrorBody"]["properties"];
    for member in [
        "error",
        "message",
        "parameter",
        "field",
        "type",
        "allowed",
        "limit_bytes",
        "retry_after",
    ] {
        assert!(error[member].is_object(), "ErrorBody lacks {member}");
    }
    let too_many = &doc["components"]["responses"]["TooManyRequests"];
    assert!(too_many["headers"]["Retry-After"].is_object());
    assert!(too_many["headers"]["RateLimit"].is_object());
    // Typed statistics, and the other endpoints.
    let stats = &doc["components"]["schemas"]["Stats"]["properties"];
    for member in ["count", "sum", "avg", "min", "max", "percentiles"] {
        assert!(stats[member].is_object(), "Stats lacks {member}");
    }
    for (path, method) in [
        ("/auth/device", "post"),
        ("/auth/token", "post"),
        ("/graphql", "get"),
        ("/graphql", "post"),
        ("/healthz", "get"),
        ("/readyz", "get"),
    ] {
        assert!(doc["paths"][path][method].is_object(), "{method} {path}");
    }
    assert_eq!(
        doc["paths"]["/healthz"]["servers"][0]["url"],
        format!("http://{}", served.addr)
    );
    served.stop().await;
}

/// schemathesis, every check, against the live server answering from the store (no in-memory
/// index): 0 failures.
async fn schemathesis_finds_nothing(store: TestStore) {
    let venv = tokio::task::spawn_blocking(py::venv).await.unwrap();
    let served = Served::start(&store, IndexPolicy::OFF).await;
    let seed = std::env::var("ODQS_SCHEMATHESIS_SEED").unwrap_or_else(|_| DEFAULT_SEED.into());
    let mut run = venv.command("schemathesis");
    run.args([
        "--no-color",
        "--config-file",
        "tests/api/helpers/py/schemathesis.toml",
        "run",
    ])
    .arg(format!("{}/openapi.json", served.base_url()))
    .args([
        "--header",
        &format!("Authorization: Bearer {}", served.token),
    ])
    .args(["--max-examples", MAX_EXAMPLES, "--seed", &seed])
    // One worker: CPython 3.11 can fail parsing in two threads at once ("AST constructor
    // recursion depth mismatch"), which schemathesis' workers are.
    .args(["--request-timeout", "30", "--workers", "1"])
    .env("COLUMNS", "120");
    let started = Instant::now();
    let output = served.run(run).await;
    let out = text(&output);
    eprintln!(
        "schemathesis on {:?}: {:.1} s\n{}",
        store.kind,
        started.elapsed().as_secs_f64(),
        out.lines()
            .skip_while(|l| !l.contains("SUMMARY"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    py::check("schemathesis", &output);
    // 22 operations: the reads, the base URL's index, token revocation and the calling token,
    // and the four of publishing (refused to this token, which has no `publish`: their answers
    // are checked against the document all the same).
    assert!(out.contains("Tested: 22"), "every operation tested:\n{out}");
    assert!(!out.contains("failures"), "{out}");
    served.stop().await;
}

/// A client generated from the live document lists, filters with `carrier=UA` and a sort, reads
/// a record and aggregates; its answers match what the API says directly.
async fn generated_python_client_works(store: TestStore) {
    let venv = tokio::task::spawn_blocking(py::venv).await.unwrap();
    let served = Served::start(&store, IndexPolicy::waiting(DEFAULT_BUDGET_BYTES)).await;
    let doc = served.document().await;
    let work = store.dir.path();
    std::fs::write(work.join("openapi.json"), doc.to_string()).unwrap();
    std::fs::write(
        work.join("generator.yaml"),
        "package_name_override: odqs_client\nproject_name_override: odqs-client\npost_hooks: []\n",
    )
    .unwrap();
    let mut generate = venv.command("openapi-python-client");
    generate
        .args(["generate", "--meta", "none", "--overwrite", "--path"])
        .arg(work.join("openapi.json"))
        .arg("--output-path")
        .arg(work.join("client/odqs_client"))
        .arg("--config")
        .arg(work.join("generator.yaml"));
    let output = served.run(generate).await;
    py::check("openapi-python-client generate", &output);
    let generated = text(&output);
    // The one operation it leaves out is the upload, whose body is a CSV, NDJSON or JSON file:
    // the generator takes no `text/csv` body, and the document says what the server reads
    // rather than a type a generated client could send but the server would refuse.
    let dropped: Vec<&str> = generated
        .lines()
        .filter(|line| line.contains("will not be generated"))
        .collect();
    assert!(
        dropped
            .iter()
            .all(|line| line.contains("PUT /datasets/{slug} within publishing")),
        "the generator dropped an operation:\n{generated}"
    );
    for module in [
        "api/records/list_records.py",
        "api/records/get_record.py",
        "api/agg/aggregate.py",
        "api/datasets/list_datasets.py",
    ] {
        assert!(
            work.join("client/odqs_client").join(module).exists(),
            "{module}"
        );
    }

    let mut script = venv.command("python");
    script
        .arg(py::package_dir().join("tests/api/helpers/py/client_check.py"))
        .arg(served.base_url())
        .arg(&served.token)
        .env("PYTHONPATH", work.join("client"));
    let output = served.run(script).await;
    py::check("tests/api/helpers/py/client_check.py", &output);
    let got: Value = serde_json::from_slice(&output.stdout).expect("the script prints JSON");

    let direct = |path: String| {
        crate::helpers::get_ok_json(format!("{}{path}", served.base_url()), served.token.clone())
    };

    // Lists.
    let slugs: Vec<&str> = got["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(slugs.contains(&"flights") && slugs.contains(&"tw-scenic-spots"));
    assert_eq!(got["fields"]["carrier"], "keyword");

    // Filters with carrier=UA, sorted by dep_delay descending.
    let ua = direct("/datasets/flights/records?carrier=UA&per_page=1".into()).await;
    assert!(ua["total"].as_u64().unwrap() > 0);
    assert_eq!(got["ua"]["total"], ua["total"]);
    let all = direct("/datasets/flights/records?per_page=1".into()).await;
    assert!(got["ua"]["total"].as_u64() < all["total"].as_u64());
    let records = got["ua"]["records"].as_array().unwrap();
    assert_eq!(records.len(), 50);
    assert!(records.iter().all(|r| r["carrier"] == "UA"));
    let delays: Vec<f64> = records
        .iter()
        .filter_map(|r| r["dep_delay"].as_f64())
        .collect();
    assert!(!delays.is_empty());
    assert!(
        delays.windows(2).all(|w| w[0] >= w[1]),
        "sorted descending: {delays:?}"
    );
    let top =
        direct("/datasets/flights/records?carrier=UA&sort=dep_delay%3C&per_page=1".into()).await;
    assert_eq!(records[0]["_id"], top["records"][0]["_id"]);

    // Reads a record; a missing one is the typed 404 body.
    let id = got["record"]["_id"].as_str().unwrap();
    assert_eq!(id, records[0]["_id"].as_str().unwrap());
    let record = direct(format!("/datasets/flights/records/{id}")).await;
    assert_eq!(got["record"], record);
    assert_eq!(got["missing"], "record_not_found");

    // Aggregates UA's flights by origin with dep_delay statistics, typed.
    let agg =
        direct("/datasets/flights/agg?group_by=origin&field=dep_delay&carrier=UA".into()).await;
    assert_eq!(got["agg"]["total_records"], ua["total"]);
    assert_eq!(got["agg"]["total_groups"], agg["total_groups"]);
    let groups = got["agg"]["groups"].as_array().unwrap();
    assert!(!groups.is_empty());
    for (mine, theirs) in groups.iter().zip(agg["groups"].as_array().unwrap()) {
        assert_eq!(mine["key"], theirs["key"]);
        assert_eq!(mine["count"], theirs["stats"]["count"]);
        for stat in ["sum", "avg", "min", "max"] {
            let (a, b) = (mine[stat].as_f64(), theirs["stats"][stat].as_f64());
            assert!(a.is_some(), "{stat} typed and present");
            assert!((a.unwrap() - b.unwrap()).abs() < 1e-9, "{stat}");
        }
        assert_eq!(
            mine["p50"].as_f64(),
            theirs["stats"]["percentiles"]["50"].as_f64()
        );
    }
    served.stop().await;
}

both_stores!(
    tier2: document_validates,
    schemathesis_finds_nothing,
    generated_python_client_works,
);
