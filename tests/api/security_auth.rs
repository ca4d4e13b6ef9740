//! The device flow and the accounts under attack (issues 11 and 33), through the real router on
//! SQLite and PostgreSQL: device starts and token polls limited per client address, throttles
//! that hold their budget under concurrent attempts and refuse from memory (no store write, no
//! INFO line), budgets shared by instances through the store, sign-ups throttled per address
//! and site-wide before any hashing, password hashing bounded, the purge of expired rows, and
//! `X-Forwarded-For` believed only from trusted proxies.

use crate::helpers::TestStore;
use axum::body::Body;
use axum::http::{Request, header};
use std::sync::{Arc, Mutex};

use crate::helpers::client::{Browser, PASSWORD, Page};
use entity::{api_token, device_grant, session, throttle_counter, user};
use odqs::auth::password::{self, Hashing};
use odqs::auth::purge::{self, GRANT_GRACE, Purged};
use odqs::auth::throttle::{self, Limit, Throttles, Verdict};
use odqs::auth::{account, token};
use odqs::http::client_addr::TrustedProxies;
use odqs::state::AppState;
use query::memory::IndexPolicy;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::json;
use time::{Duration, OffsetDateTime};
use tracing::instrument::WithSubscriber;

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
        &Default::default(),
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

/// The application state and its router, to look at the state's throttles and hashing.
fn instance(store: &TestStore, hashing: Hashing) -> (AppState, axum::Router) {
    let state = store.state_with(IndexPolicy::OFF).with_hashing(hashing);
    (state.clone(), odqs::app::router(state))
}

/// The shared count of `key` in the store.
async fn stored_hits(store: &TestStore, key: &str) -> Option<i32> {
    throttle_counter::Entity::find_by_id(key.to_string())
        .one(&store.store.db)
        .await
        .unwrap()
        .map(|c| c.hits)
}

/// Size of the SQLite write-ahead log (0 on PostgreSQL, or when there is none).
fn wal_bytes(store: &TestStore) -> u64 {
    std::fs::metadata(store.dir.path().join("odqs.db-wal")).map_or(0, |m| m.len())
}

/// Once an address is over its device-start and token-poll budgets, a flood of 1,000 more
/// from it is refused from memory: not one store statement, not one byte of WAL, the shared
/// counts stay at the budgets (refusals are not counted), and another address is served.
async fn refusals_cost_no_store_write(store: TestStore) {
    let (state, router) = instance(&store, Hashing::sized_to_machine());
    let flooder = "198.51.100.30";
    let starts = throttle::DEVICE_START_PER_ADDRESS;
    let polls = throttle::TOKEN_POLL_PER_ADDRESS;
    for _ in 0..starts.max {
        assert_eq!(start_from(&router, flooder, None).await.status, 200);
    }
    for i in 0..polls.max {
        let page = poll_from(&router, flooder, &format!("odqs_dc_unknown{i}")).await;
        assert_eq!(page.json()["error"], "invalid_grant");
    }
    // What was counted in memory within the last second is written now, not by the timer.
    state.throttles.flush_all().await;
    let (start_key, poll_key) = (
        format!("device:ip:{flooder}"),
        format!("token:ip:{flooder}"),
    );
    assert_eq!(stored_hits(&store, &start_key).await, Some(starts.max));
    assert_eq!(stored_hits(&store, &poll_key).await, Some(polls.max));
    let writes = state.throttles.store_writes();
    let wal = wal_bytes(&store);

    let pages = all_at_once(1000, |i| {
        let router = router.clone();
        async move {
            if i % 2 == 0 {
                start_from(&router, flooder, None).await
            } else {
                poll_from(&router, flooder, "odqs_dc_unknown").await
            }
        }
    })
    .await;
    for (i, page) in pages.iter().enumerate() {
        assert_rate_limited(page, if i % 2 == 0 { starts } else { polls });
    }
    state.throttles.flush_all().await;
    assert_eq!(
        state.throttles.store_writes(),
        writes,
        "a refusal writes nothing"
    );
    assert_eq!(wal_bytes(&store), wal, "the WAL did not grow");
    assert_eq!(stored_hits(&store, &start_key).await, Some(starts.max));
    assert_eq!(stored_hits(&store, &poll_key).await, Some(polls.max));
    assert_eq!(grant_rows(&store).await, starts.max as u64);
    assert_eq!(start_from(&router, "203.0.113.30", None).await.status, 200);
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines(&self) -> Vec<String> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        text.lines().map(str::to_string).collect()
    }
}

