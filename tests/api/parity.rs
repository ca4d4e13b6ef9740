//! SQLite and PostgreSQL give identical answers.
//!
//! One test builds both stores, loads the same data into each (the bundled demo datasets and a
//! small dataset of nested fields, missing values, Chinese text and numbers written as `5` and
//! `5.0`), and sends one list of requests to both routers: records with every kind of parameter,
//! single records, agg with and without `field`, dataset metadata, and the error cases. Status
//! and JSON body must be identical, key order included (it is what a client reads); only the
//! `created_at` / `updated_at` timestamps of `/datasets` and `/datasets/{slug}` are left out,
//! and a page's `next_cursor` is compared by presence: it is signed with each store's own key.
//! Each store answers twice: from its in-memory indexes and, with them off, from the store; then
//! the in-memory routers are asked everything again, answering from the record bodies they
//! kept.

use crate::helpers::cases::{ID_FIELD_REQUESTS, REQUESTS, encode, load};
use crate::helpers::{Kind, TestStore, get_with};
use query::memory::IndexPolicy;
use serde_json::Value;

/// Leaves out the timestamps of dataset metadata (they differ by when each store loaded), and
/// reads a cursor as only "there is a next page" (each store signs with its own key).
fn strip_timestamps(path: &str, body: &mut Value) {
    if let Some(cursor) = body.get_mut("next_cursor")
        && cursor.is_string()
    {
        *cursor = Value::from("<a cursor>");
    }
    let route = path.split('?').next().unwrap_or(path);
    let segments: Vec<&str> = route.trim_start_matches('/').split('/').collect();
    if segments.first() != Some(&"datasets") || segments.len() > 2 {
        return;
    }
    let strip = |v: &mut Value| {
        if let Some(object) = v.as_object_mut() {
            object.remove("created_at");
            object.remove("updated_at");
        }
    };
    if let Some(items) = body.get_mut("datasets").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(strip);
    }
    strip(body);
}

/// Where two equal JSON values list an object's keys in a different order (a client reading
/// the text sees the order). Numbers are compared as JSON values: PostgreSQL's `jsonb` has no
/// negative zero, so a stored `-0.0` reads back as `0.0` there, the same number.
fn key_order_difference(a: &Value, b: &Value, at: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            if !x.keys().eq(y.keys()) {
                return Some(format!(
                    "{at}: {:?} / {:?}",
                    x.keys().collect::<Vec<_>>(),
                    y.keys().collect::<Vec<_>>()
                ));
            }
            x.iter()
                .zip(y.values())
                .find_map(|((k, v), w)| key_order_difference(v, w, &format!("{at}.{k}")))
        }
        (Value::Array(x), Value::Array(y)) => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (v, w))| key_order_difference(v, w, &format!("{at}[{i}]"))),
        _ => None,
    }
}

