//! Relevance (`sort=_score<`), on both stores, from the in-memory index and from the store:
//! BM25 scores computed here from the raw records, by the contract's definitions (k1 1.2,
//! b 0.75; a term's frequency is how often it occurs as a substring, a record's length its
//! searched texts' characters, the statistics the whole version's), and the order they give.

use std::collections::HashMap;

use crate::helpers::cases::encode;
use crate::helpers::{TestStore, api_token, get_with, import_file, write_file};
use query::memory::{DEFAULT_BUDGET_BYTES, IndexPolicy};
use serde_json::{Value, json};

const SLUG: &str = "spots";
const SCHEMA: &str = r#"{"title": "Spots", "id_field": "id", "fields": [
  {"name": "id", "type": "keyword"},
  {"name": "kind", "type": "keyword"},
  {"name": "title", "type": "text"},
  {"name": "body", "type": "text"}
]}"#;

/// (id, kind, title, body); `None`: the field is missing.
const SPOTS: &[(&str, &str, Option<&str>, Option<&str>)] = &[
    (
        "s1",
        "market",
        Some("士林夜市 Night Market"),
        Some("夜市小吃，海鮮與夜市甜點"),
    ),
    (
        "s2",
        "market",
        Some("Night market"),
        Some("A night market by the river, night after night"),
    ),
    (
        "s3",
        "food",
        Some("海鮮餐廳"),
        Some("新鮮海鮮 seafood, near the 夜市"),
    ),
    ("s4", "park", Some("River park"), None),
    ("s5", "food", None, Some("海鮮")),
    (
        "s6",
        "market",
        Some("Night Market"),
        Some("A night market by the river, night after night"),
    ),
    (
        "s7",
        "temple",
        Some("龍山寺"),
        Some("A temple near a night market"),
    ),
    (
        "s8",
        "food",
        Some("NIGHT snacks"),
        Some("Snacks all night long at the market hall"),
    ),
];

fn ndjson() -> String {
    SPOTS
        .iter()
        .map(|(id, kind, title, body)| {
            let mut record = json!({"id": id, "kind": kind});
            if let Some(t) = title {
                record["title"] = json!(t);
            }
            if let Some(b) = body {
                record["body"] = json!(b);
            }
            record.to_string() + "\n"
        })
        .collect()
}

/// A record's lower-cased text of `field` (0: title, 1: body).
fn text(spot: usize, field: usize) -> Option<String> {
    let (_, _, title, body) = SPOTS[spot];
    [title, body][field].map(str::to_lowercase)
}

/// The expected (id, score) of every match, best first (ties by `kind` when `by_kind`, then
/// file order): `q` terms search both fields, `field_terms` one field each.
fn model(
    q: &[&str],
    field_terms: &[(usize, &str)],
    descending: bool,
    by_kind: bool,
) -> Vec<(String, f64)> {
    let terms: Vec<(String, Vec<usize>)> = q
        .iter()
        .map(|t| (t.to_lowercase(), vec![0, 1]))
        .chain(
            field_terms
                .iter()
                .map(|(f, t)| (t.to_lowercase(), vec![*f])),
        )
        .collect();
    let mut searched: Vec<usize> = terms.iter().flat_map(|(_, f)| f.clone()).collect();
    searched.sort_unstable();
    searched.dedup();
    let count = |spot: usize, term: &str, fields: &[usize]| -> u32 {
        fields
            .iter()
            .filter_map(|&f| text(spot, f))
            .map(|t| t.matches(term).count() as u32)
            .sum()
    };
    let length = |spot: usize| -> f64 {
        searched
            .iter()
            .filter_map(|&f| text(spot, f))
            .map(|t| t.chars().count() as f64)
            .sum()
    };
    let n = SPOTS.len() as f64;
    let average = (0..SPOTS.len()).map(length).sum::<f64>() / n;
    let idf: Vec<f64> = terms
        .iter()
        .map(|(term, fields)| {
            let df = (0..SPOTS.len())
                .filter(|&s| count(s, term, fields) > 0)
                .count() as f64;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();
    let mut matched: Vec<(usize, f64)> = (0..SPOTS.len())
        .filter(|&s| {
            terms
                .iter()
                .all(|(term, fields)| count(s, term, fields) > 0)
        })
        .map(|s| {
            let dl = length(s);
            let score = terms
                .iter()
                .zip(&idf)
                .map(|((term, fields), idf)| {
                    let tf = f64::from(count(s, term, fields));
                    idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / average))
                })
                .sum();
            (s, score)
        })
        .collect();
    if by_kind {
        matched.sort_by_key(|&(s, _)| SPOTS[s].1);
    }
    matched.sort_by(|a, b| {
        let order = a.1.total_cmp(&b.1);
        if descending { order.reverse() } else { order }
    });
    matched
        .into_iter()
        .map(|(s, score)| (SPOTS[s].0.to_string(), score))
        .collect()
}

