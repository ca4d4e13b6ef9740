//! The device authorization endpoints (contract §8, RFC 8628) through the real router, on
//! SQLite and PostgreSQL: request shapes, every error code, slow_down timing, expiry, single
//! use under concurrency, and the tokens they issue.

use crate::helpers::TestStore;
use crate::helpers::client;
use crate::helpers::client::{get_with_token, post_form, post_json};
use entity::{api_token, device_grant};
use odqs::auth::grant::{self, Decision};
use odqs::auth::token;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::json;
use time::{Duration, OffsetDateTime};

const DEVICE: &str = "/api/v1/auth/device";
const TOKEN: &str = "/api/v1/auth/token";
const URN: &str = "urn:ietf:params:oauth:grant-type:device_code";

async fn start(router: &axum::Router) -> (String, String) {
    let page = post_json(
        router,
        DEVICE,
        json!({"device_name": "laptop", "client": "odqs-cli"}),
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    let body = page.json();
    (
        body["device_code"].as_str().unwrap().to_string(),
        body["user_code"].as_str().unwrap().to_string(),
    )
}

async fn poll(router: &axum::Router, device_code: &str) -> (u16, serde_json::Value) {
    let page = post_json(
        router,
        TOKEN,
        json!({"grant_type": URN, "device_code": device_code}),
    )
    .await;
    assert_eq!(
        page.header("cache-control"),
        Some("no-store"),
        "{}",
        page.body
    );
    (page.status, page.json())
}

async fn grant_row(store: &TestStore, user_code: &str) -> device_grant::Model {
    device_grant::Entity::find()
        .filter(device_grant::Column::UserCode.eq(user_code))
        .one(&store.store.db)
        .await
        .unwrap()
        .unwrap()
}

async fn approve(store: &TestStore, user_code: &str, decision: Decision) {
    let user = token::find_or_create_user(&store.store, "ada@example.org")
        .await
        .unwrap();
    let before = grant::decide(&store.store, user_code, user.id, decision)
        .await
        .unwrap();
    assert!(matches!(before, grant::Lookup::Pending(_)), "{before:?}");
}

/// Sets one column of the grant of `user_code`, as the passing of time would. A plain UPDATE:
/// the test needs the write, not the row read back.
pub async fn set_grant(
    store: &TestStore,
    user_code: &str,
    column: device_grant::Column,
    value: impl Into<sea_orm::Value>,
) {
    device_grant::Entity::update_many()
        .col_expr(column, sea_orm::sea_query::Expr::value(value))
        .filter(device_grant::Column::UserCode.eq(user_code))
        .exec(&store.store.db)
        .await
        .unwrap();
}

/// Moves the grant's last poll `seconds` into the past, as if the client had waited.
async fn age_last_poll(store: &TestStore, user_code: &str, seconds: i64) {
    let at = OffsetDateTime::now_utc() - Duration::seconds(seconds);
    set_grant(store, user_code, device_grant::Column::LastPollAt, Some(at)).await;
}

async fn device_authorization_response(store: TestStore) {
    let router = store.router();
    for page in [
        post_json(
            &router,
            DEVICE,
            json!({"device_name": "laptop", "client": "odqs-cli"}),
        )
        .await,
        post_form(
            &router,
            DEVICE,
            &[("client_id", "oauth-client"), ("scope", "read")],
        )
        .await,
        post_form(&router, DEVICE, &[]).await,
    ] {
        assert_eq!(page.status, 200, "200, not 201: {}", page.body);
        assert_eq!(page.header("cache-control"), Some("no-store"));
        let body = page.json();
        let device_code = body["device_code"].as_str().unwrap();
        assert!(device_code.starts_with("odqs_dc_"));
        assert!(device_code.len() >= 8 + 43, "256 random bits in base62");
        let user_code = body["user_code"].as_str().unwrap();
        assert_eq!(user_code.len(), 9);
        assert_eq!(&user_code[4..5], "-");
        assert!(
            user_code
                .chars()
                .filter(|c| *c != '-')
                .all(|c| "BCDFGHJKLMNPQRSTVWXZ".contains(c))
        );
        assert_eq!(body["verification_uri"], "http://odqs.test/device");
        assert_eq!(
            body["verification_uri_complete"],
            format!("http://odqs.test/device?code={user_code}")
        );
        assert_eq!(body["expires_in"], 900);
        assert_eq!(body["interval"], 5);
        let row = grant_row(&store, user_code).await;
        assert_ne!(row.device_code_hash, device_code, "stored hashed");
        assert_eq!(row.device_code_hash, token::hash(device_code));
    }
    // client_id names the client when client is absent.
    let page = post_form(&router, DEVICE, &[("client_id", "oauth-client")]).await;
    let row = grant_row(&store, page.json()["user_code"].as_str().unwrap()).await;
    assert_eq!(row.client.as_deref(), Some("oauth-client"));
    assert_eq!(row.device_name, None);
}

async fn pending_and_slow_down(store: TestStore) {
    let router = store.router();
    let (device_code, user_code) = start(&router).await;
    // The first poll is never too soon, even right after the request.
    assert_eq!(
        poll(&router, &device_code).await,
        (
            400,
            json!({
                "error": "authorization_pending",
                "error_description": "The request has not been approved yet; poll again after the interval."
            })
        )
    );
    // The next one, at once, is.
    let (status, body) = poll(&router, &device_code).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("slow_down")));
    assert_eq!(
        grant_row(&store, &user_code).await.interval,
        10,
        "grown by 5 s for good"
    );
    // Six seconds after the previous poll: enough for the old interval, not for the new one.
    age_last_poll(&store, &user_code, 6).await;
    assert_eq!(poll(&router, &device_code).await.1["error"], "slow_down");
    assert_eq!(grant_row(&store, &user_code).await.interval, 15);
    // Measured from the previous poll (the slow_down one, just now), not from the first.
    assert_eq!(poll(&router, &device_code).await.1["error"], "slow_down");
    age_last_poll(&store, &user_code, 21).await;
    assert_eq!(
        poll(&router, &device_code).await.1["error"],
        "authorization_pending"
    );
    assert_eq!(grant_row(&store, &user_code).await.interval, 20);
}

