//! The device flow and the accounts under attack (issue 11), through the real router on SQLite
//! and PostgreSQL: device starts and token polls limited per client address, throttles that
//! hold their budget under concurrent attempts, the purge of expired rows, and
//! `X-Forwarded-For` believed only from trusted proxies.

mod common;
mod web;

use axum::body::Body;
use axum::http::{Request, header};
use common::TestStore;
use entity::{api_token, device_grant, session, throttle_counter};
use graphql::query::memory::IndexPolicy;
use odqs::auth::purge::{self, GRANT_GRACE, Purged};
use odqs::auth::throttle::{self, Limit};
use odqs::auth::{account, token};
use odqs::client_addr::TrustedProxies;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::json;
use time::{Duration, OffsetDateTime};
use web::{Browser, PASSWORD, Page};

const DEVICE: &str = "/api/v1/auth/device";
const TOKEN: &str = "/api/v1/auth/token";
const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// `POST /auth/device` from `peer`, with an `X-Forwarded-For` when given.
async fn start_from(router: &axum::Router, peer: &str, forwarded: Option<&str>) -> Page {
    let mut request = Request::post(DEVICE).header(header::CONTENT_TYPE, "application/json");
    if let Some(chain) = forwarded {
        request = request.header("x-forwarded-for", chain);
    }
    Browser::new(router.clone())
        .at(peer)
        .send(
            request
                .body(Body::from(json!({"client": "flood"}).to_string()))
                .unwrap(),
        )
        .await
}

/// `POST /auth/token` polling `device_code` from `peer`.
async fn poll_from(router: &axum::Router, peer: &str, device_code: &str) -> Page {
    Browser::new(router.clone())
        .at(peer)
        .post(
            TOKEN,
            &[("grant_type", GRANT_TYPE), ("device_code", device_code)],
        )
        .await
}

/// Runs `count` requests at once; returns the answers.
async fn all_at_once<F, Fut>(count: usize, request: F) -> Vec<Page>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Page> + Send + 'static,
{
    let handles: Vec<_> = (0..count).map(|i| tokio::spawn(request(i))).collect();
    let mut pages = Vec::with_capacity(count);
    for handle in handles {
        pages.push(handle.await.unwrap());
    }
    pages
}

fn count_status(pages: &[Page], status: u16) -> usize {
    pages.iter().filter(|p| p.status == status).count()
}

/// A 429 of the device-flow endpoints: the OAuth shape, `rate_limited`, a `Retry-After`
/// within the window.
fn assert_rate_limited(page: &Page, limit: Limit) {
    assert_eq!(page.status, 429, "{}", page.body);
    let body = page.json();
    assert_eq!(body["error"], "rate_limited", "{body}");
    assert!(
        body["error_description"]
            .as_str()
            .unwrap()
            .contains(&format!(
                "at most {} in {} seconds",
                limit.max, limit.window_secs
            ))
    );
    let retry: i64 = page.header("retry-after").unwrap().parse().unwrap();
    assert!(
        (1..=limit.window_secs).contains(&retry),
        "Retry-After {retry}"
    );
    assert_eq!(page.header("cache-control"), Some("no-store"));
}

async fn grant_rows(store: &TestStore) -> u64 {
    device_grant::Entity::find()
        .count(&store.store.db)
        .await
        .unwrap()
}

/// Sets `expires_at` of the grants whose user code is in `codes` (all when empty).
async fn expire_grants(store: &TestStore, codes: &[&str], at: OffsetDateTime) {
    let mut update = device_grant::Entity::update_many()
        .col_expr(device_grant::Column::ExpiresAt, Expr::value(at));
    if !codes.is_empty() {
        update = update.filter(device_grant::Column::UserCode.is_in(codes.iter().copied()));
    }
    update.exec(&store.store.db).await.unwrap();
}

