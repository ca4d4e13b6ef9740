//! Scoped tokens (contract §13.3), on both stores: a token limited to one dataset or to one
//! of `read` and `export` is refused alike by REST, export, changes, GraphQL (field by field)
//! and MCP, with 403 `insufficient_scope` and RFC 6750's `WWW-Authenticate`; listings show
//! only what the token may read; tokens minted before scopes existed keep `read export`;
//! `GET /token` describes the calling token; `POST /auth/revoke` (RFC 7009) revokes one; the
//! device flow takes `scope`, says it in words on the approval page, and answers it with the
//! token, also to a standard OAuth client (the `oauth2` crate); the account page mints with a
//! scope and a lifetime. Bad scopes are 400 `invalid_scope` and store nothing.

use crate::helpers::client::{Browser, Page, get_with, post_form, post_graphql, post_json};
use crate::helpers::{TestStore, import_file, scoped_token, write_file};
use entity::{api_token, device_grant};
use sea_orm::{ActiveModelTrait, EntityTrait, PaginatorTrait, Set};
use serde_json::{Value, json};

const DEVICE: &str = "/api/v1/auth/device";
const REVOKE: &str = "/api/v1/auth/revoke";

/// Two small datasets, `towns` (published twice, so changes have two versions) and `lakes`.
async fn publish(store: &TestStore) {
    for (slug, body) in [
        ("towns", "code,name\na,Alpha\nb,Beta\n"),
        ("towns", "code,name\na,Alpha\nb,Beta\nc,Gamma\n"),
        ("lakes", "code,name\nx,Xenia\n"),
    ] {
        let path = write_file(store, &format!("{slug}.csv"), body.as_bytes());
        import_file(store, &path, slug, None, Some("code"))
            .await
            .unwrap();
    }
}

async fn get(router: &axum::Router, token: &str, path: &str) -> crate::helpers::client::Answer {
    get_with(router, &format!("/api/v1{path}"), Some(token), &[]).await
}

/// A 403 `insufficient_scope` naming `needed`, in the body and in `WWW-Authenticate`.
fn assert_refused(answer: &crate::helpers::client::Answer, needed: &str, what: &str) {
    assert_eq!(answer.status, 403, "{what}: {}", answer.body);
    assert_eq!(answer.body["error"], "insufficient_scope", "{what}");
    assert_eq!(answer.body["scope"], needed, "{what}");
    assert_eq!(
        answer.headers["www-authenticate"].to_str().unwrap(),
        format!("Bearer error=\"insufficient_scope\", scope=\"{needed}\""),
        "{what}"
    );
}

fn slugs(body: &Value) -> Vec<&str> {
    body["datasets"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|d| d["slug"].as_str().unwrap())
        .collect()
}

/// REST and export: each route asks for `read` or `export` on its dataset.
async fn rest_routes_enforce_the_scope(store: TestStore) {
    publish(&store).await;
    let router = store.router();
    let towns_only = scoped_token(&store, "read dataset:towns").await;
    let list = get(&router, &towns_only, "/datasets").await;
    assert_eq!(list.status, 200);
    assert_eq!(slugs(&list.body), ["towns"]);
    assert_eq!(list.body["total"], 1);
    let searched = get(&router, &towns_only, "/datasets?q=a").await;
    assert_eq!(slugs(&searched.body), ["towns"]);
    for path in [
        "/datasets/towns",
        "/datasets/towns/schema.json",
        "/datasets/towns/records",
        "/datasets/towns/records/a",
        "/datasets/towns/agg?group_by=name",
        "/datasets/towns/versions",
        "/datasets/towns/records?version=1",
    ] {
        let answer = get(&router, &towns_only, path).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
    }
    for path in [
        "/datasets/lakes",
        "/datasets/lakes/schema.json",
        "/datasets/lakes/records",
        "/datasets/lakes/records/x",
        "/datasets/lakes/agg?group_by=name",
        "/datasets/lakes/versions",
        // Refused before anything else is looked at: no hint whether it exists.
        "/datasets/nope/records",
        "/datasets/lakes/records?per_page=0",
    ] {
        let slug = path.split('/').nth(2).unwrap();
        assert_refused(
            &get(&router, &towns_only, path).await,
            &format!("read dataset:{slug}"),
            path,
        );
    }
    for path in [
        "/datasets/towns/export?format=ndjson",
        "/datasets/towns/changes?from=1",
    ] {
        assert_refused(
            &get(&router, &towns_only, path).await,
            "export dataset:towns",
            path,
        );
    }
    // `export` alone: exports, reads nothing else.
    let export_only = scoped_token(&store, "export").await;
    let exported = get_with(
        &router,
        "/api/v1/datasets/lakes/export?format=ndjson",
        Some(&export_only),
        &[],
    )
    .await;
    assert_eq!(exported.status, 200);
    let changes = get(&router, &export_only, "/datasets/towns/changes?from=1").await;
    assert_eq!(changes.status, 200);
    assert_eq!(changes.headers["x-added"], "1");
    assert_refused(
        &get(&router, &export_only, "/datasets").await,
        "read",
        "list",
    );
    assert_refused(
        &get(&router, &export_only, "/datasets/towns/records").await,
        "read",
        "records",
    );
    // The default scope reads and exports everything.
    let all = scoped_token(&store, "read export").await;
    assert_eq!(
        slugs(&get(&router, &all, "/datasets").await.body),
        ["lakes", "towns"]
    );
    let exported = get(&router, &all, "/datasets/towns/export?format=csv").await;
    assert_eq!(exported.status, 200);
}