async fn expired_token(store: TestStore) {
    let router = store.router();
    let (device_code, user_code) = start(&router).await;
    approve(&store, &user_code, Decision::Approve).await;
    let past = OffsetDateTime::now_utc() - Duration::seconds(1);
    set_grant(&store, &user_code, device_grant::Column::ExpiresAt, past).await;
    let (status, body) = poll(&router, &device_code).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("expired_token"))
    );
}

async fn approval_issues_one_24_hour_token(store: TestStore) {
    let router = store.router();
    let (device_code, user_code) = start(&router).await;
    assert_eq!(
        poll(&router, &device_code).await.1["error"],
        "authorization_pending"
    );
    approve(&store, &user_code, Decision::Approve).await;
    // Approved: the next poll gets the token even if it comes early.
    let (status, body) = poll(&router, &device_code).await;
    assert_eq!(status, 200, "{body}");
    let access_token = body["access_token"].as_str().unwrap();
    assert!(access_token.starts_with("odqs_"));
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 86400);
    let stored = api_token::Entity::find()
        .filter(api_token::Column::TokenHash.eq(token::hash(access_token)))
        .one(&store.store.db)
        .await
        .unwrap()
        .expect("the token is stored, hashed");
    assert_eq!(stored.source, "device");
    assert_eq!(stored.name, "laptop");
    let lifetime = stored.expires_at.unwrap() - OffsetDateTime::now_utc();
    assert!(
        (Duration::hours(24) - lifetime).abs() < Duration::minutes(1),
        "{lifetime}"
    );
    assert_eq!(grant_row(&store, &user_code).await.state, "used");
    // The code is spent.
    assert_eq!(
        poll(&router, &device_code).await,
        (
            400,
            json!({
                "error": "invalid_grant",
                "error_description": "The device code is unknown or has already been used."
            })
        )
    );
}

async fn concurrent_polls_yield_exactly_one_token(store: TestStore) {
    let router = store.router();
    for _ in 0..6 {
        let (device_code, user_code) = start(&router).await;
        approve(&store, &user_code, Decision::Approve).await;
        let polls = (0..4).map(|_| {
            let router = router.clone();
            let code = device_code.clone();
            tokio::spawn(async move { poll(&router, &code).await })
        });
        let mut issued = 0;
        for handle in polls.collect::<Vec<_>>() {
            let (status, body) = handle.await.unwrap();
            match status {
                200 => issued += 1,
                _ => assert_eq!(body["error"], "invalid_grant", "{body}"),
            }
        }
        assert_eq!(
            issued, 1,
            "exactly one of four concurrent polls gets the token"
        );
    }
    let tokens = api_token::Entity::find()
        .all(&store.store.db)
        .await
        .unwrap();
    assert_eq!(tokens.len(), 6);
}

