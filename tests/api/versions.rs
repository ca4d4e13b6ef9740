//! Dataset versions (contract §13.1), on both stores, from the in-memory index and from the
//! store: numbering, an unchanged re-import that publishes nothing, `version=` on records,
//! record, agg and export (REST and GraphQL), `Dataset-Version`, the list of versions with
//! content hashes anyone can recompute, changes between two versions, retention with its 410,
//! the garbage collector keeping the history, and the refusals.

use std::time::Duration;

use crate::helpers::client::{Answer, exchange, get_with, post_graphql, request};
use crate::helpers::{TestStore, api_token, import_file, write_file};
use axum::http::Method;
use odqs::store::gc;
use query::memory::{DEFAULT_BUDGET_BYTES, IndexPolicy};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const SLUG: &str = "towns";
const SCHEMA: &str = r#"{"title": "Towns", "id_field": "code",
  "fields": [{"name": "code", "type": "keyword"}, {"name": "name", "type": "text"},
             {"name": "region", "type": "keyword"}, {"name": "people", "type": "number"}]}"#;

/// The file of each version: v1; v2 changes `b`, drops `c`, adds `d`; v3 adds `e`; v4
/// changes `a`.
const FILES: [&str; 4] = [
    "code,name,region,people\na,Alpha,north,10\nb,Beta,south,20\nc,Gamma,north,30\n",
    "code,name,region,people\na,Alpha,north,10\nb,Beta,south,25\nd,Delta,south,40\n",
    "code,name,region,people\na,Alpha,north,10\nb,Beta,south,25\nd,Delta,south,40\ne,Epsilon,east,50\n",
    "code,name,region,people\na,Alpha,west,11\nb,Beta,south,25\nd,Delta,south,40\ne,Epsilon,east,50\n",
];

async fn publish(store: &TestStore, n: usize, contents: &str) -> odqs::import::ImportSummary {
    let path = write_file(store, &format!("towns{n}.csv"), contents.as_bytes());
    import_file(store, &path, SLUG, Some(SCHEMA), None)
        .await
        .unwrap()
}

async fn get(router: &axum::Router, token: &str, path: &str) -> Answer {
    get_with(router, &format!("/api/v1{path}"), Some(token), &[]).await
}

fn version_header(answer: &Answer) -> Option<String> {
    answer
        .headers
        .get("dataset-version")
        .map(|v| v.to_str().unwrap().to_string())
}

fn ids(body: &Value) -> Vec<String> {
    body["records"]
        .as_array()
        .unwrap_or_else(|| panic!("records in {body}"))
        .iter()
        .map(|r| r["_id"].as_str().unwrap().to_string())
        .collect()
}

async fn versions_are_numbered_kept_and_read(store: TestStore) {
    let first = publish(&store, 1, FILES[0]).await;
    assert_eq!((first.version, first.unchanged), (1, false));
    // The same file again publishes nothing.
    let again = publish(&store, 1, FILES[0]).await;
    assert_eq!((again.version, again.unchanged), (1, true));
    // The same records in another line order and with another file name: still nothing.
    let shuffled = "code,name,region,people\nc,Gamma,north,30\na,Alpha,north,10\nb,Beta,south,20\n";
    assert!(publish(&store, 9, shuffled).await.unchanged);
    for (n, file) in FILES.iter().enumerate().skip(1) {
        let summary = publish(&store, n + 1, file).await;
        assert_eq!((summary.version, summary.unchanged), (n as i64 + 1, false));
    }
    let token = api_token(&store).await;
    for (router, path) in [
        (store.router(), "index"),
        (store.router_with(IndexPolicy::OFF), "store"),
    ] {
        Box::pin(check_reads(&router, &token, path)).await;
    }
}