/// A request's query string, its `q` terms, its `q[field]` terms, whether best first, and
/// whether `kind` breaks ties.
type Case = (
    &'static str,
    &'static [&'static str],
    &'static [(usize, &'static str)],
    bool,
    bool,
);

async fn ask(router: &axum::Router, token: &str, path: &str) -> (u16, Value) {
    let answer = get_with(
        router,
        &format!("/api/v1{}", encode(path)),
        Some(token),
        &[],
    )
    .await;
    (answer.status, answer.body)
}

async fn scores_are_bm25(store: TestStore) {
    let file = write_file(&store, "spots.ndjson", ndjson().as_bytes());
    import_file(&store, &file, SLUG, Some(SCHEMA), Some("id"))
        .await
        .expect("import");
    let token = api_token(&store).await;
    let base = format!("/datasets/{SLUG}/records");
    // (query string, q terms, q[field] terms, descending, ties by kind)
    let cases: &[Case] = &[
        (
            "q=night market&sort=_score<",
            &["night", "market"],
            &[],
            true,
            false,
        ),
        ("q=夜市&sort=_score<", &["夜市"], &[], true, false),
        (
            "q=夜市 海鮮&sort=_score<",
            &["夜市", "海鮮"],
            &[],
            true,
            false,
        ),
        (
            "q[title]=night&sort=_score<",
            &[],
            &[(0, "night")],
            true,
            false,
        ),
        (
            "q=market&q[body]=night&sort=_score<,kind",
            &["market"],
            &[(1, "night")],
            true,
            true,
        ),
        ("q=night&sort=_score>", &["night"], &[], false, false),
        (
            "q=NIGHT&sort=_score<&per_page=2&page=2",
            &["night"],
            &[],
            true,
            false,
        ),
    ];
    let mut answers: HashMap<&str, Vec<Value>> = HashMap::new();
    for (path_name, router) in [
        (
            "index",
            store.router_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES)),
        ),
        ("store", store.router_with(IndexPolicy::OFF)),
    ] {
        for &(query, q, field_terms, descending, by_kind) in cases {
            let path = format!("{base}?{query}");
            let (status, body) = ask(&router, &token, &path).await;
            let context = format!("{:?} {path_name}: {path}\n{body}", store.kind);
            assert_eq!(status, 200, "{context}");
            let want = model(q, field_terms, descending, by_kind);
            assert_eq!(body["total"], json!(want.len()), "{context}");
            let (page, per_page) = (
                body["page"].as_u64().unwrap() as usize,
                body["per_page"].as_u64().unwrap() as usize,
            );
            let want: Vec<&(String, f64)> = want
                .iter()
                .skip((page - 1) * per_page)
                .take(per_page)
                .collect();
            let records = body["records"].as_array().unwrap();
            let got: Vec<&str> = records.iter().map(|r| r["_id"].as_str().unwrap()).collect();
            let want_ids: Vec<&str> = want.iter().map(|(id, _)| id.as_str()).collect();
            assert_eq!(got, want_ids, "{context}\nwant {want:?}");
            for (record, (_, score)) in records.iter().zip(&want) {
                let got = record["_score"].as_f64().expect("_score");
                assert!((got - score).abs() < 1e-9, "{context}: {got} != {score}");
            }
            answers.entry(query).or_default().push(body);
        }
    }
    // Pages of one kept order follow each other: pages 1 and 2 of two are page 1 of four.
    for router in [
        store.router_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES)),
        store.router_with(IndexPolicy::OFF),
    ] {
        let mut paged = Vec::new();
        for page in [1, 2] {
            let path = format!("{base}?q=night&sort=_score<&per_page=2&page={page}");
            let (_, body) = ask(&router, &token, &path).await;
            paged.extend(body["records"].as_array().unwrap().iter().cloned());
        }
        let (_, whole) = ask(
            &router,
            &token,
            &format!("{base}?q=night&sort=_score<&per_page=4"),
        )
        .await;
        assert_eq!(&paged, whole["records"].as_array().unwrap());
    }
    // The index and the store give the same bytes.
    for (query, bodies) in answers {
        assert_eq!(bodies[0], bodies[1], "{query}: index and store differ");
    }
    // Both fields or the first key only, and never without a search.
    let router = store.router();
    for (query, parameter) in [
        ("sort=_score<", "sort"),
        ("kind=food&sort=_score<", "sort"),
        ("q=night&sort=kind,_score<", "sort"),
    ] {
        let (status, body) = ask(&router, &token, &format!("{base}?{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_eq!(body["error"], "invalid_parameter", "{query}");
        assert_eq!(body["parameter"], parameter, "{query}");
    }
    // A page of search text is refused, never a 500 (each term is a dictionary look-up).
    let long = "a".repeat(10_000);
    let (status, body) = ask(&router, &token, &format!("{base}?q={long}&sort=_score<")).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["parameter"], "q", "{body}");
    let (status, body) = ask(
        &router,
        &token,
        &format!("/datasets/{SLUG}/export?q=night&sort=_score<"),
    )
    .await;
    assert_eq!(status, 400, "export: {body}");
    // Without `sort=_score`, no `_score`.
    let (_, body) = ask(&router, &token, &format!("{base}?q=night")).await;
    assert!(body["records"][0].get("_score").is_none(), "{body}");
}

