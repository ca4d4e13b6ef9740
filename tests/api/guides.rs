//! The Markdown guides (contract §9) on the bundled demo datasets, on SQLite and PostgreSQL:
//! `catalog.md`, `skill.md`, and every `curl` example of every skill.md run against the live
//! router with a real token.

use crate::helpers::TestStore;
use crate::helpers::client::{Browser, get_with_token};

const CURL_PREFIX: &str = "curl -H \"Authorization: Bearer $ODQS_TOKEN\" \"";

async fn with_demo(store: &TestStore) -> axum::Router {
    odqs::demo::load_if_empty(&store.store).await.unwrap();
    store.router()
}

/// The URL of every `curl` line in `markdown`; every curl line must have the one shape.
fn curl_urls(markdown: &str) -> Vec<String> {
    markdown
        .lines()
        .filter(|l| l.trim_start().starts_with("curl "))
        .map(|l| {
            let rest = l
                .trim()
                .strip_prefix(CURL_PREFIX)
                .unwrap_or_else(|| panic!("unexpected curl line: {l}"));
            rest.strip_suffix('"')
                .unwrap_or_else(|| panic!("unexpected curl line: {l}"))
                .to_string()
        })
        .collect()
}

async fn catalog_lists_every_dataset(store: TestStore) {
    let router = with_demo(&store).await;
    let page = Browser::new(router).get("/catalog.md").await;
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/markdown; charset=utf-8")
    );
    for expected in [
        "# odqs catalog",
        "`flights`",
        "`tw-scenic-spots`",
        "臺灣觀光景點",
        "- Records: 2005",
        "- Records: 507",
        "<http://odqs.test/datasets/flights/skill.md>",
        "`http://odqs.test/api/v1/datasets/tw-scenic-spots/records`",
        "CC0-1.0",
    ] {
        assert!(
            page.body.contains(expected),
            "{expected} in:\n{}",
            page.body
        );
    }
}

async fn skill_md_describes_fields_with_real_values(store: TestStore) {
    let router = with_demo(&store).await;
    let mut browser = Browser::new(router);
    let page = browser.get("/datasets/flights/skill.md").await;
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/markdown; charset=utf-8")
    );
    let md = &page.body;
    if std::env::var_os("ODQS_SHOW_GUIDE").is_some() {
        eprintln!("{md}");
    }
    for expected in [
        "| `carrier` | keyword | exact `carrier=…` (repeat for OR), sort, `group_by`; `[gt]` `[gte]` `[lt]` `[lte]` `[ne]` `[in]` `[nin]` `[exists]` `[prefix]` |",
        "# dep_delay (number: gt, gte, lt, lte, ne, in, nin, exists): `dep_delay[gte]`",
        "# tailnum (keyword: gt, gte, lt, lte, ne, in, nin, exists, prefix): `tailnum[prefix]`",
        "time_hour%5Bmonth%5D",
        "## Filter operators",
        "| `dep_delay` | number |",
        "| `carrier_name` | text | `q=…` or `q[carrier_name]=…`",
        "| `time_hour` | date |",
        "unique per record (the `_id`)",
        "Two-letter carrier code",
        "sort=",
        "%3C",
        "/agg?group_by=",
        "## Limits and notes",
    ] {
        assert!(md.contains(expected), "{expected} in:\n{md}");
    }
    let urls = curl_urls(md);
    assert!(urls.len() >= 12, "{urls:#?}");
    assert!(
        urls.iter()
            .all(|u| u.starts_with("http://odqs.test/api/v1/datasets/flights"))
    );

    let spots = browser.get("/datasets/tw-scenic-spots/skill.md").await;
    assert_eq!(spots.status, 200);
    let urls = curl_urls(&spots.body);
    assert!(
        urls.iter().any(|u| u.contains("q=%E")),
        "Chinese values are percent-encoded: {urls:#?}"
    );
    assert!(urls.iter().all(|u| u.is_ascii()), "{urls:#?}");
    assert!(
        urls.iter().any(|u| u.contains("q%5B")),
        "q[name] is encoded so curl does not glob it"
    );

    assert_eq!(browser.get("/datasets/nothing/skill.md").await.status, 404);
}

