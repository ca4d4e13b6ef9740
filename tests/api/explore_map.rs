//! The explorer's map in headless Chromium (issue 31): a dataset with a geo pair
//! (tw-scenic-spots) shows exactly the points the REST API answers for the map's `bbox`, at
//! most one page of them, and says how many of the total; "Search this area" puts the bounds
//! into the view, so the table follows and the URL keeps it; "Search near the centre" puts a
//! circle into the view, nearest first, each row's distance the API's; a point opens its
//! record; a dataset without a pair (flights) shows no map. Leaflet comes from the binary, and
//! nothing depends on internet tiles: the points are drawn on a plain background when none
//! load.

use crate::helpers::explorer::{grouped, rest, sign_up_for_the_explorer};
use crate::helpers::webdriver::{self, Driver, screenshots, serve};
use crate::helpers::{TestStore, api_token, load_demo};
use serde_json::Value;

/// The map has drawn the answer to its latest request, and the rest of the page is at rest.
const MAP_READY: &str = "document.getElementById('status').textContent === '' \
    && !document.getElementById('map').hidden && document.getElementById('map').dataset.loading === '0'";

/// The map's last box, the number of drawn markers and the announced shown/total.
async fn drawn(browser: &webdriver::Browser) -> (String, u64, u64, u64) {
    let v = browser
        .eval(
            "const m = document.getElementById('map'); \
             return [m.dataset.bbox, document.querySelectorAll('#map-canvas path.leaflet-interactive').length, \
                     Number(m.dataset.shown), Number(m.dataset.total)];",
        )
        .await;
    (
        v[0].as_str().unwrap().to_string(),
        v[1].as_u64().unwrap(),
        v[2].as_u64().unwrap(),
        v[3].as_u64().unwrap(),
    )
}

/// The markers are the REST API's records for the same box (and the view's `extra`
/// conditions): as many as one page of at most 100, and the total it counts.
async fn markers_match_rest(
    browser: &webdriver::Browser,
    site: &str,
    token: &str,
    extra: &str,
) -> String {
    let (bbox, markers, shown, total) = drawn(browser).await;
    assert!(!bbox.is_empty(), "the map asked for a box");
    let answer = rest(
        site,
        token,
        &format!("/datasets/tw-scenic-spots/records?bbox={bbox}{extra}&per_page=100&fields=_id"),
    )
    .await;
    let page = answer["records"].as_array().unwrap().len() as u64;
    assert_eq!(markers, page, "markers for bbox={bbox}");
    assert_eq!(shown, page);
    assert_eq!(total, answer["total"].as_u64().unwrap(), "bbox={bbox}");
    let said = browser.text("#map-count").await;
    assert!(said.contains(&grouped(total)), "{said}");
    bbox
}

/// The value of `name` in the page's `url`, its commas as the API writes them.
fn url_param(url: &str, name: &str) -> String {
    url.split(&format!("{name}="))
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .replace("%2C", ",")
}

