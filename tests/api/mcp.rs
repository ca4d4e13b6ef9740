//! The MCP endpoint (contract §12.4) driven by the official MCP Python SDK (`mcp` from
//! PyPI, in the venv of `tests/api/helpers/py/mod.rs`), on both stores, against a real server on a
//! socket with the demo datasets: it initializes, lists the six tools, and calls each; every answer
//! equals the REST answer to the same request, and every refusal carries the REST error's
//! code. A request without a valid token is refused before the protocol is spoken.

use std::net::SocketAddr;

use crate::helpers::py;
use crate::helpers::{TestStore, api_token, load_demo};
use odqs::api::mcp::tools::MAX_EXPORT_RECORDS;
use odqs::guides::tools::NAMES;
use odqs::state::AppState;
use query::memory::{DEFAULT_BUDGET_BYTES, IndexPolicy};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// A server on a socket with the demo datasets and a token.
struct Served {
    addr: SocketAddr,
    token: String,
    stop: tokio::sync::oneshot::Sender<()>,
}

impl Served {
    async fn start(store: &TestStore) -> Self {
        load_demo(store).await;
        let token = api_token(store).await;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = AppState::new(store.store.clone(), &format!("http://{addr}"))
            .with_index_policy(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES))
            .with_rate_limits(1_000_000, 1_000_000);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(odqs::app::serve(state, listener, async move {
            let _ = stopped.await;
        }));
        Served { addr, token, stop }
    }

    fn api(&self) -> String {
        format!("http://{}/api/v1", self.addr)
    }

    /// `GET {api}{path}` with the token: status and body text.
    async fn rest(&self, path: &str) -> (u16, String) {
        let response = reqwest::Client::new()
            .get(format!("{}{path}", self.api()))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    }
}

