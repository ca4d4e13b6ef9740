//! The device flow end to end, as a person and a program live it (contract §8): the real
//! `oauth2` crate's device-flow client requests a code and polls, while headless Chromium,
//! driven over WebDriver, opens `verification_uri_complete`, is sent to log in, signs up,
//! comes back to the same request and presses 同意授權 (or 拒絕). The approved client ends
//! with a token that reads `/api/v1/datasets`; the refused one ends in `access_denied`. The
//! approved request asks for a scope, which the approval page says in words and the token
//! keeps; on `/account` the person mints a token for one dataset, without export, for 30 days
//! (contract §13.3). Screenshots of `/device` and `/account` go to `target/screenshots/`.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`tests/tier2.sh` installs them); without them
//! this test fails, it never skips.

use std::time::Duration;

use crate::helpers::webdriver::{Driver, screenshots, serve};
use crate::helpers::{TestStore, import_file, write_file};
use oauth2::basic::BasicClient;
use oauth2::{
    ClientId, DeviceAuthorizationUrl, DeviceCodeErrorResponseType, RequestTokenError, Scope,
    StandardDeviceAuthorizationResponse, TokenResponse, TokenUrl,
};
use serde_json::Value;

async fn device_flow_in_a_browser(store: TestStore) {
    let kind = format!("{:?}", store.kind).to_lowercase();
    for slug in ["towns", "lakes"] {
        let path = write_file(&store, &format!("{slug}.csv"), b"code,name\na,Alpha\n");
        import_file(&store, &path, slug, None, Some("code"))
            .await
            .unwrap();
    }
    let (site, stop) = serve(&store).await;
    let driver = Driver::start().await;
    let browser = driver.session().await;

    // The program: the real oauth2 device-flow client, two requests.
    let client = BasicClient::new(ClientId::new("odqs-e2e".to_string()))
        .set_device_authorization_url(
            DeviceAuthorizationUrl::new(format!("{site}/api/v1/auth/device")).unwrap(),
        )
        .set_token_uri(TokenUrl::new(format!("{site}/api/v1/auth/token")).unwrap());
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut requests: Vec<StandardDeviceAuthorizationResponse> = Vec::new();
    for scope in ["read", "export"] {
        requests.push(
            client
                .exchange_device_code()
                .add_scope(Scope::new(scope.into()))
                .request_async(&http)
                .await
                .unwrap(),
        );
    }
    let pollers: Vec<_> = requests
        .iter()
        .map(|details| {
            let (client, http, details) = (client.clone(), http.clone(), details.clone());
            tokio::spawn(async move {
                client
                    .exchange_device_access_token(&details)
                    .request_async(&http, tokio::time::sleep, Some(Duration::from_secs(120)))
                    .await
            })
        })
        .collect();
    let approve_uri = requests[0]
        .verification_uri_complete()
        .unwrap()
        .secret()
        .to_string();
    let deny_uri = requests[1]
        .verification_uri_complete()
        .unwrap()
        .secret()
        .to_string();
    let approve_code = requests[0].user_code().secret().to_string();
    assert_eq!(approve_uri, format!("{site}/device?code={approve_code}"));

    // The person: opens the link, is sent to log in, signs up instead, comes back.
    browser.goto(&approve_uri).await;
    assert!(browser.current_url().await.contains("/login?next="));
    browser
        .click("css selector", "a[href^='/signup?next=']")
        .await;
    browser.wait_for("Create a free account").await;
    browser
        .type_into("#email", &format!("ada-{kind}@example.org"))
        .await;
    browser
        .type_into("#password", "correct horse battery")
        .await;
    browser
        .click("css selector", "form[action='/signup'] button[type=submit]")
        .await;
    browser.wait_for("同意授權").await;
    assert_eq!(
        browser.current_url().await,
        approve_uri,
        "back at the same request"
    );
    let page = browser.source().await;
    assert!(
        page.contains(&approve_code) && page.contains("odqs-e2e"),
        "code and client shown"
    );
    assert_eq!(
        browser.text("#access").await,
        "read every dataset for 24 hours read",
        "the scope asked, in words"
    );
    assert_eq!(browser.text("#approve").await, "同意授權 Approve");
    assert_eq!(browser.text("#deny").await, "拒絕 Refuse");
    assert_eq!(
        browser
            .eval("return document.documentElement.lang + ' ' + document.querySelector('#approve span').lang;")
            .await,
        "en zh-Hant"
    );
    browser
        .screenshot(&screenshots().join(format!("{kind}-device.png")))
        .await;
    browser.click("css selector", "button#approve").await;
    browser.wait_for("id=\"result\"").await;
    assert!(browser.source().await.contains("Approved"));

    browser.goto(&deny_uri).await;
    browser.wait_for("拒絕").await;
    browser.click("css selector", "button#deny").await;
    browser.wait_for("id=\"result\"").await;
    assert!(browser.source().await.contains("Refused"));

    // The program: one token, which reads the API; one refusal.
    let mut pollers = pollers.into_iter();
    let approved = pollers
        .next()
        .unwrap()
        .await
        .unwrap()
        .expect("a token after 同意授權");
    assert_eq!(approved.expires_in(), Some(Duration::from_secs(86400)));
    let scopes: Vec<&str> = approved
        .scopes()
        .unwrap()
        .iter()
        .map(|s| s.as_str())
        .collect();
    assert_eq!(scopes, ["read"]);
    let token = approved.access_token().secret().clone();
    assert!(token.starts_with("odqs_"));
    match pollers.next().unwrap().await.unwrap() {
        Err(RequestTokenError::ServerResponse(e)) => {
            assert_eq!(*e.error(), DeviceCodeErrorResponseType::AccessDenied);
        }
        other => panic!("expected access_denied after 拒絕, got {other:?}"),
    }

    // The account page lists the device token with its scope, and makes one for one dataset,
    // without export, for 30 days, shown once.
    browser.goto(&format!("{site}/account")).await;
    browser.type_into("#name", "laptop scripts").await;
    browser.click("css selector", "#datasets-chosen").await;
    browser
        .click("css selector", "input[name='dataset'][value='towns']")
        .await;
    browser.click("css selector", "#export").await;
    browser
        .click("css selector", "#lifetime option[value='30d']")
        .await;
    browser
        .click(
            "css selector",
            "form[action='/account/tokens'] button[type=submit]",
        )
        .await;
    browser.wait_for("id=\"new-token\"").await;
    let page = browser.source().await;
    assert!(page.contains("odqs-e2e") && page.contains("laptop scripts"));
    assert_eq!(
        browser.text("#new-token-grants").await,
        "read the dataset towns only"
    );
    assert!(page.contains("<code>read dataset:towns</code>"), "listed");
    let minted = browser
        .eval("return document.getElementById('new-token').value")
        .await;
    let minted = minted.as_str().unwrap();
    let described: Value = reqwest::Client::new()
        .get(format!("{site}/api/v1/token"))
        .bearer_auth(minted)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(described["scope"], "read dataset:towns");
    assert_eq!(described["name"], "laptop scripts");
    assert!(described["expires_at"].is_string(), "{described}");
    for (path, status) in [
        ("towns/records", 200),
        ("lakes/records", 403),
        ("towns/export", 403),
    ] {
        let answer = reqwest::Client::new()
            .get(format!("{site}/api/v1/datasets/{path}"))
            .bearer_auth(minted)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), status, "{path}");
    }
    browser
        .screenshot(&screenshots().join(format!("{kind}-account.png")))
        .await;

    // A reload after generating shows the page again (a GET: no 405, no form sent twice),
    // without the token.
    assert!(browser.current_url().await.ends_with("/account"));
    browser.eval("location.reload(); return true;").await;
    browser
        .wait_until("document.readyState === 'complete' && !document.getElementById('new-token')")
        .await;
    assert!(browser.source().await.contains("laptop scripts"));
    assert!(!browser.source().await.contains(minted));

    // Revoking asks first, without a script: the confirmation page, then the list again.
    browser
        .click(
            "css selector",
            "a.revoke[aria-label='Revoke laptop scripts…']",
        )
        .await;
    browser.wait_for("Revoke this token?").await;
    browser
        .screenshot(&screenshots().join(format!("{kind}-account-revoke.png")))
        .await;
    browser.click("css selector", "#confirm-revoke").await;
    browser.wait_for("The token was revoked.").await;
    assert!(browser.current_url().await.ends_with("/account?revoked=1"));
    browser.eval("location.reload(); return true;").await;
    browser
        .wait_until("document.readyState === 'complete' && document.querySelector('h1') && document.querySelector('h1').textContent === 'Your account'")
        .await;
    assert!(!browser.source().await.contains("laptop scripts"));
    let refused = reqwest::Client::new()
        .get(format!("{site}/api/v1/token"))
        .bearer_auth(minted)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401, "revoked");

    // The device token reads the API.
    let datasets = reqwest::Client::new()
        .get(format!("{site}/api/v1/datasets"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(datasets.status(), 200);
    let body: Value = datasets.json().await.unwrap();
    assert!(body["datasets"].is_array(), "{body}");

    browser.close().await;
    let _ = stop.send(());
}

both_stores!(tier2: device_flow_in_a_browser);