async fn both_bodies_and_both_grant_type_spellings(store: TestStore) {
    let router = store.router();
    for (form, grant_type) in [
        (false, URN),
        (false, "device_code"),
        (true, URN),
        (true, "device_code"),
    ] {
        let (device_code, user_code) = start(&router).await;
        approve(&store, &user_code, Decision::Approve).await;
        let page = if form {
            post_form(
                &router,
                TOKEN,
                &[
                    ("grant_type", grant_type),
                    ("device_code", &device_code),
                    ("client_id", "x"),
                ],
            )
            .await
        } else {
            post_json(
                &router,
                TOKEN,
                json!({"grant_type": grant_type, "device_code": device_code}),
            )
            .await
        };
        assert_eq!(
            page.status, 200,
            "form={form} grant_type={grant_type}: {}",
            page.body
        );
        assert_eq!(page.header("cache-control"), Some("no-store"));
    }
    // Parameters the endpoint does not read are ignored whatever they hold (contract §8):
    // objects, numbers, repeats.
    let page = post_json(
        &router,
        DEVICE,
        json!({"device_name": "laptop", "resource": {"a": 1}, "n": 5, "client_id": null}),
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    let page = post_form(&router, DEVICE, &[("resource", "a"), ("resource", "b")]).await;
    assert_eq!(page.status, 200, "{}", page.body);
}

async fn every_error_code(store: TestStore) {
    let router = store.router();
    let (device_code, user_code) = start(&router).await;
    let cases: Vec<(client::Page, &str)> = vec![
        (
            post_json(&router, TOKEN, json!({"device_code": device_code})).await,
            "invalid_request",
        ),
        (
            post_json(&router, TOKEN, json!({"grant_type": URN})).await,
            "invalid_request",
        ),
        (
            post_form(
                &router,
                TOKEN,
                &[
                    ("grant_type", URN),
                    ("device_code", &device_code),
                    ("device_code", &device_code),
                ],
            )
            .await,
            "invalid_request",
        ),
        (
            post_json(
                &router,
                TOKEN,
                json!({"grant_type": "password", "device_code": device_code}),
            )
            .await,
            "unsupported_grant_type",
        ),
        // A parameter the endpoint reads is a string.
        (
            post_json(&router, TOKEN, json!({"grant_type": URN, "device_code": 7})).await,
            "invalid_request",
        ),
        (
            post_json(&router, DEVICE, json!({"device_name": ["a"]})).await,
            "invalid_request",
        ),
        // The store cannot hold NUL: refused, not a store failure (503).
        (
            post_json(&router, DEVICE, json!({"device_name": "lap\u{0}top"})).await,
            "invalid_request",
        ),
        // A label over the limit, counted as sent (spaces too), as the OpenAPI maxLength counts.
        (
            post_json(
                &router,
                DEVICE,
                json!({"client": format!(" {} ", "x".repeat(odqs::auth::grant::MAX_LABEL - 1))}),
            )
            .await,
            "invalid_request",
        ),
        (
            post_json(
                &router,
                TOKEN,
                json!({"grant_type": URN, "device_code": "odqs_dc_nope"}),
            )
            .await,
            "invalid_grant",
        ),
    ];
    for (page, code) in cases {
        assert_eq!(page.status, 400, "{}", page.body);
        let body = page.json();
        assert_eq!(body["error"], code, "{body}");
        assert!(
            body["error_description"]
                .as_str()
                .is_some_and(|d| !d.is_empty())
        );
    }
    let malformed = client::Browser::new(router.clone())
        .send(
            axum::http::Request::post(TOKEN)
                .header("content-type", "application/json")
                .body(axum::body::Body::from("{not json"))
                .unwrap(),
        )
        .await;
    assert_eq!(
        (malformed.status, malformed.json()["error"].as_str()),
        (400, Some("invalid_request"))
    );
    // A refusal is access_denied.
    approve(&store, &user_code, Decision::Deny).await;
    let (status, body) = poll(&router, &device_code).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("access_denied"))
    );
    assert_eq!(
        api_token::Entity::find()
            .all(&store.store.db)
            .await
            .unwrap()
            .len(),
        0
    );
}

