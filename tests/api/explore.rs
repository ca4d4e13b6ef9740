//! `/explore`: the page and its short-lived token in-process, then headless Chromium
//! driving it on the demo flights dataset as a person would: pick the dataset, search, apply a
//! keyword filter, sort by clicking a column, go to page two, open a record, show grouped
//! statistics. Each step's visible numbers are checked against the REST API's answer to the
//! same question, and a screenshot goes to `target/screenshots/{store}-explore-*.png`.

use crate::helpers::client::Browser;
use crate::helpers::explorer::{
    dark, default_group_is_small, every_agg_was_bounded, fits, grouped, low_contrast,
    record_requests, rest, sign_up_for_the_explorer, top_groups,
};
use crate::helpers::webdriver::{Driver, screenshots, serve};
use crate::helpers::{TestStore, api_token, load_demo, post_graphql};
use entity::api_token as token_entity;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::Value;

/// `data-token="…"` of the explorer page.
fn page_token(html: &str) -> String {
    let marker = "data-token=\"";
    let start = html.find(marker).expect("a token on the page") + marker.len();
    let end = html[start..].find('"').unwrap() + start;
    html[start..end].to_string()
}

async fn explorer_tokens(store: &TestStore) -> u64 {
    token_entity::Entity::find()
        .filter(token_entity::Column::Source.eq("explore"))
        .count(&store.store.db)
        .await
        .unwrap()
}

