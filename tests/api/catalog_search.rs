//! Catalog search (`GET /datasets?q=`, contract §13.4) through the real router, on SQLite and
//! PostgreSQL: ranked by BM25 (a title above a field's description, rarer words higher), every
//! word matching, paged with `total`, a scope's datasets only, the same through GraphQL and MCP;
//! a change made by another process seen once the catalog's freshness window has passed; bad
//! searches refused. Then what chooses a dataset by search: `catalog.md` and `/catalog` paged
//! at any size, and the account page's token form.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::client::Browser;
use crate::helpers::{TestStore, api_token, get_with, scoped_token, write_file};

/// Publishes `slug` with `title`, `description` and two fields (`label`, `size`) whose
/// descriptions are `fields`; through `store` (another handle than the router's is another
/// process as far as the router's caches know).
async fn publish_on(
    test: &TestStore,
    store: &odqs::store::Store,
    slug: &str,
    title: &str,
    description: &str,
    fields: [&str; 2],
) {
    let path = write_file(test, &format!("{slug}.csv"), b"label,size\nx,1\ny,2\n");
    let schema = json!({
        "title": title,
        "description": description,
        "fields": [
            {"name": "label", "type": "keyword", "description": fields[0]},
            {"name": "size", "type": "number", "description": fields[1]},
        ],
    })
    .to_string();
    let schema = odqs::import::schema::SchemaFile::parse(&schema).unwrap();
    odqs::import::import(
        store,
        odqs::import::ImportRequest {
            source: odqs::import::reader::Source::File(path),
            slug: slug.to_string(),
            schema,
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
}

async fn publish(test: &TestStore, slug: &str, title: &str, description: &str, fields: [&str; 2]) {
    publish_on(test, &test.store, slug, title, description, fields).await;
}

/// Five datasets: "bridges" in one title, in one field's description and in three
/// descriptions; "river" in two of those descriptions only.
async fn five(store: &TestStore) {
    let plain = ["A label", "A size"];
    publish(
        store,
        "paris-bridges",
        "Bridges of Paris",
        "Stone and iron over the Seine.",
        plain,
    )
    .await;
    publish(
        store,
        "city-works",
        "Public works",
        "Works of the city's engineers.",
        ["Kind: bridges, tunnels or roads", "Length in metres"],
    )
    .await;
    publish(
        store,
        "set-one",
        "Set one",
        "river river bridges today",
        plain,
    )
    .await;
    publish(store, "set-two", "Set two", "river bridges bridges", plain).await;
    publish(store, "set-six", "Set six", "only bridges here", plain).await;
}

/// The slugs and `total` of a dataset list.
fn listed(body: &Value) -> (Vec<String>, u64) {
    let slugs = body["datasets"]
        .as_array()
        .unwrap_or_else(|| panic!("no list in {body}"))
        .iter()
        .map(|d| d["slug"].as_str().unwrap().to_string())
        .collect();
    (slugs, body["total"].as_u64().unwrap())
}

async fn search(router: &axum::Router, token: &str, query: &str) -> (Vec<String>, u64) {
    let path = format!("/api/v1/datasets?{query}");
    let answer = get_with(router, &path, Some(token), &[]).await;
    assert_eq!(answer.status, 200, "{path}: {}", answer.body);
    listed(&answer.body)
}

fn owned(slugs: &[&str]) -> Vec<String> {
    slugs.iter().map(|s| s.to_string()).collect()
}

async fn catalog_search_is_ranked(store: TestStore) {
    five(&store).await;
    let router = store.router();
    let token = api_token(&store).await;
    // The title's dataset first, the field description's among the rest; all five found.
    let (all, total) = search(&router, &token, "q=BRIDGES").await;
    assert_eq!(total, 5);
    assert_eq!(all[0], "paris-bridges", "{all:?}");
    let works = all.iter().position(|s| s == "city-works").unwrap();
    assert!(works > 0, "{all:?}");
    // Rarer words weigh more: "river" (two datasets) decides over "bridges" (five), even
    // against the longer text.
    assert_eq!(
        search(&router, &token, "q=bridges%20river").await,
        (owned(&["set-one", "set-two"]), 2)
    );
    // Every word must occur somewhere; order and repeats of the words do not matter.
    assert_eq!(
        search(&router, &token, "q=seine+bridges+SEINE").await,
        (owned(&["paris-bridges"]), 1)
    );
    assert_eq!(search(&router, &token, "q=bridges+zzzz").await, (vec![], 0));
    // Pages of the ranked list, with the total of all of them.
    let mut paged = Vec::new();
    for page in 1..=3 {
        let (slugs, total) = search(
            &router,
            &token,
            &format!("q=bridges&per_page=2&page={page}"),
        )
        .await;
        assert_eq!(total, 5);
        paged.extend(slugs);
    }
    assert_eq!(paged, all);
    assert_eq!(
        search(&router, &token, "q=bridges&per_page=2&page=9").await,
        (vec![], 5)
    );
    // A scope's datasets only, in the list and in the total; with and without words.
    let scoped = scoped_token(&store, "read dataset:city-works dataset:set-two").await;
    let (found, total) = search(&router, &scoped, "q=bridges").await;
    assert_eq!((found.len(), total), (2, 2), "{found:?}");
    assert_eq!(
        search(&router, &scoped, "").await,
        (owned(&["city-works", "set-two"]), 2)
    );
    assert_eq!(search(&router, &scoped, "q=seine").await, (vec![], 0));
    // GraphQL and MCP answer the same order.
    let answer = crate::helpers::post_graphql(
        &router,
        Some(&token),
        "query($q: String) { datasets(q: $q, perPage: 100) { total datasets { slug } } }",
        json!({"q": "bridges"}),
    )
    .await;
    assert_eq!(listed(&answer.body["data"]["datasets"]), (all.clone(), 5));
    let called =
        crate::scopes::mcp_call(&router, &token, "list_datasets", json!({"q": "bridges"})).await;
    assert_eq!(
        listed(&called["result"]["structuredContent"]),
        (all, 5),
        "{called}"
    );
}

async fn bad_catalog_searches(store: TestStore) {
    five(&store).await;
    let router = store.router();
    let token = api_token(&store).await;
    let many: Vec<String> = (0..33).map(|i| format!("w{i}")).collect();
    for q in ["a".repeat(10_000), many.join("+"), "bridges%00".to_string()] {
        let path = format!("/api/v1/datasets?q={q}");
        let answer = get_with(&router, &path, Some(&token), &[]).await;
        assert_eq!(answer.status, 400, "{}", answer.body);
        assert_eq!(answer.body["error"], "invalid_parameter");
        assert_eq!(answer.body["parameter"], "q");
        assert!(
            answer.body["message"].as_str().unwrap().contains("q "),
            "{}",
            answer.body
        );
    }
    // Blank: every dataset; the same word many times is one word.
    assert_eq!(search(&router, &token, "q=%20%20").await.1, 5);
    let repeated = vec!["bridges"; 40].join("+");
    assert_eq!(search(&router, &token, &format!("q={repeated}")).await.1, 5);
}

/// Polls `check` until it holds or `within` passes.
async fn eventually<F, Fut>(within: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn catalog_search_sees_other_processes(store: TestStore) {
    five(&store).await;
    let router = store.router();
    let token = api_token(&store).await;
    assert_eq!(search(&router, &token, "q=zebra").await.1, 0);
    // Another process: a store handle of its own, whose changes the router's caches hear of
    // only through the store.
    let other = odqs::store::Store::connect(&odqs::config::StoreUrl::parse(&store.url).unwrap())
        .await
        .unwrap();
    publish_on(
        &store,
        &other,
        "zebras",
        "Zebra crossings",
        "Where to cross.",
        ["A label", "A size"],
    )
    .await;
    let within = query::DATASET_FRESH_FOR * 5;
    assert!(
        eventually(within, || async {
            search(&router, &token, "q=zebra").await == (owned(&["zebras"]), 1)
        })
        .await,
        "a dataset published elsewhere is found within {within:?}"
    );
    // Replaced elsewhere: the new title is found, the old one no more.
    publish_on(
        &store,
        &other,
        "zebras",
        "Pelican crossings",
        "Where to cross.",
        ["A label", "A size"],
    )
    .await;
    assert!(
        eventually(within, || async {
            search(&router, &token, "q=pelican").await.1 == 1
                && search(&router, &token, "q=zebra").await.1 == 0
        })
        .await
    );
    // Removed elsewhere.
    assert!(
        odqs::store::catalog::remove(&other, "zebras")
            .await
            .unwrap()
    );
    assert!(
        eventually(within, || async {
            search(&router, &token, "q=crossings").await.1 == 0
        })
        .await
    );
    // Published through the router's own store: found at once.
    publish(
        &store,
        "owls",
        "Owl sightings",
        "Night birds.",
        ["A label", "A size"],
    )
    .await;
    assert_eq!(
        search(&router, &token, "q=owl").await,
        (owned(&["owls"]), 1)
    );
}

/// Datasets published for the paged catalog: more than a page of `catalog.md` and more than
/// the token form's boxes, each with a long title and description.
const MANY: usize = 45;

async fn many(store: &TestStore) {
    let long = "A long description of open data. ".repeat(100);
    for i in 0..MANY {
        let title = format!("Dataset number {i:02} {}", "with a long title ".repeat(10));
        let words = if i == 7 { "Seven of them" } else { "Counts" };
        publish(
            store,
            &format!("many-{i:02}"),
            &title,
            &format!("{words}. {long}"),
            ["A label", "A size"],
        )
        .await;
    }
}

/// The dataset slugs listed on a paged `catalog.md`, in order.
fn catalog_slugs(markdown: &str) -> Vec<String> {
    markdown
        .lines()
        .filter(|l| l.starts_with("- **"))
        .map(|l| {
            l.split("(`")
                .nth(1)
                .unwrap()
                .split('`')
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

async fn catalog_md_at_any_size(store: TestStore) {
    many(&store).await;
    let mut browser = Browser::new(store.router());
    let first = browser.get("/catalog.md").await;
    assert_eq!(first.status, 200);
    let limit = odqs::guides::catalog::MAX_CATALOG_MD_BYTES;
    assert!(first.body.len() <= limit, "{} bytes", first.body.len());
    for said in [
        &format!("{MANY} dataset(s) published"),
        "the most recently published first",
        "This is page 1 of 2.",
        "catalog.md?q=<words>",
        "- Next page: <http://odqs.test/catalog.md?page=2>",
    ] {
        assert!(first.body.contains(said), "{said} in:\n{}", first.body);
    }
    let per_page = odqs::guides::catalog::CATALOG_MD_PER_PAGE as usize;
    let mut slugs = catalog_slugs(&first.body);
    assert_eq!(slugs.len(), per_page);
    // Page two continues in the same format, with the rest.
    let second = browser.get("/catalog.md?page=2").await;
    assert!(
        second.body.contains("This is page 2 of 2."),
        "{}",
        second.body
    );
    assert!(
        second
            .body
            .contains("- Previous page: <http://odqs.test/catalog.md>")
    );
    slugs.extend(catalog_slugs(&second.body));
    // Published one after the other: the most recent first.
    let expected: Vec<String> = (0..MANY).rev().map(|i| format!("many-{i:02}")).collect();
    assert_eq!(slugs, expected);
    // A search: the same format, its matches only.
    let found = browser.get("/catalog.md?q=seven").await;
    assert!(
        found.body.contains("1 match the search `seven`"),
        "{}",
        found.body
    );
    assert_eq!(catalog_slugs(&found.body), ["many-07"]);
    let none = browser.get("/catalog.md?q=seven&page=2").await;
    assert!(
        none.body.contains("No dataset on this page."),
        "{}",
        none.body
    );
    // Refusals say what is wrong, in the API's error shape.
    for path in [
        "/catalog.md?page=0",
        "/catalog.md?page=x",
        "/catalog.md?per_page=5",
        "/catalog.md?q=a&q=b",
    ] {
        let refused = browser.get(path).await;
        assert_eq!(refused.status, 400, "{path}: {}", refused.body);
        assert!(
            refused.body.contains("invalid_parameter"),
            "{path}: {}",
            refused.body
        );
    }
    // The HTML page: a search box, the same pages, links between them.
    let html = browser.get("/catalog").await;
    assert!(
        html.body
            .contains("<form method=\"get\" action=\"/catalog\""),
        "{}",
        html.body
    );
    assert!(
        html.body
            .contains("href=\"http://odqs.test/catalog?page=2\""),
        "{}",
        html.body
    );
    let searched = browser.get("/catalog?q=seven").await;
    assert!(searched.body.contains("many-07") && !searched.body.contains("many-08"));
    assert!(
        searched.body.contains("value=\"seven\""),
        "the search box keeps the words"
    );
    assert_eq!(browser.get("/catalog?page=0").await.status, 400);

    // The token form offers no box per dataset, but a search and a text box of slugs.
    browser.sign_up("ada@example.org").await;
    let account = browser.get("/account").await;
    assert_eq!(account.body.matches("name=\"dataset\"").count(), 0);
    assert!(account.body.contains("name=\"find\""), "{}", account.body);
    assert!(account.body.contains("name=\"dataset_slugs\""));
    let chosen = browser.get("/account?find=seven").await;
    assert_eq!(
        chosen.body.matches("name=\"dataset\"").count(),
        1,
        "{}",
        chosen.body
    );
    assert!(chosen.body.contains("value=\"many-07\""));
    let posted = browser
        .submit(
            "/account?find=seven",
            "/account/tokens",
            &[
                ("datasets", "chosen"),
                ("dataset", "many-07"),
                ("dataset_slugs", "many-01, many-02"),
            ],
        )
        .await;
    assert_eq!(posted.status, 303, "{}", posted.body);
    let page = browser.get("/account").await;
    assert!(
        page.body
            .contains("dataset:many-01 dataset:many-02 dataset:many-07"),
        "{}",
        page.body
    );
    // The form's own Find button: what was typed stays, ticked boxes stay ticked.
    let found = browser
        .submit(
            "/account",
            "/account/tokens",
            &[
                ("name", "kept name"),
                ("datasets", "chosen"),
                ("dataset_slugs", "many-01"),
                ("lifetime", "30d"),
                ("find", "seven"),
                ("action", "find"),
            ],
        )
        .await;
    assert_eq!(found.status, 200, "{}", found.body);
    for kept in [
        "value=\"kept name\"",
        "value=\"chosen\" id=\"datasets-chosen\" checked",
        "value=\"many-01\"",
        "value=\"30d\" selected",
        "value=\"many-07\">",
        "id=\"export\">",
    ] {
        assert!(found.body.contains(kept), "{kept}: {}", found.body);
    }
    let again = browser
        .submit(
            "/account",
            "/account/tokens",
            &[
                ("datasets", "chosen"),
                ("dataset", "many-07"),
                ("find", "08"),
                ("action", "find"),
            ],
        )
        .await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert!(
        again.body.contains("value=\"many-07\" checked"),
        "{}",
        again.body
    );
    assert!(again.body.contains("value=\"many-08\">"), "{}", again.body);
    // A slug nothing is published under: the form says which, and keeps what was typed.
    let refused = browser
        .submit(
            "/account",
            "/account/tokens",
            &[("datasets", "chosen"), ("dataset_slugs", "many-01 nowhere")],
        )
        .await;
    assert_eq!(refused.status, 400);
    assert!(refused.body.contains("dataset:nowhere"), "{}", refused.body);
    assert!(
        refused.body.contains("value=\"many-01 nowhere\""),
        "{}",
        refused.body
    );
    // No CSRF token, no token.
    let forged = browser
        .post(
            "/account/tokens",
            &[("datasets", "chosen"), ("dataset_slugs", "many-01")],
        )
        .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    mcp_guides_are_paged(&store).await;
}

/// MCP `resources/list` on [`MANY`] datasets: a page of guides as long as `catalog.md`'s, then
/// the rest from its cursor; a cursor it did not give is refused.
async fn mcp_guides_are_paged(store: &TestStore) {
    let router = store.router();
    let token = api_token(store).await;
    let list =
        |params: Value| crate::scopes::mcp_request(&router, &token, "resources/list", params);
    let first = list(json!({})).await;
    let per_page = odqs::guides::catalog::CATALOG_MD_PER_PAGE as usize;
    let uris = |page: &Value| -> Vec<String> {
        page["result"]["resources"]
            .as_array()
            .unwrap_or_else(|| panic!("{page}"))
            .iter()
            .map(|r| r["uri"].as_str().unwrap().to_string())
            .collect()
    };
    let mut all = uris(&first);
    assert_eq!(all.len(), per_page, "{first}");
    let cursor = first["result"]["nextCursor"].clone();
    assert!(cursor.is_string(), "{first}");
    let second = list(json!({"cursor": cursor})).await;
    assert!(second["result"].get("nextCursor").is_none(), "{second}");
    all.extend(uris(&second));
    let expected: Vec<String> = (0..MANY)
        .map(|i| format!("http://odqs.test/datasets/many-{i:02}/skill.md"))
        .collect();
    assert_eq!(all, expected);
    let refused = list(json!({"cursor": "not-a-cursor"})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

both_stores!(
    catalog_md_at_any_size,
    catalog_search_is_ranked,
    bad_catalog_searches,
    catalog_search_sees_other_processes,
);
