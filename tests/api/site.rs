//! The site (contract §9) through the real router, on SQLite and PostgreSQL: accounts and
//! sessions, CSRF protection, login and wrong-code throttling, and `/device` (the token page
//! is in `account_page.rs`).

use crate::helpers::TestStore;
use crate::helpers::client;
use crate::helpers::client::{Browser, PASSWORD, post_json};
use axum::http::Method;
use entity::{api_token, device_grant, session, user};
use sea_orm::EntityTrait;
use serde_json::json;
use time::{Duration, OffsetDateTime};

fn https_router(store: &TestStore) -> axum::Router {
    odqs::app::router(odqs::state::AppState::new(
        store.store.clone(),
        "https://odqs.example.org",
    ))
}

/// Starts a device request as `odqs-cli 1.0` on `build server`: its device and user codes.
pub async fn start_device(router: &axum::Router) -> (String, String) {
    let body = post_json(
        router,
        "/api/v1/auth/device",
        json!({"device_name": "build server", "client": "odqs-cli 1.0"}),
    )
    .await
    .json();
    (
        body["device_code"].as_str().unwrap().to_string(),
        body["user_code"].as_str().unwrap().to_string(),
    )
}

async fn sign_up_log_in_log_out(store: TestStore) {
    let mut browser = Browser::new(store.router());
    let form = browser.get("/signup").await;
    assert_eq!(form.status, 200);
    let set_cookie = form.header("set-cookie").unwrap();
    assert!(set_cookie.starts_with("odqs_csrf="), "{set_cookie}");
    assert!(set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Lax"));
    assert!(!set_cookie.contains("Secure"), "the public URL is http");
    assert!(
        form.body.contains("name=\"viewport\""),
        "readable on a phone"
    );

    let done = browser.sign_up("Ada@Example.org").await;
    assert_eq!(done.location(), "/account");
    let session_cookie = done
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .find(|c| c.starts_with("odqs_session="))
        .expect("a session cookie");
    assert!(session_cookie.contains("HttpOnly") && session_cookie.contains("SameSite=Lax"));
    let account = browser.get("/account").await;
    assert_eq!(account.status, 200);
    assert!(account.body.contains("ada@example.org"));
    assert_eq!(account.header("cache-control"), Some("no-store"));

    let stored = user::Entity::find()
        .one(&store.store.db)
        .await
        .unwrap()
        .unwrap();
    assert!(stored.password_hash.unwrap().starts_with("$argon2id$"));
    let secret = browser.cookies["odqs_session"].clone();
    let row = session::Entity::find()
        .one(&store.store.db)
        .await
        .unwrap()
        .unwrap();
    assert_ne!(row.token_hash, secret, "the session id is stored hashed");

    // Signing up twice with one address is refused.
    let mut other = Browser::new(store.router());
    let again = other
        .submit(
            "/signup",
            "/signup",
            &[("email", "ada@example.org"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(again.status, 409);

    // Logging out deletes the session everywhere.
    let out = browser.submit("/account", "/logout", &[]).await;
    assert_eq!((out.status, out.location()), (303, "/"));
    assert!(
        session::Entity::find()
            .all(&store.store.db)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(!browser.cookies.contains_key("odqs_session"));
    let mut stale = Browser::new(store.router());
    stale.cookies.insert("odqs_session".into(), secret);
    assert_eq!(stale.get("/account").await.location(), "/login");

    // Logging in again, with the address in any case.
    let back = browser
        .submit(
            "/login",
            "/login",
            &[("email", "ADA@example.org"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!((back.status, back.location()), (303, "/account"));
    assert_eq!(browser.get("/account").await.status, 200);
}

async fn cookies_are_secure_on_https(store: TestStore) {
    let mut browser = Browser::new(https_router(&store));
    let form = browser.get("/login").await;
    assert!(form.header("set-cookie").unwrap().contains("; Secure"));
}

async fn forms_refuse_cross_site_requests(store: TestStore) {
    let router = store.router();
    let mut browser = Browser::new(router.clone());
    let csrf = browser.get("/login").await.csrf();
    let login = [("email", "ada@example.org"), ("password", PASSWORD)];
    // No token, a wrong token.
    assert_eq!(browser.post("/login", &login).await.status, 403);
    let mut wrong = vec![("csrf", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")];
    wrong.extend(login);
    assert_eq!(browser.post("/signup", &wrong).await.status, 403);
    // A token without its cookie (another browser's page).
    let mut stranger = Browser::new(router.clone());
    let mut with_token = vec![("csrf", csrf.as_str())];
    with_token.extend(login);
    assert_eq!(stranger.post("/signup", &with_token).await.status, 403);
    // Another site's origin, even with a valid token.
    for (name, value) in [
        ("origin", "https://evil.example"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let body = serde_urlencoded::to_string(&with_token).unwrap();
        let page = browser
            .send(
                axum::http::Request::post("/signup")
                    .header("content-type", "application/x-www-form-urlencoded")
                    .header(name, value)
                    .body(axum::body::Body::from(body))
                    .unwrap(),
            )
            .await;
        assert_eq!(page.status, 403, "{name}: {value}");
    }
    assert!(
        user::Entity::find()
            .all(&store.store.db)
            .await
            .unwrap()
            .is_empty()
    );
    // The same origin is fine.
    let body = serde_urlencoded::to_string(&with_token).unwrap();
    let page = browser
        .send(
            axum::http::Request::post("/signup")
                .header("content-type", "application/x-www-form-urlencoded")
                .header("origin", "http://odqs.test")
                .body(axum::body::Body::from(body))
                .unwrap(),
        )
        .await;
    assert_eq!(page.status, 303, "{}", page.body);

    // Signed in, forms need the session's token, not the pre-session one.
    let token_form = [("csrf", csrf.as_str()), ("name", "x")];
    assert_eq!(
        browser.post("/account/tokens", &token_form).await.status,
        403
    );
    let (device_code, user_code) = start_device(&router).await;
    let approve = [
        ("csrf", csrf.as_str()),
        ("code", user_code.as_str()),
        ("decision", "approve"),
    ];
    assert_eq!(browser.post("/device", &approve).await.status, 403);
    assert_eq!(
        browser
            .post("/logout", &[("csrf", csrf.as_str())])
            .await
            .status,
        403
    );
    assert!(
        api_token::Entity::find()
            .all(&store.store.db)
            .await
            .unwrap()
            .is_empty()
    );
    let grant = device_grant::Entity::find()
        .one(&store.store.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(grant.state, "pending");
    let _ = device_code;
}

async fn wrong_passwords_are_throttled(store: TestStore) {
    let router = store.router();
    Browser::new(router.clone())
        .sign_up("ada@example.org")
        .await;
    let mut attacker = Browser::new(router.clone()).at("198.51.100.7");
    let wrong = [("email", "ada@example.org"), ("password", "wrong password")];
    for _ in 0..5 {
        let page = attacker.submit("/login", "/login", &wrong).await;
        assert_eq!(page.status, 401);
        assert!(page.body.contains("Wrong e-mail address or password."));
    }
    // Sixth try: refused, even with the right password, from any address.
    let page = attacker
        .submit(
            "/login",
            "/login",
            &[("email", "ada@example.org"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(page.status, 429);
    assert!(page.header("retry-after").unwrap().parse::<i64>().unwrap() > 0);
    let mut owner = Browser::new(router.clone()).at("203.0.113.9");
    let page = owner
        .submit(
            "/login",
            "/login",
            &[("email", "ada@example.org"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(page.status, 429, "per account");

    // Per client address: 20 failures over many addresses lock that client out.
    for i in 0..15 {
        let email = format!("nobody{i}@example.org");
        let page = attacker
            .submit("/login", "/login", &[("email", &email), ("password", "x")])
            .await;
        assert_eq!(page.status, 401);
    }
    let page = attacker
        .submit(
            "/login",
            "/login",
            &[("email", "someone@example.org"), ("password", "x")],
        )
        .await;
    assert_eq!(page.status, 429, "per address");
    // Another address with another account is not affected.
    Browser::new(router.clone())
        .at("203.0.113.10")
        .sign_up("bob@example.org")
        .await;
    let mut bob = Browser::new(router.clone()).at("203.0.113.10");
    let page = bob
        .submit(
            "/login",
            "/login",
            &[("email", "bob@example.org"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(page.status, 303);
}

async fn device_page(store: TestStore) {
    let router = store.router();
    let (device_code, user_code) = start_device(&router).await;
    let mut browser = Browser::new(router.clone());
    // Signed out: the login comes first and returns to the same request.
    let lowercase = user_code.to_lowercase().replace('-', "");
    let first = browser.get(&format!("/device?code={lowercase}")).await;
    assert_eq!(first.status, 303);
    let expected = format!("/login?next=%2Fdevice%3Fcode%3D{user_code}");
    assert_eq!(first.location(), expected);
    let login = browser.get(&expected).await;
    assert_eq!(
        client::hidden(&login.body, "next"),
        Some(format!("/device?code={user_code}"))
    );
    let signup_link = format!("/signup?next=%2Fdevice%3Fcode%3D{user_code}");
    assert!(
        login.body.contains(&signup_link),
        "sign-up keeps the request too"
    );
    let signed_up = browser
        .submit(
            &signup_link,
            "/signup",
            &[
                ("email", "ada@example.org"),
                ("password", PASSWORD),
                ("next", &format!("/device?code={user_code}")),
            ],
        )
        .await;
    assert_eq!(signed_up.location(), format!("/device?code={user_code}"));

    let confirm = browser.get(signed_up.location()).await;
    assert_eq!(confirm.status, 200);
    for shown in [
        "build server",
        "odqs-cli 1.0",
        user_code.as_str(),
        // Bilingual: the page is English, its Chinese marked as such, the buttons keep
        // 同意授權 and 拒絕 with their English beside them.
        "<html lang=\"en\">",
        "<span lang=\"zh-Hant\">同意授權</span> Approve</button>",
        "<span lang=\"zh-Hant\">拒絕</span> Refuse</button>",
    ] {
        assert!(confirm.body.contains(shown), "{shown} in the page");
    }
    assert!(!confirm.body.contains("<html lang=\"zh-Hant\">"));
    assert_eq!(confirm.header("x-frame-options"), Some("DENY"));
    let approved = browser
        .post(
            "/device",
            &[
                ("csrf", &confirm.csrf()),
                ("code", &user_code),
                ("decision", "approve"),
            ],
        )
        .await;
    assert_eq!(approved.status, 200);
    assert!(approved.body.contains("id=\"result\""));
    let grant = device_grant::Entity::find()
        .one(&store.store.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(grant.state, "authorized");
    let me = user::Entity::find()
        .one(&store.store.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(grant.user_id, Some(me.id));

    // Used, refused, expired, unknown and malformed codes each get a clear page.
    let used = browser.get(&format!("/device?code={user_code}")).await;
    assert_eq!(used.status, 409);
    assert!(used.body.contains("already been used"));
    let token = post_json(
        &router,
        "/api/v1/auth/token",
        json!({"grant_type": "device_code", "device_code": device_code}),
    )
    .await;
    assert_eq!(token.status, 200);
    assert_eq!(
        browser
            .get(&format!("/device?code={user_code}"))
            .await
            .status,
        409
    );

    let (denied_code, denied_user_code) = start_device(&router).await;
    let page = browser
        .submit(
            &format!("/device?code={denied_user_code}"),
            "/device",
            &[("code", &denied_user_code), ("decision", "deny")],
        )
        .await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Refused"));
    let refused = post_json(
        &router,
        "/api/v1/auth/token",
        json!({"grant_type": "device_code", "device_code": denied_code}),
    )
    .await;
    assert_eq!(refused.json()["error"], "access_denied");

    let (_, expiring) = start_device(&router).await;
    let past = OffsetDateTime::now_utc() - Duration::seconds(1);
    crate::device_flow::set_grant(&store, &expiring, device_grant::Column::ExpiresAt, past).await;
    let expired = browser.get(&format!("/device?code={expiring}")).await;
    assert_eq!(expired.status, 410);
    assert!(expired.body.contains("expired"));
    // Approving an expired code changes nothing.
    let late = browser
        .post(
            "/device",
            &[
                ("csrf", &expired.csrf()),
                ("code", &expiring),
                ("decision", "approve"),
            ],
        )
        .await;
    assert_eq!(late.status, 410);

    let unknown = browser.get("/device?code=BBBB-BBBB").await;
    assert_eq!(unknown.status, 404);
    assert!(unknown.body.contains("No request has this code"));
    let malformed = browser.get("/device?code=hello").await;
    assert_eq!(malformed.status, 400);
    let empty = browser.get("/device").await;
    assert_eq!(empty.status, 200);
    assert!(empty.body.contains("name=\"code\""));
}

async fn wrong_codes_are_throttled(store: TestStore) {
    let router = store.router();
    let (_, live_code) = start_device(&router).await;
    let mut guesser = Browser::new(router.clone()).at("198.51.100.20");
    guesser.sign_up("guesser@example.org").await;
    for i in 0..10 {
        let guess = format!(
            "BBBB-BB{}",
            ["BB", "BC", "BD", "BF", "BG", "BH", "BJ", "BK", "BL", "BM"][i]
        );
        assert_eq!(
            guesser.get(&format!("/device?code={guess}")).await.status,
            404
        );
    }
    // The account is out of guesses, even for the live code.
    let page = guesser.get(&format!("/device?code={live_code}")).await;
    assert_eq!(page.status, 429);
    assert!(page.header("retry-after").is_some());
    let post = guesser
        .post(
            "/device",
            &[
                ("csrf", &page.csrf()),
                ("code", &live_code),
                ("decision", "approve"),
            ],
        )
        .await;
    assert_eq!(post.status, 429);
    // More accounts behind the same address share its budget of 30.
    for n in 0..2 {
        let mut next = Browser::new(router.clone()).at("198.51.100.20");
        next.sign_up(&format!("helper{n}@example.org")).await;
        for i in 0..10 {
            let letters = "BCDFGHJKLMNPQRSTVWXZ".as_bytes();
            let guess = format!("CCCC-CC{}{}", letters[n] as char, letters[i] as char);
            assert_eq!(next.get(&format!("/device?code={guess}")).await.status, 404);
        }
    }
    let mut last = Browser::new(router.clone()).at("198.51.100.20");
    last.sign_up("late@example.org").await;
    assert_eq!(
        last.get(&format!("/device?code={live_code}")).await.status,
        429,
        "per address"
    );
    // Someone else, elsewhere, is unaffected and can approve.
    let mut owner = Browser::new(router.clone()).at("203.0.113.50");
    owner.sign_up("owner@example.org").await;
    assert_eq!(
        owner.get(&format!("/device?code={live_code}")).await.status,
        200
    );
}

async fn home_page_links_everything(store: TestStore) {
    odqs::demo::load_if_empty(&store.store).await.unwrap();
    let mut browser = Browser::new(store.router());
    let home = browser.get("/").await;
    assert_eq!(home.status, 200);
    let text = client::unescape(&home.body);
    for link in [
        "href=\"/catalog\"",
        "href=\"/catalog.md\"",
        "href=\"/account\"",
        "href=\"/device\"",
        "href=\"/signup\"",
        "href=\"/docs\"",
        "http://odqs.test/api/v1/openapi.json",
        "href=\"/graphql\"",
        "href=\"/explore\"",
        "http://odqs.test/datasets/flights/skill.md",
        "http://odqs.test/datasets/tw-scenic-spots/skill.md",
        "http://odqs.test/datasets/flights/skill\"",
    ] {
        assert!(text.contains(link), "{link} on the home page");
    }
    assert!(!home.body.contains("<script"), "no JavaScript needed");
    // `/graphql` is the IDE for a browser; a client (GET for JSON, POST) goes to the API.
    let ide = browser
        .send(client::request(
            Method::GET,
            "/graphql",
            None,
            &[("accept", "text/html,application/xhtml+xml,*/*;q=0.8")],
            None,
        ))
        .await;
    assert_eq!(ide.status, 200);
    assert!(ide.body.contains("id=\"graphiql\""), "{}", ide.body);
    for (method, accept) in [
        (Method::GET, "application/json"),
        (Method::POST, "application/json"),
    ] {
        let (status, headers, _) = client::exchange(
            &store.router(),
            client::request(method, "/graphql", None, &[("accept", accept)], None),
        )
        .await;
        assert_eq!(status, 308);
        assert_eq!(headers["location"], "/api/v1/graphql");
    }
}

both_stores!(
    sign_up_log_in_log_out,
    cookies_are_secure_on_https,
    forms_refuse_cross_site_requests,
    wrong_passwords_are_throttled,
    device_page,
    wrong_codes_are_throttled,
    home_page_links_everything,
);