/// One tool call and the REST request it mirrors.
struct Case {
    tool: &'static str,
    arguments: Value,
    rest: &'static str,
    /// The REST answer's status, so a case meant to succeed cannot pass as two equal errors.
    status: u16,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            tool: "list_datasets",
            arguments: json!({}),
            rest: "/datasets",
            status: 200,
        },
        Case {
            tool: "list_datasets",
            arguments: json!({"page": 2, "per_page": 1}),
            rest: "/datasets?page=2&per_page=1",
            status: 200,
        },
        Case {
            tool: "describe_dataset",
            arguments: json!({"dataset": "flights"}),
            rest: "/datasets/flights",
            status: 200,
        },
        Case {
            tool: "search_records",
            arguments: json!({
                "dataset": "flights",
                "filters": {"carrier": "UA", "dep_delay[gte]": 60, "origin[in]": ["EWR", "JFK"]},
                "sort": ["dep_delay<", "_id"],
                "fields": "carrier,dep_delay,origin",
                "per_page": 5,
                "page": 2,
            }),
            rest: "/datasets/flights/records?carrier=UA&dep_delay[gte]=60&origin[in]=EWR,JFK&sort=dep_delay<,_id&fields=carrier,dep_delay,origin&per_page=5&page=2",
            status: 200,
        },
        Case {
            tool: "search_records",
            arguments: json!({"dataset": "tw-scenic-spots", "q": "溫泉", "per_page": 3}),
            rest: "/datasets/tw-scenic-spots/records?q=%E6%BA%AB%E6%B3%89&per_page=3",
            status: 200,
        },
        Case {
            tool: "search_records",
            arguments: json!({"dataset": "tw-scenic-spots", "filters": {"q[Name]": "溫泉"}, "fields": ["Name"]}),
            rest: "/datasets/tw-scenic-spots/records?q[Name]=%E6%BA%AB%E6%B3%89&fields=Name",
            status: 200,
        },
        Case {
            tool: "list_datasets",
            arguments: json!({"q": "Taiwan 景點"}),
            rest: "/datasets?q=Taiwan%20%E6%99%AF%E9%BB%9E",
            status: 200,
        },
        // A list means what repeating the parameter means in REST, never one joined text.
        Case {
            tool: "search_records",
            arguments: json!({"dataset": "flights", "filters": {"origin": "EWR", "carrier[ne]": ["UA", "AA", "DL", "B6", "EV"]}}),
            rest: "/datasets/flights/records?origin=EWR&carrier[nin]=UA,AA,DL,B6,EV",
            status: 200,
        },
        Case {
            tool: "search_records",
            arguments: json!({"dataset": "flights", "filters": {"carrier": ["UA", "AA"], "dep_delay[gte]": 300}}),
            rest: "/datasets/flights/records?carrier=UA&carrier=AA&dep_delay[gte]=300",
            status: 200,
        },
        Case {
            tool: "aggregate",
            arguments: json!({"dataset": "flights", "group_by": "carrier", "min_count": 100, "limit": 3, "sort": "count>"}),
            rest: "/datasets/flights/agg?group_by=carrier&min_count=100&limit=3&sort=count>",
            status: 200,
        },
        Case {
            tool: "search_records",
            arguments: json!({"dataset": "flights", "filters": {"origin": "JFK"}, "facet": ["carrier", "dest"], "facet_size": 4, "per_page": 2}),
            rest: "/datasets/flights/records?origin=JFK&facet=carrier,dest&facet_size=4&per_page=2",
            status: 200,
        },
        Case {
            tool: "search_records",
            arguments: json!({"dataset": "tw-scenic-spots", "q": "夜市 小吃", "sort": ["_score<"], "per_page": 5}),
            rest: "/datasets/tw-scenic-spots/records?q=%E5%A4%9C%E5%B8%82%20%E5%B0%8F%E5%90%83&sort=_score<&per_page=5",
            status: 200,
        },
        Case {
            tool: "search_records",
            arguments: json!({"dataset": "tw-scenic-spots", "filters": {"near": "25.0340,121.5645,40km"}, "sort": "_distance>", "fields": ["Name"]}),
            rest: "/datasets/tw-scenic-spots/records?near=25.0340,121.5645,40km&sort=_distance>&fields=Name",
            status: 200,
        },
        Case {
            tool: "aggregate",
            arguments: json!({"dataset": "tw-scenic-spots", "group_by": "Class1", "filters": {"bbox": "120.5,23.8,120.7,24.0"}}),
            rest: "/datasets/tw-scenic-spots/agg?group_by=Class1&bbox=120.5,23.8,120.7,24.0",
            status: 200,
        },
        Case {
            tool: "search_records",
            arguments: json!({"dataset": "flights", "facet": "dep_delay"}),
            rest: "/datasets/flights/records?facet=dep_delay",
            status: 400,
        },
        Case {
            tool: "aggregate",
            arguments: json!({"dataset": "flights", "group_by": "carrier", "min_count": 0}),
            rest: "/datasets/flights/agg?group_by=carrier&min_count=0",
            status: 400,
        },
        Case {
            tool: "aggregate",
            arguments: json!({"dataset": "flights", "group_by": "carrier", "filters": {"carrier[nin]": ["UA", "AA"]}}),
            rest: "/datasets/flights/agg?group_by=carrier&carrier[nin]=UA,AA",
            status: 200,
        },
        Case {
            tool: "search_records",
            arguments: json!({"dataset": "flights", "filters": {"carrier[ne]": []}}),
            rest: "/datasets/flights/records?carrier[ne]=",
            status: 400,
        },
        Case {
            tool: "search_records",
            arguments: json!({"dataset": "flights", "filters": {"dep_time[exists]": false}}),
            rest: "/datasets/flights/records?dep_time[exists]=false",
            status: 200,
        },
        Case {
            tool: "get_record",
            arguments: json!({"dataset": "flights", "id": "1", "fields": ["carrier", "tailnum"]}),
            rest: "/datasets/flights/records/1?fields=carrier,tailnum",
            status: 200,
        },
        Case {
            tool: "aggregate",
            arguments: json!({
                "dataset": "flights",
                "group_by": ["origin", "time_hour[month]"],
                "field": "dep_delay",
                "percentiles": [5, 95],
                "sort": "p95<",
                "limit": 4,
                "filters": {"carrier[ne]": "UA"},
            }),
            rest: "/datasets/flights/agg?group_by=origin,time_hour[month]&field=dep_delay&percentiles=5,95&sort=p95<&limit=4&carrier[ne]=UA",
            status: 200,
        },
        Case {
            tool: "aggregate",
            arguments: json!({"dataset": "flights", "group_by": "distance[500]", "field": "air_time"}),
            rest: "/datasets/flights/agg?group_by=distance[500]&field=air_time",
            status: 200,
        },
        // Refusals: the same code as REST.
        Case {
            tool: "aggregate",
            arguments: json!({"dataset": "flights", "field": "distance"}),
            rest: "/datasets/flights/agg?field=distance",
            status: 400,
        },
        Case {
            tool: "search_records",
            arguments: json!({"dataset": "flights", "filters": {"nope": "1"}}),
            rest: "/datasets/flights/records?nope=1",
            status: 400,
        },
        Case {
            tool: "search_records",
            arguments: json!({"dataset": "flights", "filters": {"carrier[gt]": true, "dep_delay[prefix]": "1"}}),
            rest: "/datasets/flights/records?carrier[gt]=true&dep_delay[prefix]=1",
            status: 400,
        },
        Case {
            tool: "search_records",
            arguments: json!({"dataset": "flights", "per_page": 101}),
            rest: "/datasets/flights/records?per_page=101",
            status: 400,
        },
        Case {
            tool: "aggregate",
            arguments: json!({"dataset": "flights", "group_by": "_id"}),
            rest: "/datasets/flights/agg?group_by=_id",
            status: 400,
        },
        Case {
            tool: "get_record",
            arguments: json!({"dataset": "flights", "id": "no-such-id"}),
            rest: "/datasets/flights/records/no-such-id",
            status: 404,
        },
        Case {
            tool: "describe_dataset",
            arguments: json!({"dataset": "no-such-dataset"}),
            rest: "/datasets/no-such-dataset",
            status: 404,
        },
        // Versions (contract §13.1): the demo's first and only version, and one never
        // published.
        Case {
            tool: "search_records",
            arguments: json!({"dataset": "flights", "version": 1, "per_page": 2, "fields": ["carrier"]}),
            rest: "/datasets/flights/records?version=1&per_page=2&fields=carrier",
            status: 200,
        },
        Case {
            tool: "get_record",
            arguments: json!({"dataset": "flights", "id": "1", "version": 1}),
            rest: "/datasets/flights/records/1?version=1",
            status: 200,
        },
        Case {
            tool: "aggregate",
            arguments: json!({"dataset": "flights", "group_by": "carrier", "version": 7}),
            rest: "/datasets/flights/agg?group_by=carrier&version=7",
            status: 404,
        },
    ]
}