/// Revoked and expired tokens get 401 `invalid_token` from the API (through the bearer check
/// of the REST routes).
async fn revoked_and_expired_tokens_are_refused(store: TestStore) {
    let router = store.router();
    let user = token::find_or_create_user(&store.store, "ada@example.org")
        .await
        .unwrap();
    let (live, _) = token::mint(
        &store.store,
        user.id,
        "live",
        "account",
        &Default::default(),
        None,
    )
    .await
    .unwrap();
    let (revoked, revoked_row) = token::mint(
        &store.store,
        user.id,
        "revoked",
        "account",
        &Default::default(),
        None,
    )
    .await
    .unwrap();
    let (expired, _) = token::mint(
        &store.store,
        user.id,
        "expired",
        "device",
        &Default::default(),
        Some(OffsetDateTime::now_utc() - Duration::seconds(1)),
    )
    .await
    .unwrap();
    assert!(
        odqs::auth::account::revoke(&store.store, user.id, revoked_row.id)
            .await
            .unwrap()
    );
    assert_eq!(
        get_with_token(&router, "/api/v1/datasets", live.expose())
            .await
            .status,
        200
    );
    for secret in [&revoked, &expired] {
        let page = get_with_token(&router, "/api/v1/datasets", secret.expose()).await;
        assert_eq!(page.status, 401, "{}", page.body);
        assert_eq!(page.json()["error"], "invalid_token");
    }
}

/// RFC 8414: the metadata document has the required members, and a standard OAuth client (the
/// `oauth2` crate) configured only from it completes a device flow whose token reads the API.
async fn discovery_completes_a_device_flow(store: TestStore) {
    use oauth2::basic::BasicClient;
    use oauth2::{
        ClientId, DeviceAuthorizationUrl, StandardDeviceAuthorizationResponse, TokenResponse,
        TokenUrl,
    };

    let (site, stop) = crate::helpers::serve(&store).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = http
        .get(format!("{site}/.well-known/oauth-authorization-server"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let doc: serde_json::Value = response.json().await.unwrap();
    // RFC 8414 §2–§3.3: `issuer` (identical to the URL the document was fetched under, without
    // the well-known suffix) and `response_types_supported` are required; the endpoints are
    // absolute URLs on the issuer; RFC 8628 §4 adds `device_authorization_endpoint`.
    assert_eq!(doc["issuer"], site.as_str());
    assert!(doc["response_types_supported"].is_array(), "{doc}");
    for member in [
        "device_authorization_endpoint",
        "token_endpoint",
        "service_documentation",
    ] {
        let url = doc[member]
            .as_str()
            .unwrap_or_else(|| panic!("{member}: {doc}"));
        assert!(url.starts_with(&format!("{site}/")), "{member}: {url}");
    }
    let grants: Vec<&str> = doc["grant_types_supported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap())
        .collect();
    assert_eq!(grants, [URN]);
    assert_eq!(
        doc["token_endpoint_auth_methods_supported"],
        json!(["none"])
    );

    let client = BasicClient::new(ClientId::new("discovering-agent".to_string()))
        .set_device_authorization_url(
            DeviceAuthorizationUrl::new(
                doc["device_authorization_endpoint"]
                    .as_str()
                    .unwrap()
                    .into(),
            )
            .unwrap(),
        )
        .set_token_uri(TokenUrl::new(doc["token_endpoint"].as_str().unwrap().into()).unwrap());
    let details: StandardDeviceAuthorizationResponse = client
        .exchange_device_code()
        .request_async(&http)
        .await
        .unwrap();
    approve(&store, details.user_code().secret(), Decision::Approve).await;
    let token = client
        .exchange_device_access_token(&details)
        .request_async(&http, tokio::time::sleep, None)
        .await
        .unwrap();
    let datasets = http
        .get(format!("{site}/api/v1/datasets"))
        .bearer_auth(token.access_token().secret())
        .send()
        .await
        .unwrap();
    assert_eq!(datasets.status(), 200);
    // catalog.md points agents at the document.
    let catalog = http.get(format!("{site}/catalog.md")).send().await.unwrap();
    let catalog = catalog.text().await.unwrap();
    assert!(
        catalog.contains(&format!("{site}/.well-known/oauth-authorization-server")),
        "{catalog}"
    );
    let _ = stop.send(());
}

both_stores!(
    discovery_completes_a_device_flow,
    device_authorization_response,
    pending_and_slow_down,
    expired_token,
    approval_issues_one_24_hour_token,
    concurrent_polls_yield_exactly_one_token,
    both_bodies_and_both_grant_type_spellings,
    every_error_code,
    revoked_and_expired_tokens_are_refused,
);
