//! `/explore` (issue 5): the page and its short-lived token in-process, then headless Chromium
//! driving it on the demo flights dataset as a person would: pick the dataset, search, apply a
//! keyword filter, sort by clicking a column, go to page two, open a record, show grouped
//! statistics. Each step's visible numbers are checked against the REST API's answer to the
//! same question, and a screenshot goes to `target/screenshots/{store}-explore-*.png`.

mod common;
mod web;
mod webdriver;

use common::{TestStore, api_token, load_demo, post_graphql};
use entity::api_token as token_entity;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::Value;
use web::Browser;
use webdriver::{Driver, screenshots, serve};

/// `data-token="…"` of the explorer page.
fn page_token(html: &str) -> String {
    let marker = "data-token=\"";
    let start = html.find(marker).expect("a token on the page") + marker.len();
    let end = html[start..].find('"').unwrap() + start;
    html[start..end].to_string()
}

async fn explorer_tokens(store: &TestStore) -> u64 {
    token_entity::Entity::find()
        .filter(token_entity::Column::Source.eq("explore"))
        .count(&store.store.db)
        .await
        .unwrap()
}

async fn explorer_page_and_its_token(store: TestStore) {
    let router = store.router();
    let mut browser = Browser::new(router.clone());

    let signed_out = browser.get("/explore").await;
    assert_eq!(signed_out.status, 303);
    assert_eq!(signed_out.location(), "/login?next=/explore");

    browser.sign_up("explorer@example.org").await;
    let page = browser.get("/explore").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("/assets/explore.js"));
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("connect-src 'self'"), "{csp}");
    assert_eq!(page.header("cache-control"), Some("no-store"));
    let token = page_token(&page.body);
    assert!(token.starts_with("odqs_"));

    // The token reads the GraphQL API.
    let answer = post_graphql(&router, Some(&token), "{ datasets { total } }", Value::Null).await;
    assert_eq!(answer.status, 200, "{}", answer.body);

    // It expires within the hour and is not listed among the account's tokens.
    let stored = token_entity::Entity::find()
        .filter(token_entity::Column::Source.eq("explore"))
        .one(&store.store.db)
        .await
        .unwrap()
        .unwrap();
    let lifetime = stored.expires_at.unwrap() - stored.created_at;
    assert!(lifetime <= time::Duration::hours(1) && lifetime > time::Duration::minutes(59));
    let account = browser.get("/account").await;
    assert!(
        !account.body.contains("explorer (site)"),
        "{}",
        account.body
    );

    // Expired explorer tokens are deleted when the next one is minted.
    token_entity::Entity::update_many()
        .col_expr(
            token_entity::Column::ExpiresAt,
            sea_orm::sea_query::Expr::value(
                time::OffsetDateTime::now_utc() - time::Duration::minutes(1),
            ),
        )
        .filter(token_entity::Column::Source.eq("explore"))
        .exec(&store.store.db)
        .await
        .unwrap();
    // Changed behind the instance's back: its cached confirmation lapses within FRESH_FOR.
    let changed_at = std::time::Instant::now();
    while post_graphql(&router, Some(&token), "{ datasets { total } }", Value::Null)
        .await
        .status
        != 401
    {
        assert!(
            changed_at.elapsed() < odqs::auth::token_cache::FRESH_FOR * 2,
            "an expired explorer token still works after {:?}",
            changed_at.elapsed()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let again = browser.get("/explore").await;
    let fresh = page_token(&again.body);
    assert_ne!(fresh, token);
    assert_eq!(explorer_tokens(&store).await, 1, "the expired one is gone");

    // Logging out ends the explorer's tokens.
    browser.submit("/logout", "/logout", &[]).await;
    assert_eq!(explorer_tokens(&store).await, 0);
    let after = post_graphql(&router, Some(&fresh), "{ datasets { total } }", Value::Null).await;
    assert_eq!(after.status, 401);
}

/// `1234` → `1,234`, as the page writes counts.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The REST API's answer to `path` (under `/api/v1`).
async fn rest(site: &str, token: &str, path: &str) -> Value {
    let response = reqwest::Client::new()
        .get(format!("{site}/api/v1{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{path}");
    response.json().await.unwrap()
}

async fn explore_in_a_browser(store: TestStore) {
    let kind = format!("{:?}", store.kind).to_lowercase();
    load_demo(&store).await;
    let token = api_token(&store).await;
    let (site, stop) = serve(&store).await;
    let driver = Driver::start().await;
    let browser = driver.session_sized(1280, 1000).await;
    let shot = |step: &str| screenshots().join(format!("{kind}-explore-{step}.png"));

    // Sign up, coming back to the explorer.
    browser.goto(&format!("{site}/explore")).await;
    assert!(browser.current_url().await.contains("/login?next=/explore"));
    browser.goto(&format!("{site}/signup?next=/explore")).await;
    browser
        .type_into("#email", &format!("explorer-{kind}@example.org"))
        .await;
    browser
        .type_into("#password", "correct horse battery")
        .await;
    browser
        .click("css selector", "form[action='/signup'] button[type=submit]")
        .await;
    browser
        .wait_until("document.querySelector(\"#dataset option[value='flights']\")")
        .await;
    assert!(browser.current_url().await.ends_with("/explore"));

    // Pick the flights dataset: all its records, value counts beside.
    let all = rest(&site, &token, "/datasets/flights/records?per_page=1").await;
    browser
        .click("css selector", "#dataset option[value='flights']")
        .await;
    let total = |n: u64| {
        format!(
            "document.getElementById('total').textContent === '{}'",
            grouped(n)
        )
    };
    browser
        .wait_until(&total(all["total"].as_u64().unwrap()))
        .await;
    browser
        .wait_until(
            "document.querySelector(\"section[data-facet='origin'] button[data-value='EWR']\")",
        )
        .await;
    let origins = rest(&site, &token, "/datasets/flights/agg?group_by=origin").await;
    let ewr = origins["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == "EWR")
        .unwrap()["stats"]["count"]
        .as_u64()
        .unwrap();
    let facet = browser
        .text("section[data-facet='origin'] button[data-value='EWR'] .count")
        .await;
    assert_eq!(facet, grouped(ewr), "the EWR value count is agg's");
    browser.screenshot(&shot("dataset")).await;

    // Search.
    browser.type_into("#q", "intl").await;
    browser.click("css selector", "#search").await;
    let searched = rest(&site, &token, "/datasets/flights/records?q=intl&per_page=1").await;
    browser
        .wait_until(&total(searched["total"].as_u64().unwrap()))
        .await;
    browser.screenshot(&shot("search")).await;

    // A keyword filter from the value counts.
    browser
        .click(
            "css selector",
            "section[data-facet='origin'] button[data-value='EWR']",
        )
        .await;
    let filtered = rest(
        &site,
        &token,
        "/datasets/flights/records?q=intl&origin=EWR&per_page=1",
    )
    .await;
    let filtered_total = filtered["total"].as_u64().unwrap();
    assert!(filtered_total > 20, "enough for two pages");
    browser.wait_until(&total(filtered_total)).await;
    assert!(
        browser
            .text("#active-filters")
            .await
            .contains("origin = EWR")
    );
    browser.screenshot(&shot("filter")).await;

    // Sort by clicking a column header: descending on the second click.
    let first_id = "document.querySelector('#records tbody tr') && document.querySelector('#records tbody tr').dataset.id";
    browser
        .click("css selector", "#records th button[data-field='dest']")
        .await;
    browser
        .wait_until("document.querySelector(\"#records th[aria-sort='ascending'] button[data-field='dest']\")")
        .await;
    browser
        .click("css selector", "#records th button[data-field='dest']")
        .await;
    browser
        .wait_until("document.querySelector(\"#records th[aria-sort='descending'] button[data-field='dest']\")")
        .await;
    let sorted = rest(
        &site,
        &token,
        "/datasets/flights/records?q=intl&origin=EWR&sort=dest%3C&per_page=20",
    )
    .await;
    let want = sorted["records"][0]["_id"].as_str().unwrap().to_string();
    browser
        .wait_until(&format!("({first_id}) === '{want}'"))
        .await;
    let cells = browser.text("#records tbody tr").await;
    assert!(cells.contains(sorted["records"][0]["dest"].as_str().unwrap()));
    browser.screenshot(&shot("sort")).await;

    // Page two.
    browser.click("css selector", "#next").await;
    browser
        .wait_until("document.getElementById('page-info').textContent.startsWith('Page 2 of')")
        .await;
    let page2 = rest(
        &site,
        &token,
        "/datasets/flights/records?q=intl&origin=EWR&sort=dest%3C&per_page=20&page=2",
    )
    .await;
    let want = page2["records"][0]["_id"].as_str().unwrap().to_string();
    browser
        .wait_until(&format!("({first_id}) === '{want}'"))
        .await;
    browser.screenshot(&shot("page2")).await;

    // Open a record.
    browser.click("css selector", "#records tbody tr").await;
    browser
        .wait_until(&format!(
            "!document.getElementById('record-detail').hidden && document.getElementById('record-id').textContent === '{want}'"
        ))
        .await;
    let json = browser.text("#record-json").await;
    let shown: Value = serde_json::from_str(&json).unwrap();
    let record = rest(&site, &token, &format!("/datasets/flights/records/{want}")).await;
    assert_eq!(shown, record, "the record as the API gives it");
    browser.screenshot(&shot("record")).await;

    // Grouped statistics: carriers with departure delays, as a table and a bar chart.
    browser
        .click("css selector", "#group-by option[value='carrier']")
        .await;
    browser
        .click("css selector", "#stat-field option[value='dep_delay']")
        .await;
    browser
        .wait_until("document.querySelector(\"#metric option[value='avg']\")")
        .await;
    browser
        .click("css selector", "#metric option[value='avg']")
        .await;
    browser.click("css selector", "#show-stats").await;
    let agg = rest(
        &site,
        &token,
        "/datasets/flights/agg?group_by=carrier&field=dep_delay&q=intl&origin=EWR",
    )
    .await;
    let groups = agg["total_groups"].as_u64().unwrap();
    assert!(groups > 1);
    browser
        .wait_until(&format!(
            "document.querySelectorAll('#stats-chart rect').length === {}",
            groups.min(15)
        ))
        .await;
    let rows = browser
        .eval("return document.querySelectorAll('#stats-table tbody tr').length;")
        .await;
    assert_eq!(rows, groups);
    let summary = browser.text("#stats-summary").await;
    assert!(
        summary.starts_with(&format!("{groups} groups of carrier")),
        "{summary}"
    );
    let first = &agg["groups"][0];
    let first_row = browser.text("#stats-table tbody tr").await;
    assert!(
        first_row.starts_with(first["key"].as_str().unwrap())
            && first_row.contains(&grouped(first["stats"]["count"].as_u64().unwrap())),
        "{first_row} / {first}"
    );
    browser
        .eval("document.getElementById('stats').scrollIntoView(); return true;")
        .await;
    browser.screenshot(&shot("stats")).await;

    browser.close().await;
    let _ = stop.send(());
}

both_stores!(explorer_page_and_its_token, explore_in_a_browser);
