//! The GraphQL endpoint beyond parity (contract §10): tokens as for REST, the IDE, the
//! depth, complexity and fetch limits with their codes, batching of identical sub-requests,
//! and the checked-in example operations in `graphql/examples/`, run on both stores.

use std::path::Path;
use std::sync::Arc;

use crate::helpers::{TestStore, api_token, get_with, load_demo, post_graphql};
use graphql::{MAX_DEPTH, MAX_FETCHES, execute_with};
use query::Memo as Batch;
use serde_json::{Value, json};

/// The first error's `extensions.code`.
fn code(body: &Value) -> &str {
    body["errors"][0]["extensions"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no error code in {body}"))
}

async fn tokens_ide_and_bodies(store: TestStore) {
    let router = store.router();
    let token = api_token(&store).await;
    let query = "{ datasets { total } }";

    let none = post_graphql(&router, None, query, Value::Null).await;
    assert_eq!(none.status, 401, "{}", none.body);
    assert_eq!(none.body["error"], "missing_token");
    assert_eq!(none.headers["www-authenticate"], "Bearer");
    let bad = post_graphql(&router, Some("odqs_nope"), query, Value::Null).await;
    assert_eq!(bad.status, 401);
    assert_eq!(bad.body["error"], "invalid_token");

    let ok = post_graphql(&router, Some(&token), query, Value::Null).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["data"]["datasets"]["total"], 0);
    assert_eq!(ok.headers["cache-control"], "private");

    // A body that is not a GraphQL request: 400 with a GraphQL-shaped error list.
    use tower::ServiceExt;
    let response = router
        .clone()
        .oneshot(
            axum::http::Request::post("/api/v1/graphql")
                .header("authorization", format!("Bearer {token}"))
                .header("content-type", "application/json")
                .body(axum::body::Body::from("{not json"))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), 400);

    // GET from a browser is sent to the IDE, a page of the site, pointed at this endpoint.
    let browser = |path: &str| {
        axum::http::Request::get(path)
            .header("accept", "text/html,application/xhtml+xml,*/*;q=0.8")
            .body(axum::body::Body::empty())
            .unwrap()
    };
    let moved = router
        .clone()
        .oneshot(browser("/api/v1/graphql"))
        .await
        .unwrap();
    assert_eq!(moved.status(), 303);
    assert_eq!(moved.headers()["location"], "http://odqs.test/graphql");
    let ide = router.clone().oneshot(browser("/graphql")).await.unwrap();
    assert_eq!(ide.status(), 200);
    let csp = ide.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    let html = axum::body::to_bytes(ide.into_body(), 1 << 20)
        .await
        .unwrap();
    // Attribute values as a browser reads them (the template escapes `/`).
    let html = String::from_utf8_lossy(&html).replace("&#x2f;", "/");
    assert!(html.contains("GraphiQL") && html.contains("\"http://odqs.test/api/v1/graphql\""));
    // Its scripts and styles come from this site, vendored (no CDN, no inline script).
    assert!(
        !html.contains("https://") && !html.contains("unpkg"),
        "{html}"
    );
    let assets: Vec<&str> = html
        .split(['"', '\''])
        .filter(|part| part.starts_with("/assets/graphiql-"))
        .collect();
    assert_eq!(assets.len(), 6, "{html}");
    for asset in assets {
        let (status, media, _) = send(
            &router,
            axum::http::Request::get(asset)
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(status, 200, "{asset}");
        assert!(media.starts_with("text/"), "{asset}: {media}");
    }
    assert!(!html.contains("<script>"), "no inline script");

    // Other methods are refused like the rest of the read API.
    let delete = router
        .clone()
        .oneshot(
            axum::http::Request::delete("/api/v1/graphql")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(delete.status(), 405);
}

/// graphql-js's introspection query, as GraphiQL sends it (type references nine levels deep).
const INTROSPECTION: &str = r#"
query IntrospectionQuery {
  __schema {
    queryType { name } mutationType { name } subscriptionType { name }
    types { ...FullType }
    directives { name description locations args { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description
  fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type {
  kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name
  } } } } } } } } }
}
"#;

