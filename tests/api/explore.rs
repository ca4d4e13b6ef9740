//! `/explore`: the page and its short-lived token in-process, then headless Chromium
//! driving it on the demo flights dataset as a person would: pick the dataset, search, apply a
//! keyword filter, sort by clicking a column, go to page two, open a record, show grouped
//! statistics. Each step's visible numbers are checked against the REST API's answer to the
//! same question, and a screenshot goes to `target/screenshots/{store}-explore-*.png`.

use crate::helpers::client::Browser;
use crate::helpers::webdriver;
use crate::helpers::webdriver::{Driver, screenshots, serve};
use crate::helpers::{TestStore, api_token, load_demo, post_graphql};
use entity::api_token as token_entity;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::Value;

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
            changed_at.elapsed() < odqs::auth::token::FRESH_FOR * 2,
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

/// Signs up in `browser` and lands on `/explore` with its dataset list loaded.
async fn sign_up_for_the_explorer(browser: &webdriver::Browser, site: &str, email: &str) {
    browser.goto(&format!("{site}/signup?next=/explore")).await;
    browser.type_into("#email", email).await;
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
}

/// Keeps the body of every request the page sends from now on in `window.sentBodies`.
async fn record_requests(browser: &webdriver::Browser) {
    browser
        .eval(
            "window.sentBodies = []; const send = window.fetch; \
             window.fetch = (url, options) => { window.sentBodies.push(options.body); return send(url, options); }; \
             return true;",
        )
        .await;
}

/// Every `agg` field of every GraphQL document the page sent carries a `limit` of at most
/// `cap` (a literal or a variable): the explorer never asks for every group of a field.
async fn every_agg_was_bounded(browser: &webdriver::Browser, cap: u64) -> usize {
    let sent = browser.eval("return window.sentBodies;").await;
    let mut aggs = 0;
    for body in sent.as_array().unwrap() {
        let request: Value = serde_json::from_str(body.as_str().unwrap()).unwrap();
        let query = request["query"].as_str().unwrap();
        for (at, _) in query.match_indices("agg(") {
            aggs += 1;
            let arguments = &query[at..at + query[at..].find(')').unwrap()];
            let limit = arguments
                .split("limit:")
                .nth(1)
                .unwrap_or_else(|| panic!("an agg without limit: {arguments}"))
                .split([',', ')'])
                .next()
                .unwrap()
                .trim();
            let value = match limit.strip_prefix('$') {
                Some(variable) => request["variables"][variable].as_u64(),
                None => limit.parse().ok(),
            };
            assert!(
                value.is_some_and(|n| (1..=cap).contains(&n)),
                "limit {limit} in {arguments} / {}",
                request["variables"]
            );
        }
    }
    aggs
}

/// The explorer's cap on the groups it asks for: `TOP_GROUPS` in `explore.js`, read from it.
fn top_groups() -> u64 {
    let script = include_str!("../../src/site/explore.js");
    let at = script
        .find("const TOP_GROUPS = ")
        .expect("TOP_GROUPS in explore.js")
        + 19;
    script[at..script[at..].find(';').unwrap() + at]
        .parse()
        .unwrap()
}