fn shorten(text: String) -> String {
    const MAX: usize = 6000;
    if text.len() <= MAX {
        return text;
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..end], text.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_and_postgres_answer_alike() {
    let started = std::time::Instant::now();
    let sqlite = TestStore::new(Kind::Sqlite).await;
    let postgres = TestStore::new(Kind::Postgres).await;
    let ((sqlite_router, sqlite_token), (pg_router, pg_token)) =
        tokio::join!(load(&sqlite), load(&postgres));
    // The same stores answering without in-memory indexes: the store path must agree.
    let sqlite_store_router = sqlite.router_with(IndexPolicy::OFF);
    let pg_store_router = postgres.router_with(IndexPolicy::OFF);
    let loaded = started.elapsed();

    let (mut ok, mut non_empty) = (0, 0);
    let mut record_keys = 0;
    for &(raw, want_status, want_code) in REQUESTS.iter().chain(ID_FIELD_REQUESTS) {
        let path = format!("/api/v1{}", encode(raw));
        let mut a = get_with(&sqlite_router, &path, Some(&sqlite_token), &[]).await;
        strip_timestamps(raw, &mut a.body);
        let text_a = serde_json::to_string_pretty(&a.body).unwrap();
        for (label, router, token) in [
            ("PostgreSQL", &pg_router, &pg_token),
            (
                "SQLite without in-memory index",
                &sqlite_store_router,
                &sqlite_token,
            ),
            (
                "PostgreSQL without in-memory index",
                &pg_store_router,
                &pg_token,
            ),
        ] {
            let mut b = get_with(router, &path, Some(token), &[]).await;
            strip_timestamps(raw, &mut b.body);
            let text_b = serde_json::to_string_pretty(&b.body).unwrap();
            if a.status != b.status || a.body != b.body {
                panic!(
                    "\n[parity] different answers for GET {path}\n  ({raw})\n--- SQLite: {}\n{}\n--- {label}: {}\n{}\n",
                    a.status,
                    shorten(text_a.clone()),
                    b.status,
                    shorten(text_b),
                );
            }
            if let Some(at) = key_order_difference(&a.body, &b.body, "$") {
                panic!(
                    "\n[parity] the same JSON values, but keys in a different order at {at} for GET {path}\n  ({raw})\n--- SQLite:\n{}\n--- {label}:\n{}\n",
                    shorten(text_a.clone()),
                    shorten(text_b),
                );
            }
        }
        // The answer is the same on both; now check it is the one expected, so that a run in
        // which everything fails alike cannot pass.
        assert_eq!(
            a.status, want_status,
            "GET {path} ({raw}): expected status {want_status}, got {}: {text_a}",
            a.status
        );
        if want_status == 200 {
            ok += 1;
            let body = &a.body;
            let filled = match (
                body.get("records"),
                body.get("groups"),
                body.get("datasets"),
            ) {
                (Some(Value::Array(r)), _, _) => !r.is_empty(),
                (_, Some(Value::Array(g)), _) => !g.is_empty(),
                (_, _, Some(Value::Array(d))) => !d.is_empty(),
                _ => body.as_object().is_some_and(|o| o.len() > 1),
            };
            non_empty += usize::from(filled);
            if let Some(Value::Array(records)) = body.get("records") {
                record_keys += records
                    .iter()
                    .filter_map(Value::as_object)
                    .map(|o| o.len())
                    .sum::<usize>();
            }
        } else {
            assert_eq!(
                a.body["error"], want_code,
                "GET {path} ({raw}): expected error {want_code}: {text_a}"
            );
            assert!(
                a.body["message"].as_str().is_some_and(|m| !m.is_empty()),
                "GET {path} ({raw}): an error needs a message: {text_a}"
            );
        }
    }
    // Asked again, the in-memory routers answer from the record bodies they kept (the body
    // cache, which only they have): the same answers as the store path's, key order included.
    for &(raw, _, _) in REQUESTS.iter().chain(ID_FIELD_REQUESTS) {
        let path = format!("/api/v1{}", encode(raw));
        let mut want = get_with(&sqlite_store_router, &path, Some(&sqlite_token), &[]).await;
        strip_timestamps(raw, &mut want.body);
        for (label, router, token) in [
            ("SQLite, asked again", &sqlite_router, &sqlite_token),
            ("PostgreSQL, asked again", &pg_router, &pg_token),
        ] {
            let mut got = get_with(router, &path, Some(token), &[]).await;
            strip_timestamps(raw, &mut got.body);
            let difference = key_order_difference(&want.body, &got.body, "$");
            assert!(
                got.status == want.status && got.body == want.body && difference.is_none(),
                "\n[parity] GET {path} ({raw}) answered differently by {label} (keys: {difference:?})\n--- store path:\n{}\n--- {label}:\n{}\n",
                shorten(serde_json::to_string_pretty(&want.body).unwrap()),
                shorten(serde_json::to_string_pretty(&got.body).unwrap()),
            );
        }
    }
    let total = REQUESTS.len() + ID_FIELD_REQUESTS.len();
    assert!(total >= 60, "{total} requests");
    assert!(
        ok * 10 >= total * 6,
        "only {ok} of {total} requests answered 200"
    );
    assert!(
        non_empty * 10 >= ok * 8,
        "only {non_empty} of {ok} successful answers held anything"
    );
    assert!(record_keys > 1000, "records came back nearly empty");
    eprintln!(
        "[parity] {total} requests ({ok} ok, {non_empty} non-empty), identical on SQLite and \
         PostgreSQL, with and without in-memory indexes; load {loaded:.1?}, total {:.1?}",
        started.elapsed()
    );
}