async fn explorer_page_and_its_token(store: TestStore) {
    let router = store.router();
    let mut browser = Browser::new(router.clone());

    let signed_out = browser.get("/explore").await;
    assert_eq!(signed_out.status, 303);
    assert_eq!(signed_out.location(), "/login?next=/explore");

    browser.sign_up("explorer@example.org").await;
    let page = browser.get("/explore").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body
            .contains("<script type=\"module\" src=\"/assets/explore/main.js\"></script>")
    );
    // Its modules are served as scripts; nothing else is.
    for name in [
        "main", "limits", "view", "api", "format", "table", "filters", "stats",
    ] {
        let module = browser.get(&format!("/assets/explore/{name}.js")).await;
        assert_eq!(module.status, 200, "{name}");
        assert_eq!(
            module.header("content-type"),
            Some("text/javascript; charset=utf-8")
        );
    }
    assert_eq!(browser.get("/assets/explore/nope.js").await.status, 404);
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("connect-src 'self'"), "{csp}");
    assert_eq!(page.header("cache-control"), Some("no-store"));
    let token = page_token(&page.body);
    assert!(token.starts_with("odqs_"));

    // The token reads the GraphQL API.
    let answer = post_graphql(&router, Some(&token), "{ datasets { total } }", Value::Null).await;
    assert_eq!(answer.status, 200, "{}", answer.body);

    // The page renews its token in the background: a POST with the session and the CSRF
    // token gives a fresh one that reads the API too; without the CSRF token, nothing.
    let csrf = page.csrf();
    let renewed = browser.post("/explore/token", &[("csrf", &csrf)]).await;
    assert_eq!(renewed.status, 200, "{}", renewed.body);
    assert_eq!(renewed.header("cache-control"), Some("no-store"));
    let renewed = renewed.json();
    let second = renewed["token"].as_str().unwrap().to_string();
    assert!(second.starts_with("odqs_") && second != token);
    let expires = time::OffsetDateTime::parse(
        renewed["expires_at"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert!(expires > time::OffsetDateTime::now_utc() + time::Duration::minutes(59));
    let answer = post_graphql(
        &router,
        Some(&second),
        "{ datasets { total } }",
        Value::Null,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(browser.post("/explore/token", &[]).await.status, 403);
    let mut stranger = Browser::new(router.clone());
    assert_ne!(
        stranger
            .post("/explore/token", &[("csrf", &csrf)])
            .await
            .status,
        200
    );
    // Delete the renewed one again, so the counts below are the page's own.
    token_entity::Entity::delete_many()
        .filter(token_entity::Column::TokenHash.eq(odqs::auth::token::hash(&second)))
        .exec(&store.store.db)
        .await
        .unwrap();

    // It expires within the hour and is not listed among the account's tokens.
    let stored = token_entity::Entity::find()
        .filter(token_entity::Column::Source.eq("explore"))
        .one(&store.store.db)
        .await
        .unwrap()
        .unwrap();
    let lifetime = stored.expires_at.unwrap() - stored.created_at;
    assert!(lifetime <= time::Duration::hours(1) && lifetime > time::Duration::minutes(59));
    let account = browser.get("/account").await;
    assert!(
        !account.body.contains("explorer (site)"),
        "{}",
        account.body
    );

    // Expired explorer tokens are deleted when the next one is minted.
    token_entity::Entity::update_many()
        .col_expr(
            token_entity::Column::ExpiresAt,
            sea_orm::sea_query::Expr::value(
                time::OffsetDateTime::now_utc() - time::Duration::minutes(1),
            ),
        )
        .filter(token_entity::Column::Source.eq("explore"))
        .exec(&store.store.db)
        .await
        .unwrap();
    // Changed behind the instance's back: its cached confirmation lapses within FRESH_FOR.
    let changed_at = std::time::Instant::now();
    while post_graphql(&router, Some(&token), "{ datasets { total } }", Value::Null)
        .await
        .status
        != 401
    {
        assert!(
            changed_at.elapsed() < odqs::auth::token::FRESH_FOR * 2,
            "an expired explorer token still works after {:?}",
            changed_at.elapsed()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let again = browser.get("/explore").await;
    let fresh = page_token(&again.body);
    assert_ne!(fresh, token);
    assert_eq!(explorer_tokens(&store).await, 1, "the expired one is gone");

    // Logging out ends the explorer's tokens.
    browser.submit("/logout", "/logout", &[]).await;
    assert_eq!(explorer_tokens(&store).await, 0);
    let after = post_graphql(&router, Some(&fresh), "{ datasets { total } }", Value::Null).await;
    assert_eq!(after.status, 401);
}

async fn explore_in_a_browser(store: TestStore) {
    let kind = format!("{:?}", store.kind).to_lowercase();
    load_demo(&store).await;
    let token = api_token(&store).await;
    let (site, stop) = serve(&store).await;
    let driver = Driver::start().await;
    let browser = driver.session_sized(1280, 1000).await;
    let shot = |step: &str| screenshots().join(format!("{kind}-explore-{step}.png"));

    // Sign up, coming back to the explorer.
    browser.goto(&format!("{site}/explore")).await;
    assert!(browser.current_url().await.contains("/login?next=/explore"));
    sign_up_for_the_explorer(&browser, &site, &format!("explorer-{kind}@example.org")).await;
    record_requests(&browser).await;

    // Pick the flights dataset: all its records, value counts beside.
    let all = rest(&site, &token, "/datasets/flights/records?per_page=1").await;
    browser
        .click("css selector", "#dataset option[value='flights']")
        .await;
    let total = |n: u64| {
        format!(
            "document.getElementById('total').textContent === '{}'",
            grouped(n)
        )
    };
    browser
        .wait_until(&total(all["total"].as_u64().unwrap()))
        .await;
    browser
        .wait_until("document.querySelector(\"[data-facet='origin'] button[data-value='EWR']\")")
        .await;
    let origins = rest(&site, &token, "/datasets/flights/agg?group_by=origin").await;
    let ewr = origins["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == "EWR")
        .unwrap()["stats"]["count"]
        .as_u64()
        .unwrap();
    let facet = browser
        .text("[data-facet='origin'] button[data-value='EWR'] .count")
        .await;
    assert_eq!(facet, grouped(ewr), "the EWR value count is agg's");
    default_group_is_small(&browser, &site, &token, "flights").await;
    browser.screenshot(&shot("dataset")).await;

    // Search.
    browser.type_into("#q", "intl").await;
    browser.click("css selector", "#search").await;
    let searched = rest(&site, &token, "/datasets/flights/records?q=intl&per_page=1").await;
    browser
        .wait_until(&total(searched["total"].as_u64().unwrap()))
        .await;
    browser.screenshot(&shot("search")).await;

    // A keyword filter from the value counts.
    browser
        .click(
            "css selector",
            "[data-facet='origin'] button[data-value='EWR']",
        )
        .await;
    let filtered = rest(
        &site,
        &token,
        "/datasets/flights/records?q=intl&origin=EWR&per_page=1",
    )
    .await;
    let filtered_total = filtered["total"].as_u64().unwrap();
    assert!(filtered_total > 20, "enough for two pages");
    browser.wait_until(&total(filtered_total)).await;
    assert!(
        browser
            .text("#active-filters")
            .await
            .contains("origin = EWR")
    );
    browser.screenshot(&shot("filter")).await;

    // A number column: shown from the column picker, sorted by clicking its header, ascending
    // (`sort=distance>`) then descending (`sort=distance<`), as the REST API sorts.
    let first_id = "document.querySelector('#records tbody tr') && document.querySelector('#records tbody tr').dataset.id";
    assert!(
        browser
            .eval("return !document.querySelector(\"#records th button[data-field='distance']\");")
            .await
            == Value::Bool(true),
        "distance is not among the first columns"
    );
    browser
        .click("css selector", "#column-picker summary")
        .await;
    browser
        .click("css selector", "#column-list input[value='distance']")
        .await;
    browser
        .wait_until("document.querySelector(\"#records th button[data-field='distance']\")")
        .await;
    for (order, aria) in [("%3E", "ascending"), ("%3C", "descending")] {
        browser
            .click("css selector", "#records th button[data-field='distance']")
            .await;
        browser
            .wait_until(&format!(
                "document.querySelector(\"#records th[aria-sort='{aria}'] button[data-field='distance']\")"
            ))
            .await;
        let sorted = rest(
            &site,
            &token,
            &format!(
                "/datasets/flights/records?q=intl&origin=EWR&sort=distance{order}&per_page=20"
            ),
        )
        .await;
        let want = sorted["records"][0]["_id"].as_str().unwrap().to_string();
        browser
            .wait_until(&format!("({first_id}) === '{want}'"))
            .await;
        let shown: Vec<Value> = browser
            .eval(
                "const i = [...document.querySelectorAll('#records thead th')].findIndex((th) => th.querySelector(\"[data-field='distance']\")); \
                 return [...document.querySelectorAll('#records tbody tr')].map((tr) => tr.children[i].textContent);",
            )
            .await
            .as_array()
            .unwrap()
            .clone();
        // Written with the field's precision (whole miles), as the data writes them.
        let want: Vec<Value> = sorted["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                Value::String(
                    r["distance"]
                        .as_f64()
                        .map(|n| n.to_string())
                        .unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(shown, want, "distance {aria}");
    }
    browser.screenshot(&shot("sort")).await;

    // Page two.
    browser.click("css selector", "#next").await;
    browser
        .wait_until("document.getElementById('page-info').textContent.startsWith('Page 2 of')")
        .await;
    let page2 = rest(
        &site,
        &token,
        "/datasets/flights/records?q=intl&origin=EWR&sort=distance%3C&per_page=20&page=2",
    )
    .await;
    let want = page2["records"][0]["_id"].as_str().unwrap().to_string();
    browser
        .wait_until(&format!("({first_id}) === '{want}'"))
        .await;
    browser.screenshot(&shot("page2")).await;

    // Open a record: its panel opens in the row right under its own, field by field, with a
    // permalink and the JSON.
    browser.click("css selector", "#records tbody tr").await;
    browser
        .wait_until(&format!(
            "document.getElementById('record-id') && document.getElementById('record-id').textContent === '{want}'"
        ))
        .await;
    let beside = browser
        .eval(
            "const row = document.querySelector('#records tbody tr'); \
             return row.nextElementSibling.classList.contains('record-row') \
               && row.nextElementSibling.contains(document.getElementById('record-detail')) \
               && row.querySelector('button.row-open').getAttribute('aria-expanded') === 'true';",
        )
        .await;
    assert_eq!(
        beside,
        Value::Bool(true),
        "the panel is right under its row"
    );
    let json = browser.text("#record-json").await;
    let shown: Value = serde_json::from_str(&json).unwrap();
    let record = rest(&site, &token, &format!("/datasets/flights/records/{want}")).await;
    assert_eq!(shown, record, "the record as the API gives it");
    assert_eq!(
        browser
            .text("#record-fields dd[data-field='carrier']")
            .await,
        record["carrier"].as_str().unwrap()
    );
    let permalink = browser
        .eval("return document.getElementById('record-permalink').getAttribute('href');")
        .await;
    assert_eq!(
        permalink,
        format!("/explore?dataset=flights&record={want}"),
        "a permalink"
    );
    browser.screenshot(&shot("record")).await;

    // Grouped statistics: carriers by average departure delay (largest first), as a table and
    // a bar chart.
    browser
        .click(
            "css selector",
            "#group-rows .group-field option[value='carrier']",
        )
        .await;
    browser
        .click("css selector", "#stat-field option[value='dep_delay']")
        .await;
    browser
        .wait_until("document.querySelector(\"#metric option[value='avg']\")")
        .await;
    browser
        .click("css selector", "#metric option[value='avg']")
        .await;
    browser.click("css selector", "#show-stats").await;
    let agg = rest(
        &site,
        &token,
        "/datasets/flights/agg?group_by=carrier&field=dep_delay&q=intl&origin=EWR&sort=avg%3C&limit=50",
    )
    .await;
    let groups = agg["total_groups"].as_u64().unwrap();
    assert!(groups > 1);
    // Every group the table lists is drawn (at most TOP_GROUPS are asked for).
    browser
        .wait_until(&format!(
            "document.querySelectorAll('#stats-chart rect').length === {}",
            groups.min(top_groups())
        ))
        .await;
    let rows = browser
        .eval("return document.querySelectorAll('#stats-table tbody tr').length;")
        .await;
    assert_eq!(rows, groups);
    let summary = browser.text("#stats-summary").await;
    assert!(
        summary.starts_with(&format!("{groups} groups of carrier")),
        "{summary}"
    );
    let first = &agg["groups"][0];
    let first_row = browser.text("#stats-table tbody tr").await;
    assert!(
        first_row.starts_with(first["key"].as_str().unwrap())
            && first_row.contains(&grouped(first["stats"]["count"].as_u64().unwrap())),
        "{first_row} / {first}"
    );
    browser
        .eval("document.getElementById('stats').scrollIntoView(); return true;")
        .await;
    browser.screenshot(&shot("stats")).await;
    assert!(every_agg_was_bounded(&browser, top_groups()).await > 0);

    browser.close().await;
    let _ = stop.send(());
}

/// Every page at a phone's width (390 px) and a laptop's (1280 px): `/`, log-in and sign-up,
/// `/explore` on both demo datasets with a record open and statistics shown, `/account` with
/// tokens, the revocation's confirmation, `/device` asking for a code, for approval and
/// approved, and `/logout`. Nothing scrolls
/// sideways, the explorer's first record is on the first screen, every text has a contrast of
/// 4.5:1 at least in the light and the dark scheme, and screenshots land in
/// `target/screenshots/{store}-{page}-{width}.png` (`-dark` for the dark scheme).
async fn pages_fit_phone_and_laptop(store: TestStore) {
    let kind = format!("{:?}", store.kind).to_lowercase();
    load_demo(&store).await;
    let token = api_token(&store).await;
    let (site, stop) = serve(&store).await;
    let driver = Driver::start().await;
    for (width, height) in [(390, 844), (1280, 800)] {
        let browser = driver.session_sized(width.max(500), height).await;
        browser.viewport(width, height).await;
        let check = async |name: &str| {
            for on in [false, true] {
                dark(&browser, on).await;
                let low = low_contrast(&browser).await;
                assert!(low.is_empty(), "{name} at {width} (dark: {on}): {low:#?}");
            }
            dark(&browser, true).await;
            fits(
                &browser,
                &format!("{kind}-{name}-{width}-dark"),
                width,
                height,
            )
            .await;
            dark(&browser, false).await;
            fits(&browser, &format!("{kind}-{name}-{width}"), width, height).await;
        };
        browser.goto(&format!("{site}/")).await;
        // The contrast check can fail: the old grey (#888 on white, 3.54:1) is found.
        dark(&browser, false).await;
        browser
            .eval("const p = document.createElement('p'); p.id = 'probe'; p.style.color = '#888'; p.textContent = 'grey'; document.body.append(p); return true;")
            .await;
        let low = low_contrast(&browser).await;
        assert!(low.iter().any(|l| l.starts_with("p#probe")), "{low:?}");
        browser
            .eval("document.getElementById('probe').remove(); return true;")
            .await;
        check("home").await;
        for page in ["login", "signup", "catalog", "datasets/flights/skill"] {
            browser.goto(&format!("{site}/{page}")).await;
            check(&page.replace('/', "-")).await;
        }

        sign_up_for_the_explorer(&browser, &site, &format!("screens-{width}@example.org")).await;
        record_requests(&browser).await;
        for slug in ["flights", "tw-scenic-spots"] {
            let all = rest(
                &site,
                &token,
                &format!("/datasets/{slug}/records?per_page=1"),
            )
            .await;
            browser
                .click("css selector", &format!("#dataset option[value='{slug}']"))
                .await;
            browser
                .wait_until(&format!(
                    "document.getElementById('total').textContent === '{}' && document.querySelector('#records tbody tr') && document.querySelector('#facets [data-facet]')",
                    grouped(all["total"].as_u64().unwrap())
                ))
                .await;
            default_group_is_small(&browser, &site, &token, slug).await;
            // Long values are cut inside their list: no count passes the list's right edge.
            let inside = browser
                .eval(
                    "const edge = document.querySelector('aside').getBoundingClientRect().right + 0.5; \
                     return [...document.querySelectorAll('#facets .count')].every((c) => c.getBoundingClientRect().right <= edge);",
                )
                .await;
            assert_eq!(inside, Value::Bool(true), "{slug} at {width}");
            let first_row = browser
                .eval("return document.querySelector('#records tbody tr').getBoundingClientRect().top + window.scrollY;")
                .await
                .as_f64()
                .unwrap();
            eprintln!("{kind} {slug} at {width}: first record {first_row} px down");
            assert!(
                first_row < f64::from(height),
                "{slug} at {width}: the first record is {first_row} px down"
            );
            // A record open beside its row.
            browser
                .click("css selector", "#records tbody tr:nth-child(2)")
                .await;
            browser
                .wait_until("document.querySelector('#records tr.record-row #record-fields dd')")
                .await;
            // Statistics of a number field: departure delays, the spots' longitudes.
            let number = match slug {
                "flights" => "dep_delay",
                _ => "Position.PositionLon",
            };
            browser
                .click(
                    "css selector",
                    &format!("#stat-field option[value='{number}']"),
                )
                .await;
            browser.click("css selector", "#show-stats").await;
            browser
                .wait_until("document.querySelector('#stats-chart rect') && document.querySelector('#stats-table tbody tr')")
                .await;
            check(&format!("explore-{slug}")).await;
        }
        assert!(every_agg_was_bounded(&browser, top_groups()).await > 0);

        // The account page with a token, and the revocation's confirmation.
        browser.goto(&format!("{site}/account")).await;
        browser
            .type_into("#name", "a notebook on a long-named laptop")
            .await;
        browser
            .click(
                "css selector",
                "form[action='/account/tokens'] button[type=submit]",
            )
            .await;
        browser.wait_for("id=\"new-token\"").await;
        check("account").await;
        browser.click("css selector", "a.revoke").await;
        browser.wait_for("Revoke this token?").await;
        check("account-revoke").await;

        // The device page asking for approval.
        let asked: Value = reqwest::Client::new()
            .post(format!("{site}/api/v1/auth/device"))
            .form(&[
                ("client", "odqs-cli 1.0"),
                ("device_name", "build server"),
                ("scope", "read dataset:flights"),
            ])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        browser
            .goto(asked["verification_uri_complete"].as_str().unwrap())
            .await;
        browser.wait_for("id=\"approve\"").await;
        check("device").await;
        browser.click("css selector", "button#approve").await;
        browser.wait_for("id=\"result\"").await;
        check("device-approved").await;
        browser.goto(&format!("{site}/device")).await;
        browser.wait_for("id=\"code\"").await;
        check("device-code").await;
        browser.goto(&format!("{site}/logout")).await;
        check("logout").await;
        browser.close().await;
    }
    let _ = stop.send(());
}

both_stores!(explorer_page_and_its_token);
both_stores!(tier2: explore_in_a_browser, pages_fit_phone_and_laptop);