/// `describe_dataset`'s `values` of flights agree with what REST counts: the most common
/// carrier, the records without a departure time, the smallest departure delay.
async fn check_values(served: &Served, values: &Value) {
    let carrier = &values["carrier"]["top"][0];
    let name = carrier["value"].as_str().expect("a carrier");
    let (_, body) = served
        .rest(&format!(
            "/datasets/flights/records?carrier={name}&per_page=1"
        ))
        .await;
    let rest: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(carrier["count"], rest["total"], "{values}");
    assert!(
        values["carrier"]["top"].as_array().unwrap().len() >= 3,
        "{values}"
    );
    let (_, body) = served
        .rest("/datasets/flights/records?dep_time[exists]=false&per_page=1")
        .await;
    let rest: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(values["dep_time"]["missing"], rest["total"]);
    assert!(rest["total"].as_u64().unwrap() > 0);
    let (_, body) = served
        .rest("/datasets/flights/records?sort=dep_delay>&per_page=1&fields=dep_delay")
        .await;
    let rest: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        values["dep_delay"]["range"]["min"],
        rest["records"][0]["dep_delay"]
    );
    assert!(
        values["dep_delay"].get("top").is_none(),
        "numbers have a range, not a list"
    );
}

both_stores!(tier2: tools_answer_as_rest);