/// Refusals are logged at debug with the count of their kind, never at INFO; the maintenance
/// tick's summary says how many each kind refused, once, without the subject (an e-mail
/// address) in it.
async fn refusals_are_logged_at_debug_with_counts(store: TestStore) {
    let throttles = Throttles::new(store.store.clone());
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let dispatch = tracing::Dispatch::new(subscriber);
    let key = throttle::key("login:email", "ada@example.org");
    let limit = throttle::LOGIN_PER_ACCOUNT;
    // The takes' events, on whichever worker thread polls them after a store read.
    async {
        for _ in 0..limit.max {
            assert_eq!(throttles.take(&key, limit).await.unwrap(), Verdict::Allowed);
        }
        for _ in 0..25 {
            assert!(matches!(
                throttles.take(&key, limit).await.unwrap(),
                Verdict::Refused { .. }
            ));
        }
    }
    .with_subscriber(dispatch.clone())
    .await;
    let _guard = tracing::dispatcher::set_default(&dispatch);
    throttles.forget_idle();
    let lines = captured.lines();
    let throttled: Vec<&String> = lines.iter().filter(|l| l.contains("throttled")).collect();
    assert_eq!(throttled.len(), 25, "{lines:#?}");
    assert!(
        throttled.iter().all(|l| l.contains("DEBUG")),
        "{throttled:#?}"
    );
    assert!(throttled[24].contains("refused=25"), "{}", throttled[24]);
    // (The store's own statements may log too; only the throttle's lines are counted.)
    let infos: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains(" INFO ") && l.contains("throttle"))
        .collect();
    assert_eq!(infos.len(), 1, "one summary: {lines:#?}");
    assert!(
        infos[0].contains("throttle=login:email") && infos[0].contains("refused=25"),
        "{}",
        infos[0]
    );
    assert!(!lines.iter().any(|l| l.contains("ada@example.org")));
    // The summary was reset: a quiet tick logs nothing.
    throttles.forget_idle();
    assert!(
        !captured.lines()[lines.len()..]
            .iter()
            .any(|l| l.contains("throttle"))
    );
}

/// Two instances over one store share each budget: an instance's first attempt starts from
/// the shared count (a restart hands out no fresh budget), what one counted reaches the other
/// once written (at most a second later, here at once by `flush_all`), a take given back
/// within the second costs no write, and attempts landing on both within the same second get
/// at most twice the budget through (the documented bound), never more.
async fn instances_share_budgets_through_the_store(store: TestStore) {
    let limit = throttle::DEVICE_START_PER_ADDRESS;
    let one = Throttles::new(store.store.clone());
    let two = Throttles::new(store.store.clone());
    let key = throttle::key("device:ip", "198.51.100.40");
    for _ in 0..limit.max - 1 {
        assert_eq!(one.take(&key, limit).await.unwrap(), Verdict::Allowed);
    }
    one.flush_all().await;
    assert_eq!(stored_hits(&store, &key).await, Some(limit.max - 1));
    // The second instance (or the first, restarted) has one attempt left, not a budget.
    assert_eq!(two.take(&key, limit).await.unwrap(), Verdict::Allowed);
    let Verdict::Refused { retry_after } = two.take(&key, limit).await.unwrap() else {
        panic!("the shared budget is spent");
    };
    assert!((1..=limit.window_secs).contains(&retry_after));
    // The first instance learns it at its next sync: its local count is below the budget, so
    // it asks the store rather than allowing.
    one.flush_all().await;
    let restarted = Throttles::new(store.store.clone());
    assert!(matches!(
        restarted.take(&key, limit).await.unwrap(),
        Verdict::Refused { .. }
    ));

    // Takes given back within a second: one write for the first take of the key (the shared
    // count is read before deciding) and one for what is owed back, however many rounds.
    let code_key = throttle::key("code:user", "7");
    let code = [(code_key.clone(), throttle::CODE_PER_ACCOUNT)];
    let before = one.store_writes();
    let mut rounds = 0;
    let started = std::time::Instant::now();
    while started.elapsed() < throttle::SYNC_EVERY / 2 && rounds < 50 {
        assert_eq!(one.take_all(&code).await.unwrap(), Verdict::Allowed);
        one.give_back(&code).await;
        rounds += 1;
    }
    one.flush_all().await;
    assert!(rounds > 1);
    assert_eq!(one.store_writes() - before, 2, "{rounds} takes given back");
    assert_eq!(stored_hits(&store, &code_key).await, Some(0));

    // Bursts on both instances at once: each allows at most the budget by its own count.
    let burst_key = throttle::key("device:ip", "198.51.100.41");
    let (a, b) = (Arc::new(one), Arc::new(two));
    let mut handles = Vec::new();
    for i in 0..200 {
        let instance = if i % 2 == 0 { a.clone() } else { b.clone() };
        let key = burst_key.clone();
        handles.push(tokio::spawn(async move {
            instance.take(&key, limit).await.unwrap()
        }));
    }
    let mut allowed = 0;
    for handle in handles {
        if handle.await.unwrap() == Verdict::Allowed {
            allowed += 1;
        }
    }
    assert!(
        (limit.max..=2 * limit.max).contains(&allowed),
        "{allowed} allowed"
    );
    a.flush_all().await;
    b.flush_all().await;
    assert_eq!(stored_hits(&store, &burst_key).await, Some(allowed));
    // Once both have written, the key is over its budget everywhere.
    let third = Throttles::new(store.store.clone());
    assert!(matches!(
        third.take(&burst_key, limit).await.unwrap(),
        Verdict::Refused { .. }
    ));
}