async fn check_reads(router: &axum::Router, token: &str, path: &str) {
    // The metadata names the live version and where the versions are.
    let meta = get(router, token, "/datasets/towns").await;
    assert_eq!(meta.status, 200, "{path}: {}", meta.body);
    assert_eq!(meta.body["version"], 4, "{path}");
    assert_eq!(
        meta.body["links"]["versions"],
        "http://odqs.test/api/v1/datasets/towns/versions"
    );
    assert_eq!(version_header(&meta).as_deref(), Some("4"), "{path}");

    // Every version ever published, newest first; the oldest no longer kept.
    let list = get(router, token, "/datasets/towns/versions").await;
    assert_eq!(list.status, 200, "{path}: {}", list.body);
    assert_eq!(list.body["current"], 4);
    let versions = list.body["versions"].as_array().unwrap();
    let numbers: Vec<i64> = versions
        .iter()
        .map(|v| v["version"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, [4, 3, 2, 1], "{path}");
    let retained: Vec<bool> = versions
        .iter()
        .map(|v| v["retained"].as_bool().unwrap())
        .collect();
    assert_eq!(retained, [true, true, true, false], "{path}");
    let counts: Vec<i64> = versions
        .iter()
        .map(|v| v["record_count"].as_i64().unwrap())
        .collect();
    assert_eq!(counts, [4, 4, 3, 3], "{path}");

    // The content hash is the SHA-256 of the version's NDJSON export in `_id` order.
    for v in &versions[..3] {
        let n = v["version"].as_i64().unwrap();
        let (status, headers, bytes) = exchange(
            router,
            request(
                Method::GET,
                &format!("/api/v1/datasets/towns/export?sort=_id&version={n}"),
                Some(token),
                &[],
                None,
            ),
        )
        .await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(headers["dataset-version"], n.to_string().as_str(), "{path}");
        let hash = format!("sha256:{}", query::hex(&Sha256::digest(&bytes)));
        assert_eq!(v["content_hash"], hash.as_str(), "{path}: version {n}");
    }

    // version= reads the version asked for, with its own tag.
    let now = get(router, token, "/datasets/towns/records?sort=_id").await;
    let then = get(router, token, "/datasets/towns/records?sort=_id&version=2").await;
    assert_eq!(then.status, 200, "{path}: {}", then.body);
    assert_eq!(ids(&now.body), ["a", "b", "d", "e"], "{path}");
    assert_eq!(ids(&then.body), ["a", "b", "d"], "{path}");
    assert_eq!(then.body["total"], 3, "{path}");
    assert_eq!(version_header(&now).as_deref(), Some("4"));
    assert_eq!(version_header(&then).as_deref(), Some("2"));
    assert_ne!(now.headers["etag"], then.headers["etag"], "{path}");
    let current = get(router, token, "/datasets/towns/records?sort=_id&version=4").await;
    assert_eq!(current.body, now.body, "{path}");
    assert_eq!(current.headers["etag"], now.headers["etag"], "{path}");

    let filtered = get(
        router,
        token,
        "/datasets/towns/records?region=north&version=2",
    )
    .await;
    assert_eq!(ids(&filtered.body), ["a"], "{path}");
    let record = get(router, token, "/datasets/towns/records/a?version=3").await;
    assert_eq!(record.status, 200, "{path}");
    assert_eq!(record.body["region"], "north", "{path}");
    assert_eq!(version_header(&record).as_deref(), Some("3"));
    let record = get(router, token, "/datasets/towns/records/a").await;
    assert_eq!(record.body["region"], "west", "{path}");
    let gone_record = get(router, token, "/datasets/towns/records/e?version=2").await;
    assert_eq!(gone_record.status, 404, "{path}");
    assert_eq!(gone_record.body["error"], "record_not_found");

    let agg = get(
        router,
        token,
        "/datasets/towns/agg?group_by=region&field=people&version=2",
    )
    .await;
    assert_eq!(agg.status, 200, "{path}: {}", agg.body);
    assert_eq!(version_header(&agg).as_deref(), Some("2"));
    let groups: Vec<(String, u64)> = agg.body["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["key"].as_str().unwrap().to_string(),
                g["stats"]["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        groups,
        [("south".to_string(), 2), ("north".to_string(), 1)],
        "{path}"
    );

    // GraphQL reads versions the same way.
    let answer = post_graphql(
        router,
        Some(token),
        "{ dataset(slug: \"towns\") { version links { versions } }
           old: records(slug: \"towns\", version: 2, sort: [{field: \"_id\"}]) { total records }
           one: record(slug: \"towns\", id: \"a\", version: 3)
           gone: records(slug: \"towns\", version: 1) { total } }",
        json!({}),
    )
    .await;
    assert_eq!(
        answer.body["data"]["dataset"]["version"], 4,
        "{}",
        answer.body
    );
    assert_eq!(answer.body["data"]["old"]["total"], 3, "{}", answer.body);
    assert_eq!(answer.body["data"]["one"]["region"], "north");
    let errors = answer.body["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{}", answer.body);
    assert_eq!(errors[0]["extensions"]["code"], "version_gone");

    // A version no longer kept, one never published, and malformed ones.
    let gone = get(router, token, "/datasets/towns/records?version=1").await;
    assert_eq!(gone.status, 410, "{path}: {}", gone.body);
    assert_eq!(gone.body["error"], "version_gone");
    assert_eq!(gone.body["retained"], json!([4, 3, 2]));
    for (query, status, code) in [
        ("records?version=5", 404, "version_not_found"),
        (
            "records?version=9223372036854775807",
            404,
            "version_not_found",
        ),
        (
            "records?version=18446744073709551615",
            404,
            "version_not_found",
        ),
        ("agg?group_by=region&version=7", 404, "version_not_found"),
        ("export?version=1", 410, "version_gone"),
        ("records/a?version=1", 410, "version_gone"),
        ("records?version=0", 400, "invalid_parameter"),
        ("records?version=-1", 400, "invalid_parameter"),
        ("records?version=abc", 400, "invalid_parameter"),
        (
            "records?version=99999999999999999999999",
            400,
            "invalid_parameter",
        ),
        ("records?version=2&version=3", 400, "invalid_parameter"),
        ("records/a?version=0", 400, "invalid_parameter"),
        ("export?version=", 400, "invalid_parameter"),
    ] {
        let answer = get(router, token, &format!("/datasets/towns/{query}")).await;
        assert_eq!(answer.status, status, "{path}: {query}: {}", answer.body);
        assert_eq!(answer.body["error"], code, "{path}: {query}");
        assert!(answer.body["message"].as_str().unwrap().len() > 20);
    }

    // The changes from version 2 to the live one, and from 3 to 4.
    let (status, headers, bytes) = exchange(
        router,
        request(
            Method::GET,
            "/api/v1/datasets/towns/changes?from=2",
            Some(token),
            &[],
            None,
        ),
    )
    .await;
    assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&bytes));
    assert_eq!(headers["content-type"], "application/x-ndjson");
    assert_eq!(headers["dataset-version"], "4");
    assert_eq!(
        (
            &headers["x-added"],
            &headers["x-removed"],
            &headers["x-changed"]
        ),
        (
            &"1".parse().unwrap(),
            &"0".parse().unwrap(),
            &"1".parse().unwrap()
        )
    );
    let lines: Vec<Value> = String::from_utf8(bytes.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            json!({"op": "change", "_id": "a", "record": {"_id": "a", "code": "a", "name": "Alpha", "region": "west", "people": 11}}),
            json!({"op": "add", "_id": "e", "record": {"_id": "e", "code": "e", "name": "Epsilon", "region": "east", "people": 50}}),
        ],
        "{path}"
    );
    let (_, headers, bytes) = exchange(
        router,
        request(
            Method::GET,
            "/api/v1/datasets/towns/changes?from=2&to=3",
            Some(token),
            &[],
            None,
        ),
    )
    .await;
    assert_eq!(headers["x-added"], "1");
    assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 1);
    for (query, status, code) in [
        ("changes", 400, "missing_parameter"),
        ("changes?from=4", 400, "invalid_parameter"),
        ("changes?from=3&to=2", 400, "invalid_parameter"),
        ("changes?from=1", 410, "version_gone"),
        ("changes?from=2&to=8", 404, "version_not_found"),
        ("changes?from=0", 400, "invalid_parameter"),
        ("changes?from=x", 400, "invalid_parameter"),
        ("changes?from=2&carrier=UA", 400, "invalid_parameter"),
        ("versions?page=2", 400, "invalid_parameter"),
    ] {
        let answer = get(router, token, &format!("/datasets/towns/{query}")).await;
        assert_eq!(answer.status, status, "{path}: {query}: {}", answer.body);
        assert_eq!(answer.body["error"], code, "{path}: {query}");
    }
    let missing = get(router, token, "/datasets/nope/versions").await;
    assert_eq!(missing.body["error"], "dataset_not_found");
}

/// Retention lives in the store: a window of one keeps only the live version, the garbage
/// collector drops expired tables but keeps their rows, and numbers go on after a removal.
async fn retention_and_history(store: TestStore) {
    let mut narrow = store.store.clone();
    narrow.keep_versions = 1;
    let path = write_file(&store, "v1.csv", FILES[0].as_bytes());
    let request = |path: &std::path::Path| odqs::import::ImportRequest {
        source: odqs::import::reader::Source::File(path.to_path_buf()),
        slug: SLUG.to_string(),
        schema: odqs::import::schema::SchemaFile::parse(SCHEMA).unwrap(),
        id_field: None,
        title: None,
        description: None,
        max_record_bytes: odqs::import::DEFAULT_MAX_RECORD_MB * odqs::import::MIB,
        store_indexes: false,
    };
    let silent = || std::sync::Arc::new(odqs::import::progress::Silent);
    odqs::import::import(&narrow, request(&path), silent())
        .await
        .unwrap();
    let path = write_file(&store, "v2.csv", FILES[1].as_bytes());
    let second = odqs::import::import(&narrow, request(&path), silent())
        .await
        .unwrap();
    assert_eq!(second.version, 2);
    let token = api_token(&store).await;
    let router = store.router_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES));
    let gone = get(&router, &token, "/datasets/towns/records?version=1").await;
    assert_eq!(gone.status, 410, "{}", gone.body);
    assert_eq!(gone.body["retained"], json!([2]));

    // The expired version's tables go; its row stays in the history.
    let tables_before = table_count(&store).await;
    assert_eq!(gc::collect(&narrow, Duration::ZERO).await.unwrap(), 1);
    assert_eq!(table_count(&store).await, tables_before - 1);
    let list = get(&router, &token, "/datasets/towns/versions").await;
    assert_eq!(list.body["versions"][1]["version"], 1, "{}", list.body);
    assert_eq!(list.body["versions"][1]["retained"], false);
    assert!(list.body["versions"][1]["content_hash"].is_string());

    // Removed, then published again: the numbers go on.
    assert!(odqs::store::catalog::remove(&narrow, SLUG).await.unwrap());
    let path = write_file(&store, "v3.csv", FILES[2].as_bytes());
    let third = odqs::import::import(&narrow, request(&path), silent())
        .await
        .unwrap();
    assert_eq!(third.version, 3);
    gc::collect(&narrow, Duration::ZERO).await.unwrap();
    let list = get(&router, &token, "/datasets/towns/versions").await;
    let retained: Vec<(i64, bool)> = list.body["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["version"].as_i64().unwrap(),
                v["retained"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(retained, [(3, true), (2, false), (1, false)]);
    // Only the live version's tables are left.
    assert_eq!(table_count(&store).await, tables_before - 1);
}

/// The store's `records_v*` tables: one a version whose tables are kept.
async fn table_count(store: &TestStore) -> i64 {
    crate::helpers::stored::records_tables(&store.store)
        .await
        .len() as i64
}

/// The demo's real records (nested fields, Chinese text, numbers of every kind): each
/// dataset's content hash is the SHA-256 of its export in `_id` order.
async fn content_hash_of_real_data(store: TestStore) {
    crate::helpers::load_demo(&store).await;
    let token = api_token(&store).await;
    let router = store.router();
    for slug in ["flights", "tw-scenic-spots"] {
        let list = get(&router, &token, &format!("/datasets/{slug}/versions")).await;
        let (_, _, bytes) = exchange(
            &router,
            request(
                Method::GET,
                &format!("/api/v1/datasets/{slug}/export?sort=_id"),
                Some(&token),
                &[],
                None,
            ),
        )
        .await;
        let hash = format!("sha256:{}", query::hex(&Sha256::digest(&bytes)));
        assert_eq!(
            list.body["versions"][0]["content_hash"],
            hash.as_str(),
            "{slug}"
        );
    }
}

both_stores!(
    versions_are_numbered_kept_and_read,
    retention_and_history,
    content_hash_of_real_data
);