/// The contract's promise: every example works as written once the token is put in.
async fn every_curl_example_works(store: TestStore) {
    let router = with_demo(&store).await;
    let user = odqs::auth::token::find_or_create_user(&store.store, "reader@example.org")
        .await
        .unwrap();
    let (token, _) = odqs::auth::token::mint(
        &store.store,
        user.id,
        "guides",
        "account",
        &Default::default(),
        None,
    )
    .await
    .unwrap();
    let mut browser = Browser::new(router.clone());
    let mut ran = 0;
    for slug in ["flights", "tw-scenic-spots"] {
        let md = browser
            .get(&format!("/datasets/{slug}/skill.md"))
            .await
            .body;
        for url in curl_urls(&md) {
            let path = url
                .strip_prefix("http://odqs.test")
                .expect("built from the public URL");
            let page = get_with_token(&router, path, token.expose()).await;
            assert_eq!(page.status, 200, "{url}: {}", page.body);
            if path.contains("/export?") {
                let total: u64 = page.header("x-total-count").unwrap().parse().unwrap();
                assert!(total > 0, "{url} exported nothing");
                // A header and the rows (a quoted cell may span lines).
                assert!(page.body.lines().count() as u64 > total, "{url}");
                ran += 1;
                continue;
            }
            let body = page.json();
            let non_empty = |key: &str| body[key].as_array().is_some_and(|a| !a.is_empty());
            let ok = if body.get("records").is_some() {
                non_empty("records") && body["total"].as_u64().unwrap_or(0) > 0
            } else if body.get("groups").is_some() {
                non_empty("groups")
            } else if body.get("fields").is_some() {
                non_empty("fields")
            } else if body.get("versions").is_some() {
                non_empty("versions")
            } else {
                body.get("_id").is_some()
            };
            assert!(ok, "{url} answered no results: {body}");
            // The next page of a records example works as its Link header says.
            if body["next_cursor"].is_string() {
                let link = page.header("link").expect("a next page's link");
                let next = link
                    .strip_prefix("<http://odqs.test")
                    .and_then(|l| l.strip_suffix(">; rel=\"next\""))
                    .unwrap_or_else(|| panic!("{link}"))
                    .to_string();
                let next = get_with_token(&router, &next, token.expose()).await;
                assert_eq!(next.status, 200, "{url} next page: {}", next.body);
                assert!(
                    next.json()["records"]
                        .as_array()
                        .is_some_and(|r| !r.is_empty())
                );
            }
            ran += 1;
        }
    }
    assert!(ran >= 24, "ran {ran} examples");
}

/// The guides' facts come from the resolver layer: from the in-memory index when it is built,
/// from the store otherwise, and the two agree; text values are shown as the data writes them,
/// and each field's missing count is what `name[exists]=false` answers.
async fn facts_agree_from_index_and_store(store: TestStore) {
    use query::memory::{DEFAULT_BUDGET_BYTES, IndexPolicy};
    odqs::demo::load_if_empty(&store.store).await.unwrap();
    let indexed = store.state_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES));
    let plain = store.state_with(IndexPolicy::OFF);
    for slug in ["flights", "tw-scenic-spots"] {
        let dataset = indexed.resolver.dataset(slug).await.unwrap();
        let from_index = indexed.resolver.facts(&dataset).await.unwrap();
        let dataset = plain.resolver.dataset(slug).await.unwrap();
        let from_store = plain.resolver.facts(&dataset).await.unwrap();
        assert_eq!(
            format!("{from_index:?}"),
            format!("{from_store:?}"),
            "{slug}"
        );
        assert_eq!(from_index.sample_ids.len(), 3);
        for f in &from_index.fields {
            if f.field.field_type == entity::FieldType::Json {
                continue;
            }
            let router = store.router_with(IndexPolicy::OFF);
            let token = crate::helpers::api_token(&store).await;
            let answer = crate::helpers::get_with(
                &router,
                &format!(
                    "/api/v1/datasets/{slug}/records?{}%5Bexists%5D=false&per_page=1",
                    f.field.name
                ),
                Some(&token),
                &[],
            )
            .await;
            assert_eq!(answer.body["total"], f.missing, "{slug} {}", f.field.name);
        }
    }
    let dataset = indexed.resolver.dataset("flights").await.unwrap();
    let facts = indexed.resolver.facts(&dataset).await.unwrap();
    let field = |name: &str| facts.fields.iter().find(|f| f.field.name == name).unwrap();
    // As written, not as the search dictionary keeps it ("united air lines inc.").
    let carrier_name = field("carrier_name").top[0].value.as_str().unwrap();
    assert!(
        carrier_name.chars().any(char::is_uppercase),
        "{carrier_name}"
    );
    assert!(field("dep_time").missing > 0);
    assert_eq!(field("carrier").missing, 0);
    assert!(field("dep_delay").range.is_some() && !field("dep_delay").top.is_empty());
}

both_stores!(
    facts_agree_from_index_and_store,
    catalog_lists_every_dataset,
    skill_md_describes_fields_with_real_values,
    every_curl_example_works,
);
