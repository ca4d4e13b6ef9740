//! `/account` through the real router, on SQLite and PostgreSQL: a token generated and shown
//! once across a POST-redirect-GET, listed with its expiry, revoked after a confirmation page
//! (and by no other account).

use crate::helpers::TestStore;
use crate::helpers::client::{Browser, post_json};
use crate::site::start_device;
use entity::api_token;
use sea_orm::EntityTrait;
use serde_json::json;
use time::{Duration, OffsetDateTime};

async fn account_tokens(store: TestStore) {
    let router = store.router();
    let mut browser = Browser::new(router.clone());
    browser.sign_up("ada@example.org").await;
    // POST-redirect-GET: the form's answer is a redirect; the page it leads to shows the
    // token once (a flash cookie for /account only), and a reload shows it no more.
    let posted = browser
        .submit("/account", "/account/tokens", &[("name", "laptop scripts")])
        .await;
    assert_eq!(posted.status, 303, "{}", posted.body);
    assert_eq!(posted.location(), "/account");
    let flash = posted.header("set-cookie").unwrap().to_string();
    assert!(
        flash.starts_with("odqs_new_token=odqs_")
            && flash.contains("Path=/account")
            && flash.contains("HttpOnly")
            && flash.contains("SameSite=Strict"),
        "{flash}"
    );
    let page = browser.get("/account").await;
    assert_eq!(page.status, 200);
    let marker = "id=\"new-token\" type=\"text\" readonly value=\"";
    let start = page.body.find(marker).expect("the new token is shown") + marker.len();
    let secret = page.body[start..start + 48].to_string();
    assert!(
        secret.starts_with("odqs_") && secret.len() == 48,
        "{secret}"
    );
    assert!(
        page.body.contains("data-copy=\"new-token\""),
        "a copy button"
    );
    let row = api_token::Entity::find()
        .one(&store.store.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (row.name.as_str(), row.source.as_str(), row.expires_at),
        ("laptop scripts", "account", None)
    );
    assert_eq!(row.token_hash, odqs::auth::token::hash(&secret));

    // Shown once: the list has its name and last four characters, never the token.
    assert!(!browser.cookies.contains_key("odqs_new_token"), "read once");
    let listed = browser.get("/account").await;
    assert!(!listed.body.contains(&secret));
    // The form's address, typed or reloaded, leads to the page: never a 405.
    let typed = browser.get("/account/tokens").await;
    assert_eq!((typed.status, typed.location()), (303, "/account"));
    assert!(
        listed
            .body
            .contains("<td data-label=\"Name\">laptop scripts</td>")
    );
    assert!(listed.body.contains(&format!("…{}", &secret[44..])));
    assert!(
        listed.body.contains("never"),
        "expiry \"never\" and last used \"never\""
    );

    // A device token lists its expiry.
    let (device_code, user_code) = start_device(&router).await;
    browser.get(&format!("/device?code={user_code}")).await;
    let approved = browser
        .submit(
            &format!("/device?code={user_code}"),
            "/device",
            &[("code", &user_code), ("decision", "approve")],
        )
        .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    let token = post_json(
        &router,
        "/api/v1/auth/token",
        json!({"grant_type": "device_code", "device_code": device_code}),
    )
    .await;
    assert_eq!(token.status, 200);
    let listed = browser.get("/account").await;
    assert!(listed.body.contains("build server"));
    let tomorrow = (OffsetDateTime::now_utc() + Duration::hours(24))
        .date()
        .to_string();
    assert!(listed.body.contains(&tomorrow), "expiry shown");

    // Revoking asks first, on a page of its own (no script needed): the list links to it.
    let path = format!("/account/tokens/{}/revoke", row.id);
    assert!(
        listed.body.contains(&format!("href=\"{path}\"")),
        "{}",
        listed.body
    );
    let asked = browser.get(&path).await;
    assert_eq!(asked.status, 200);
    assert!(asked.body.contains("Revoke this token?"));
    assert!(
        asked
            .body
            .contains("<dd id=\"revoke-name\">laptop scripts</dd>")
    );
    assert!(
        asked
            .body
            .contains(&format!("<form method=\"post\" action=\"{path}\">"))
    );
    assert!(
        asked
            .body
            .contains("href=\"/account\" id=\"cancel-revoke\"")
    );
    let row_now = api_token::Entity::find_by_id(row.id)
        .one(&store.store.db)
        .await
        .unwrap()
        .unwrap();
    assert!(row_now.revoked_at.is_none(), "asking revokes nothing");
    // Another account cannot see or revoke it.
    let mut other = Browser::new(router.clone());
    other.sign_up("bob@example.org").await;
    assert_eq!(other.get(&path).await.status, 404);
    assert_eq!(other.submit("/account", &path, &[]).await.status, 404);
    let answered = browser.submit(&path, &path, &[]).await;
    assert_eq!(
        (answered.status, answered.location()),
        (303, "/account?revoked=1")
    );
    let revoked = browser.get(answered.location()).await;
    assert_eq!(revoked.status, 200);
    assert!(revoked.body.contains("The token was revoked."));
    assert!(
        !revoked
            .body
            .contains("<td data-label=\"Name\">laptop scripts</td>")
    );
    assert!(
        revoked
            .body
            .contains("<td data-label=\"Name\">build server</td>")
    );
    let row = api_token::Entity::find_by_id(row.id)
        .one(&store.store.db)
        .await
        .unwrap()
        .unwrap();
    assert!(row.revoked_at.is_some());
}

/// The form offers `publish` only to an account that holds a grant, naming what it may
/// publish; a token minted with it carries the scope, and a form asking for it without a grant
/// mints nothing.
async fn publish_is_offered_with_a_grant(store: TestStore) {
    let mut browser = Browser::new(store.router());
    browser.sign_up("ada@example.org").await;
    let page = browser.get("/account").await;
    assert!(!page.body.contains("name=\"publish\""), "no grant, no box");
    let fields = [("name", "publisher"), ("publish", "on")];
    let refused = browser.submit("/account", "/account/tokens", &fields).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        refused.body.contains("no grant to publish"),
        "{}",
        refused.body
    );
    let minted = api_token::Entity::find()
        .all(&store.store.db)
        .await
        .unwrap();
    assert!(minted.is_empty(), "nothing minted");
    odqs::auth::publishers::grant_publish(&store.store, "ada@example.org", "city-*", "tests")
        .await
        .unwrap();
    let page = browser.get("/account").await;
    assert!(page.body.contains("name=\"publish\""), "{}", page.body);
    assert!(page.body.contains("<code>city-*</code>"));
    let posted = browser.submit("/account", "/account/tokens", &fields).await;
    assert_eq!(posted.status, 303, "{}", posted.body);
    let row = api_token::Entity::find()
        .one(&store.store.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.scope, "read publish");
}

both_stores!(account_tokens, publish_is_offered_with_a_grant);