/// Budget + 50 device starts at once from one address: exactly the budget are answered 200
/// and stored, the rest 429 without a row; after expiry the purge removes every grant (a
/// grant within its grace period is kept and still polls `expired_token`), expired sessions
/// and explorer tokens, and stale counters, and nothing that is still live.
async fn device_starts_are_limited_per_address_and_purged(store: TestStore) {
    let router = store.router();
    let budget = throttle::DEVICE_START_PER_ADDRESS;
    let flood = budget.max as usize + 50;
    let pages = all_at_once(flood, |_| {
        let router = router.clone();
        async move { start_from(&router, "198.51.100.1", None).await }
    })
    .await;
    assert_eq!(count_status(&pages, 200), budget.max as usize);
    assert_eq!(count_status(&pages, 429), 50);
    for page in pages.iter().filter(|p| p.status == 429) {
        assert_rate_limited(page, budget);
    }
    assert_eq!(
        grant_rows(&store).await,
        budget.max as u64,
        "no row for a refused start"
    );
    // Another address has its own budget.
    let elsewhere = start_from(&router, "203.0.113.1", None).await;
    assert_eq!(elsewhere.status, 200, "{}", elsewhere.body);
    let live = elsewhere.json();

    // Sessions and explorer tokens, live and expired; an account token that expired stays
    // (the account page lists it).
    let user = token::find_or_create_user(&store.store, "ada@example.org")
        .await
        .unwrap();
    for _ in 0..3 {
        odqs::auth::session::create(&store.store, user.id)
            .await
            .unwrap();
    }
    let now = OffsetDateTime::now_utc();
    let sessions = session::Entity::find().all(&store.store.db).await.unwrap();
    session::Entity::update_many()
        .col_expr(
            session::Column::ExpiresAt,
            Expr::value(now - Duration::seconds(1)),
        )
        .filter(session::Column::Id.is_in([sessions[0].id, sessions[1].id]))
        .exec(&store.store.db)
        .await
        .unwrap();
    let (_, old_explorer) = account::explorer_token(&store.store, user.id)
        .await
        .unwrap();
    account::explorer_token(&store.store, user.id)
        .await
        .unwrap();
    let (_, old_cli) = token::mint(
        &store.store,
        user.id,
        "cli",
        "cli",
        Some(now + Duration::hours(1)),
    )
    .await
    .unwrap();
    api_token::Entity::update_many()
        .col_expr(
            api_token::Column::ExpiresAt,
            Expr::value(now - Duration::minutes(1)),
        )
        .filter(api_token::Column::Id.is_in([old_explorer.id, old_cli.id]))
        .exec(&store.store.db)
        .await
        .unwrap();
    // One counter whose window ended long ago.
    throttle_counter::Entity::update_many()
        .col_expr(
            throttle_counter::Column::WindowStart,
            Expr::value(now.unix_timestamp() - throttle::LONGEST_WINDOW_SECS - 1),
        )
        .filter(throttle_counter::Column::Key.eq("device:ip:203.0.113.1"))
        .exec(&store.store.db)
        .await
        .unwrap();

    // The flood's grants expire: one a minute ago (within the grace), the rest a day ago.
    let flood_codes: Vec<String> = pages
        .iter()
        .filter(|p| p.status == 200)
        .map(|p| p.json()["user_code"].as_str().unwrap().to_string())
        .collect();
    let late = pages.iter().find(|p| p.status == 200).unwrap().json();
    let codes: Vec<&str> = flood_codes.iter().map(String::as_str).collect();
    expire_grants(&store, &codes, now - Duration::days(1)).await;
    expire_grants(
        &store,
        &[late["user_code"].as_str().unwrap()],
        now - Duration::minutes(1),
    )
    .await;

    let purged = purge::expired(&store.store).await.unwrap();
    assert_eq!(
        purged,
        Purged {
            device_grants: budget.max as u64 - 1,
            sessions: 2,
            explorer_tokens: 1,
            throttle_counters: 1,
        }
    );
    assert_eq!(
        grant_rows(&store).await,
        2,
        "the live grant and the one in its grace"
    );
    assert_eq!(
        session::Entity::find()
            .count(&store.store.db)
            .await
            .unwrap(),
        1
    );
    let left: Vec<String> = api_token::Entity::find()
        .all(&store.store.db)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.source)
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(left.contains(&"cli".to_string()) && left.contains(&"explore".to_string()));
    assert!(
        throttle_counter::Entity::find_by_id("device:ip:198.51.100.1".to_string())
            .one(&store.store.db)
            .await
            .unwrap()
            .is_some(),
        "a live window is kept"
    );
    let polled = poll_from(&router, "192.0.2.9", late["device_code"].as_str().unwrap()).await;
    assert_eq!(polled.json()["error"], "expired_token", "{}", polled.body);
    let polled = poll_from(&router, "192.0.2.9", live["device_code"].as_str().unwrap()).await;
    assert_eq!(polled.json()["error"], "authorization_pending");

    // Past the grace and past their lifetime, every grant goes; an empty purge is empty.
    expire_grants(&store, &[], now - GRANT_GRACE - Duration::seconds(1)).await;
    let purged = purge::expired(&store.store).await.unwrap();
    assert_eq!(purged.device_grants, 2);
    assert_eq!(grant_rows(&store).await, 0);
    assert!(purge::expired(&store.store).await.unwrap().is_empty());
}