async fn limits_are_enforced_with_codes(store: TestStore) {
    load_demo(&store).await;
    let router = store.router();
    let token = api_token(&store).await;

    // GraphiQL's introspection query stays within the limits.
    let introspection = post_graphql(&router, Some(&token), INTROSPECTION, Value::Null).await;
    assert!(
        introspection.body.get("errors").is_none(),
        "{}",
        introspection.body
    );
    assert!(introspection.body["data"]["__schema"]["types"].is_array());

    // Too deep: ofType nested past the limit.
    let mut deep = String::from("kind");
    for _ in 0..MAX_DEPTH {
        deep = format!("ofType {{ {deep} }}");
    }
    let deep = format!("{{ __type(name: \"Query\") {{ {deep} }} }}");
    let answer = post_graphql(&router, Some(&token), &deep, Value::Null).await;
    assert_eq!(answer.status, 200);
    assert_eq!(code(&answer.body), "query_too_deep", "{}", answer.body);
    assert!(
        answer.body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains(&MAX_DEPTH.to_string())
    );
    assert!(answer.body["data"].is_null());

    // Too complex: hundreds of aliases, no fetch among them.
    let many: String = (0..300)
        .map(|i| {
            format!(
                "d{i}: dataset(slug: \"flights\") {{ fields {{ name type filter {{ exact fulltext sort groupBy }} }} }} "
            )
        })
        .collect();
    let answer = post_graphql(&router, Some(&token), &format!("{{ {many} }}"), Value::Null).await;
    assert_eq!(code(&answer.body), "query_too_complex", "{}", answer.body);
    assert!(answer.body["data"].is_null());

    // Complexity counts page sizes: ten full pages fit, the same ten plus a few fields don't.
    let pages = |fields: &str| -> String {
        (0..MAX_FETCHES)
            .map(|i| {
                format!(
                    "p{i}: records(slug: \"flights\", page: {}, perPage: 100) {{ {fields} }} ",
                    i + 1
                )
            })
            .collect()
    };
    let fits = post_graphql(
        &router,
        Some(&token),
        &format!("{{ {} }}", pages("total records")),
        Value::Null,
    )
    .await;
    assert!(fits.body.get("errors").is_none(), "{}", fits.body);
    assert_eq!(
        fits.body["data"]["p9"]["records"].as_array().unwrap().len(),
        100
    );

    // More fetches than the cap: refused before anything runs.
    let fetches: String = (0..=MAX_FETCHES)
        .map(|i| format!("a{i}: agg(slug: \"flights\", groupBy: \"carrier\") {{ totalGroups }} "))
        .collect();
    let state = odqs::state::AppState::new(store.store.clone(), "http://odqs.test");
    let batch = Arc::new(Batch::default());
    let response = execute_with(
        &state.graphql,
        async_graphql::Request::new(format!("{{ {fetches} }}")),
        batch.clone(),
        query::Scope::default(),
    )
    .await;
    let body = serde_json::to_value(&response).unwrap();
    assert_eq!(code(&body), "too_many_fetches", "{body}");
    assert_eq!(batch.fetches() + batch.lookups(), 0, "nothing ran");
    // Through a fragment too.
    let answer = post_graphql(
        &router,
        Some(&token),
        &format!("query {{ ...F }} fragment F on Query {{ {fetches} }}"),
        Value::Null,
    )
    .await;
    assert_eq!(code(&answer.body), "too_many_fetches", "{}", answer.body);
}

