//! `/docs` in a real browser: Redoc, vendored and served by the site under a policy that
//! allows scripts from the site only, draws the OpenAPI document that clients read
//! (`/api/v1/openapi.json`), at a phone's width (390 px) and a laptop's (1280 px), without the
//! page scrolling sideways. Screenshots go to `target/screenshots/{store}-docs-{width}.png`.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`tests/tier2.sh` installs them); without them
//! this test fails, it never skips.

use crate::helpers::client::{Browser as Client, unescape};
use crate::helpers::explorer::widths;
use crate::helpers::webdriver::{Driver, screenshots};
use crate::helpers::{TestStore, serve};

/// The page itself: the document's URL for Redoc, Redoc's files from this site, the policy.
async fn docs_page_names_the_document_and_its_renderer(store: TestStore) {
    let mut client = Client::new(store.router());
    let page = client.get("/docs").await;
    assert_eq!(page.status, 200);
    // minijinja escapes `/` in HTML as `&#x2f;`, which the browser reads back.
    let html = &unescape(&page.body);
    assert!(
        html.contains("data-spec=\"http://odqs.test/api/v1/openapi.json\""),
        "{html}"
    );
    let policy = page.header("content-security-policy").unwrap_or_default();
    assert!(policy.contains("script-src 'self';"), "{policy}");
    let version = odqs::api::openapi::docs::REDOC_VERSION;
    let script = format!("/assets/redoc-{version}/redoc.standalone.js");
    assert!(html.contains(&script), "{html}");
    let asset = client.get(&script).await;
    assert_eq!(asset.status, 200);
    assert_eq!(asset.header("content-type"), Some("text/javascript"));
    assert!(
        asset
            .header("cache-control")
            .is_some_and(|c| c.contains("immutable"))
    );
    // Another version, or a file not vendored: 404, as any unknown path.
    for path in [
        "/assets/redoc-0.0.1/redoc.standalone.js",
        &format!("/assets/redoc-{version}/secret.txt"),
    ] {
        assert_eq!(client.get(path).await.status, 404, "{path}");
    }
}

/// Redoc draws every operation of the document, the agg endpoint's `group_by` among them.
async fn docs_drawn_by_redoc_in_a_browser(store: TestStore) {
    let kind = format!("{:?}", store.kind).to_lowercase();
    let (site, stop) = serve(&store).await;
    let driver = Driver::start().await;
    let operations = reqwest::get(format!("{site}/api/v1/openapi.json"))
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap()["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().keys())
        .filter(|key| ["get", "post", "put", "patch", "delete"].contains(&key.as_str()))
        .count();
    for (width, height) in [(390, 844), (1280, 800)] {
        let browser = driver.session_sized(width.max(500), height).await;
        browser.viewport(width, height).await;
        browser.goto(&format!("{site}/docs")).await;
        browser
            .wait_until(
                "!document.querySelector('#redoc[aria-busy]') \
                 && document.body.innerText.includes('group_by')",
            )
            .await;
        // One section per operation, each with its own anchor (`operation/<id>`).
        let drawn = browser
            .eval("return document.querySelectorAll('#redoc [id^=\"operation/\"]').length;")
            .await
            .as_u64()
            .unwrap();
        assert_eq!(drawn as usize, operations, "{kind} at {width} px");
        let (scroll, inner) = widths(&browser).await;
        assert_eq!(inner, u64::from(width));
        assert!(
            scroll <= inner,
            "/docs is {scroll} px wide in a {inner} px window"
        );
        browser
            .screenshot(&screenshots().join(format!("{kind}-docs-{width}.png")))
            .await;
        browser.close().await;
    }
    let _ = stop.send(());
}

both_stores!(docs_page_names_the_document_and_its_renderer);
both_stores!(tier2: docs_drawn_by_redoc_in_a_browser);