/// Budget + 30 token polls at once from one address: exactly the budget reach the grant
/// (`invalid_grant` for an unknown code), the rest 429; another address is unaffected.
async fn token_polls_are_limited_per_address(store: TestStore) {
    let router = store.router();
    let budget = throttle::TOKEN_POLL_PER_ADDRESS;
    let pages = all_at_once(budget.max as usize + 30, |i| {
        let router = router.clone();
        async move { poll_from(&router, "198.51.100.2", &format!("odqs_dc_unknown{i}")).await }
    })
    .await;
    let looked_up: Vec<&Page> = pages.iter().filter(|p| p.status == 400).collect();
    assert_eq!(looked_up.len(), budget.max as usize);
    for page in looked_up {
        assert_eq!(page.json()["error"], "invalid_grant");
    }
    assert_eq!(count_status(&pages, 429), 30);
    for page in pages.iter().filter(|p| p.status == 429) {
        assert_rate_limited(page, budget);
    }
    let elsewhere = poll_from(&router, "203.0.113.2", "odqs_dc_unknown").await;
    assert_eq!(elsewhere.json()["error"], "invalid_grant");
}

/// A signed-in browser at `address` and its cookies, to be copied into concurrent requests.
async fn signed_in(router: &axum::Router, address: &str, email: &str) -> Browser {
    let mut browser = Browser::new(router.clone()).at(address);
    browser.sign_up(email).await;
    browser
}

fn copy_of(browser: &Browser) -> Browser {
    let mut copy = Browser::new(browser.router.clone());
    copy.address = browser.address;
    copy.cookies = browser.cookies.clone();
    copy
}

/// The `n`-th user code of a fixed sequence (never a live one in these tests).
fn wrong_code(n: usize) -> String {
    let letters = "BCDFGHJKLMNPQRSTVWXZ".as_bytes();
    let mut code = String::from("ZZZZ-");
    let mut rest = n;
    for _ in 0..4 {
        code.push(letters[rest % letters.len()] as char);
        rest /= letters.len();
    }
    code
}

/// 200 wrong user codes at once from one account: at most the account's budget of them are
/// looked up (404 "no request has this code"), the others are refused (429) before any look-up.
/// A person typing a real code is never slowed (the attempt is given back).
async fn concurrent_wrong_codes_check_at_most_the_budget(store: TestStore) {
    let router = store.router();
    let live = start_from(&router, "203.0.113.3", None).await.json();
    let live_code = live["user_code"].as_str().unwrap().to_string();
    let guesser = signed_in(&router, "198.51.100.20", "guesser@example.org").await;
    for _ in 0..(throttle::CODE_PER_ACCOUNT.max + 5) {
        let page = copy_of(&guesser)
            .get(&format!("/device?code={live_code}"))
            .await;
        assert_eq!(page.status, 200, "a real code is given back");
    }

    let pages = all_at_once(200, |i| {
        let mut browser = copy_of(&guesser);
        async move {
            browser
                .get(&format!("/device?code={}", wrong_code(i)))
                .await
        }
    })
    .await;
    let not_found = pages
        .iter()
        .filter(|p| p.status == 404 && p.body.contains("No request has this code"))
        .count();
    let refused = pages
        .iter()
        .filter(|p| p.status == 429 && p.header("retry-after").is_some())
        .count();
    assert_eq!(
        not_found,
        throttle::CODE_PER_ACCOUNT.max as usize,
        "codes looked up"
    );
    assert_eq!(not_found + refused, 200);
    // The account is out of guesses, even for the live code; the owner elsewhere is not.
    let page = copy_of(&guesser)
        .get(&format!("/device?code={live_code}"))
        .await;
    assert_eq!(page.status, 429);
    let mut owner = signed_in(&router, "203.0.113.3", "owner@example.org").await;
    assert_eq!(
        owner.get(&format!("/device?code={live_code}")).await.status,
        200
    );
}

