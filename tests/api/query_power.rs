//! Contract §12.1–12.2 by hand: answers worked out here, on both stores, from the in-memory
//! index and from the store.
//!
//! - The 10,000-group bound: a generated dataset of 10,050 distinct keyword values (and as many
//!   distinct numbers and hours) is refused with `too_many_groups` naming the count, and answered
//!   with `limit`, in order, with and without `field`.
//! - Hand-written expectations on the `mini.set~1` dataset of `tests/api/helpers/cases.rs`:
//!   date ranges compare instants (a `+08:00` date whose text sorts after the bound is before it), `ne` keeps records
//!   without a value, `-0` lies in `[0, 0]`, number bins with `missing` and `ungrouped_records`,
//!   date buckets in UTC, several `group_by` fields with `keys`.
//! - Everyday questions asked of the demo flights, one request each, checked against
//!   counts computed here from the bundled CSV itself (`demo/flights.csv.gz`, see `src/demo.rs`).

use std::collections::BTreeMap;
use std::io::Read;

use crate::helpers::cases::{MINI_SLUG, encode, load};
use crate::helpers::{TestStore, api_token, get_with, import_file, post_graphql, write_file};
use query::memory::{DEFAULT_BUDGET_BYTES, IndexPolicy};
use query::params::MAX_GROUPS;
use serde_json::{Value, json};

/// Distinct values in the generated dataset: more than [`MAX_GROUPS`].
const DISTINCT: u64 = MAX_GROUPS + 50;
const MANY_SLUG: &str = "many-groups";

/// The two ways a request is answered: from the in-memory index (waited for) and by the store.
fn routers(store: &TestStore) -> [(&'static str, axum::Router); 2] {
    [
        (
            "in-memory index",
            store.router_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES)),
        ),
        ("store", store.router_with(IndexPolicy::OFF)),
    ]
}

/// `GET /api/v1{path}` (raw characters percent-encoded); the status must be `status`.
async fn ask(router: &axum::Router, token: &str, path: &str, status: u16, context: &str) -> Value {
    let answer = get_with(
        router,
        &format!("/api/v1{}", encode(path)),
        Some(token),
        &[],
    )
    .await;
    assert_eq!(
        answer.status, status,
        "{context}: GET {path}\n{}",
        answer.body
    );
    answer.body
}

