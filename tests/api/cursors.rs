//! Cursor paging (contract §13.2), on both stores, from the in-memory index and from the store
//! (whose cursor pages read on by the sort keys and `pos`): walks by `next_cursor` and by the
//! `Link` header give every record once, in the order of `page`, while a re-import lands in
//! the middle; the cursor survives a new process; GraphQL's `after`; and the refusals.

use crate::helpers::client::{Answer, get_with, post_graphql};
use crate::helpers::{TestStore, api_token, import_file, write_file};
use query::memory::{DEFAULT_BUDGET_BYTES, IndexPolicy};
use serde_json::{Value, json};

const SLUG: &str = "towns";
const SCHEMA: &str = r#"{"id_field": "code",
  "fields": [{"name": "code", "type": "keyword"}, {"name": "name", "type": "text"},
             {"name": "region", "type": "keyword"}, {"name": "people", "type": "number"}]}"#;

/// `rows` towns; every ninth has no people and every fourth no region, so sorts meet missing
/// values; `shift` changes the people of every other town (a later version).
fn towns(rows: usize, shift: u64) -> String {
    let regions = ["north", "south", "east", ""];
    let mut out = String::from("code,name,region,people\n");
    for i in 0..rows {
        let people = if i % 9 == 0 {
            String::new()
        } else {
            ((i as u64 * 37 + shift * (i as u64 % 2)) % 50).to_string()
        };
        out.push_str(&format!(
            "t{i:03},Town {i},{},{people}\n",
            regions[i % regions.len()]
        ));
    }
    out
}

async fn publish(store: &TestStore, name: &str, contents: &str) {
    let path = write_file(store, name, contents.as_bytes());
    import_file(store, &path, SLUG, Some(SCHEMA), None)
        .await
        .unwrap();
}

async fn get(router: &axum::Router, token: &str, path: &str) -> Answer {
    get_with(router, path, Some(token), &[]).await
}

fn ids(body: &Value) -> Vec<String> {
    body["records"]
        .as_array()
        .unwrap_or_else(|| panic!("records in {body}"))
        .iter()
        .map(|r| r["_id"].as_str().unwrap().to_string())
        .collect()
}

/// Every id of `query`, page by page with `page=`.
async fn by_pages(router: &axum::Router, token: &str, query: &str) -> Vec<String> {
    let mut all = Vec::new();
    for page in 1.. {
        let answer = get(
            router,
            token,
            &format!("/api/v1/datasets/towns/records?{query}&page={page}"),
        )
        .await;
        assert_eq!(answer.status, 200, "{query}: {}", answer.body);
        let found = ids(&answer.body);
        if found.is_empty() {
            break;
        }
        all.extend(found);
    }
    all
}

const QUERIES: [&str; 9] = [
    "per_page=7",
    "per_page=7&sort=people%3C",
    "per_page=7&sort=people%3E",
    "per_page=7&sort=region,people%3C",
    "per_page=7&sort=_id%3C",
    "per_page=7&region=north&sort=people",
    "per_page=7&q=town&sort=region%3C&fields=region",
    "per_page=7&sort=people%3E,_id%3C",
    "per_page=7&people[gte]=10&sort=region%3C,people,_id",
];

