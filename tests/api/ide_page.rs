//! The GraphiQL IDE in a real browser (`/graphql` on the site). Signed out, it opens without
//! sending anything, so no error greets the visitor; signed in, it starts with a short-lived
//! token, reads the schema and runs its first query as it stands. At a phone's width (390 px)
//! and a laptop's (1280 px), the page does not scroll sideways. Screenshots go to
//! `target/screenshots/{store}-ide-{signed-out,signed-in}-{width}.png`.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`tests/tier2.sh` installs them); without them
//! this test fails, it never skips.

use crate::helpers::explorer::{sign_up_for_the_explorer, widths};
use crate::helpers::webdriver::{Browser, Driver, screenshots};
use crate::helpers::{TestStore, load_demo, serve};

/// Requests the page has sent to the GraphQL endpoint.
const SENT: &str = "performance.getEntriesByType('resource')\
    .filter(e => e.name.endsWith('/api/v1/graphql')).length";

async fn open_ide(browser: &Browser, site: &str) {
    browser.goto(&format!("{site}/graphql")).await;
    browser
        .wait_until("document.querySelector('.graphiql-container .graphiql-execute-button')")
        .await;
}

async fn no_sideways_scroll(browser: &Browser, width: u32) {
    let (scroll, inner) = widths(browser).await;
    assert_eq!(inner, u64::from(width));
    assert!(scroll <= inner, "the IDE is {scroll} px wide in {inner} px");
}

async fn ide_in_a_browser(store: TestStore) {
    let kind = format!("{:?}", store.kind).to_lowercase();
    load_demo(&store).await;
    let (site, stop) = serve(&store).await;
    let driver = Driver::start().await;
    for (width, height) in [(390, 844), (1280, 800)] {
        let browser = driver.session_sized(width.max(500), height).await;
        browser.viewport(width, height).await;

        // Signed out: nothing is sent, no error is shown, the editor asks for a token.
        open_ide(&browser, &site).await;
        browser
            .wait_until("document.readyState === 'complete'")
            .await;
        assert_eq!(browser.eval(&format!("return {SENT};")).await, 0);
        let text = browser.eval("return document.body.innerText;").await;
        let text = text.as_str().unwrap();
        assert!(
            !text.contains("invalid_token") && !text.contains("error"),
            "{text}"
        );
        assert!(text.contains("Paste your API token"), "{text}");
        no_sideways_scroll(&browser, width).await;
        browser
            .screenshot(&screenshots().join(format!("{kind}-ide-signed-out-{width}.png")))
            .await;

        // Signed in: the token is there; the schema is read and the first query runs.
        sign_up_for_the_explorer(&browser, &site, &format!("ide-{width}@example.org")).await;
        open_ide(&browser, &site).await;
        browser.wait_until(&format!("{SENT} >= 1")).await;
        browser
            .click("css selector", ".graphiql-execute-button")
            .await;
        browser
            .wait_until(
                "[...document.querySelectorAll('.graphiql-response')]\
                 .some(e => e.innerText.includes('tw-scenic-spots'))",
            )
            .await;
        let answer = browser.text(".graphiql-response").await;
        assert!(answer.contains("\"total\": 2"), "{answer}");
        no_sideways_scroll(&browser, width).await;
        browser
            .screenshot(&screenshots().join(format!("{kind}-ide-signed-in-{width}.png")))
            .await;
        browser.close().await;
    }
    let _ = stop.send(());
}

both_stores!(tier2: ide_in_a_browser);