async fn identical_sub_requests_run_once(store: TestStore) {
    load_demo(&store).await;
    let state = odqs::state::AppState::new(store.store.clone(), "http://odqs.test");
    let query = r#"{
      a: records(slug: "flights", filters: [{field: "carrier", value: "UA"}, {field: "origin", value: "EWR"}]) { total records }
      b: records(slug: "flights", filters: [{field: "origin", value: "EWR"}, {field: "carrier", value: "UA"}]) { total }
      c: records(slug: "flights", filters: [{field: "carrier", value: "AA"}]) { total }
      d: agg(slug: "flights", groupBy: "carrier") { totalGroups }
      e: agg(slug: "flights", groupBy: "carrier") { totalRecords }
      f: dataset(slug: "flights") { slug }
      g: records(slug: "tw-scenic-spots", q: "溫泉") { total }
      h: record(slug: "tw-scenic-spots", id: "C1_315081200H_000080")
      i: record(slug: "tw-scenic-spots", id: "C1_315081200H_000080")
      j: records(slug: "nope") { total }
      k: records(slug: "nope") { total }
    }"#;
    let batch = Arc::new(Batch::default());
    let response = execute_with(
        &state.graphql,
        async_graphql::Request::new(query),
        batch.clone(),
        query::Scope::default(),
    )
    .await;
    let body = serde_json::to_value(&response).unwrap();
    // The unknown dataset is refused (data is null for the whole document, as its fields are
    // non-null), but every other field ran: count what ran.
    let errors = body["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{body}");
    assert!(
        errors
            .iter()
            .all(|e| e["extensions"]["code"] == "dataset_not_found")
    );
    assert_eq!(
        batch.lookups(),
        3,
        "flights, tw-scenic-spots, nope: one look-up each"
    );
    assert_eq!(
        batch.fetches(),
        5,
        "records UA+EWR (twice, in two orders), records AA, agg (twice), records 溫泉, record (twice)"
    );

    // Without the unknown dataset, the answers of the shared fields are the same.
    let query = query
        .replace("j: records(slug: \"nope\") { total }", "")
        .replace("k: records(slug: \"nope\") { total }", "");
    let response = execute_with(
        &state.graphql,
        async_graphql::Request::new(query),
        Arc::default(),
        query::Scope::default(),
    )
    .await;
    let data = serde_json::to_value(&response).unwrap()["data"].clone();
    assert_eq!(data["a"]["total"], data["b"]["total"]);
    assert!(data["a"]["total"].as_u64().unwrap() > 0);
    assert!(data["d"]["totalGroups"].as_u64().unwrap() > 1);
    assert_eq!(data["h"], data["i"]);
}

/// Every `graphql/examples/*.graphql` (with `NAME.json` as its variables when present) runs
/// without errors and answers every field it asks.
async fn example_operations_run(store: TestStore) {
    load_demo(&store).await;
    let router = store.router();
    let token = api_token(&store).await;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("graphql/examples");
    let mut ran = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.extension().and_then(|e| e.to_str()) != Some("graphql") {
            continue;
        }
        let query = std::fs::read_to_string(&path).unwrap();
        let variables = match std::fs::read_to_string(path.with_extension("json")) {
            Ok(text) => serde_json::from_str(&text).unwrap(),
            Err(_) => json!({}),
        };
        let answer = post_graphql(&router, Some(&token), &query, variables).await;
        let name = path.display();
        assert_eq!(answer.status, 200, "{name}: {}", answer.body);
        assert!(
            answer.body.get("errors").is_none(),
            "{name}: {}",
            answer.body
        );
        let data = answer.body["data"]
            .as_object()
            .unwrap_or_else(|| panic!("{name}: no data"));
        assert!(!data.is_empty(), "{name}");
        for (field, value) in data {
            let empty = match value {
                Value::Null => true,
                Value::Object(o) => o.is_empty() || o.get("total").is_some_and(|t| t == 0),
                _ => false,
            };
            assert!(!empty, "{name}: {field} came back empty: {value}");
        }
        ran += 1;
    }
    assert!(ran >= 4, "only {ran} example operations");
}

async fn rest_limits_apply_to_graphql(store: TestStore) {
    // The REST rate limit and the token are shared: an exhausted budget stops GraphQL too.
    let state =
        odqs::state::AppState::new(store.store.clone(), "http://odqs.test").with_api_rate_limit(2);
    let router = odqs::app::router(state);
    let token = api_token(&store).await;
    assert_eq!(
        get_with(&router, "/api/v1/datasets", Some(&token), &[])
            .await
            .status,
        200
    );
    let second = post_graphql(&router, Some(&token), "{ datasets { total } }", Value::Null).await;
    assert_eq!(second.status, 200);
    let third = post_graphql(&router, Some(&token), "{ datasets { total } }", Value::Null).await;
    assert_eq!(third.status, 429, "{}", third.body);
    assert_eq!(third.body["error"], "rate_limited");
}