/// "Group by" starts on a keyword field with a few values (2..=TOP_GROUPS), not the
/// identifier field.
async fn default_group_is_small(browser: &webdriver::Browser, site: &str, token: &str, slug: &str) {
    let field = browser
        .eval("return document.getElementById('group-by').value;")
        .await;
    let field = field.as_str().unwrap();
    let meta = rest(site, token, &format!("/datasets/{slug}")).await;
    assert_ne!(meta["id_field"].as_str(), Some(field));
    let agg = rest(
        site,
        token,
        &format!("/datasets/{slug}/agg?group_by={field}"),
    )
    .await;
    let groups = agg["total_groups"].as_u64().unwrap();
    assert!(
        (2..=top_groups()).contains(&groups),
        "{slug}: {field} has {groups} values"
    );
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
    sign_up_for_the_explorer(&browser, &site, &format!("explorer-{kind}@example.org")).await;
    record_requests(&browser).await;

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
        .wait_until("document.querySelector(\"[data-facet='origin'] button[data-value='EWR']\")")
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
        .text("[data-facet='origin'] button[data-value='EWR'] .count")
        .await;
    assert_eq!(facet, grouped(ewr), "the EWR value count is agg's");
    default_group_is_small(&browser, &site, &token, "flights").await;
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
            "[data-facet='origin'] button[data-value='EWR']",
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

    // A number column: shown from the column picker, sorted by clicking its header, ascending
    // (`sort=distance>`) then descending (`sort=distance<`), as the REST API sorts.
    let first_id = "document.querySelector('#records tbody tr') && document.querySelector('#records tbody tr').dataset.id";
    assert!(
        browser
            .eval("return !document.querySelector(\"#records th button[data-field='distance']\");")
            .await
            == Value::Bool(true),
        "distance is not among the first columns"
    );
    browser
        .click("css selector", "#column-picker summary")
        .await;
    browser
        .click("css selector", "#column-list input[value='distance']")
        .await;
    browser
        .wait_until("document.querySelector(\"#records th button[data-field='distance']\")")
        .await;
    for (order, aria) in [("%3E", "ascending"), ("%3C", "descending")] {
        browser
            .click("css selector", "#records th button[data-field='distance']")
            .await;
        browser
            .wait_until(&format!(
                "document.querySelector(\"#records th[aria-sort='{aria}'] button[data-field='distance']\")"
            ))
            .await;
        let sorted = rest(
            &site,
            &token,
            &format!(
                "/datasets/flights/records?q=intl&origin=EWR&sort=distance{order}&per_page=20"
            ),
        )
        .await;
        let want = sorted["records"][0]["_id"].as_str().unwrap().to_string();
        browser
            .wait_until(&format!("({first_id}) === '{want}'"))
            .await;
        let shown: Vec<Value> = browser
            .eval(
                "const i = [...document.querySelectorAll('#records thead th')].findIndex((th) => th.querySelector(\"[data-field='distance']\")); \
                 return [...document.querySelectorAll('#records tbody tr')].map((tr) => tr.children[i].textContent);",
            )
            .await
            .as_array()
            .unwrap()
            .clone();
        let want: Vec<Value> = sorted["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                Value::String(
                    r["distance"]
                        .as_f64()
                        .map(|n| n.to_string())
                        .unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(shown, want, "distance {aria}");
    }
    browser.screenshot(&shot("sort")).await;

    // Page two.
    browser.click("css selector", "#next").await;
    browser
        .wait_until("document.getElementById('page-info').textContent.startsWith('Page 2 of')")
        .await;
    let page2 = rest(
        &site,
        &token,
        "/datasets/flights/records?q=intl&origin=EWR&sort=distance%3C&per_page=20&page=2",
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

    // Grouped statistics: carriers by average departure delay (largest first), as a table and
    // a bar chart.
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
        "/datasets/flights/agg?group_by=carrier&field=dep_delay&q=intl&origin=EWR&sort=avg%3C&limit=50",
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
    assert!(every_agg_was_bounded(&browser, top_groups()).await > 0);

    browser.close().await;
    let _ = stop.send(());
}

/// `document.documentElement.scrollWidth` and `window.innerWidth`: the page may not scroll
/// sideways (wide tables scroll inside their own box).
async fn widths(browser: &webdriver::Browser) -> (u64, u64) {
    let w = browser
        .eval("return [document.documentElement.scrollWidth, window.innerWidth];")
        .await;
    (w[0].as_u64().unwrap(), w[1].as_u64().unwrap())
}

/// Checks that `page` does not overflow sideways, then screenshots the whole page (the window
/// made as tall as the document) to `target/screenshots/{name}.png`.
async fn fits(browser: &webdriver::Browser, name: &str, width: u32, height: u32) {
    let (scroll, inner) = widths(browser).await;
    eprintln!("{name}: scrollWidth {scroll}, innerWidth {inner}");
    assert_eq!(
        inner,
        u64::from(width),
        "{name}: the window is {width} px wide"
    );
    assert!(
        scroll <= inner,
        "{name}: the page is {scroll} px wide in a {inner} px window"
    );
    let tall = browser
        .eval("return document.documentElement.scrollHeight;")
        .await
        .as_u64()
        .unwrap();
    browser
        .viewport(width, tall.max(u64::from(height)) as u32)
        .await;
    let (scroll, inner) = widths(browser).await;
    assert!(
        scroll <= inner && inner == u64::from(width),
        "{name}: {scroll} > {inner} at full height"
    );
    browser
        .screenshot(&screenshots().join(format!("{name}.png")))
        .await;
    browser.viewport(width, height).await;
}

/// `/` and `/explore` on both demo datasets with statistics shown, at a phone's width (390
/// px) and a laptop's (1280 px): nothing scrolls sideways, the first record is on the first
/// screen, and screenshots land in `target/screenshots/{store}-{page}-{width}.png`.
async fn pages_fit_phone_and_laptop(store: TestStore) {
    let kind = format!("{:?}", store.kind).to_lowercase();
    load_demo(&store).await;
    let token = api_token(&store).await;
    let (site, stop) = serve(&store).await;
    let driver = Driver::start().await;
    for (width, height) in [(390, 844), (1280, 800)] {
        let browser = driver.session_sized(width.max(500), height).await;
        browser.viewport(width, height).await;
        browser.goto(&format!("{site}/")).await;
        fits(&browser, &format!("{kind}-home-{width}"), width, height).await;

        sign_up_for_the_explorer(&browser, &site, &format!("screens-{width}@example.org")).await;
        record_requests(&browser).await;
        for slug in ["flights", "tw-scenic-spots"] {
            let all = rest(
                &site,
                &token,
                &format!("/datasets/{slug}/records?per_page=1"),
            )
            .await;
            browser
                .click("css selector", &format!("#dataset option[value='{slug}']"))
                .await;
            browser
                .wait_until(&format!(
                    "document.getElementById('total').textContent === '{}' && document.querySelector('#records tbody tr') && document.querySelector('#facets [data-facet]')",
                    grouped(all["total"].as_u64().unwrap())
                ))
                .await;
            default_group_is_small(&browser, &site, &token, slug).await;
            let first_row = browser
                .eval("return document.querySelector('#records tbody tr').getBoundingClientRect().top + window.scrollY;")
                .await
                .as_f64()
                .unwrap();
            eprintln!("{kind} {slug} at {width}: first record {first_row} px down");
            assert!(
                first_row < f64::from(height),
                "{slug} at {width}: the first record is {first_row} px down"
            );
            // Statistics of a number field: departure delays, the spots' longitudes.
            let number = match slug {
                "flights" => "dep_delay",
                _ => "Position.PositionLon",
            };
            browser
                .click(
                    "css selector",
                    &format!("#stat-field option[value='{number}']"),
                )
                .await;
            browser.click("css selector", "#show-stats").await;
            browser
                .wait_until("document.querySelector('#stats-chart rect') && document.querySelector('#stats-table tbody tr')")
                .await;
            fits(
                &browser,
                &format!("{kind}-explore-{slug}-{width}"),
                width,
                height,
            )
            .await;
        }
        assert!(every_agg_was_bounded(&browser, top_groups()).await > 0);
        browser.close().await;
    }
    let _ = stop.send(());
}

both_stores!(
    explorer_page_and_its_token,
    explore_in_a_browser,
    pages_fit_phone_and_laptop
);
