//! Publishing over HTTP (contract §14.1, §14.2) on both stores, through the real HTTP stack: the
//! `publish` scope within the account's grants, uploads published as versions, a schema file
//! for the next version, `If-Match`, one write per dataset at a time, removal, and uploads
//! refused with nothing left behind.

use reqwest::{Client, StatusCode};
use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::{Value, json};

use crate::helpers::{Kind, TestStore, gzip, scoped_token};

/// odqs on a free port of 127.0.0.1 serving `state`; the API's base URL and the stop switch.
async fn serve_state(state: odqs::state::AppState) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let api = format!("http://{}/api/v1", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(odqs::app::serve(state, listener, async {
        let _ = stopped.await;
    }));
    (api, stop)
}

fn state(store: &TestStore) -> odqs::state::AppState {
    odqs::state::AppState::new(store.store.clone(), "http://127.0.0.1")
}

/// The test account may publish `pattern`; a token of `scope` for it.
async fn publisher(store: &TestStore, pattern: &str, scope: &str) -> String {
    odqs::auth::publishers::grant_publish(&store.store, "tester@example.org", pattern, "tests")
        .await
        .unwrap();
    scoped_token(store, scope).await
}

/// A write of `body` as `content_type` to `url` with `token`, and its status and JSON.
async fn put(
    client: &Client,
    url: &str,
    token: &str,
    content_type: &str,
    body: Vec<u8>,
    headers: &[(&str, &str)],
) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    let mut request = client
        .put(url)
        .bearer_auth(token)
        .header("content-type", content_type)
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, headers, body)
}