async fn tools_answer_as_rest(store: TestStore) {
    let served = Served::start(&store).await;
    let mut calls: Vec<Value> = cases()
        .iter()
        .map(|c| json!({"name": c.tool, "arguments": c.arguments}))
        .collect();
    // The export tool: a small slice as CSV, and one over its limit.
    let export_rest = "/datasets/flights/export?format=csv&carrier=UA&origin=EWR&sort=_id&fields=carrier,origin,dep_delay";
    calls.push(json!({"name": "export_records", "arguments": {
        "dataset": "flights", "format": "csv", "filters": {"carrier": "UA", "origin": "EWR"},
        "sort": "_id", "fields": ["carrier", "origin", "dep_delay"],
    }}));
    calls.push(json!({"name": "export_records", "arguments": {"dataset": "flights"}}));
    // Arguments that do not fit the input schema; a tool that does not exist.
    calls.push(
        json!({"name": "search_records", "arguments": {"dataset": "flights", "page": "two"}}),
    );
    calls.push(json!({"name": "search_records", "arguments": {"dataset": "flights", "filters": {"sort": "x"}}}));

    let work = tempfile::tempdir().unwrap();
    let calls_path = work.path().join("calls.json");
    std::fs::write(&calls_path, serde_json::to_vec(&calls).unwrap()).unwrap();
    let venv = tokio::task::spawn_blocking(py::venv).await.unwrap();
    let mut script = venv.command("python");
    script
        .arg(py::package_dir().join("tests/api/helpers/py/mcp_check.py"))
        .arg(format!("{}/mcp", served.api()))
        .arg(&served.token)
        .arg(&calls_path);
    let output = tokio::task::spawn_blocking(move || script.output().unwrap())
        .await
        .unwrap();
    py::check("tests/api/helpers/py/mcp_check.py", &output);
    let got: Value = serde_json::from_slice(&output.stdout).expect("the script prints JSON");

    assert_eq!(got["server_info"]["name"], "odqs");
    let names: Vec<&str> = got["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, NAMES);
    for tool in got["tools"].as_array().unwrap() {
        let name = &tool["name"];
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{name}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
        let description = tool["description"].as_str().unwrap();
        assert!(description.len() > 60, "{name}: {description}");
    }
    // What a call needs is marked so: an aggregate without group_by is refused.
    let aggregate = got["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "aggregate")
        .unwrap();
    assert_eq!(
        aggregate["inputSchema"]["required"],
        json!(["dataset", "group_by"]),
        "{aggregate}"
    );
    let search = &got["tools"][2];
    assert!(search["inputSchema"]["properties"]["filters"].is_object());
    assert_eq!(
        search["inputSchema"]["properties"]["per_page"]["maximum"],
        100
    );
    assert!(
        search["description"]
            .as_str()
            .unwrap()
            .contains("keyword: gt, gte, lt, lte, ne, in, nin, exists, prefix")
    );

    // Resources: each dataset's guide, the same text as GET skill.md.
    let uris: Vec<&str> = got["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    let site = format!("http://{}", served.addr);
    assert_eq!(
        uris,
        [
            format!("{site}/datasets/flights/skill.md"),
            format!("{site}/datasets/tw-scenic-spots/skill.md"),
        ]
    );
    for uri in uris {
        let page = reqwest::get(uri).await.unwrap().text().await.unwrap();
        let read = &got["guides"][uri]["contents"][0];
        assert_eq!(read["mimeType"], "text/markdown");
        assert_eq!(read["text"], page.as_str(), "{uri}");
        assert!(page.contains("## Missing values"), "{uri}");
    }

    let results = got["results"].as_array().unwrap();
    assert_eq!(results.len(), calls.len());
    for (case, result) in cases().iter().zip(results) {
        let (status, body) = served.rest(case.rest).await;
        let rest: Value = serde_json::from_str(&body).unwrap();
        let what = format!("{} {} ~ {}", case.tool, case.arguments, case.rest);
        assert_eq!(status, case.status, "{what}: {body}");
        if status == 200 {
            assert_eq!(result["isError"], false, "{what}: {result}");
            let mut answer = result["structuredContent"].clone();
            let mut text: Value =
                serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
            if case.tool == "describe_dataset" {
                // The metadata, and beside it what skill.md says of each field.
                let values = answer
                    .as_object_mut()
                    .unwrap()
                    .remove("values")
                    .expect("values");
                text.as_object_mut().unwrap().remove("values");
                check_values(&served, &values).await;
            }
            assert_eq!(answer, rest, "{what}");
            assert_eq!(text, rest, "{what}");
        } else {
            assert_eq!(result["isError"], true, "{what}: {result}");
            assert_eq!(
                result["structuredContent"]["error"], rest["error"],
                "{what}: {result}"
            );
            assert_eq!(result["structuredContent"], rest, "{what}");
        }
    }
    let n = cases().len();
    let (status, csv) = served.rest(export_rest).await;
    assert_eq!(status, 200);
    assert_eq!(results[n]["isError"], false);
    assert_eq!(results[n]["content"][0]["text"], csv);
    assert!(csv.lines().count() > 10, "{csv}");
    let too_many = &results[n + 1];
    assert_eq!(too_many["isError"], true);
    assert_eq!(too_many["structuredContent"]["error"], "invalid_parameter");
    let message = too_many["structuredContent"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("at most {MAX_EXPORT_RECORDS}"))
            && message.contains("/datasets/flights/export"),
        "{message}"
    );
    for refused in &results[n + 2..] {
        assert_eq!(refused["isError"], true, "{refused}");
        assert_eq!(
            refused["structuredContent"]["error"], "invalid_parameter",
            "{refused}"
        );
    }
    let _ = served.stop.send(());
}

both_stores!(a_bad_token_is_refused);

/// Without a token, or with a wrong one, `/mcp` answers the API's 401 (JSON body with the
/// code, `WWW-Authenticate: Bearer`) and runs nothing.
async fn a_bad_token_is_refused(store: TestStore) {
    let served = Served::start(&store).await;
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}},
    });
    for (token, code) in [
        (None, "missing_token"),
        (Some("odqs_wrong"), "invalid_token"),
    ] {
        let mut request = reqwest::Client::new()
            .post(format!("{}/mcp", served.api()))
            .header("accept", "application/json, text/event-stream")
            .json(&initialize);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401);
        assert!(
            response.headers()["www-authenticate"]
                .to_str()
                .unwrap()
                .starts_with("Bearer")
        );
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], code, "{body}");
    }
    // With the token the same request is answered.
    let response = reqwest::Client::new()
        .post(format!("{}/mcp", served.api()))
        .header("accept", "application/json, text/event-stream")
        .bearer_auth(&served.token)
        .json(&initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["result"]["serverInfo"]["name"], "odqs");
    let _ = served.stop.send(());
}