/// The `_id`s of a records answer, in order.
fn ids(body: &Value) -> Vec<&str> {
    body["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["_id"].as_str().expect("_id"))
        .collect()
}

/// The (key, count) of each group of an agg answer, in order.
fn group_counts(body: &Value) -> Vec<(String, u64)> {
    body["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| {
            (
                g["key"].as_str().expect("key").to_string(),
                g["stats"]["count"].as_u64().expect("count"),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// More than 10,000 groups

/// `k` takes 10,050 distinct values; `k00007` has 3 more records and `k05000` 2 more, so the
/// first groups by count are those two and then the smallest keys. `n` and `t` are distinct per
/// record too (a number and an hour), `v` is the record's position (absent on every 10th).
fn many_groups_file() -> String {
    let mut out = String::new();
    let mut line = |i: u64, k: &str| {
        let mut record = json!({
            "k": k,
            "n": i,
            "t": format!("{}:00:00Z", hour_text(i)),
        });
        if !i.is_multiple_of(10) {
            record["v"] = json!(i);
        }
        out.push_str(&record.to_string());
        out.push('\n');
    };
    for i in 0..DISTINCT {
        line(i, &format!("k{i:05}"));
    }
    let extra = ["k00007", "k00007", "k00007", "k05000", "k05000"];
    for (i, k) in (DISTINCT..).zip(extra) {
        line(i, k);
    }
    out
}

/// A distinct UTC hour for each record: `2020-01-01T00` plus `i` hours (written as a date).
fn hour_text(i: u64) -> String {
    // 2020 is a leap year; 10,055 hours reach into 2021-02.
    let days = i / 24;
    let hour = i % 24;
    let mut month_days = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31, 31, 28].into_iter();
    let (mut year, mut month, mut day) = (2020, 1, days + 1);
    for len in month_days.by_ref() {
        if day <= len {
            break;
        }
        day -= len;
        month += 1;
        if month > 12 {
            month = 1;
            year += 1;
        }
    }
    format!("{year}-{month:02}-{day:02}T{hour:02}")
}

const MANY_SCHEMA: &str = r#"{"title": "Many groups", "fields": [
  {"name": "k", "type": "keyword"}, {"name": "n", "type": "number"},
  {"name": "t", "type": "date"}, {"name": "v", "type": "number"}]}"#;

async fn more_than_ten_thousand_groups_need_a_limit(store: TestStore) {
    let started = std::time::Instant::now();
    let path = write_file(&store, "many.ndjson", many_groups_file().as_bytes());
    let summary = import_file(&store, &path, MANY_SLUG, Some(MANY_SCHEMA), None)
        .await
        .unwrap();
    assert_eq!(summary.records, DISTINCT + 5);
    let token = api_token(&store).await;
    let agg = format!("/datasets/{MANY_SLUG}/agg");
    for (answered_by, router) in routers(&store) {
        let context = format!("{:?} ({answered_by})", store.kind);
        // Without limit: refused, naming the count, whatever makes the groups.
        // `k` has 10,050 values; `n`, `t` and (k, n) one per record, 10,055.
        for (group_by, groups) in [
            ("k", DISTINCT),
            ("n[1]", DISTINCT + 5),
            ("t[hour]", DISTINCT + 5),
            ("k,n[1]", DISTINCT + 5),
        ] {
            for field in ["", "&field=v"] {
                let path = format!("{agg}?group_by={group_by}{field}");
                let body = ask(&router, &token, &path, 400, &context).await;
                assert_eq!(body["error"], "too_many_groups", "{context}: {path} {body}");
                assert_eq!(body["groups"], groups, "{context}: {path} {body}");
                assert_eq!(body["max"], MAX_GROUPS, "{context}: {path} {body}");
                let message = body["message"].as_str().unwrap();
                assert!(
                    message.contains(&groups.to_string()) && message.contains("limit"),
                    "{context}: {message}"
                );
            }
        }
        // min_count leaves out the groups too small before the bound counts them: two of k's
        // 10,050 values occur more than once, so no limit is needed.
        for field in ["", "&field=v"] {
            let path = format!("{agg}?group_by=k&min_count=2{field}");
            let body = ask(&router, &token, &path, 200, &context).await;
            assert_eq!(body["total_groups"], 2, "{context}: {path} {body}");
            assert_eq!(
                group_counts(&body),
                [("k00007".to_string(), 4), ("k05000".to_string(), 3)],
                "{context}: {path}"
            );
            assert_eq!(body["total_records"], DISTINCT + 5, "{context}: {path}");
        }
        // GraphQL refuses alike, with the count in the error's extensions.
        let answer = post_graphql(
            &router,
            Some(&token),
            "query($slug: String!) { agg(slug: $slug, groupBy: [\"k\"]) { totalGroups } }",
            json!({"slug": MANY_SLUG}),
        )
        .await;
        let extensions = &answer.body["errors"][0]["extensions"];
        assert_eq!(
            extensions["code"], "too_many_groups",
            "{context}: {}",
            answer.body
        );
        assert_eq!(extensions["groups"], DISTINCT, "{context}: {}", answer.body);
        let answer = post_graphql(
            &router,
            Some(&token),
            "query($slug: String!) { agg(slug: $slug, groupBy: [\"k\"], limit: 2) { \
             totalGroups groups { key } } }",
            json!({"slug": MANY_SLUG}),
        )
        .await;
        assert_eq!(
            answer.body["data"]["agg"],
            json!({"totalGroups": DISTINCT, "groups": [{"key": "k00007"}, {"key": "k05000"}]}),
            "{context}"
        );

        // A filter that leaves 10,000 groups is answered in full.
        let body = ask(
            &router,
            &token,
            &format!("{agg}?group_by=k&n[lt]=10000"),
            200,
            &context,
        )
        .await;
        assert_eq!(body["total_groups"], MAX_GROUPS, "{context}");
        assert_eq!(body["groups"].as_array().unwrap().len() as u64, MAX_GROUPS);

        // With limit: the first groups in order, and the count of them all.
        let body = ask(
            &router,
            &token,
            &format!("{agg}?group_by=k&limit=5"),
            200,
            &context,
        )
        .await;
        assert_eq!(body["total_groups"], DISTINCT, "{context}");
        assert_eq!(body["total_records"], DISTINCT + 5, "{context}");
        assert_eq!(body["ungrouped_records"], 0, "{context}");
        let want = [
            ("k00007", 4),
            ("k05000", 3),
            ("k00000", 1),
            ("k00001", 1),
            ("k00002", 1),
        ];
        let want: Vec<(String, u64)> = want.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        assert_eq!(group_counts(&body), want, "{context}");
        assert_eq!(
            body["groups"][0]["keys"],
            json!({"k": "k00007"}),
            "{context}"
        );

        // With field: statistics of the kept groups; sorted by a statistic, then by key.
        let body = ask(
            &router,
            &token,
            &format!("{agg}?group_by=k&field=v&limit=3&sort=max%3C"),
            200,
            &context,
        )
        .await;
        assert_eq!(body["total_groups"], DISTINCT, "{context}");
        // The largest positions are the extra records (10,050…10,054, `v` absent on 10,050):
        // k05000 holds 10,053 and 10,054, k00007 holds 10,051 and 10,052; then k10049.
        let keys: Vec<String> = group_counts(&body).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["k05000", "k00007", "k10049"], "{context}");
        let stats = &body["groups"][1]["stats"];
        assert_eq!(stats["count"], 4, "{context}");
        assert_eq!(
            stats["missing"], 1,
            "{context}: k00007's v is absent on 10,050"
        );
        assert_eq!(stats["sum"], 7 + 10_051 + 10_052, "{context}");
        assert_eq!(stats["max"], 10_052, "{context}");
        let body = ask(
            &router,
            &token,
            &format!("{agg}?group_by=k&field=v&limit=2&sort=count%3E"),
            200,
            &context,
        )
        .await;
        // Ascending counts, ties by key: the first two singletons.
        let keys: Vec<String> = group_counts(&body).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["k00000", "k00001"], "{context}");
        assert_eq!(
            body["groups"][0]["stats"]["missing"], 1,
            "{context}: v absent on 0"
        );

        // Number bins and hour buckets: as many groups, cut the same way.
        let body = ask(
            &router,
            &token,
            &format!("{agg}?group_by=n[1]&limit=3&sort=key%3C"),
            200,
            &context,
        )
        .await;
        assert_eq!(body["total_groups"], DISTINCT + 5, "{context}");
        let keys: Vec<String> = group_counts(&body).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["10054", "10053", "10052"], "{context}");
        assert_eq!(
            body["groups"][0]["keys"],
            json!({"n[1]": 10054}),
            "{context}"
        );
        let body = ask(
            &router,
            &token,
            &format!("{agg}?group_by=t[hour]&limit=2&sort=key%3E"),
            200,
            &context,
        )
        .await;
        assert_eq!(body["total_groups"], DISTINCT + 5, "{context}");
        let keys: Vec<String> = group_counts(&body).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["2020-01-01T00", "2020-01-01T01"], "{context}");
    }
    eprintln!(
        "[query power] {:?}: {DISTINCT} groups refused and cut on both paths in {:.1?}",
        store.kind,
        started.elapsed()
    );
}

