//! The store's indexes serve the queries that come next without scanning a whole dataset:
//! exact match and sort on typed columns, look-up by `_id`, and substring search through the
//! trigram-indexed text dictionary (Chinese included). Checked on the real query plans.

use crate::helpers::{Kind, TestStore, get_with, import_file_with, write_file};
use query::memory::IndexPolicy;
use sea_orm::{ConnectionTrait, Statement, TransactionTrait};
use serde_json::json;

async fn plan(store: &TestStore, db: &sea_orm::DatabaseConnection, sql: &str) -> String {
    let backend = store.store.backend();
    let txn = db.begin().await.unwrap();
    let explain = match store.kind {
        Kind::Sqlite => {
            // EXPLAIN plans against the connection's cached schema and statistics without
            // checking that they are current (a real statement would); a read first brings a
            // pooled connection up to date with the import.
            txn.execute_unprepared("SELECT COUNT(*) FROM sqlite_schema")
                .await
                .unwrap();
            format!("EXPLAIN QUERY PLAN {sql}")
        }
        Kind::Postgres => {
            // Tiny test tables make a sequential scan the cheapest plan; forbidding it shows
            // whether an index can answer at all.
            txn.execute_unprepared("SET LOCAL enable_seqscan = off")
                .await
                .unwrap();
            format!("EXPLAIN (COSTS OFF) {sql}")
        }
    };
    let rows = txn
        .query_all_raw(Statement::from_string(backend, explain))
        .await
        .unwrap();
    txn.commit().await.unwrap();
    rows.iter()
        .map(|row| match store.kind {
            Kind::Sqlite => row.try_get::<String>("", "detail").unwrap(),
            Kind::Postgres => row.try_get::<String>("", "QUERY PLAN").unwrap(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_no_full_scan(kind: Kind, table: &str, plan: &str) {
    match kind {
        Kind::Sqlite => {
            // `SCAN t VIRTUAL TABLE INDEX 0:M…` is an FTS5 index look-up; `…INDEX 0:` alone
            // reads every row.
            let scans_table = plan.lines().any(|l| {
                let l = l.trim();
                l == format!("SCAN {table}")
                    || l.starts_with(&format!("SCAN {table} "))
                        && !l.contains("USING INDEX")
                        && !l.contains("USING COVERING INDEX")
                        && !l.contains("VIRTUAL TABLE INDEX 0:M")
            });
            assert!(!scans_table, "full scan of {table}:\n{plan}");
            assert!(
                !plan.contains("USE TEMP B-TREE FOR ORDER BY"),
                "sorts everything:\n{plan}"
            );
        }
        Kind::Postgres => {
            assert!(!plan.contains("Seq Scan"), "full scan of {table}:\n{plan}");
        }
    }
}

const CARRIERS: [&str; 5] = ["UA", "AA", "DL", "B6", "WN"];
const DESTS: [&str; 3] = ["Denver Intl", "Chicago Ohare Intl", "臺北松山機場"];

/// 3,000 flights as NDJSON, and their schema.
fn flights(store: &TestStore) -> (std::path::PathBuf, &'static str) {
    let rows: Vec<_> = (1..=3000)
        .map(|i| {
            json!({
                "code": format!("C{i:05}"),
                "carrier": CARRIERS[i % 5],
                "delay": (i * 37 % 301) as i64 - 60,
                "dest_name": DESTS[i % 3],
                "note": format!("flight number {i} of the day"),
            })
        })
        .map(|v| v.to_string())
        .collect();
    let path = write_file(store, "f.ndjson", (rows.join("\n") + "\n").as_bytes());
    (
        path,
        r#"{"fields": [{"name": "dest_name", "type": "text"}]}"#,
    )
}

async fn queries_use_indexes(store: TestStore) {
    let (path, schema) = flights(&store);
    import_file_with(&store, &path, "f", Some(schema), Some("code"), true)
        .await
        .unwrap();
    let dataset = crate::helpers::stored::find_dataset(&store.store, "f")
        .await
        .unwrap()
        .unwrap();
    let fields = crate::helpers::stored::fields(&store.store, dataset.version_id)
        .await
        .unwrap();
    let column = |name: &str| {
        fields
            .iter()
            .find(|f| f.name == name)
            .unwrap()
            .column_name
            .clone()
            .unwrap()
    };
    let (carrier, delay, dest) = (column("carrier"), column("delay"), column("dest_name"));
    // The keyword id field is stored once, as `_id`, whose unique index answers it.
    let code = column("code");
    assert_eq!(code, "_id");
    let t = entity::record::records_table(dataset.version_id);
    let text = entity::record::text_table(dataset.version_id);
    let (tid, like) = match store.kind {
        Kind::Sqlite => ("rowid", "value MATCH '\"denver\"'"),
        Kind::Postgres => ("tid", "value LIKE '%denver%'"),
    };
    let chinese = match store.kind {
        Kind::Sqlite => "value MATCH '\"松山機\"'",
        Kind::Postgres => "value LIKE '%松山機%'",
    };
    // The query layer's "sort index" access: conditions checked row by row while the sort
    // column's index is walked (on SQLite the statement names the index, and `+` keeps the
    // condition's index out of the plan).
    let (indexed_by, unindexed) = match store.kind {
        Kind::Sqlite => (
            format!(
                "INDEXED BY \"{}\"",
                entity::record::column_index(dataset.version_id, &delay)
            ),
            "+",
        ),
        Kind::Postgres => (String::new(), ""),
    };
    let queries = [
        format!(
            "SELECT pos FROM \"{t}\" {indexed_by} WHERE {unindexed}\"{carrier}\" = 'UA' AND \"{delay}\" IS NOT NULL ORDER BY \"{delay}\" DESC, pos LIMIT 20"
        ),
        // A first page in file order under a selective condition (about 10 of 3,000 rows). (Under
        // a broad one, `carrier = 'UA'`, walking the rows in order until 20 match is as good a
        // plan as the index, and SQLite rightly picks either.)
        format!("SELECT pos FROM \"{t}\" WHERE \"{delay}\" = 7 ORDER BY pos LIMIT 20"),
        format!("SELECT COUNT(*) FROM \"{t}\" WHERE \"{carrier}\" = 'UA'"),
        format!(
            "SELECT pos FROM \"{t}\" WHERE \"{delay}\" IS NOT NULL ORDER BY \"{delay}\" DESC, pos LIMIT 20"
        ),
        format!("SELECT pos FROM \"{t}\" WHERE \"{delay}\" = 5"),
        format!("SELECT doc FROM \"{t}\" WHERE \"_id\" = 'C00042'"),
        format!(
            "SELECT pos FROM \"{t}\" WHERE \"{code}\" >= 'C00042' ORDER BY \"{code}\" LIMIT 20"
        ),
        format!("SELECT doc FROM \"{t}\" WHERE pos = 42"),
        format!("SELECT {tid} FROM \"{text}\" WHERE {like}"),
        format!("SELECT {tid} FROM \"{text}\" WHERE {chinese}"),
        format!("SELECT pos FROM \"{t}\" WHERE \"{dest}\" IN (1, 2)"),
    ];
    let db = crate::helpers::stored::records_db(&store.store, dataset.version_id)
        .await
        .unwrap();
    for sql in &queries {
        let plan = format!("{sql}\n{}", plan(&store, &db, sql).await);
        assert_no_full_scan(store.kind, &t, &plan);
        assert_no_full_scan(store.kind, &text, &plan);
    }
}

/// Without `--store-indexes` the store keeps its `pos` and `_id` indexes only, and the
/// store path (in-memory indexes off) answers exactly as it does with the column indexes,
/// where a sorted page walks its sort column's index.
async fn without_column_indexes_the_store_answers_alike(store: TestStore) {
    let (path, schema) = flights(&store);
    for (slug, store_indexes) in [("with", true), ("without", false)] {
        import_file_with(
            &store,
            &path,
            slug,
            Some(schema),
            Some("code"),
            store_indexes,
        )
        .await
        .unwrap();
    }
    let mut indexes = Vec::new();
    for slug in ["with", "without"] {
        let dataset = crate::helpers::stored::find_dataset(&store.store, slug)
            .await
            .unwrap()
            .unwrap();
        let t = entity::record::records_table(dataset.version_id);
        let sql = match store.kind {
            Kind::Sqlite => format!(
                "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = '{t}' \
                 AND name NOT LIKE 'sqlite_autoindex%'"
            ),
            Kind::Postgres => format!(
                "SELECT indexname AS name FROM pg_indexes \
                 WHERE schemaname = current_schema() AND tablename = '{t}'"
            ),
        };
        let rows = crate::helpers::stored::records_db(&store.store, dataset.version_id)
            .await
            .unwrap()
            .query_all_raw(Statement::from_string(store.store.backend(), sql))
            .await
            .unwrap();
        let mut names: Vec<String> = rows
            .iter()
            .map(|row| row.try_get::<String>("", "name").unwrap())
            .map(|name| name.replacen(&t, "", 1))
            .collect();
        names.sort();
        indexes.push(names);
    }
    let without: Vec<&str> = indexes[1].iter().map(String::as_str).collect();
    let want: &[&str] = match store.kind {
        Kind::Sqlite => &["_id"],
        Kind::Postgres => &["_id", "_pos"],
    };
    assert_eq!(without, want);
    assert!(indexes[0].len() >= without.len() + 4, "{:?}", indexes[0]);

    let router = store.router_with(IndexPolicy::OFF);
    let token = crate::helpers::api_token(&store).await;
    for query in [
        "carrier=UA&sort=delay>&per_page=20",
        "carrier=UA&sort=delay>&page=7&per_page=50",
        "sort=delay,carrier>&per_page=30&page=3",
        "delay=7",
        "q[dest_name]=denver&sort=delay>",
        "delay[gte]=100&sort=carrier,delay&per_page=100",
        "_ids=C00042,C00007",
        "code=C00042",
        "code[prefix]=C0004&sort=code>&per_page=5",
        "code[gte]=C02990&sort=delay,code",
    ] {
        let mut answers = Vec::new();
        for slug in ["with", "without"] {
            let query = query
                .replace('[', "%5B")
                .replace(']', "%5D")
                .replace('>', "%3E");
            let path = format!("/api/v1/datasets/{slug}/records?{query}");
            let answer = get_with(&router, &path, Some(&token), &[]).await;
            assert_eq!(answer.status, 200, "{path}: {:?}", answer.body);
            answers.push((answer.body["total"].clone(), answer.body["records"].clone()));
        }
        assert!(answers[0].0.as_u64().unwrap() > 0, "{query}");
        assert_eq!(answers[0], answers[1], "{query}");
    }
}

/// The resolver finds a version's column indexes whatever field comes first: here the
/// identifier field, whose column is `_id` (indexed in every version), is the first.
async fn column_indexes_are_seen_behind_an_identifier_field(store: TestStore) {
    let rows: String = (1..=5)
        .map(|i| format!("{}\n", json!({"a_id": format!("x{i}"), "n": i})))
        .collect();
    let path = write_file(&store, "ids.ndjson", rows.as_bytes());
    for (slug, store_indexes) in [("ids-with", true), ("ids-without", false)] {
        import_file_with(&store, &path, slug, None, Some("a_id"), store_indexes)
            .await
            .unwrap();
    }
    let state = store.state_with(IndexPolicy::OFF);
    for (slug, store_indexes) in [("ids-with", true), ("ids-without", false)] {
        let dataset = state.resolver.dataset(slug).await.unwrap();
        assert_eq!(dataset.schema.fields[0].name, "a_id");
        assert_eq!(dataset.schema.store_indexes, store_indexes, "{slug}");
    }
}

both_stores!(
    queries_use_indexes,
    column_indexes_are_seen_behind_an_identifier_field,
    without_column_indexes_the_store_answers_alike
);