/// The sign-up form's fields from `browser`'s last page.
async fn signup_from(browser: &mut Browser, csrf: &str, email: &str) -> Page {
    browser
        .post(
            "/signup",
            &[("csrf", csrf), ("email", email), ("password", PASSWORD)],
        )
        .await
}

async fn accounts(store: &TestStore) -> u64 {
    user::Entity::find().count(&store.store.db).await.unwrap()
}

/// Sign-ups are limited per address (an address taken counts too, without a hash) and on the
/// whole site; a refusal is the 429 page with `Retry-After`, creates nothing and hashes
/// nothing; a refusal by the site's budget does not spend the address's.
async fn signups_are_throttled_per_address_and_site_wide(store: TestStore) {
    let (state, router) = instance(&store, Hashing::sized_to_machine());
    let per_address = throttle::SIGNUP_PER_ADDRESS.max as usize;
    let mut browser = Browser::new(router.clone()).at("198.51.100.50");
    let csrf = browser.get("/signup").await.csrf();
    // Malformed forms are refused before any throttle or hash.
    for (email, password) in [("not an address", PASSWORD), ("short@example.org", "short")] {
        let page = browser
            .post(
                "/signup",
                &[("csrf", &csrf), ("email", email), ("password", password)],
            )
            .await;
        assert_eq!(page.status, 400);
    }
    assert_eq!(
        signup_from(&mut browser, &csrf, "first@example.org")
            .await
            .status,
        303
    );
    let mut browser = Browser::new(router.clone()).at("198.51.100.50");
    let csrf = browser.get("/signup").await.csrf();
    for _ in 1..per_address {
        let page = signup_from(&mut browser, &csrf, "first@example.org").await;
        assert_eq!(page.status, 409, "taken: {}", page.body);
    }
    assert_eq!(state.hashing.started(), 1, "a taken address is not hashed");
    let page = signup_from(&mut browser, &csrf, "second@example.org").await;
    assert_eq!(page.status, 429, "{}", page.body);
    assert!(page.body.contains("Too many sign-ups from this address"));
    let retry: i64 = page.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=throttle::SIGNUP_PER_ADDRESS.window_secs).contains(&retry));
    assert_eq!(state.hashing.started(), 1);
    assert_eq!(accounts(&store).await, 1);

    // The site's budget: spent by taken addresses from many addresses (cheap), then refused
    // for everyone, and the refused address keeps its own budget.
    let global = throttle::SIGNUP_GLOBAL.max as usize;
    let mut spent = per_address;
    let mut n = 0;
    while spent < global {
        let mut other =
            Browser::new(router.clone()).at(&format!("203.0.113.{}", 100 + n / per_address));
        let csrf = other.get("/signup").await.csrf();
        assert_eq!(
            signup_from(&mut other, &csrf, "first@example.org")
                .await
                .status,
            409
        );
        spent += 1;
        n += 1;
    }
    let mut late = Browser::new(router.clone()).at("192.0.2.200");
    let csrf = late.get("/signup").await.csrf();
    let page = signup_from(&mut late, &csrf, "late@example.org").await;
    assert_eq!(page.status, 429, "{}", page.body);
    assert!(page.body.contains("Too many sign-ups on this site"));
    assert!(page.header("retry-after").is_some());
    assert_eq!(state.hashing.started(), 1);
    assert_eq!(accounts(&store).await, 1);
    state.throttles.flush_all().await;
    assert_eq!(
        stored_hits(&store, "signup:ip:192.0.2.200").await,
        Some(0),
        "given back"
    );
    assert_eq!(
        stored_hits(&store, "signup:all:").await,
        Some(global as i32)
    );
}