async fn the_map_shows_the_points_of_the_view(store: TestStore) {
    let kind = format!("{:?}", store.kind).to_lowercase();
    load_demo(&store).await;
    let token = api_token(&store).await;
    let (site, stop) = serve(&store).await;
    let driver = Driver::start().await;
    let browser = driver.session_sized(1280, 1000).await;
    sign_up_for_the_explorer(&browser, &site, &format!("mapper-{kind}@example.org")).await;

    // The explorer's page alone lets images come from OpenStreetMap; Leaflet is served here.
    let csp = browser
        .eval_async(
            "Promise.all(['/explore', '/'].map((u) => fetch(u).then((r) => r.headers.get('content-security-policy')))) \
               .then(done);",
        )
        .await;
    assert!(
        csp[0]
            .as_str()
            .unwrap()
            .contains("img-src 'self' https://tile.openstreetmap.org"),
        "{csp}"
    );
    assert!(!csp[1].as_str().unwrap().contains("openstreetmap"), "{csp}");
    for file in ["leaflet.js", "leaflet.css", "images/layers.png"] {
        let response = reqwest::get(format!("{site}/assets/leaflet-1.9.4/{file}"))
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{file}");
    }

    // Picked: the map is placed on the dataset's points and draws one page of them.
    browser
        .click("css selector", "#dataset option[value='tw-scenic-spots']")
        .await;
    browser
        .wait_until(&format!(
            "{MAP_READY} && document.getElementById('map').dataset.bbox"
        ))
        .await;
    let first = markers_match_rest(&browser, &site, &token, "").await;
    let (_, markers, _, total) = drawn(&browser).await;
    assert_eq!(markers, 100, "one full page of {total}");
    assert!(total > 100);

    // Zoomed in: the points of the new bounds.
    browser
        .click("css selector", ".leaflet-control-zoom-in")
        .await;
    browser
        .wait_until(&format!(
            "{MAP_READY} && document.getElementById('map').dataset.bbox !== '{first}'"
        ))
        .await;
    let zoomed = markers_match_rest(&browser, &site, &token, "").await;

    // "Search this area": the bounds become the view's bbox; the table follows, the URL keeps it.
    browser.click("css selector", "#map-search").await;
    browser
        .wait_until(&format!("{MAP_READY} && document.getElementById('bbox-chip') && location.search.includes('bbox=')"))
        .await;
    let url = browser.current_url().await;
    let bbox = url_param(&url, "bbox");
    let matched = rest(
        &site,
        &token,
        &format!("/datasets/tw-scenic-spots/records?bbox={bbox}&per_page=20"),
    )
    .await;
    let in_area = matched["total"].as_u64().unwrap();
    assert!(
        in_area < total,
        "{in_area} of {total} in {bbox} (zoomed from {zoomed})"
    );
    browser
        .wait_until(&format!(
            "document.getElementById('total').textContent === '{}'",
            grouped(in_area)
        ))
        .await;
    let rows = browser
        .eval("return document.querySelectorAll('#records tbody tr').length;")
        .await;
    assert_eq!(
        rows.as_u64().unwrap(),
        matched["records"].as_array().unwrap().len() as u64
    );
    assert!(
        browser
            .eval("return document.getElementById('api-url').value;")
            .await
            .as_str()
            .unwrap()
            .contains("bbox=")
    );
    markers_match_rest(&browser, &site, &token, "").await;
    browser
        .screenshot(&screenshots().join(format!("explore-map-{kind}.png")))
        .await;

    // The link opens the same view: the area, the total, the points.
    browser.goto(&url).await;
    browser
        .wait_until(&format!(
            "{MAP_READY} && document.getElementById('bbox-chip') && document.getElementById('total').textContent === '{}'",
            grouped(in_area)
        ))
        .await;
    let (_, markers, _, shown_total) = drawn(&browser).await;
    assert_eq!(shown_total, in_area);
    assert_eq!(markers, in_area.min(100));
    markers_match_rest(&browser, &site, &token, "").await;

    // Removing the condition brings every record back; flights has no geo pair: no map.
    browser.click("css selector", "#bbox-chip").await;
    browser
        .wait_until(&format!("{MAP_READY} && !location.search.includes('bbox=') && document.getElementById('total').textContent === '{}'", grouped(total)))
        .await;

    // "Search near the centre": a circle becomes the view's near condition, nearest first; the
    // table, its distances and the points are the REST API's for it.
    browser.click("css selector", "#map-near").await;
    browser
        .wait_until(&format!(
            "{MAP_READY} && document.getElementById('near-chip') && location.search.includes('near=') \
             && document.getElementById('distance-head')"
        ))
        .await;
    let url = browser.current_url().await;
    let near = url_param(&url, "near");
    assert!(url.contains("sort=_distance%3E"), "{url}");
    let nearest = rest(
        &site,
        &token,
        &format!("/datasets/tw-scenic-spots/records?near={near}&sort=_distance>&per_page=20"),
    )
    .await;
    let within = nearest["total"].as_u64().unwrap();
    assert!(
        within > 0 && within < total,
        "{within} of {total} near {near}"
    );
    browser
        .wait_until(&format!(
            "document.getElementById('total').textContent === '{}'",
            grouped(within)
        ))
        .await;
    let table = browser
        .eval(
            "return [...document.querySelectorAll('#records tbody tr')].map((tr) =>                [tr.dataset.id, tr.children[1].textContent]);",
        )
        .await;
    let table = table.as_array().unwrap();
    let records = nearest["records"].as_array().unwrap();
    assert_eq!(table.len(), records.len());
    for (row, record) in table.iter().zip(records) {
        assert_eq!(row[0], record["_id"], "nearest first");
        let metres = record["_distance_m"].as_f64().unwrap();
        let shown = row[1].as_str().unwrap();
        let expected = if metres < 1000.0 {
            format!("{} m", grouped(metres.round() as u64))
        } else {
            let km = (metres / 10.0).round() / 100.0;
            format!("{km} km")
        };
        assert_eq!(shown, expected, "{record}");
    }
    markers_match_rest(&browser, &site, &token, &format!("&near={near}")).await;

    // A point opens its record.
    let id = browser
        .eval(
            "const p = document.querySelector('#map-canvas path.leaflet-interactive[data-id]');              p.dispatchEvent(new MouseEvent('click', {bubbles: true, clientX: 1, clientY: 1}));              return p.dataset.id;",
        )
        .await;
    let id = id.as_str().unwrap().to_string();
    browser
        .wait_until(&format!(
            "document.getElementById('record-id') && document.getElementById('record-id').textContent === '{id}' \
             && location.search.includes('record=')"
        ))
        .await;
    assert!(
        browser.current_url().await.contains("near="),
        "the point keeps the circle"
    );
    browser
        .screenshot(&screenshots().join(format!("explore-near-{kind}.png")))
        .await;
    browser.click("css selector", "#near-chip").await;
    browser
        .wait_until(&format!("{MAP_READY} && !location.search.includes('near=') && !document.getElementById('distance-head') \
             && document.getElementById('total').textContent === '{}'", grouped(total)))
        .await;

    browser
        .click("css selector", "#dataset option[value='flights']")
        .await;
    browser
        .wait_until("document.getElementById('status').textContent === '' && document.querySelector(\"[data-facet='origin']\")")
        .await;
    assert_eq!(
        browser
            .eval("return document.getElementById('map').hidden;")
            .await,
        Value::Bool(true)
    );
    browser.close().await;
    let _ = stop.send(());
}

both_stores!(tier2: the_map_shows_the_points_of_the_view);