/// A heavy field is weighed before it runs: a budget that covers the document but not the
/// field's scan refuses the field (`rate_limited`, no data) and answers the rest.
async fn heavy_fields_are_weighed_before_they_run(store: TestStore) {
    load_demo(&store).await;
    let token = api_token(&store).await;
    // Flights holds 2,005 records: an agg over it weighs one request more than the document.
    let state =
        odqs::state::AppState::new(store.store.clone(), "http://odqs.test").with_api_rate_limit(3);
    let router = odqs::app::router(state);
    let document = r#"{ agg(slug: "flights", groupBy: ["carrier"]) { totalGroups }
                        datasets { total } }"#;
    let first = post_graphql(&router, Some(&token), document, Value::Null).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert!(first.body["errors"].is_null(), "{}", first.body);
    assert_eq!(
        first.body["data"]["agg"]["totalGroups"], 16,
        "{}",
        first.body
    );

    // One request left: the document's. The agg is refused before it reads; the rest answers.
    let second = post_graphql(&router, Some(&token), document, Value::Null).await;
    assert_eq!(second.status, 200, "{}", second.body);
    let errors = second.body["errors"]
        .as_array()
        .expect("an error for the agg");
    assert_eq!(errors.len(), 1, "{}", second.body);
    assert_eq!(
        errors[0]["extensions"]["code"], "rate_limited",
        "{}",
        second.body
    );
    assert!(errors[0]["extensions"]["retry_after"].as_u64() > Some(0));
    assert_eq!(errors[0]["path"], json!(["agg"]));
    assert!(second.body["data"]["agg"].is_null(), "{}", second.body);
    assert_eq!(second.body["data"]["datasets"]["total"], 2);
    let header = second
        .headers
        .get("ratelimit")
        .map(|v| v.to_str().unwrap())
        .unwrap_or_default();
    assert!(header.contains("r=0"), "{header}");
}

/// Sends `request` and returns status, content type and the body as JSON.
async fn send(
    router: &axum::Router,
    request: axum::http::Request<axum::body::Body>,
) -> (u16, String, Value) {
    let (status, headers, body) = crate::helpers::client::exchange(router, request).await;
    let media = headers
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (
        status,
        media,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    )
}

/// GraphQL over HTTP (contract §12.5): GET queries, the graphql-response media type and its
/// statuses, application/json for older clients, batches, content types.
async fn graphql_over_http(store: TestStore) {
    load_demo(&store).await;
    let router = store.router();
    let token = api_token(&store).await;
    let bearer = format!("Bearer {token}");
    let get = |query: &str, accept: Option<&str>| {
        let url = format!(
            "/api/v1/graphql?query={}",
            percent_encoding::utf8_percent_encode(query, percent_encoding::NON_ALPHANUMERIC)
        );
        let mut request = axum::http::Request::get(url).header("authorization", &bearer);
        if let Some(accept) = accept {
            request = request.header("accept", accept);
        }
        request.body(axum::body::Body::empty()).unwrap()
    };
    const GQL: &str = "application/graphql-response+json";

    // GET runs queries, answering the media type asked for.
    for (accept, media) in [
        (Some(GQL), GQL),
        (Some("application/json"), "application/json"),
        (None, "application/json"),
        (
            Some("application/json;q=0.5, application/graphql-response+json"),
            GQL,
        ),
    ] {
        let (status, got, body) = send(&router, get("{ datasets { total } }", accept)).await;
        assert_eq!((status, got.as_str()), (200, media), "{accept:?}: {body}");
        assert_eq!(body["data"]["datasets"]["total"], 2, "{body}");
    }
    // A request error: 400 without `data` under the GraphQL media type, 200 under JSON.
    let (status, _, body) = send(&router, get("{ nothing }", Some(GQL))).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.get("data").is_none(), "{body}");
    assert_eq!(
        body["errors"][0]["extensions"]["code"],
        "graphql_validation_failed"
    );
    let (status, _, body) = send(&router, get("{ nothing }", Some("application/json"))).await;
    assert_eq!(status, 200, "{body}");
    // A field error is not a request error: 200 with data.
    let (status, _, body) = send(
        &router,
        get(
            "{ dataset(slug: \"nope\") { slug } datasets { total } }",
            Some(GQL),
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["datasets"]["total"], 2, "{body}");
    // Nothing we can answer: 406.
    let (status, _, _) = send(&router, get("{ datasets { total } }", Some("image/png"))).await;
    assert_eq!(status, 406);
    // GET still needs a token (the IDE does not).
    let anonymous =
        axum::http::Request::get("/api/v1/graphql?query=%7B%20datasets%20%7B%20total%20%7D%20%7D")
            .header("accept", GQL)
            .body(axum::body::Body::empty())
            .unwrap();
    assert_eq!(send(&router, anonymous).await.0, 401);

    // POST: JSON only; batches of at most MAX_BATCH.
    let post = |body: &str, content_type: Option<&str>| {
        let mut request = axum::http::Request::post("/api/v1/graphql")
            .header("authorization", &bearer)
            .header("accept", GQL);
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        request
            .body(axum::body::Body::from(body.to_string()))
            .unwrap()
    };
    let one = r#"{"query": "{ datasets { total } }"}"#;
    let (status, _, _) = send(&router, post(one, Some("text/plain"))).await;
    assert_eq!(status, 415);
    let (status, _, _) = send(&router, post(one, None)).await;
    assert_eq!(status, 415);
    let (status, _, body) = send(&router, post(one, Some("application/json; charset=utf-8"))).await;
    assert_eq!(
        (status, body["data"]["datasets"]["total"].clone()),
        (200, json!(2))
    );
    let (status, _, body) = send(&router, post("{not json", Some("application/json"))).await;
    assert_eq!(status, 400);
    assert!(body["errors"][0]["message"].is_string(), "{body}");
    let batch = format!("[{one}, {one}]");
    let (status, _, body) = send(&router, post(&batch, Some("application/json"))).await;
    assert_eq!(status, 200);
    assert_eq!(body.as_array().map(Vec::len), Some(2), "{body}");
    let too_many = format!("[{}]", [one; odqs::api::graphql::MAX_BATCH + 1].join(","));
    let (status, _, body) = send(&router, post(&too_many, Some("application/json"))).await;
    assert_eq!(status, 400, "{body}");
}