async fn get(client: &Client, url: &str, token: &str) -> (StatusCode, Value) {
    let response = client.get(url).bearer_auth(token).send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

const PARKS: &[u8] = b"code,name,area\na,Alpha Park,1.5\nb,Beta Gardens,20\n";

/// A schema file, then uploads: the first version (201), an unchanged one, a changed one under
/// `If-Match`, a stale `If-Match` refused, a larger file than a request body may otherwise
/// be, then removal under `If-Match`.
async fn uploads_publish_versions(store: TestStore) {
    let token = publisher(&store, "city-*", "read publish").await;
    let (api, _stop) = serve_state(state(&store)).await;
    let client = Client::new();
    let dataset = format!("{api}/datasets/city-parks");
    let schema = json!({
        "title": "City parks",
        "description": "Parks of the city",
        "id_field": "code",
        "fields": [{"name": "area", "type": "number", "description": "Hectares"}],
    });
    let (status, _, kept) = put(
        &client,
        &format!("{dataset}/schema.json"),
        &token,
        "application/json",
        schema.to_string().into_bytes(),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{kept}");
    assert_eq!(kept["schema"]["title"], "City parks");
    let (status, _) = get(&client, &dataset, &token).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "published with its first version only"
    );

    let (status, headers, first) =
        put(&client, &dataset, &token, "text/csv", PARKS.to_vec(), &[]).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    assert_eq!(first["version"], 1);
    assert_eq!(first["record_count"], 2);
    assert_eq!(first["unchanged"], false);
    assert_eq!(headers["etag"], "\"v1\"");
    assert_eq!(headers["dataset-version"], "1");
    let (_, meta) = get(&client, &dataset, &token).await;
    assert_eq!(meta["title"], "City parks");
    let (status, record) = get(&client, &format!("{dataset}/records/a"), &token).await;
    assert_eq!(status, StatusCode::OK, "{record}");
    assert_eq!(record["area"], json!(1.5));
    assert_eq!(record["name"], "Alpha Park");

    let (status, _, same) = put(
        &client,
        &dataset,
        &token,
        "text/csv",
        gzip(PARKS),
        &[("content-encoding", "gzip")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{same}");
    assert_eq!(
        (same["version"].clone(), same["unchanged"].clone()),
        (json!(1), json!(true))
    );

    let changed = b"code,name,area\na,Alpha Park,1.5\nc,Gamma Wood,3\n".to_vec();
    let (status, headers, second) = put(
        &client,
        &dataset,
        &token,
        "text/csv",
        changed.clone(),
        &[("if-match", "\"v1\"")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["version"], 2);
    assert_eq!(headers["etag"], "\"v2\"");
    let (_, meta) = get(&client, &dataset, &token).await;
    assert_eq!(meta["title"], "City parks", "the current schema is kept");
    let (status, _) = get(&client, &format!("{dataset}/records/c"), &token).await;
    assert_eq!(status, StatusCode::OK);

    let (status, _, stale) = put(
        &client,
        &dataset,
        &token,
        "text/csv",
        PARKS.to_vec(),
        &[("if-match", "\"v1\"")],
    )
    .await;
    assert_eq!(status, StatusCode::PRECONDITION_FAILED, "{stale}");
    assert_eq!(stale["error"], "precondition_failed");
    assert_eq!(stale["current"], "\"v2\"");

    let mut large = b"code,name,area\n".to_vec();
    for i in 0..60_000 {
        large.extend_from_slice(format!("p{i},Park number {i},{i}.5\n").as_bytes());
    }
    assert!(
        large.len() > 1024 * 1024,
        "more than a request body may be elsewhere"
    );
    let (status, _, third) = put(&client, &dataset, &token, "text/csv", large, &[]).await;
    assert_eq!(status, StatusCode::OK, "{third}");
    assert_eq!(third["record_count"], 60_000);

    let removal = |tag: &str| {
        client
            .delete(&dataset)
            .bearer_auth(&token)
            .header("if-match", tag)
            .send()
    };
    assert_eq!(
        removal("\"v2\"").await.unwrap().status(),
        StatusCode::PRECONDITION_FAILED
    );
    assert_eq!(
        removal("\"v3\"").await.unwrap().status(),
        StatusCode::NO_CONTENT
    );
    let (status, _) = get(&client, &dataset, &token).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(removal("*").await.unwrap().status(), StatusCode::NOT_FOUND);
}

/// A write needs `publish` in the token's scope for the dataset and a grant of the account
/// naming it; `GET /token` lists what the token may publish.
async fn writes_need_the_scope_and_a_grant(store: TestStore) {
    let reader = scoped_token(&store, "read export").await;
    let (api, _stop) = serve_state(state(&store)).await;
    let client = Client::new();
    let write = |slug: &str, token: &str| {
        let url = format!("{api}/datasets/{slug}");
        let client = client.clone();
        let token = token.to_string();
        async move { put(&client, &url, &token, "text/csv", PARKS.to_vec(), &[]).await }
    };
    let (status, headers, refused) = write("city-a", &reader).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert_eq!(refused["error"], "insufficient_scope");
    assert_eq!(refused["scope"], "publish");
    assert!(
        headers["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("publish")
    );

    let ungranted = scoped_token(&store, "read publish").await;
    let (status, _, refused) = write("city-a", &ungranted).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert_eq!(refused["scope"], "publish dataset:city-a");
    assert!(
        refused["message"].as_str().unwrap().contains("grant"),
        "{refused}"
    );

    let narrow = publisher(
        &store,
        "city-*",
        "read publish dataset:city-a dataset:town-b",
    )
    .await;
    let (status, _, refused) = write("town-b", &narrow).await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "the grant does not name it: {refused}"
    );
    let (status, _, refused) = write("city-c", &narrow).await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "the scope does not name it: {refused}"
    );
    let (status, _, made) = write("city-a", &narrow).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");

    let (_, described) = get(&client, &format!("{api}/token"), &narrow).await;
    assert_eq!(
        described["grants"],
        json!([{"right": "publish", "datasets": "city-a"}])
    );
    let wide = scoped_token(&store, "read publish").await;
    let (_, described) = get(&client, &format!("{api}/token"), &wide).await;
    assert_eq!(
        described["grants"],
        json!([{"right": "publish", "datasets": "city-*"}])
    );
    let (_, described) = get(&client, &format!("{api}/token"), &reader).await;
    assert_eq!(described["grants"], json!([]));
}

/// A body of another type, a malformed or empty file, a file over the upload limit and a
/// malformed schema file are refused, and nothing of them stays in the store.
async fn bad_uploads_publish_nothing(store: TestStore) {
    let token = publisher(&store, "*", "read publish").await;
    let small = odqs::publish::Publishing {
        max_upload_bytes: 4096,
        ..Default::default()
    };
    let (api, _stop) = serve_state(state(&store).with_publishing(small)).await;
    let client = Client::new();
    let dataset = format!("{api}/datasets/parks");
    for (content_type, body, status, code) in [
        ("text/plain", PARKS.to_vec(), 415, "unsupported_media_type"),
        (
            "text/csv",
            b"code,name\na,b,c\n".to_vec(),
            400,
            "invalid_file",
        ),
        ("text/csv", b"code,name\n".to_vec(), 400, "invalid_file"),
        (
            "application/x-ndjson",
            b"{\"a\": 1}\n{nope\n".to_vec(),
            400,
            "invalid_file",
        ),
        ("text/csv", vec![b'x'; 8192], 413, "payload_too_large"),
    ] {
        let (got, _, refused) = put(&client, &dataset, &token, content_type, body, &[]).await;
        assert_eq!(got.as_u16(), status, "{content_type}: {refused}");
        assert_eq!(refused["error"], code, "{refused}");
        assert!(
            !refused["message"].as_str().unwrap().contains("/tmp"),
            "{refused}"
        );
    }
    let (status, _, refused) = put(
        &client,
        &format!("{dataset}/schema.json"),
        &token,
        "application/json",
        b"{\"fields\": 3}".to_vec(),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(refused["error"], "invalid_file");
    let (status, _) = get(&client, &dataset, &token).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let versions = entity::dataset_version::Entity::find()
        .count(&store.store.db)
        .await
        .unwrap();
    assert_eq!(versions, 0, "no version row is left behind");
    let pending = entity::pending_schema::Entity::find()
        .count(&store.store.db)
        .await
        .unwrap();
    assert_eq!(pending, 0, "a refused schema file is not kept");
}

/// While a write to a dataset runs, another is refused with 409 `publish_in_progress`: on this
/// instance, and on PostgreSQL from another instance of the cluster too; what one instance
/// publishes, the other answers from.
async fn one_write_per_dataset_at_a_time(store: TestStore) {
    let token = publisher(&store, "*", "read publish").await;
    let first = state(&store);
    // Another instance: its own connections to the same store, as in a cluster.
    let url = odqs::config::StoreUrl::parse(&store.url).unwrap();
    let second = odqs::state::AppState::new(
        odqs::store::Store::connect(&url).await.unwrap(),
        "http://127.0.0.1",
    );
    let (api, _stop) = serve_state(first.clone()).await;
    let (other_api, _other_stop) = serve_state(second).await;
    let client = Client::new();
    let held = first
        .publishing
        .writes
        .try_hold(&first.store, "parks")
        .await
        .unwrap()
        .expect("nothing else writes");
    let mut apis = vec![&api];
    if store.kind == Kind::Postgres {
        apis.push(&other_api);
    }
    for api in apis {
        let url = format!("{api}/datasets/parks");
        let (status, _, refused) =
            put(&client, &url, &token, "text/csv", PARKS.to_vec(), &[]).await;
        assert_eq!(status, StatusCode::CONFLICT, "{refused}");
        assert_eq!(refused["error"], "publish_in_progress");
        let removal = client
            .delete(&url)
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(removal.status(), StatusCode::CONFLICT);
    }
    held.end().await;
    let url = format!("{other_api}/datasets/parks");
    let (status, _, made) = put(&client, &url, &token, "text/csv", PARKS.to_vec(), &[]).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    // The instance that did not publish answers from the new version within the catalog's
    // freshness bound, as after an import.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        let (status, _) = get(&client, &format!("{api}/datasets/parks/records/1"), &token).await;
        if status == StatusCode::OK {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still {status} after 2 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The job `location` names, polled until it ends (its owner's `token`).
async fn ended_job(client: &Client, api: &str, location: &str, token: &str) -> Value {
    let site = api.trim_end_matches("/api/v1");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (status, job) = get(client, &format!("{site}{location}"), token).await;
        assert_eq!(status, StatusCode::OK, "{job}");
        if job["state"] != "running" {
            return job;
        }
        assert!(std::time::Instant::now() < deadline, "still running: {job}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// `Prefer: respond-async`: 202 with the job in `Location` once the upload is received; the
/// job ends done with the write's answer, or failed with the error a synchronous write would
/// have had; another account's token, or an unknown id, finds no job.
async fn asynchronous_writes_are_jobs(store: TestStore) {
    let token = publisher(&store, "*", "read publish").await;
    let (api, _stop) = serve_state(state(&store)).await;
    let client = Client::new();
    let dataset = format!("{api}/datasets/parks");
    let prefer = [("prefer", "respond-async")];
    let (status, headers, started) = put(
        &client,
        &dataset,
        &token,
        "text/csv",
        PARKS.to_vec(),
        &prefer,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    assert_eq!(headers["preference-applied"], "respond-async");
    assert_eq!(started["state"], "running");
    assert_eq!(started["bytes_read"], PARKS.len());
    let location = headers["location"].to_str().unwrap().to_string();
    assert!(location.starts_with("/api/v1/jobs/job_"), "{location}");
    let done = ended_job(&client, &api, &location, &token).await;
    assert_eq!(done["state"], "done", "{done}");
    assert_eq!(done["result"]["version"], 1);
    assert_eq!(done["result"]["record_count"], 2);
    assert_eq!(done["records_read"], 2);
    let (status, _) = get(&client, &format!("{dataset}/records/1"), &token).await;
    assert_eq!(status, StatusCode::OK);

    let (status, headers, _) = put(
        &client,
        &dataset,
        &token,
        "text/csv",
        b"code,name
a,b,c
"
        .to_vec(),
        &prefer,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let location = headers["location"].to_str().unwrap().to_string();
    let failed = ended_job(&client, &api, &location, &token).await;
    assert_eq!(failed["state"], "failed", "{failed}");
    assert_eq!(failed["error"]["error"], "invalid_file", "{failed}");
    let (_, meta) = get(&client, &dataset, &token).await;
    assert_eq!(meta["version"], 1, "a failed job publishes nothing");

    let site = api.trim_end_matches("/api/v1");
    let other = {
        let user = odqs::auth::token::find_or_create_user(&store.store, "other@example.org")
            .await
            .unwrap();
        let scope = query::Scope::parse("read").unwrap();
        let (secret, _) =
            odqs::auth::token::mint(&store.store, user.id, "other", "cli", &scope, None)
                .await
                .unwrap();
        secret.expose().to_string()
    };
    for (url, who) in [
        (format!("{site}{location}"), &other),
        (format!("{api}/jobs/job_nothing"), &token),
    ] {
        let (status, missing) = get(&client, &url, who).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
        assert_eq!(missing["error"], "job_not_found");
    }
}

both_stores!(
    asynchronous_writes_are_jobs,
    uploads_publish_versions,
    writes_need_the_scope_and_a_grant,
    bad_uploads_publish_nothing,
    one_write_per_dataset_at_a_time,
);
