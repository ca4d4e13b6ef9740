//! `/explore` views in headless Chromium: a view is a link (every part of it in the URL, opened
//! by someone else to the same view); the chart draws exactly the groups of the table, its
//! negative bars left of the zero line, and both follow the conditions; the API URL, the
//! download and the token renewed in the background; numbers with their field's precision.
//! What the page shows is compared with the REST API's answers to the same questions.

use crate::helpers::explorer::{grouped, limit, record_requests, rest, sign_up_for_the_explorer};
use crate::helpers::webdriver::{self, Driver, screenshots, serve};
use crate::helpers::{TestStore, api_token, load_demo};
use entity::api_token as token_entity;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::Value;

/// What a person sees of the view: the figures, the conditions, the columns, the page, the
/// statistics and the open record, as text.
const SNAPSHOT: &str = "
const texts = (css) => [...document.querySelectorAll(css)].map((e) => e.textContent);
return JSON.stringify({
  dataset: document.getElementById('dataset').value,
  q: document.getElementById('q').value,
  total: document.getElementById('total').textContent,
  page: document.getElementById('page-info').textContent,
  chips: texts('#active-filters .chip'),
  headers: texts('#records thead th'),
  rows: texts('#records tbody tr:not(.record-row)'),
  record: texts('#record-id'),
  stats: texts('#stats-summary'),
  table: texts('#stats-table tr'),
  bars: [...document.querySelectorAll('#stats-chart g.bar')].map((g) => g.dataset.key),
  api: document.getElementById('api-url').value,
});";

async fn snapshot(browser: &webdriver::Browser) -> Value {
    serde_json::from_str(browser.eval(SNAPSHOT).await.as_str().unwrap()).unwrap()
}

/// Waits until the page is at rest: no request pending (the status line empty), the table
/// and, when asked, the statistics and the record drawn.
async fn settled(browser: &webdriver::Browser, stats: bool, record: bool) {
    let mut condition = String::from(
        "document.getElementById('status').textContent === '' && document.querySelector('#records tbody tr')",
    );
    if stats {
        condition.push_str(" && document.querySelector('#stats-table tbody tr')");
    }
    if record {
        condition.push_str(" && document.querySelector('#record-fields dd')");
    }
    browser.wait_until(&condition).await;
}

/// The keys of the chart's bars and of the table's rows, in order; they must be equal.
async fn bars_and_rows(browser: &webdriver::Browser) -> (Vec<Value>, Vec<Value>) {
    let both = browser
        .eval(
            "return [[...document.querySelectorAll('#stats-chart g.bar')].map((g) => g.dataset.key), \
                     [...document.querySelectorAll('#stats-table tbody tr')].map((r) => r.dataset.key)];",
        )
        .await;
    (
        both[0].as_array().unwrap().clone(),
        both[1].as_array().unwrap().clone(),
    )
}