/// GraphQL: a field outside the scope fails alone, with the code; `datasets` lists only what
/// the token may read.
async fn graphql_fields_fail_alone(store: TestStore) {
    publish(&store).await;
    let router = store.router();
    let token = scoped_token(&store, "read dataset:towns").await;
    let answer = post_graphql(
        &router,
        Some(&token),
        r#"{ a: dataset(slug: "towns") { slug }
             b: dataset(slug: "lakes") { slug }
             c: records(slug: "lakes") { total }
             d: records(slug: "towns") { total }
             e: datasets { total datasets { slug } } }"#,
        json!({}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let data = &answer.body["data"];
    assert_eq!(data["a"]["slug"], "towns");
    assert_eq!(data["b"], Value::Null);
    assert_eq!(data["c"], Value::Null);
    assert_eq!(data["d"]["total"], 3);
    assert_eq!(
        data["e"],
        json!({"total": 1, "datasets": [{"slug": "towns"}]})
    );
    let errors = answer.body["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{errors:?}");
    for (error, path) in errors.iter().zip(["b", "c"]) {
        assert_eq!(error["path"], json!([path]));
        assert_eq!(error["extensions"]["code"], "insufficient_scope");
        assert_eq!(error["extensions"]["scope"], "read dataset:lakes");
    }
    // Without `read`, no field reads.
    let export_only = scoped_token(&store, "export").await;
    let answer = post_graphql(
        &router,
        Some(&export_only),
        "{ datasets { total } }",
        json!({}),
    )
    .await;
    assert_eq!(answer.body["data"], Value::Null, "{}", answer.body);
    assert_eq!(
        answer.body["errors"][0]["extensions"]["code"],
        "insufficient_scope"
    );
}

/// One MCP tool call, as JSON-RPC over the streamable HTTP transport.
pub(crate) async fn mcp_call(
    router: &axum::Router,
    token: &str,
    tool: &str,
    arguments: Value,
) -> Value {
    let params = json!({"name": tool, "arguments": arguments});
    mcp_request(router, token, "tools/call", params).await
}

/// One MCP request, as JSON-RPC over the streamable HTTP transport.
pub(crate) async fn mcp_request(
    router: &axum::Router,
    token: &str,
    method: &str,
    params: Value,
) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let request = crate::helpers::client::request(
        axum::http::Method::POST,
        "/api/v1/mcp",
        Some(token),
        &[
            ("accept", "application/json, text/event-stream"),
            ("host", "odqs.test"),
        ],
        Some(("application/json", body.to_string())),
    );
    let (status, _, bytes) = crate::helpers::client::exchange(router, request).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    serde_json::from_slice(&bytes).unwrap()
}