async fn cursors_read_one_version_to_the_end(store: TestStore) {
    publish(&store, "v1.csv", &towns(60, 0)).await;
    let token = api_token(&store).await;
    for (router, path) in [
        (
            store.router_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES)),
            "index",
        ),
        (store.router_with(IndexPolicy::OFF), "store"),
    ] {
        for query in QUERIES {
            let expected = by_pages(&router, &token, query).await;
            assert!(expected.len() >= 7, "{path} {query}");
            // Walk by next_cursor and by the Link header alternately.
            let mut url = format!("/api/v1/datasets/towns/records?{query}");
            let mut walked = Vec::new();
            let mut pages = 0;
            loop {
                let answer = get(&router, &token, &url).await;
                assert_eq!(answer.status, 200, "{path} {url}: {}", answer.body);
                assert_eq!(answer.body["total"], expected.len(), "{path} {url}");
                assert_eq!(answer.headers["dataset-version"], "1", "{path} {url}");
                walked.extend(ids(&answer.body));
                pages += 1;
                let next = &answer.body["next_cursor"];
                let Some(cursor) = next.as_str() else {
                    assert!(next.is_null(), "{path}: {next}");
                    assert!(answer.headers.get("link").is_none(), "{path}");
                    break;
                };
                let link = answer.headers["link"].to_str().unwrap().to_string();
                let target = link
                    .strip_prefix("<http://odqs.test")
                    .and_then(|l| l.strip_suffix(">; rel=\"next\""))
                    .unwrap_or_else(|| panic!("{link}"))
                    .to_string();
                assert!(target.ends_with(&format!("cursor={cursor}")), "{link}");
                assert!(
                    !target.contains("?page=") && !target.contains("&page="),
                    "{link}"
                );
                url = if pages % 2 == 0 {
                    format!("/api/v1/datasets/towns/records?{query}&cursor={cursor}")
                } else {
                    target
                };
                assert!(pages < 20, "{path} {query}: no end");
            }
            assert_eq!(walked, expected, "{path} {query}");
        }
    }

    // A browser's script may read what it needs to follow a walk and cite it.
    let cors = [("origin", "https://elsewhere.example")];
    let answer = get_with(
        &store.router(),
        "/api/v1/datasets/towns/records?per_page=7",
        Some(&token),
        &cors,
    )
    .await;
    let exposed = answer.headers["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    for name in [
        "link",
        "dataset-version",
        "etag",
        "x-added",
        "x-removed",
        "x-changed",
    ] {
        assert!(
            exposed.split(',').any(|h| h.trim() == name),
            "{name}: {exposed}"
        );
    }

    // A walk that a re-import overtakes reads the version it started on, to its end.
    let router = store.router_with(IndexPolicy::OFF);
    let old = by_pages(&router, &token, "per_page=7&sort=people%3C").await;
    let first = get(
        &router,
        &token,
        "/api/v1/datasets/towns/records?per_page=7&sort=people%3C",
    )
    .await;
    let mut walked = ids(&first.body);
    let mut cursor = first.body["next_cursor"].as_str().unwrap().to_string();
    publish(&store, "v2.csv", &towns(45, 7)).await;
    for router in [
        store.router_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES)),
        store.router_with(IndexPolicy::OFF),
    ] {
        let now = get(&router, &token, "/api/v1/datasets/towns/records?per_page=7").await;
        assert_eq!(now.headers["dataset-version"], "2");
        assert_eq!(now.body["total"], 45);
        let again = get(
            &router,
            &token,
            &format!("/api/v1/datasets/towns/records?per_page=7&sort=people%3C&cursor={cursor}"),
        )
        .await;
        assert_eq!(again.headers["dataset-version"], "1", "{}", again.body);
        assert_eq!(again.body["total"], 60);
    }
    // A new process (a restart, another instance) takes the same cursors: the key is the
    // store's.
    let fresh = store.router_with(IndexPolicy::OFF);
    loop {
        let answer = get(
            &fresh,
            &token,
            &format!("/api/v1/datasets/towns/records?per_page=7&sort=people%3C&cursor={cursor}"),
        )
        .await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(answer.headers["dataset-version"], "1");
        walked.extend(ids(&answer.body));
        match answer.body["next_cursor"].as_str() {
            Some(next) => cursor = next.to_string(),
            None => break,
        }
    }
    assert_eq!(walked, old);

    // GraphQL follows nextCursor with `after`.
    let router = store.router();
    let query = "query($after: String) { records(slug: \"towns\", perPage: 20, \
                 sort: [{field: \"people\", order: DESC}], after: $after) { total nextCursor records } }";
    let mut after = Value::Null;
    let mut through_graphql = Vec::new();
    loop {
        let answer = post_graphql(&router, Some(&token), query, json!({"after": after})).await;
        let page = &answer.body["data"]["records"];
        assert_eq!(page["total"], 45, "{}", answer.body);
        through_graphql.extend(ids(page));
        after = page["nextCursor"].clone();
        if after.is_null() {
            break;
        }
    }
    assert_eq!(
        through_graphql,
        by_pages(&router, &token, "per_page=20&sort=people%3C").await
    );
}

