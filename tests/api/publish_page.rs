//! `/publish` through the real router, on SQLite and PostgreSQL: what an account without a
//! grant is told, the datasets a grant names, a dataset's page with its upload form and its
//! versions' changes, the upload token (which publishes that dataset alone), and removal after
//! a confirmation.

use axum::http::Method;

use crate::helpers::TestStore;
use crate::helpers::client::{Browser, request};

async fn publish_pages(store: TestStore) {
    let mut browser = Browser::new(store.router());
    browser.sign_up("ada@example.org").await;
    let page = browser.get("/publish").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("id=\"no-grant\""), "{}", page.body);
    assert_eq!(browser.get("/publish/city-parks").await.status, 403);

    odqs::auth::publishers::grant_publish(&store.store, "ada@example.org", "city-*", "tests")
        .await
        .unwrap();
    let page = browser.get("/publish").await;
    assert!(page.body.contains("<code>city-*</code>") && page.body.contains("id=\"none-yet\""));
    let opened = browser.get("/publish?open=city-parks").await;
    assert_eq!(
        (opened.status, opened.location()),
        (303, "/publish/city-parks")
    );
    let page = browser.get("/publish/city-parks").await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("data-slug=\"city-parks\"") && page.body.contains("Its first version")
    );
    assert_eq!(browser.get("/publish/town-parks").await.status, 403);
    assert_eq!(browser.get("/publish/no%20slug").await.status, 400);

    // The upload token: a CSRF-checked form post, for this dataset alone.
    let refused = browser.post("/publish/city-parks/token", &[]).await;
    assert_eq!(refused.status, 403, "no CSRF token: {}", refused.body);
    let minted = browser
        .submit(
            "/publish/city-parks/remove",
            "/publish/city-parks/token",
            &[],
        )
        .await;
    assert_eq!(minted.status, 200, "{}", minted.body);
    let token = minted.json()["token"].as_str().unwrap().to_string();
    for (slug, body, status) in [
        ("city-parks", "code,name\na,Alpha\nb,Beta\n", 201),
        ("city-parks", "code,name\na,Alpha\nb,Bravo\nc,Gamma\n", 200),
        ("city-other", "code,name\na,Alpha\n", 403),
    ] {
        let put = request(
            Method::PUT,
            &format!("/api/v1/datasets/{slug}"),
            Some(&token),
            &[],
            Some(("text/csv", body.to_string())),
        );
        assert_eq!(browser.send(put).await.status, status, "{slug}");
    }

    let page = browser.get("/publish/city-parks").await;
    assert!(page.body.contains("A new version"), "{}", page.body);
    let versions = &page.body[page.body.find("id=\"versions\"").unwrap()..];
    // Version 2 against 1: c added, b changed (ids are row numbers: 3 added, 2 changed).
    assert!(
        versions.contains("<td data-label=\"Added\">1</td><td data-label=\"Removed\">0</td><td data-label=\"Changed\">1</td>"),
        "{versions}"
    );
    let listed = browser.get("/publish").await;
    assert!(
        listed.body.contains("href=\"/publish/city-parks\""),
        "{}",
        listed.body
    );

    let confirm = browser.get("/publish/city-parks/remove").await;
    assert!(confirm.body.contains("id=\"confirm-remove\""));
    let removed = browser
        .submit(
            "/publish/city-parks/remove",
            "/publish/city-parks/remove",
            &[],
        )
        .await;
    assert_eq!(
        (removed.status, removed.location()),
        (303, "/publish?removed=city-parks")
    );
    let reader = crate::helpers::api_token(&store).await;
    let gone = browser
        .send(request(
            Method::GET,
            "/api/v1/datasets/city-parks",
            Some(&reader),
            &[],
            None,
        ))
        .await;
    assert_eq!(gone.status, 404);
    assert_eq!(browser.get("/assets/publish.js").await.status, 200);
}

/// In headless Chromium: an account with a grant signs up, opens a dataset's page, picks a CSV
/// file and a schema file and presses Publish; the bar and the status follow the upload and the
/// job until "Published version 1: 2 records", and the dataset reads as the schema said. A
/// screenshot goes to `target/screenshots/publish-<store>.png`.
async fn publish_page_in_a_browser(store: TestStore) {
    use crate::helpers::webdriver::{Driver, screenshots, serve};
    let kind = format!("{:?}", store.kind).to_lowercase();
    let email = format!("ada-{kind}@example.org");
    odqs::auth::publishers::grant_publish(&store.store, &email, "city-*", "tests")
        .await
        .unwrap();
    let data = crate::helpers::write_file(&store, "parks.csv", b"code,name\na,Alpha\nb,Beta\n");
    let schema = crate::helpers::write_file(
        &store,
        "parks.schema.json",
        br#"{"title": "City parks", "id_field": "code"}"#,
    );
    let (site, stop) = serve(&store).await;
    let driver = Driver::start().await;
    let browser = driver.session().await;
    browser.sign_up(&site, &email, "/publish").await;
    browser.wait_for("city-*").await;
    browser.type_into("#slug", "city-parks").await;
    browser
        .click(
            "css selector",
            "form[action='/publish'] button[type=submit]",
        )
        .await;
    browser.wait_for("Its first version").await;
    browser
        .type_into("#data-file", data.to_str().unwrap())
        .await;
    browser
        .type_into("#schema-file", schema.to_str().unwrap())
        .await;
    browser.click("css selector", "#upload-button").await;
    browser
        .wait_until("document.getElementById('upload-status').dataset.version === '1'")
        .await;
    assert_eq!(
        browser.text("#upload-status").await,
        "Published version 1: 2 records."
    );
    assert_eq!(
        browser
            .eval("return document.getElementById('upload-progress').value")
            .await,
        serde_json::json!(1)
    );
    browser
        .screenshot(&screenshots().join(format!("publish-{kind}.png")))
        .await;
    let reader = crate::helpers::api_token(&store).await;
    let record = crate::helpers::client::get_ok_json(
        format!("{site}/api/v1/datasets/city-parks/records/b"),
        reader.clone(),
    )
    .await;
    assert_eq!(record["name"], "Beta");
    let meta =
        crate::helpers::client::get_ok_json(format!("{site}/api/v1/datasets/city-parks"), reader)
            .await;
    assert_eq!(meta["title"], "City parks");
    browser.close().await;
    let _ = stop.send(());
}

both_stores!(publish_pages);
both_stores!(tier2: publish_page_in_a_browser);
