//! An automated accessibility audit of every page, in a real browser: axe-core (pinned in
//! `tests/api/helpers/node/package.json`, installed from npm) runs in each page at a phone's
//! width (390 px) and a laptop's (1280 px), signed out and signed in, and no finding may be
//! serious or critical. The explorer is audited empty, with statistics and with its map. The
//! counts of every impact are printed for the record.
//!
//! Needs Debian's `chromium` and `chromium-driver` and npm (`tests/tier2.sh` installs them); without
//! them this test fails, it never skips.

use serde_json::Value;

use crate::helpers::explorer::sign_up_for_the_explorer;
use crate::helpers::node::axe_source;
use crate::helpers::webdriver::{Browser, Driver};
use crate::helpers::{TestStore, load_demo, serve};

/// Pages a visitor reaches signed out, each with what shows it is drawn.
const SIGNED_OUT: &[(&str, &str)] = &[
    ("/", "document.querySelector('h1')"),
    ("/login", "document.querySelector('form')"),
    ("/signup", "document.querySelector('form')"),
    ("/catalog", "document.querySelector('article h1')"),
    (
        "/datasets/flights/skill",
        "document.querySelector('article h1')",
    ),
    ("/device", "document.querySelector('form')"),
    (
        "/docs",
        "!document.querySelector('#redoc[aria-busy]') && document.querySelector('#redoc h1')",
    ),
    (
        "/graphql",
        "document.querySelector('.graphiql-execute-button')",
    ),
];

/// Pages a signed-in person reaches.
const SIGNED_IN: &[(&str, &str)] = &[
    (
        "/explore",
        "document.querySelector(\"#dataset option[value='flights']\")",
    ),
    (
        "/explore?dataset=flights&group_by=carrier&field=dep_delay&bars=avg",
        "document.getElementById('status').textContent === '' \
         && document.querySelector('#records tbody tr') && document.querySelector('#stats svg')",
    ),
    (
        "/explore?dataset=tw-scenic-spots&near=24.07,120.54,20km&sort=_distance%3E",
        "document.getElementById('status').textContent === '' \
         && document.querySelector('#records tbody tr') && !document.getElementById('map').hidden \
         && document.getElementById('map').dataset.loading === '0'",
    ),
    ("/account", "document.querySelector('form')"),
];

/// axe-core's findings in the page: (every impact's count, the serious and critical ones).
async fn audit(browser: &Browser, source: &str) -> (Value, Vec<Value>) {
    browser.eval(&format!("{source}\nreturn true;")).await;
    let found = browser
        .eval_async(
            "axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations.map(v => \
             ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length, \
               where: v.nodes.slice(0, 3).map(n => n.target.join(' '))}))));",
        )
        .await;
    let found = found.as_array().unwrap().clone();
    let mut counts = serde_json::Map::new();
    for v in &found {
        let impact = v["impact"].as_str().unwrap_or("none").to_string();
        let n = counts.get(&impact).and_then(Value::as_u64).unwrap_or(0);
        counts.insert(impact, Value::from(n + v["nodes"].as_u64().unwrap_or(0)));
    }
    let grave = found
        .into_iter()
        .filter(|v| matches!(v["impact"].as_str(), Some("serious" | "critical")))
        .collect();
    (Value::Object(counts), grave)
}

async fn no_serious_or_critical_finding(store: TestStore) {
    let kind = format!("{:?}", store.kind).to_lowercase();
    load_demo(&store).await;
    let (site, stop) = serve(&store).await;
    let driver = Driver::start().await;
    let source = axe_source();
    let mut grave = Vec::new();
    for (width, height) in [(390, 844), (1280, 800)] {
        let browser = driver.session_sized(width.max(500), height).await;
        browser.viewport(width, height).await;
        let mut pages = Vec::new();
        for (path, drawn) in SIGNED_OUT {
            browser.goto(&format!("{site}{path}")).await;
            browser.wait_until(drawn).await;
            pages.push((path, audit(&browser, &source).await));
        }
        sign_up_for_the_explorer(&browser, &site, &format!("axe-{width}@example.org")).await;
        for (path, drawn) in SIGNED_IN {
            browser.goto(&format!("{site}{path}")).await;
            browser.wait_until(drawn).await;
            pages.push((path, audit(&browser, &source).await));
        }
        for (path, (counts, found)) in pages {
            eprintln!("axe {kind} {width} px {path}: {counts}");
            grave.extend(found.into_iter().map(|f| (width, path, f)));
        }
        browser.close().await;
    }
    let _ = stop.send(());
    assert!(grave.is_empty(), "serious or critical findings: {grave:#?}");
}

both_stores!(tier2: no_serious_or_critical_finding);