/// Choosing the operation to run fails with a code too: several operations and no
/// name (`operation_name_required`), a name the document does not hold (`unknown_operation`),
/// over POST, GET and in a batch.
async fn operation_name_errors_have_codes(store: TestStore) {
    use tower::ServiceExt;
    let router = store.router();
    let token = api_token(&store).await;
    let document = "query A { datasets { total } } query B { datasets { total } }";
    let post = |body: Value| {
        let router = router.clone();
        let token = token.clone();
        async move {
            let request = axum::http::Request::post("/api/v1/graphql")
                .header("content-type", "application/json")
                .header("authorization", format!("Bearer {token}"))
                .body(axum::body::Body::from(body.to_string()))
                .unwrap();
            let response = router.oneshot(request).await.unwrap();
            let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
                .await
                .unwrap();
            serde_json::from_slice::<Value>(&bytes).unwrap()
        }
    };
    let missing = post(json!({"query": document})).await;
    assert_eq!(code(&missing), "operation_name_required", "{missing}");
    let unknown = post(json!({"query": document, "operationName": "C"})).await;
    assert_eq!(code(&unknown), "unknown_operation", "{unknown}");
    let named = post(json!({"query": document, "operationName": "B"})).await;
    assert_eq!(named["data"]["datasets"]["total"], 0, "{named}");
    let batch = post(json!([
        {"query": document},
        {"query": "{ datasets { total } }", "operationName": "X"},
    ]))
    .await;
    assert_eq!(code(&batch[0]), "operation_name_required", "{batch}");
    assert_eq!(code(&batch[1]), "unknown_operation", "{batch}");
    let query: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("query", document)
        .append_pair("operationName", "Z")
        .finish();
    let answer = get_with(
        &router,
        &format!("/api/v1/graphql?{query}"),
        Some(&token),
        &[],
    )
    .await;
    assert_eq!(code(&answer.body), "unknown_operation", "{}", answer.body);
}

both_stores!(
    operation_name_errors_have_codes,
    graphql_over_http,
    tokens_ide_and_bodies,
    limits_are_enforced_with_codes,
    identical_sub_requests_run_once,
    example_operations_run,
    rest_limits_apply_to_graphql,
    heavy_fields_are_weighed_before_they_run,
);