/// MCP: tools outside the scope answer the code; `list_datasets` lists what the token reads.
async fn mcp_tools_enforce_the_scope(store: TestStore) {
    publish(&store).await;
    let router = store.router();
    let token = scoped_token(&store, "read dataset:towns").await;
    let listed = mcp_call(&router, &token, "list_datasets", json!({})).await;
    let listed = &listed["result"]["structuredContent"];
    assert_eq!(slugs(listed), ["towns"], "{listed}");
    let found = mcp_call(
        &router,
        &token,
        "search_records",
        json!({"dataset": "towns"}),
    )
    .await;
    assert_eq!(found["result"]["structuredContent"]["total"], 3, "{found}");
    for (tool, needed) in [
        ("search_records", "read dataset:lakes"),
        ("describe_dataset", "read dataset:lakes"),
        ("export_records", "export dataset:lakes"),
    ] {
        let refused = mcp_call(&router, &token, tool, json!({"dataset": "lakes"})).await;
        let text = refused.to_string();
        assert!(text.contains("insufficient_scope"), "{tool}: {text}");
        assert!(text.contains(needed), "{tool}: {text}");
    }
}

/// Tokens minted before scopes existed (no scope written) read and export everything, and
/// `GET /token` says so; it never shows the token.
async fn old_tokens_keep_read_export_and_describe_themselves(store: TestStore) {
    publish(&store).await;
    let router = store.router();
    let user = odqs::auth::token::find_or_create_user(&store.store, "old@example.org")
        .await
        .unwrap();
    let plain = "odqs_OldTokenMintedBeforeScopesExisted0000000000";
    let now = time::OffsetDateTime::now_utc();
    api_token::ActiveModel {
        user_id: Set(user.id),
        name: Set("from before".into()),
        token_hash: Set(odqs::auth::token::hash(plain)),
        last4: Set("0000".into()),
        source: Set("cli".into()),
        created_at: Set(now),
        last_used_at: Set(None),
        expires_at: Set(None),
        revoked_at: Set(None),
        ..Default::default()
    }
    .insert(&store.store.db)
    .await
    .unwrap();
    let described = get(&router, plain, "/token").await;
    assert_eq!(described.status, 200, "{}", described.body);
    assert_eq!(described.body["scope"], "read export");
    assert_eq!(described.body["name"], "from before");
    assert_eq!(described.body["last4"], "0000");
    assert_eq!(described.body["expires_at"], Value::Null);
    assert!(!described.body.to_string().contains(&plain[5..20]));
    let exported = get(&router, plain, "/datasets/lakes/export?format=ndjson").await;
    assert_eq!(exported.status, 200);

    let scoped = scoped_token(&store, "dataset:lakes read").await;
    let described = get(&router, &scoped, "/token").await;
    assert_eq!(described.body["scope"], "read dataset:lakes");
    assert_eq!(described.body["last4"], &scoped[scoped.len() - 4..]);
    let missing = get_with(&router, "/api/v1/token", None, &[]).await;
    assert_eq!(missing.status, 401);
}

/// RFC 7009: a client revokes its own token; the answer is 200 for an unknown token too; a
/// request without `token` is `invalid_request`.
async fn revocation(store: TestStore) {
    publish(&store).await;
    let router = store.router();
    let token = scoped_token(&store, "read").await;
    assert_eq!(get(&router, &token, "/datasets").await.status, 200);
    let revoked = post_form(&router, REVOKE, &[("token", &token)]).await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    let after = get(&router, &token, "/datasets").await;
    assert_eq!(
        (after.status, after.body["error"].as_str()),
        (401, Some("invalid_token"))
    );
    let again = post_json(&router, REVOKE, json!({"token": token})).await;
    assert_eq!(again.status, 200, "already revoked: the same answer");
    let unknown = post_form(&router, REVOKE, &[("token", "odqs_unknown")]).await;
    assert_eq!(unknown.status, 200);
    for body in [json!({}), json!({"token": ""}), json!({"token": 5})] {
        let bad = post_json(&router, REVOKE, body.clone()).await;
        assert_eq!(bad.status, 400, "{body}");
        assert_eq!(bad.json()["error"], "invalid_request", "{body}");
    }
    let stored = api_token::Entity::find()
        .all(&store.store.db)
        .await
        .unwrap();
    assert!(stored.iter().all(|t| t.revoked_at.is_some()));
}