/// 200 wrong passwords at once for one account: at most its budget are checked (401), the rest
/// 429; then 200 wrong logins at once for different accounts from one address: at most the
/// address's budget are checked.
async fn concurrent_login_failures_check_at_most_the_budget(store: TestStore) {
    let router = store.router();
    signed_in(&router, "203.0.113.4", "ada@example.org").await;
    let mut attacker = Browser::new(router.clone()).at("198.51.100.7");
    let csrf = attacker.get("/login").await.csrf();
    let attempt = |email: String| {
        let mut browser = copy_of(&attacker);
        let csrf = csrf.clone();
        async move {
            browser
                .post(
                    "/login",
                    &[
                        ("csrf", csrf.as_str()),
                        ("email", email.as_str()),
                        ("password", "wrong password"),
                    ],
                )
                .await
        }
    };
    let pages = all_at_once(200, |_| attempt("ada@example.org".to_string())).await;
    assert_eq!(
        count_status(&pages, 401),
        throttle::LOGIN_PER_ACCOUNT.max as usize,
        "passwords checked"
    );
    assert_eq!(count_status(&pages, 429), 200 - 5);
    // The right password, from elsewhere, waits for the window too (per account).
    let mut owner = Browser::new(router.clone()).at("203.0.113.4");
    let page = owner
        .submit(
            "/login",
            "/login",
            &[("email", "ada@example.org"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(page.status, 429);

    // The attacker's address has 5 failures counted; 200 more accounts at once get 15 more.
    let pages = all_at_once(200, |i| attempt(format!("nobody{i}@example.org"))).await;
    assert_eq!(
        count_status(&pages, 401),
        throttle::LOGIN_PER_ADDRESS.max as usize - throttle::LOGIN_PER_ACCOUNT.max as usize,
        "passwords checked"
    );
    assert_eq!(count_status(&pages, 429), 200 - 15);
    // Someone else at another address signs in normally.
    let mut bob = signed_in(&router, "203.0.113.5", "bob@example.org").await;
    bob.submit("/logout", "/logout", &[]).await;
    let page = bob
        .submit(
            "/login",
            "/login",
            &[("email", "bob@example.org"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(page.status, 303, "{}", page.body);
}

/// Without trusted proxies `X-Forwarded-For` changes nothing: the TCP peer is counted. With
/// them, the right-most untrusted address of the chain is, and a forged left part is ignored.
async fn forwarded_for_is_believed_only_from_trusted_proxies(store: TestStore) {
    let budget = throttle::DEVICE_START_PER_ADDRESS.max as usize;
    let plain = store.router();
    for i in 0..budget {
        let page = start_from(&plain, "192.0.2.1", Some(&format!("198.51.100.{i}"))).await;
        assert_eq!(page.status, 200);
    }
    let page = start_from(&plain, "192.0.2.1", Some("198.51.100.250")).await;
    assert_eq!(
        page.status, 429,
        "a new X-Forwarded-For is not a new client"
    );

    let behind_proxy = odqs::app::router(
        store
            .state_with(IndexPolicy::OFF)
            .with_trusted_proxies(TrustedProxies::parse("192.0.2.0/24, 10.0.0.0/8").unwrap()),
    );
    for _ in 0..budget {
        let page = start_from(&behind_proxy, "192.0.2.1", Some("203.0.113.7")).await;
        assert_eq!(
            page.status, 200,
            "the proxy's own budget is not the client's"
        );
    }
    let page = start_from(&behind_proxy, "192.0.2.2", Some("203.0.113.7, 10.1.2.3")).await;
    assert_eq!(page.status, 429, "same client through two proxies");
    let page = start_from(&behind_proxy, "192.0.2.1", Some("203.0.113.8, 203.0.113.7")).await;
    assert_eq!(page.status, 429, "a forged left part is not believed");
    let page = start_from(&behind_proxy, "192.0.2.1", Some("203.0.113.8")).await;
    assert_eq!(page.status, 200, "another client behind the proxy");
    // A peer that is not a trusted proxy is the client, whatever it forwards.
    let page = start_from(&behind_proxy, "198.51.100.9", Some("203.0.113.9")).await;
    assert_eq!(page.status, 200);
    let counted = throttle_counter::Entity::find_by_id("device:ip:198.51.100.9".to_string())
        .one(&store.store.db)
        .await
        .unwrap();
    assert_eq!(counted.map(|c| c.hits), Some(1));
    assert!(
        throttle_counter::Entity::find_by_id("device:ip:203.0.113.9".to_string())
            .one(&store.store.db)
            .await
            .unwrap()
            .is_none()
    );

    // The site counts the same client: wrong passwords behind the proxy are per forwarded
    // address.
    let mut browser = Browser::new(behind_proxy.clone()).at("192.0.2.1");
    let csrf = browser.get("/login").await.csrf();
    let request = Request::post("/login")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header("x-forwarded-for", "203.0.113.77")
        .body(Body::from(
            serde_urlencoded::to_string([
                ("csrf", csrf.as_str()),
                ("email", "nobody@example.org"),
                ("password", "x"),
            ])
            .unwrap(),
        ))
        .unwrap();
    assert_eq!(browser.send(request).await.status, 401);
    let counted = throttle_counter::Entity::find_by_id("login:ip:203.0.113.77".to_string())
        .one(&store.store.db)
        .await
        .unwrap();
    assert_eq!(counted.map(|c| c.hits), Some(1));
}

both_stores!(
    device_starts_are_limited_per_address_and_purged,
    token_polls_are_limited_per_address,
    concurrent_wrong_codes_check_at_most_the_budget,
    concurrent_login_failures_check_at_most_the_budget,
    forwarded_for_is_believed_only_from_trusted_proxies,
);