/// `odqs serve` as an operator runs it (JSON logs on standard error), with `DATABASE_URL` of
/// `store`, and every line it logged, once stopped.
struct Process {
    child: std::process::Child,
    base: String,
    log: std::sync::mpsc::Receiver<String>,
}

impl Process {
    #[allow(clippy::zombie_processes)] // waited for in `stop`, or killed and waited for on drop
    fn start(store: &TestStore) -> Process {
        use std::io::BufRead;
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_odqs"));
        for (key, _) in std::env::vars() {
            if key == "DATABASE_URL" || key.starts_with("ODQS_") {
                command.env_remove(key);
            }
        }
        let mut child = command
            .current_dir(store.dir.path())
            .env("DATABASE_URL", &store.url)
            .args(["serve", "--listen", "127.0.0.1:0", "--log-format", "json"])
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("start odqs serve");
        let (sender, log) = std::sync::mpsc::channel();
        let reader = std::io::BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in reader.lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        loop {
            let line = log
                .recv_timeout(std::time::Duration::from_secs(120))
                .expect("odqs serve did not start");
            if let Ok(event) = serde_json::from_str::<Value>(&line)
                && event["message"] == "odqs is serving"
            {
                let base = format!("http://{}", event["listen"].as_str().unwrap());
                return Process { child, base, log };
            }
        }
    }