/// The device flow: `scope` is stored with the grant, shown in words on the approval page,
/// and answered with the token, which is limited to it; bad scopes are `invalid_scope` and
/// store no grant.
async fn device_flow_scopes(store: TestStore) {
    publish(&store).await;
    let router = store.router();
    let long = format!("read {}", "dataset:towns ".repeat(80));
    for scope in ["write", "read dataset:nope", "dataset:towns", long.as_str()] {
        let refused = post_form(&router, DEVICE, &[("scope", scope)]).await;
        assert_eq!(refused.status, 400, "{scope}: {}", refused.body);
        assert_eq!(refused.json()["error"], "invalid_scope", "{scope}");
    }
    let grants = device_grant::Entity::find()
        .count(&store.store.db)
        .await
        .unwrap();
    assert_eq!(grants, 0, "a refused scope stores nothing");

    let started = post_json(
        &router,
        DEVICE,
        json!({"client": "agent", "scope": "read dataset:towns"}),
    )
    .await;
    assert_eq!(started.status, 200, "{}", started.body);
    let started = started.json();
    let user_code = started["user_code"].as_str().unwrap();
    let mut browser = Browser::new(router.clone());
    browser.sign_up("approver@example.org").await;
    let page = browser.get(&format!("/device?code={user_code}")).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body
            .contains("read the dataset towns only for 24 hours"),
        "{}",
        page.body
    );
    let approved = browser
        .submit(
            &format!("/device?code={user_code}"),
            "/device",
            &[("code", user_code), ("decision", "approve")],
        )
        .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    let issued = post_json(
        &router,
        "/api/v1/auth/token",
        json!({"grant_type": "device_code", "device_code": started["device_code"]}),
    )
    .await;
    assert_eq!(issued.status, 200, "{}", issued.body);
    let issued = issued.json();
    assert_eq!(issued["scope"], "read dataset:towns");
    let token = issued["access_token"].as_str().unwrap();
    assert_eq!(get(&router, token, "/datasets/towns").await.status, 200);
    assert_refused(
        &get(&router, token, "/datasets/lakes").await,
        "read dataset:lakes",
        "device token",
    );
    // Without `scope`, the default.
    let plain = post_json(&router, DEVICE, json!({})).await;
    assert_eq!(plain.status, 200);
    let row = device_grant::Entity::find()
        .all(&store.store.db)
        .await
        .unwrap()
        .into_iter()
        .max_by_key(|g| g.id)
        .unwrap();
    assert_eq!(row.scope, "read export");
}

/// A standard OAuth client asks for a scope and gets a token limited to it.
async fn an_oauth_client_asks_for_a_scope(store: TestStore) {
    use oauth2::basic::BasicClient;
    use oauth2::{
        ClientId, DeviceAuthorizationUrl, Scope, StandardDeviceAuthorizationResponse,
        TokenResponse, TokenUrl,
    };
    publish(&store).await;
    let (site, stop) = crate::helpers::serve(&store).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let doc: Value = http
        .get(format!("{site}/.well-known/oauth-authorization-server"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        doc["scopes_supported"],
        json!(["read", "export", "publish"])
    );
    assert_eq!(
        doc["revocation_endpoint"],
        format!("{site}/api/v1/auth/revoke")
    );
    let client = BasicClient::new(ClientId::new("scoped-agent".to_string()))
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
        .add_scope(Scope::new("read".into()))
        .add_scope(Scope::new("dataset:lakes".into()))
        .request_async(&http)
        .await
        .unwrap();
    let user = odqs::auth::token::find_or_create_user(&store.store, "ada@example.org")
        .await
        .unwrap();
    odqs::auth::grant::decide(
        &store.store,
        details.user_code().secret(),
        user.id,
        odqs::auth::grant::Decision::Approve,
    )
    .await
    .unwrap();
    let token = client
        .exchange_device_access_token(&details)
        .request_async(&http, tokio::time::sleep, None)
        .await
        .unwrap();
    let scopes: Vec<&str> = token
        .scopes()
        .expect("the answer carries scope")
        .iter()
        .map(|s| s.as_str())
        .collect();
    assert_eq!(scopes, ["read", "dataset:lakes"]);
    let read = |path: &str| {
        http.get(format!("{site}/api/v1{path}"))
            .bearer_auth(token.access_token().secret())
            .send()
    };
    assert_eq!(read("/datasets/lakes/records").await.unwrap().status(), 200);
    assert_eq!(read("/datasets/towns/records").await.unwrap().status(), 403);
    assert_eq!(
        read("/datasets/lakes/export").await.unwrap().status(),
        403,
        "no export asked, none granted"
    );
    let _ = stop.send(());
}

fn token_of(page: &Page) -> String {
    crate::helpers::client::unescape(
        page.body
            .split("id=\"new-token\"")
            .nth(1)
            .and_then(|rest| rest.split("value=\"").nth(1))
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("no new token in {}", page.body)),
    )
}