/// On the real demo data (Chinese names and descriptions, flights' carrier names), the index
/// and the store rank alike, to the byte.
async fn index_and_store_rank_real_data_alike(store: TestStore) {
    let (_, token) = crate::helpers::cases::load(&store).await;
    let index = store.router_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES));
    let plain = store.router_with(IndexPolicy::OFF);
    for path in [
        "/datasets/tw-scenic-spots/records?q=夜市 小吃&sort=_score<&per_page=10",
        "/datasets/tw-scenic-spots/records?q=溫泉&sort=_score<&per_page=2&page=2",
        "/datasets/flights/records?q=united&origin=EWR&sort=_score<,dep_delay<&per_page=7&page=4",
        "/datasets/flights/records?q=boeing&sort=_score>&per_page=3&facet=carrier",
    ] {
        let (status, from_index) = ask(&index, &token, path).await;
        assert_eq!(status, 200, "{path}: {from_index}");
        let (_, from_store) = ask(&plain, &token, path).await;
        assert_eq!(from_index, from_store, "{:?} {path}", store.kind);
        let scores: Vec<f64> = from_index["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["_score"].as_f64().expect("_score"))
            .collect();
        assert!(!scores.is_empty(), "{path}");
        let descending = path.contains("_score<");
        assert!(
            scores.windows(2).all(|w| if descending {
                w[0] >= w[1]
            } else {
                w[0] <= w[1]
            }),
            "{path}: {scores:?}"
        );
    }
}

both_stores!(scores_are_bm25, index_and_store_rank_real_data_alike);