    /// Stops the server (SIGTERM) and returns every line it logged after starting.
    fn stop(mut self) -> Vec<String> {
        let status = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        assert!(self.child.wait().unwrap().success());
        self.log.try_iter().collect()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

both_stores!(a_clients_text_reaches_the_log_clipped);

/// Five requests with a method name of a megabyte wrote 5 MB of log. Now a method,
/// a request id or params of that size leave lines of a few hundred bytes; unknown methods
/// are -32601 and params that do not fit a known method -32602, with short messages.
async fn a_clients_text_reaches_the_log_clipped(store: TestStore) {
    use odqs::http::resilience::MAX_BODY_BYTES;
    use query::log_text::MAX_LOGGED_BYTES;

    let token = api_token(&store).await;
    let server = Process::start(&store);
    let client = reqwest::Client::new();
    let post = |body: Vec<u8>| {
        client
            .post(format!("{}/api/v1/mcp", server.base))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .bearer_auth(&token)
            .body(body)
            .send()
    };
    let huge = "m".repeat(MAX_BODY_BYTES - 200);
    let half = "i".repeat(MAX_BODY_BYTES / 2 - 200);
    let mut sent = 0;
    for request in [
        json!({"jsonrpc": "2.0", "id": 1, "method": huge}),
        json!({"jsonrpc": "2.0", "id": 2, "method": huge}),
        json!({"jsonrpc": "2.0", "id": 3, "method": huge}),
        json!({"jsonrpc": "2.0", "id": half, "method": half}),
        json!({"jsonrpc": "2.0", "id": half, "method": "tools/call", "params": {"arguments": {"x": half}}}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "notifications/x", "params": {"x": huge[..MAX_BODY_BYTES / 2]}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {"uri": half}}),
        json!({"jsonrpc": "2.0", "id": 8, "method": "initialize", "params": {
            "protocolVersion": half, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    ] {
        let body = serde_json::to_vec(&request).unwrap();
        assert!(body.len() <= MAX_BODY_BYTES, "{}", body.len());
        sent += body.len();
        let response = post(body).await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let method = request["method"].as_str().unwrap();
        let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        match method {
            "tools/call" => {
                assert_eq!(answer["error"]["code"], -32602, "{status}");
                let message = answer["error"]["message"].as_str().unwrap();
                assert!(message.len() < 200, "{message}");
            }
            m if m.len() > 1000 => {
                assert_eq!(answer["error"]["code"], -32601, "{status}");
                let message = answer["error"]["message"].as_str().unwrap();
                assert!(message.len() < MAX_LOGGED_BYTES + 60, "{}", message.len());
                assert!(message.ends_with(" bytes)"), "{}", &message[..100]);
            }
            "resources/read" => {
                let message = answer["error"]["message"].as_str().unwrap();
                assert!(message.len() < MAX_LOGGED_BYTES + 100, "{}", message.len());
            }
            _ => {}
        }
    }
    assert!(sent > 5_000_000);
    let log = server.stop();
    let bytes: usize = log.iter().map(|l| l.len() + 1).sum();
    let longest = log.iter().map(String::len).max().unwrap_or(0);
    assert!(
        longest < 4 * MAX_LOGGED_BYTES + 400,
        "a line of {longest} bytes: {}",
        log.iter()
            .max_by_key(|l| l.len())
            .map(|l| &l[..300])
            .unwrap_or("")
    );
    assert!(bytes < 64 * 1024, "{bytes} bytes of log");
    // The requests were logged (the access log), just not their text.
    let requests = log
        .iter()
        .filter(|l| l.contains("\"path\":\"/api/v1/mcp\""))
        .count();
    assert_eq!(requests, 8, "{log:?}");
}