#[test]
fn hours_are_counted_through_month_ends() {
    assert_eq!(hour_text(0), "2020-01-01T00");
    assert_eq!(hour_text(31 * 24 + 5), "2020-02-01T05");
    assert_eq!(hour_text(366 * 24), "2021-01-01T00");
}

// ---------------------------------------------------------------------------------------------
// The mini dataset, by hand

async fn mini_answers_by_hand(store: TestStore) {
    let (_, token) = load(&store).await;
    let records = format!("/datasets/{MINI_SLUG}/records?per_page=100");
    let agg = format!("/datasets/{MINI_SLUG}/agg");
    for (answered_by, router) in routers(&store) {
        let context = format!("{:?} ({answered_by})", store.kind);
        let cases: &[(&str, &[&str])] = &[
            // c4 is 2022-06-01T12:30:00+08:00 = 04:30Z: before 05:00Z, though its text sorts
            // after the bound's; c3 (2022-06-01, midnight UTC) too.
            (
                "since[lt]=2022-06-01T05:00:00Z",
                &["a1", "a2", "a5", "b2", "c1", "c3", "c4", "d2"],
            ),
            (
                "since[lt]=2022-06-01T04:30:00Z",
                &["a1", "a2", "a5", "b2", "c1", "c3", "d2"],
            ),
            (
                "since[lte]=2022-06-01T12:30:00%2B08:00&since[gt]=2022-06-01",
                &["c4"],
            ),
            ("since[gt]=2022-06-01T04:00:00Z", &["c4"]),
            (
                "since[gte]=2019-05-05&since[lte]=2019-05-05T08:00",
                &["a2", "d2"],
            ),
            // An empty since ("") is no value, like an absent one.
            ("since[exists]=false", &["a3", "a4", "b1", "b3", "c2", "d1"]),
            ("name[exists]=false", &["a4", "b1"]),
            // ne keeps the records without a value (a3 null, d1 absent); 5.0 is 5.
            (
                "size[ne]=5",
                &["a3", "a4", "a5", "b1", "b3", "c1", "c3", "c4", "d1"],
            ),
            (
                "size[ne]=5&size[ne]=-0.5&size[ne]=12",
                &["a3", "a4", "a5", "b3", "c3", "c4", "d1"],
            ),
            // nin is a repeated ne, from one comma-separated list.
            (
                "size[nin]=5,-0.5,12",
                &["a3", "a4", "a5", "b3", "c3", "c4", "d1"],
            ),
            (
                "size[nin]=5&size[nin]=-0.5,12",
                &["a3", "a4", "a5", "b3", "c3", "c4", "d1"],
            ),
            ("size[in]=3,5.0&size[gt]=4", &["a1", "a2", "b2", "c2", "d2"]),
            // -0.0 is 0.
            ("price[gte]=0&price[lte]=0", &["b3"]),
            ("price[gt]=-0&price[lt]=1", &["a3", "c3", "c4", "d1"]),
            ("geo.city[prefix]=台", &["a1", "a3", "c1", "c2", "c4"]),
            (
                "geo.city[prefix]=台&geo.city[prefix]=T",
                &["a1", "a3", "b1", "c1", "c2", "c4"],
            ),
            // Byte order: upper case before lower, ASCII before 台.
            ("geo.city[gte]=T&geo.city[lt]=t", &["b1"]),
            // Ärger and the Chinese names: their first bytes are above ASCII.
            (
                "geo.city[gt]=taipei",
                &[
                    "a1", "a2", "a3", "a5", "b3", "c1", "c2", "c3", "c4", "d1", "d2",
                ],
            ),
            (
                "geo.zone.code[exists]=false",
                &["a3", "a4", "b2", "c2", "d1"],
            ),
            (
                "open[ne]=true",
                &["a2", "a4", "a5", "b1", "b3", "c2", "c4", "d1"],
            ),
            ("code[prefix]=c&code[ne]=c2", &["c1", "c3", "c4"]),
            ("code[prefix]=c&code[nin]=c2,c4", &["c1", "c3"]),
            (
                "open[nin]=true",
                &["a2", "a4", "a5", "b1", "b3", "c2", "c4", "d1"],
            ),
        ];
        for (query, want) in cases {
            let body = ask(
                &router,
                &token,
                &format!("{records}&{query}"),
                200,
                &context,
            )
            .await;
            assert_eq!(ids(&body), *want, "{context}: {query}");
            assert_eq!(body["total"], want.len(), "{context}: {query}");
        }

        // Bins of 2.5 over size, statistics of price: bin 5 holds a1, a2, a4, b2, c2, d2, of
        // which a4 (no price) and c2 (null) have no price; a3 (null size) and d1 (no size) are
        // in no bin.
        let body = ask(
            &router,
            &token,
            &format!("{agg}?group_by=size[2.5]&field=price&sort=key%3E"),
            200,
            &context,
        )
        .await;
        let keys: Vec<(String, u64)> = group_counts(&body);
        let want = [
            ("-5", 1),
            ("-2.5", 1),
            ("0", 2),
            ("2.5", 1),
            ("5", 6),
            ("10", 1),
        ];
        let want: Vec<(String, u64)> = want.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        assert_eq!(keys, want, "{context}");
        assert_eq!(body["total_records"], 14, "{context}");
        assert_eq!(body["total_groups"], 6, "{context}");
        assert_eq!(body["ungrouped_records"], 2, "{context}");
        let five = &body["groups"][4];
        assert_eq!(five["keys"], json!({"size[2.5]": 5}), "{context}");
        assert_eq!(
            five["stats"],
            json!({"count": 6, "sum": 9, "avg": 2.25, "min": -2, "max": 7, "missing": 2,
                   "percentiles": {"25": 0.625, "50": 2, "75": 3.625}}),
            "{context}"
        );
        assert_eq!(
            body["groups"][1]["keys"],
            json!({"size[2.5]": -2.5}),
            "{context}"
        );
        assert_eq!(
            body["groups"][2]["stats"]["sum"], 0.1,
            "{context}: -0.0 + 0.1"
        );
        // The default order: count descending, then the bins as numbers (-5 before -2.5).
        let body = ask(
            &router,
            &token,
            &format!("{agg}?group_by=size[2.5]"),
            200,
            &context,
        )
        .await;
        let keys: Vec<String> = group_counts(&body).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["5", "0", "-5", "-2.5", "2.5", "10"], "{context}");

        // Date buckets in UTC: c4 (+08:00) falls on 2022-06-01T04; six records have no date.
        let body = ask(
            &router,
            &token,
            &format!("{agg}?group_by=since[hour]&sort=key%3C&limit=2"),
            200,
            &context,
        )
        .await;
        let want: Vec<(String, u64)> =
            vec![("2022-06-01T04".into(), 1), ("2022-06-01T00".into(), 1)];
        assert_eq!(group_counts(&body), want, "{context}");
        assert_eq!(body["total_groups"], 7, "{context}");
        assert_eq!(body["ungrouped_records"], 6, "{context}");
        let body = ask(
            &router,
            &token,
            &format!("{agg}?group_by=since[year]&sort=key%3E"),
            200,
            &context,
        )
        .await;
        let want = [
            ("2018", 1),
            ("2019", 2),
            ("2020", 2),
            ("2021", 1),
            ("2022", 2),
        ];
        let want: Vec<(String, u64)> = want.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        assert_eq!(group_counts(&body), want, "{context}");

        // Two fields: a key for display, keys for programs; a record missing either is ungrouped.
        let body = ask(
            &router,
            &token,
            &format!("{agg}?group_by=geo.city,geo.zone.code&field=size&percentiles=50,100"),
            200,
            &context,
        )
        .await;
        assert_eq!(body["ungrouped_records"], 5, "{context}");
        let first = &body["groups"][0];
        assert_eq!(first["key"], "台北 | N", "{context}");
        assert_eq!(
            first["keys"],
            json!({"geo.city": "台北", "geo.zone.code": "N"}),
            "{context}"
        );
        assert_eq!(
            first["stats"],
            json!({"count": 2, "sum": 2, "avg": 1, "min": -3, "max": 5, "missing": 0,
                   "percentiles": {"50": 1, "100": 5}}),
            "{context}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The demo flights: everyday questions, one request each

/// The demo flights as the bundled file has them: one map of column → cell per row.
fn demo_flights() -> Vec<BTreeMap<String, String>> {
    let demo = odqs::demo::DATASETS
        .iter()
        .find(|d| d.slug == "flights")
        .expect("the flights demo");
    let mut text = String::new();
    flate2::read::GzDecoder::new(demo.data)
        .read_to_string(&mut text)
        .unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|row| {
            let row = row.unwrap();
            headers
                .iter()
                .zip(row.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn number(row: &BTreeMap<String, String>, column: &str) -> Option<f64> {
    row.get(column)
        .filter(|v| !v.is_empty())
        .map(|v| v.parse().unwrap())
}

fn text<'a>(row: &'a BTreeMap<String, String>, column: &str) -> Option<&'a str> {
    row.get(column)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// Counts of `key` over the rows; rows without a key are counted apart (ungrouped).
fn tally(
    rows: &[BTreeMap<String, String>],
    key: impl Fn(&BTreeMap<String, String>) -> Option<String>,
) -> (BTreeMap<String, u64>, u64) {
    let mut counts = BTreeMap::new();
    let mut ungrouped = 0;
    for row in rows {
        match key(row) {
            Some(k) => *counts.entry(k).or_default() += 1,
            None => ungrouped += 1,
        }
    }
    (counts, ungrouped)
}

async fn demo_questions_in_one_request_each(store: TestStore) {
    let (_, token) = load(&store).await;
    let rows = demo_flights();
    assert_eq!(rows.len(), 2005);
    let count = |pred: &dyn Fn(&BTreeMap<String, String>) -> bool| -> Vec<String> {
        rows.iter()
            .filter(|r| pred(r))
            .map(|r| r["id"].clone())
            .collect()
    };
    let records_questions: Vec<(&str, Vec<String>)> = vec![
        (
            "dep_time[exists]=false",
            count(&|r| number(r, "dep_time").is_none()),
        ),
        (
            "dep_delay[gte]=60&dep_delay[lt]=120",
            count(&|r| number(r, "dep_delay").is_some_and(|d| (60.0..120.0).contains(&d))),
        ),
        (
            "carrier[ne]=UA",
            count(&|r| text(r, "carrier") != Some("UA")),
        ),
        (
            "origin=EWR&carrier[nin]=UA,AA,DL,B6,EV",
            count(&|r| {
                text(r, "origin") == Some("EWR")
                    && !["UA", "AA", "DL", "B6", "EV"].contains(&text(r, "carrier").unwrap_or(""))
            }),
        ),
        (
            "tailnum[prefix]=N5",
            count(&|r| text(r, "tailnum").is_some_and(|t| t.starts_with("N5"))),
        ),
    ];
    let (routes, no_route) = tally(&rows, |r| {
        Some(format!("{} | {}", text(r, "origin")?, text(r, "dest")?))
    });
    let (months, no_month) = tally(&rows, |r| Some(text(r, "time_hour")?[..7].to_string()));
    let (delays, no_delay) = tally(&rows, |r| {
        let bin = (number(r, "dep_delay")? / 15.0).floor() * 15.0;
        Some(format!("{}", bin as i64))
    });
    // Every answer comes from the data, not from an empty corner of it.
    assert!(records_questions.iter().all(|(_, ids)| !ids.is_empty()));
    assert!(no_delay > 0 && routes.len() > 50);
    // time_hour is UTC: a late flight of 2013-12-31 (New York time) lands in 2014-01.
    assert_eq!(months.len(), 13);
    assert_eq!(months.keys().last().map(String::as_str), Some("2014-01"));
    for (answered_by, router) in routers(&store) {
        let context = format!("{:?} ({answered_by})", store.kind);
        for (question, want) in &records_questions {
            let path = format!("/datasets/flights/records?{question}&fields=_id&per_page=100");
            let body = ask(&router, &token, &path, 200, &context).await;
            assert_eq!(body["total"], want.len(), "{context}: {question}");
            if want.len() <= 100 {
                // Without sort, records come in file order.
                assert_eq!(ids(&body), *want, "{context}: {question}");
            }
        }
        for (group_by, want, ungrouped) in [
            ("origin,dest", &routes, no_route),
            ("time_hour[month]", &months, no_month),
            ("dep_delay[15]", &delays, no_delay),
        ] {
            let path = format!("/datasets/flights/agg?group_by={group_by}");
            let body = ask(&router, &token, &path, 200, &context).await;
            let got: BTreeMap<String, u64> = group_counts(&body).into_iter().collect();
            assert_eq!(&got, want, "{context}: {group_by}");
            assert_eq!(body["total_records"], rows.len(), "{context}: {group_by}");
            assert_eq!(
                body["ungrouped_records"], ungrouped,
                "{context}: {group_by}"
            );
            assert_eq!(body["total_groups"], want.len(), "{context}: {group_by}");
            // Groups by size: only those of at least `n` records, counted as kept, in order.
            let n = want.values().copied().max().unwrap_or(0) / 3;
            let kept: BTreeMap<String, u64> = want
                .iter()
                .filter(|(_, count)| **count >= n)
                .map(|(k, c)| (k.clone(), *c))
                .collect();
            assert!(
                !kept.is_empty() && kept.len() < want.len(),
                "{group_by}: {n}"
            );
            let path = format!("/datasets/flights/agg?group_by={group_by}&min_count={n}");
            let body = ask(&router, &token, &path, 200, &context).await;
            let got: BTreeMap<String, u64> = group_counts(&body).into_iter().collect();
            assert_eq!(got, kept, "{context}: {path}");
            assert_eq!(body["total_groups"], kept.len(), "{context}: {path}");
            assert_eq!(body["ungrouped_records"], ungrouped, "{context}: {path}");
            let counts: Vec<u64> = group_counts(&body).into_iter().map(|(_, c)| c).collect();
            assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{context}: {path}");
        }
    }
}

both_stores!(
    more_than_ten_thousand_groups_need_a_limit,
    mini_answers_by_hand,
    demo_questions_in_one_request_each
);