async fn a_view_is_a_link(store: TestStore) {
    let kind = format!("{:?}", store.kind).to_lowercase();
    load_demo(&store).await;
    let token = api_token(&store).await;
    let (site, stop) = serve(&store).await;
    let driver = Driver::start().await;
    let browser = driver.session_sized(1280, 1000).await;
    sign_up_for_the_explorer(&browser, &site, &format!("sharer-{kind}@example.org")).await;
    record_requests(&browser).await;
    browser
        .click("css selector", "#dataset option[value='flights']")
        .await;
    browser
        .wait_until("document.querySelector(\"[data-facet='origin'] button[data-value='JFK']\")")
        .await;
    settled(&browser, false, false).await;

    // Two values of one list (either of them), a range, a sort, a column, page two.
    for origin in ["EWR", "JFK"] {
        browser
            .click(
                "css selector",
                &format!("[data-facet='origin'] button[data-value='{origin}']"),
            )
            .await;
        browser
            .wait_until(&format!(
                "document.querySelector(\"[data-facet='origin'] button[data-value='{origin}'][aria-pressed=true]\")"
            ))
            .await;
    }
    browser.click("css selector", "#range-filter summary").await;
    browser
        .click("css selector", "#range-field option[value='distance']")
        .await;
    browser.type_into("#range-from", "500").await;
    browser.type_into("#range-to", "2000").await;
    browser
        .click("css selector", "#range-form button[type=submit]")
        .await;
    browser
        .wait_until("document.querySelectorAll('#active-filters .chip').length === 4")
        .await;
    settled(&browser, false, false).await;
    let conditions = "origin=EWR&origin=JFK&distance%5Bgte%5D=500&distance%5Blte%5D=2000";
    let matched = rest(
        &site,
        &token,
        &format!("/datasets/flights/records?{conditions}&per_page=1"),
    )
    .await;
    browser
        .wait_until(&format!(
            "document.getElementById('total').textContent === '{}'",
            grouped(matched["total"].as_u64().unwrap())
        ))
        .await;
    if browser
        .eval("return !document.querySelector(\"#records th button[data-field='distance']\");")
        .await
        == Value::Bool(true)
    {
        browser
            .click("css selector", "#column-picker summary")
            .await;
        browser
            .click("css selector", "#column-list input[value='distance']")
            .await;
    }
    for _ in 0..2 {
        browser
            .click("css selector", "#records th button[data-field='distance']")
            .await;
        settled(&browser, false, false).await;
    }
    browser
        .wait_until("document.querySelector(\"#records th[aria-sort='descending'] button[data-field='distance']\")")
        .await;
    browser.click("css selector", "#next").await;
    browser
        .wait_until("document.getElementById('page-info').textContent.startsWith('Page 2 of')")
        .await;
    settled(&browser, false, false).await;
    let page2 = rest(
        &site,
        &token,
        &format!("/datasets/flights/records?{conditions}&sort=distance%3C&per_page=20&page=2"),
    )
    .await;
    let want: Vec<Value> = page2["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["_id"].clone())
        .collect();
    let ids = browser
        .eval("return [...document.querySelectorAll('#records tbody tr')].map((tr) => tr.dataset.id);")
        .await;
    assert_eq!(ids.as_array().unwrap(), &want, "page two as REST gives it");

    // Statistics: by carrier and origin, the 90th percentile of the departure delay, groups of
    // at least 5 records.
    browser
        .click(
            "css selector",
            "#group-rows .group-field option[value='carrier']",
        )
        .await;
    browser.click("css selector", "#add-group").await;
    browser
        .click(
            "css selector",
            "#group-rows .group-row:nth-child(2) .group-field option[value='origin']",
        )
        .await;
    browser
        .click("css selector", "#stat-field option[value='dep_delay']")
        .await;
    browser
        .click("css selector", "#percentile option[value='90']")
        .await;
    browser
        .wait_until("document.querySelector(\"#metric option[value='p90']\")")
        .await;
    browser
        .click("css selector", "#metric option[value='p90']")
        .await;
    browser
        .eval("document.getElementById('min-count').value = '5'; return true;")
        .await;
    browser.click("css selector", "#show-stats").await;
    settled(&browser, true, false).await;
    let agg = rest(
        &site,
        &token,
        &format!(
            "/datasets/flights/agg?group_by=carrier,origin&field=dep_delay&{conditions}&percentiles=90&sort=p90%3C&min_count=5&limit=50"
        ),
    )
    .await;
    let keys: Vec<Value> = agg["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].clone())
        .collect();
    let (bars, rows) = bars_and_rows(&browser).await;
    assert_eq!(rows, keys, "the table's groups are agg's, in its order");
    assert_eq!(bars, rows, "a bar for every group of the table");

    // The API URL on screen answers what the table shows.
    let api = browser
        .eval("return document.getElementById('api-url').value;")
        .await;
    let api = api.as_str().unwrap();
    assert!(
        api.starts_with(&format!("{site}/api/v1/datasets/flights/records?")),
        "{api}"
    );
    let answer: Value = reqwest::Client::new()
        .get(api)
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let from_api: Vec<Value> = answer["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["_id"].clone())
        .collect();
    assert_eq!(from_api, want, "{api}");
    assert!(
        browser.text("#api-curl").await.is_empty()
            || browser
                .eval("return document.getElementById('api-curl').value;")
                .await
                .as_str()
                .unwrap()
                .starts_with("curl -H \"Authorization: Bearer $ODQS_TOKEN\" '")
    );

    // A record open, then the link.
    let id = want[3].as_str().unwrap();
    browser
        .click(
            "css selector",
            &format!("#records tbody tr[data-id='{id}']"),
        )
        .await;
    settled(&browser, true, true).await;
    let url = browser.current_url().await;
    for part in [
        "dataset=flights",
        "f.origin=EWR",
        "f.origin=JFK",
        "f.distance%5Bgte%5D=500",
        "sort=distance%3C",
        "page=2",
        "group_by=carrier%2Corigin",
        "field=dep_delay",
        "bars=p90",
        "percentile=90",
        "min_count=5",
        &format!("record={id}"),
    ] {
        assert!(url.contains(part), "{part} in {url}");
    }
    let seen = snapshot(&browser).await;
    browser
        .screenshot(&screenshots().join(format!("{kind}-explore-shared.png")))
        .await;

    // Someone else opens the link: logs in first (signs up), comes back to the same view.
    let other = driver.session_sized(1280, 1000).await;
    other.goto(&url).await;
    assert!(other.current_url().await.contains("/login?next="));
    other
        .click("css selector", "a[href^='/signup?next=']")
        .await;
    other
        .type_into("#email", &format!("receiver-{kind}@example.org"))
        .await;
    other.type_into("#password", "correct horse battery").await;
    other
        .click("css selector", "form[action='/signup'] button[type=submit]")
        .await;
    other
        .wait_until("document.querySelector('#stats-chart g.bar') && document.querySelector('#record-fields dd')")
        .await;
    settled(&other, true, true).await;
    assert_eq!(other.current_url().await, url, "the same address");
    assert_eq!(snapshot(&other).await, seen, "the same view");
    other.close().await;

    // The back button returns to the view before: the same, without the record.
    browser.eval("history.back(); return true;").await;
    browser
        .wait_until(
            "!location.search.includes('record=') && !document.getElementById('record-detail')",
        )
        .await;
    settled(&browser, true, false).await;
    assert!(browser.current_url().await.contains("page=2"));

    // The statistics follow the conditions: one value of the list less, and they are agg's
    // under the new conditions.
    browser
        .click(
            "css selector",
            "[data-facet='origin'] button[data-value='JFK']",
        )
        .await;
    let narrower = rest(
        &site,
        &token,
        "/datasets/flights/agg?group_by=carrier,origin&field=dep_delay&origin=EWR&distance%5Bgte%5D=500&distance%5Blte%5D=2000&percentiles=90&sort=p90%3C&min_count=5&limit=50",
    )
    .await;
    browser
        .wait_until(&format!(
            "document.getElementById('stats-summary').textContent.includes('over {} records')",
            grouped(narrower["total_records"].as_u64().unwrap())
        ))
        .await;
    settled(&browser, true, false).await;
    let (bars, rows) = bars_and_rows(&browser).await;
    assert_eq!(bars, rows);
    assert_eq!(
        rows.len() as u64,
        narrower["total_groups"].as_u64().unwrap()
    );

    // The download: every matching record, through the export endpoint, as CSV.
    browser.click("css selector", "#views summary").await;
    browser.click("css selector", "#download-csv").await;
    let export = reqwest::Client::new()
        .get(format!(
            "{site}/api/v1/datasets/flights/export?format=csv&origin=EWR&distance%5Bgte%5D=500&distance%5Blte%5D=2000"
        ))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    let total = export.headers()["x-total-count"]
        .to_str()
        .unwrap()
        .to_string();
    browser
        .wait_until(&format!(
            "document.getElementById('download-status').dataset.records === '{total}'"
        ))
        .await;

    // A permalink to a record that is not on the view's page opens its panel above the table.
    let far = rest(
        &site,
        &token,
        "/datasets/flights/records?per_page=1&page=300",
    )
    .await;
    let far = far["records"][0]["_id"].as_str().unwrap().to_string();
    browser
        .goto(&format!("{site}/explore?dataset=flights&record={far}"))
        .await;
    browser
        .wait_until(&format!(
            "document.querySelector('#record-alone #record-id') && document.getElementById('record-id').textContent === '{far}'"
        ))
        .await;

    browser.close().await;
    let _ = stop.send(());
}

/// Every group the chart names is drawn: all 16 carriers by count; by the smallest departure
/// delay (negative: early) the bars of negative values end at the zero line, on its left, and
/// the positive ones start there.
async fn the_chart_draws_every_group(store: TestStore) {
    let kind = format!("{:?}", store.kind).to_lowercase();
    load_demo(&store).await;
    let token = api_token(&store).await;
    let (site, stop) = serve(&store).await;
    let driver = Driver::start().await;
    let browser = driver.session_sized(1280, 1000).await;
    sign_up_for_the_explorer(&browser, &site, &format!("charts-{kind}@example.org")).await;
    let carriers = rest(&site, &token, "/datasets/flights/agg?group_by=carrier").await;
    let groups = carriers["total_groups"].as_u64().unwrap();
    assert!(groups > 15, "more carriers than the old chart drew");
    // By a keyword, a date in months, a number in bins, two keywords: the groups agg gives.
    for group_by in [
        "carrier",
        "time_hour%5Bmonth%5D",
        "distance%5B500%5D",
        "origin%2Ccarrier",
    ] {
        browser
            .goto(&format!(
                "{site}/explore?dataset=flights&group_by={group_by}"
            ))
            .await;
        settled(&browser, true, false).await;
        let agg = rest(
            &site,
            &token,
            &format!("/datasets/flights/agg?group_by={group_by}&limit=50"),
        )
        .await;
        let keys: Vec<Value> = agg["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["key"].clone())
            .collect();
        let (bars, rows) = bars_and_rows(&browser).await;
        assert_eq!(rows, keys, "{group_by}");
        assert_eq!(bars, rows, "{group_by}");
        if group_by == "carrier" {
            assert_eq!(bars.len() as u64, groups);
        }
    }

    // A list's "+ N more" opens it: FACET_MORE values at most.
    let dests = rest(&site, &token, "/datasets/flights/agg?group_by=dest&limit=1").await;
    let dests = dests["total_groups"].as_u64().unwrap();
    browser
        .click("css selector", "[data-facet='dest'] .more-values")
        .await;
    browser
        .wait_until(&format!(
            "document.querySelectorAll(\"[data-facet='dest'] li\").length === {} && !document.querySelector(\"[data-facet='dest'] .more-values\")",
            dests.min(limit("FACET_MORE"))
        ))
        .await;

    browser
        .goto(&format!(
            "{site}/explore?dataset=flights&group_by=origin&field=dep_delay&bars=min"
        ))
        .await;
    settled(&browser, true, false).await;
    let geometry = browser
        .eval(
            "const zero = Number(document.querySelector('#stats-chart line.zero').getAttribute('x1')); \
             return [...document.querySelectorAll('#stats-chart g.bar rect')].map((r) => ({ \
               neg: r.classList.contains('neg'), x: Number(r.getAttribute('x')), \
               end: Number(r.getAttribute('x')) + Number(r.getAttribute('width')), zero }));",
        )
        .await;
    let geometry = geometry.as_array().unwrap();
    assert!(geometry.iter().any(|b| b["neg"] == true), "{geometry:?}");
    for bar in geometry {
        let (x, end, zero) = (
            bar["x"].as_f64().unwrap(),
            bar["end"].as_f64().unwrap(),
            bar["zero"].as_f64().unwrap(),
        );
        if bar["neg"] == true {
            assert!((end - zero).abs() < 0.01 && x < zero, "{bar}");
        } else {
            assert!((x - zero).abs() < 0.01, "{bar}");
        }
    }
    browser
        .eval("document.getElementById('stats-chart').scrollIntoView(); return true;")
        .await;
    browser
        .screenshot(&screenshots().join(format!("{kind}-explore-negative.png")))
        .await;

    // Numbers keep their field's precision: the scenic spots' longitudes as the data writes
    // them, their averages without float noise.
    browser
        .goto(&format!(
            "{site}/explore?dataset=tw-scenic-spots&group_by=City&field=Position.PositionLon&bars=avg"
        ))
        .await;
    settled(&browser, true, false).await;
    let cells = browser
        .eval("return [...document.querySelectorAll('#stats-table tbody td.num')].map((td) => td.textContent);")
        .await;
    for cell in cells.as_array().unwrap() {
        let text = cell.as_str().unwrap();
        let decimals = text.split('.').nth(1).map_or(0, str::len);
        assert!(decimals <= 6 && !text.contains('e'), "{text}");
    }
    browser.close().await;
    let _ = stop.send(());
}

/// The page's token is renewed while the page is open: when the store has ended it, the next
/// request gets a fresh one and the page goes on.
async fn the_token_is_renewed(store: TestStore) {
    let kind = format!("{:?}", store.kind).to_lowercase();
    load_demo(&store).await;
    let (site, stop) = serve(&store).await;
    let driver = Driver::start().await;
    let browser = driver.session_sized(1280, 1000).await;
    sign_up_for_the_explorer(&browser, &site, &format!("renew-{kind}@example.org")).await;
    browser
        .goto(&format!("{site}/explore?dataset=flights"))
        .await;
    settled(&browser, false, false).await;
    let first = browser
        .eval("return document.getElementById('explore').dataset.token;")
        .await;
    let first = first.as_str().unwrap().to_string();
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
    let ended = std::time::Instant::now();
    loop {
        let status = reqwest::Client::new()
            .get(format!("{site}/api/v1/datasets"))
            .bearer_auth(&first)
            .send()
            .await
            .unwrap()
            .status();
        if status == 401 {
            break;
        }
        assert!(
            ended.elapsed() < odqs::auth::token::FRESH_FOR * 2,
            "still accepted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    browser.click("css selector", "#next").await;
    browser
        .wait_until("document.getElementById('page-info').textContent.startsWith('Page 2 of') && document.getElementById('explore').dataset.renewed === '1'")
        .await;
    settled(&browser, false, false).await;
    browser.close().await;
    let _ = stop.send(());
}

both_stores!(
    tier2: a_view_is_a_link,
    the_chart_draws_every_group,
    the_token_is_renewed
);
