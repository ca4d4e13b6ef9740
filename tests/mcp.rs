//! The MCP endpoint (contract §12.4, issue 14) driven by the official MCP Python SDK (`mcp` from
//! PyPI, in the venv of `tests/py/mod.rs`), on both stores, against a real server on a socket
//! with the demo datasets: it initializes, lists the six tools, and calls each; every answer
//! equals the REST answer to the same request, and every refusal carries the REST error's
//! code. A request without a valid token is refused before the protocol is spoken.

mod common;
mod py;

use std::net::SocketAddr;

use common::{TestStore, api_token, load_demo};
use graphql::query::memory::{DEFAULT_BUDGET_BYTES, IndexPolicy};
use odqs::app::AppState;
use odqs::mcp::tools::{MAX_EXPORT_RECORDS, NAMES};
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
    ]
}

both_stores!(tools_answer_as_rest);

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
        .arg(py::package_dir().join("tests/py/mcp_check.py"))
        .arg(format!("{}/mcp", served.api()))
        .arg(&served.token)
        .arg(&calls_path);
    let output = tokio::task::spawn_blocking(move || script.output().unwrap())
        .await
        .unwrap();
    py::check("tests/py/mcp_check.py", &output);
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
            .contains("keyword: gt, gte, lt, lte, ne, in, exists, prefix")
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
            assert_eq!(result["structuredContent"], rest, "{what}");
            let text: Value =
                serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
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