/// 250 sign-ups at once from two addresses: at most the two
/// addresses' budgets are hashed, each answer is a sign-in (303), the 429 page or the 503
/// page, and an account exists for each 303 only.
async fn a_signup_flood_hashes_at_most_the_budgets(store: TestStore) {
    let (state, router) = instance(&store, Hashing::sized_to_machine());
    let addresses = ["198.51.100.60", "198.51.100.61"];
    let mut csrfs = Vec::new();
    let mut browsers = Vec::new();
    for address in addresses {
        let mut browser = Browser::new(router.clone()).at(address);
        csrfs.push(browser.get("/signup").await.csrf());
        browsers.push(browser);
    }
    let browsers = Arc::new(browsers);
    let csrfs = Arc::new(csrfs);
    let pages = all_at_once(250, |i| {
        let (browsers, csrfs) = (browsers.clone(), csrfs.clone());
        async move {
            let mut browser = copy_of(&browsers[i % 2]);
            signup_from(
                &mut browser,
                &csrfs[i % 2],
                &format!("flood{i}@example.org"),
            )
            .await
        }
    })
    .await;
    let created = count_status(&pages, 303);
    let busy = count_status(&pages, 503);
    let refused = count_status(&pages, 429);
    assert_eq!(created + busy + refused, 250);
    assert!(created >= 1 && created <= 2 * throttle::SIGNUP_PER_ADDRESS.max as usize);
    assert_eq!(
        state.hashing.started(),
        created as u64,
        "only sign-ups that were made hashed"
    );
    assert_eq!(accounts(&store).await, created as u64);
    for page in pages.iter().filter(|p| p.status == 503) {
        assert_eq!(
            page.header("retry-after"),
            Some(password::BUSY_RETRY_AFTER_SECS.to_string().as_str())
        );
    }
}

/// When every hashing worker is taken and the line is full, sign-up and login answer the 503
/// page with `Retry-After` at once, create nothing, and do not spend the throttles' budgets.
async fn full_hashing_refuses_with_503(store: TestStore) {
    let (state, router) = instance(&store, Hashing::new(0, 0));
    token::find_or_create_user(&store.store, "ada@example.org")
        .await
        .unwrap();
    let mut browser = Browser::new(router.clone()).at("198.51.100.70");
    let csrf = browser.get("/signup").await.csrf();
    for _ in 0..=throttle::SIGNUP_PER_ADDRESS.max {
        let page = signup_from(&mut browser, &csrf, "new@example.org").await;
        assert_eq!(page.status, 503, "{}", page.body);
        assert_eq!(
            page.header("retry-after"),
            Some(password::BUSY_RETRY_AFTER_SECS.to_string().as_str())
        );
        assert!(page.body.contains("Try again in a few seconds"));
    }
    assert_eq!(accounts(&store).await, 1);
    for _ in 0..=throttle::LOGIN_PER_ACCOUNT.max {
        let page = browser
            .post(
                "/login",
                &[
                    ("csrf", csrf.as_str()),
                    ("email", "ada@example.org"),
                    ("password", "wrong password"),
                ],
            )
            .await;
        assert_eq!(page.status, 503, "never 429: {}", page.body);
    }
    assert_eq!(state.hashing.started(), 0);
    state.throttles.flush_all().await;
    for key in [
        "signup:ip:198.51.100.70",
        "login:ip:198.51.100.70",
        "login:email:ada@example.org",
    ] {
        assert_eq!(stored_hits(&store, key).await, Some(0), "{key}");
    }
}

both_stores!(
    device_starts_are_limited_per_address_and_purged,
    token_polls_are_limited_per_address,
    concurrent_wrong_codes_check_at_most_the_budget,
    concurrent_login_failures_check_at_most_the_budget,
    forwarded_for_is_believed_only_from_trusted_proxies,
    refusals_cost_no_store_write,
    refusals_are_logged_at_debug_with_counts,
    instances_share_budgets_through_the_store,
    signups_are_throttled_per_address_and_site_wide,
    a_signup_flood_hashes_at_most_the_budgets,
    full_hashing_refuses_with_503,
);