/// `/account`: mint with chosen datasets, export off and a lifetime; the list shows each
/// token's scope and expiry; a form without a chosen dataset or with a lifetime not offered is
/// refused with the reason, minting nothing.
async fn the_account_page_mints_scoped_tokens(store: TestStore) {
    publish(&store).await;
    let router = store.router();
    let mut browser = Browser::new(router.clone());
    browser.sign_up("ada@example.org").await;
    let form = browser.get("/account").await;
    assert!(form.body.contains("value=\"towns\""), "{}", form.body);
    let minted = browser
        .submit(
            "/account",
            "/account/tokens",
            &[
                ("name", "agent"),
                ("datasets", "chosen"),
                ("dataset", "towns"),
                ("lifetime", "30d"),
            ],
        )
        .await;
    // POST-redirect-GET: the page the redirect leads to shows the new token once.
    assert_eq!(minted.status, 303, "{}", minted.body);
    let minted = browser.get(minted.location()).await;
    assert_eq!(minted.status, 200, "{}", minted.body);
    assert!(
        minted.body.contains("read the dataset towns only"),
        "{}",
        minted.body
    );
    assert!(minted.body.contains("<code>read dataset:towns</code>"));
    let token = token_of(&minted);
    assert_eq!(get(&router, &token, "/datasets/towns").await.status, 200);
    assert_eq!(get(&router, &token, "/datasets/lakes").await.status, 403);
    assert_eq!(
        get(&router, &token, "/datasets/towns/export").await.status,
        403
    );
    let row = api_token::Entity::find()
        .all(&store.store.db)
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.name == "agent")
        .unwrap();
    let lives = row.expires_at.unwrap() - row.created_at;
    assert!((lives - time::Duration::days(30)).abs() < time::Duration::minutes(1));

    let everything = browser
        .submit(
            "/account",
            "/account/tokens",
            &[("datasets", "all"), ("export", "on"), ("lifetime", "never")],
        )
        .await;
    let everything = browser.get(everything.location()).await;
    assert!(everything.body.contains("read and export every dataset"));
    let token = token_of(&everything);
    assert_eq!(
        get(&router, &token, "/datasets/lakes/export").await.status,
        200
    );

    let before = api_token::Entity::find()
        .count(&store.store.db)
        .await
        .unwrap();
    for fields in [
        &[("datasets", "chosen"), ("lifetime", "1d")][..],
        &[("datasets", "all"), ("lifetime", "forever")][..],
        &[
            ("datasets", "chosen"),
            ("dataset", "nope"),
            ("lifetime", "1d"),
        ][..],
    ] {
        let refused = browser.submit("/account", "/account/tokens", fields).await;
        assert_eq!(refused.status, 400, "{fields:?}");
        assert!(refused.body.contains("id=\"token-error\""), "{fields:?}");
    }
    let after = api_token::Entity::find()
        .count(&store.store.db)
        .await
        .unwrap();
    assert_eq!(before, after, "refusals mint nothing");
}

both_stores!(
    rest_routes_enforce_the_scope,
    graphql_fields_fail_alone,
    mcp_tools_enforce_the_scope,
    old_tokens_keep_read_export_and_describe_themselves,
    revocation,
    device_flow_scopes,
    an_oauth_client_asks_for_a_scope,
    the_account_page_mints_scoped_tokens,
);
