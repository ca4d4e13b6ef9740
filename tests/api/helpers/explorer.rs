//! What the explorer's browser tests share (`explore.rs`, `explore_views.rs`): the REST
//! answers they compare the page with, signing up into the explorer, the record of the
//! GraphQL documents the page sends, the explorer's limits read from its `limits.js`, and the
//! check that a page does not scroll sideways.

#![allow(dead_code)]

use serde_json::Value;

use crate::helpers::webdriver::{self, screenshots};

/// `1234` → `1,234`, as the page writes counts.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The REST API's answer to `path` (under `/api/v1`).
pub async fn rest(site: &str, token: &str, path: &str) -> Value {
    let response = reqwest::Client::new()
        .get(format!("{site}/api/v1{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{path}");
    response.json().await.unwrap()
}

/// Signs up in `browser` and lands on `/explore` with its dataset list loaded.
pub async fn sign_up_for_the_explorer(browser: &webdriver::Browser, site: &str, email: &str) {
    browser.sign_up(site, email, "/explore").await;
    browser
        .wait_until("document.querySelector(\"#dataset option[value='flights']\")")
        .await;
    assert!(browser.current_url().await.ends_with("/explore"));
}

/// Keeps the body of every request the page sends from now on in `window.sentBodies`.
pub async fn record_requests(browser: &webdriver::Browser) {
    browser
        .eval(
            "window.sentBodies = []; const send = window.fetch; \
             window.fetch = (url, options) => { \
               if (String(url).endsWith('/graphql')) window.sentBodies.push(options.body); \
               return send(url, options); }; \
             return true;",
        )
        .await;
}

/// Every `agg` field of every GraphQL document the page sent carries a `limit` of at most
/// `cap` (a literal or a variable): the explorer never asks for every group of a field.
pub async fn every_agg_was_bounded(browser: &webdriver::Browser, cap: u64) -> usize {
    let sent = browser.eval("return window.sentBodies;").await;
    let mut aggs = 0;
    for body in sent.as_array().unwrap() {
        let request: Value = serde_json::from_str(body.as_str().unwrap()).unwrap();
        let query = request["query"].as_str().unwrap();
        for (at, _) in query.match_indices("agg(") {
            aggs += 1;
            let arguments = &query[at..at + query[at..].find(')').unwrap()];
            let limit = arguments
                .split("limit:")
                .nth(1)
                .unwrap_or_else(|| panic!("an agg without limit: {arguments}"))
                .split([',', ')'])
                .next()
                .unwrap()
                .trim();
            let value = match limit.strip_prefix('$') {
                Some(variable) => request["variables"][variable].as_u64(),
                None => limit.parse().ok(),
            };
            assert!(
                value.is_some_and(|n| (1..=cap).contains(&n)),
                "limit {limit} in {arguments} / {}",
                request["variables"]
            );
        }
    }
    aggs
}

/// A limit of the explorer, read from `src/site/explore/limits.js` (`export const NAME = n;`),
/// where the page reads it.
pub fn limit(name: &str) -> u64 {
    let script = include_str!("../../../src/site/explore/limits.js");
    let marker = format!("export const {name} = ");
    let at = script
        .find(&marker)
        .unwrap_or_else(|| panic!("{name} in limits.js"))
        + marker.len();
    script[at..script[at..].find(';').unwrap() + at]
        .parse()
        .unwrap()
}

/// The explorer's cap on the groups it asks for: `TOP_GROUPS`.
pub fn top_groups() -> u64 {
    limit("TOP_GROUPS")
}

/// "Group by" starts on a keyword field with a few values (2..=TOP_GROUPS), not the
/// identifier field.
pub async fn default_group_is_small(
    browser: &webdriver::Browser,
    site: &str,
    token: &str,
    slug: &str,
) {
    let field = browser
        .eval("return document.querySelector('#group-rows .group-field').value;")
        .await;
    let field = field.as_str().unwrap();
    let meta = rest(site, token, &format!("/datasets/{slug}")).await;
    assert_ne!(meta["id_field"].as_str(), Some(field));
    let agg = rest(
        site,
        token,
        &format!("/datasets/{slug}/agg?group_by={field}"),
    )
    .await;
    let groups = agg["total_groups"].as_u64().unwrap();
    assert!(
        (2..=top_groups()).contains(&groups),
        "{slug}: {field} has {groups} values"
    );
}

/// `document.documentElement.scrollWidth` and `window.innerWidth`: the page may not scroll
/// sideways (wide tables scroll inside their own box).
pub async fn widths(browser: &webdriver::Browser) -> (u64, u64) {
    let w = browser
        .eval("return [document.documentElement.scrollWidth, window.innerWidth];")
        .await;
    (w[0].as_u64().unwrap(), w[1].as_u64().unwrap())
}

/// Checks that `page` does not overflow sideways, then screenshots the whole page (the window
/// made as tall as the document) to `target/screenshots/{name}.png`.
pub async fn fits(browser: &webdriver::Browser, name: &str, width: u32, height: u32) {
    let (scroll, inner) = widths(browser).await;
    eprintln!("{name}: scrollWidth {scroll}, innerWidth {inner}");
    assert_eq!(
        inner,
        u64::from(width),
        "{name}: the window is {width} px wide"
    );
    assert!(
        scroll <= inner,
        "{name}: the page is {scroll} px wide in a {inner} px window"
    );
    let tall = browser
        .eval("return document.documentElement.scrollHeight;")
        .await
        .as_u64()
        .unwrap();
    browser
        .viewport(width, tall.max(u64::from(height)) as u32)
        .await;
    let (scroll, inner) = widths(browser).await;
    assert!(
        scroll <= inner && inner == u64::from(width),
        "{name}: {scroll} > {inner} at full height"
    );
    browser
        .screenshot(&screenshots().join(format!("{name}.png")))
        .await;
    browser.viewport(width, height).await;
}

/// Every visible piece of text on the page whose contrast with its background is below 4.5:1
/// (WCAG AA): the element, its text and the ratio. Backgrounds are composed from the root
/// down (a translucent one over its parent's); disabled controls are exempt, as WCAG says.
pub async fn low_contrast(browser: &webdriver::Browser) -> Vec<String> {
    let found = browser
        .eval(
            r#"
const parse = (c) => { const m = c.match(/[\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
const over = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3]));
const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
const low = [];
for (const el of document.body.querySelectorAll('*')) {
  if (el.closest('svg, script, style, noscript, [hidden]') || el.disabled) continue;
  const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
  if (!own || !el.getClientRects().length) continue;
  const style = getComputedStyle(el);
  if (style.visibility === 'hidden' || style.display === 'none') continue;
  const chain = [];
  for (let a = el; a; a = a.parentElement) chain.unshift(a);
  let bg = [255, 255, 255];
  for (const a of chain) bg = over(parse(getComputedStyle(a).backgroundColor), bg);
  const fg = over(parse(style.color), bg);
  const r = ratio(fg, bg);
  if (r < 4.5) low.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}.${el.className} "${el.textContent.trim().slice(0, 30)}" ${r.toFixed(2)}`);
}
return low;
"#,
        )
        .await;
    found
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

/// Makes the page prefer a dark (or light) colour scheme.
pub async fn dark(browser: &webdriver::Browser, on: bool) {
    let value = if on { "dark" } else { "light" };
    browser
        .cdp(
            "Emulation.setEmulatedMedia",
            serde_json::json!({"features": [{"name": "prefers-color-scheme", "value": value}]}),
        )
        .await;
}