async fn bad_cursors_are_refused(store: TestStore) {
    publish(&store, "v1.csv", &towns(30, 0)).await;
    let token = api_token(&store).await;
    let router = store.router();
    let base = "/api/v1/datasets/towns/records?per_page=5&sort=people";
    let first = get(&router, &token, base).await;
    let cursor = first.body["next_cursor"].as_str().unwrap().to_string();
    let mut altered = cursor.clone().into_bytes();
    let at = altered.len() / 2;
    altered[at] = if altered[at] == b'0' { b'1' } else { b'0' };
    let altered = String::from_utf8(altered).unwrap();
    for (url, status, code) in [
        (format!("{base}&cursor={altered}"), 400, "invalid_cursor"),
        (format!("{base}&cursor=abc"), 400, "invalid_cursor"),
        (format!("{base}&cursor=%00%FF"), 400, "invalid_cursor"),
        (
            format!("{base}&cursor={}", "ab".repeat(200)),
            400,
            "invalid_parameter",
        ),
        (
            format!("{base}&region=north&cursor={cursor}"),
            400,
            "invalid_cursor",
        ),
        (
            format!("/api/v1/datasets/towns/records?per_page=6&sort=people&cursor={cursor}"),
            400,
            "invalid_cursor",
        ),
        (
            format!("/api/v1/datasets/towns/records?per_page=5&cursor={cursor}"),
            400,
            "invalid_cursor",
        ),
        (
            format!("{base}&version=2&cursor={cursor}"),
            400,
            "invalid_cursor",
        ),
        (
            format!("{base}&page=2&cursor={cursor}"),
            400,
            "invalid_parameter",
        ),
        (
            format!("/api/v1/datasets/towns/agg?group_by=region&cursor={cursor}"),
            400,
            "invalid_parameter",
        ),
        (
            format!("/api/v1/datasets/towns/export?cursor={cursor}"),
            400,
            "invalid_parameter",
        ),
    ] {
        let answer = get(&router, &token, &url).await;
        assert_eq!(answer.status, status, "{url}: {}", answer.body);
        assert_eq!(answer.body["error"], code, "{url}");
    }
    // The same request on another dataset.
    let path = write_file(&store, "other.csv", towns(30, 0).as_bytes());
    import_file(&store, &path, "other", Some(SCHEMA), None)
        .await
        .unwrap();
    let answer = get(
        &router,
        &token,
        &format!("/api/v1/datasets/other/records?per_page=5&sort=people&cursor={cursor}"),
    )
    .await;
    assert_eq!(answer.body["error"], "invalid_cursor", "{}", answer.body);

    // A cursor of a version no longer kept is 410.
    let mut narrow = store.store.clone();
    narrow.keep_versions = 1;
    let path = write_file(&store, "v2.csv", towns(31, 1).as_bytes());
    odqs::import::import(
        &narrow,
        odqs::import::ImportRequest {
            source: odqs::import::reader::Source::File(path),
            slug: SLUG.into(),
            schema: odqs::import::schema::SchemaFile::parse(SCHEMA).unwrap(),
            id_field: None,
            title: None,
            description: None,
            max_record_bytes: odqs::import::DEFAULT_MAX_RECORD_MB * odqs::import::MIB,
            store_indexes: false,
        },
        std::sync::Arc::new(odqs::import::progress::Silent),
    )
    .await
    .unwrap();
    let answer = get(&router, &token, &format!("{base}&cursor={cursor}")).await;
    assert_eq!(answer.status, 410, "{}", answer.body);
    assert_eq!(answer.body["error"], "version_gone");
    assert_eq!(answer.body["retained"], json!([2]));
}

both_stores!(cursors_read_one_version_to_the_end, bad_cursors_are_refused);
