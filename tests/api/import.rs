//! `odqs import` on both stores: every input format, gzip, inference, dotted fields, the id
//! field, and the failures that must leave the store as it was.

use crate::helpers::stored as records;
use crate::helpers::{TestStore, gzip, import_file, write_file};
use entity::FieldType;
use odqs::import::ImportError;
use odqs::store::{catalog, gc};
use serde_json::{Value, json};

const FLIGHTS_CSV: &str = "\
id,carrier,dep_delay,origin.code,origin.city,note,when
1,UA,5,EWR,Newark,\"late, \"\"very\"\" late\",2013-01-01T10:00:00Z
2,AA,,JFK,New York,on time,2013-01-01T11:00:00Z
3,UA,-2.5,EWR,Newark,early,2013-01-02
";

const FLIGHTS_SCHEMA: &str = r#"{
  "title": "Test flights", "description": "Three flights", "license": "CC0-1.0",
  "source_url": "https://example.org/flights", "id_field": "id",
  "fields": [
    {"name": "id", "type": "keyword"},
    {"name": "carrier", "type": "keyword", "description": "Carrier code"},
    {"name": "dep_delay", "type": "number"},
    {"name": "origin.code", "type": "keyword"},
    {"name": "note", "type": "text"},
    {"name": "when", "type": "date"}
  ]
}"#;

async fn live(
    store: &TestStore,
    slug: &str,
) -> (entity::dataset::Model, Vec<entity::dataset_field::Model>) {
    let dataset = crate::helpers::stored::find_dataset(&store.store, slug)
        .await
        .unwrap()
        .expect("published");
    let fields = crate::helpers::stored::fields(&store.store, dataset.version_id)
        .await
        .unwrap();
    (dataset, fields)
}

async fn docs(store: &TestStore, version_id: i64) -> Vec<Value> {
    records::in_order(&store.store, version_id, 0, 1000)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.doc)
        .collect()
}

fn types(fields: &[entity::dataset_field::Model]) -> Vec<(String, FieldType)> {
    fields
        .iter()
        .map(|f| (f.name.clone(), f.field_type))
        .collect()
}

async fn csv_with_schema_gzipped(store: TestStore) {
    let path = write_file(&store, "flights.csv.gz", &gzip(FLIGHTS_CSV.as_bytes()));
    let summary = import_file(&store, &path, "test.flights~v1", Some(FLIGHTS_SCHEMA), None)
        .await
        .unwrap();
    assert_eq!(summary.records, 3);
    let (dataset, fields) = live(&store, "test.flights~v1").await;
    assert_eq!(dataset.title, "Test flights");
    assert_eq!(dataset.license.as_deref(), Some("CC0-1.0"));
    assert_eq!(dataset.id_field.as_deref(), Some("id"));
    assert_eq!(dataset.record_count, 3);
    // The schema's fields first, then the column it does not list, inferred.
    assert_eq!(
        types(&fields),
        vec![
            ("id".into(), FieldType::Keyword),
            ("carrier".into(), FieldType::Keyword),
            ("dep_delay".into(), FieldType::Number),
            ("origin.code".into(), FieldType::Keyword),
            ("note".into(), FieldType::Text),
            ("when".into(), FieldType::Date),
            ("origin.city".into(), FieldType::Text),
        ]
    );
    assert_eq!(fields[1].description.as_deref(), Some("Carrier code"));
    let docs = docs(&store, dataset.version_id).await;
    assert_eq!(
        docs[0],
        json!({"_id": "1", "id": "1", "carrier": "UA", "dep_delay": 5,
               "origin": {"code": "EWR", "city": "Newark"}, "note": "late, \"very\" late",
               "when": "2013-01-01T10:00:00Z"})
    );
    assert_eq!(
        docs[1].get("dep_delay"),
        None,
        "an empty cell is a missing value"
    );
    assert_eq!(docs[2]["dep_delay"], json!(-2.5));
    let by_id = records::by_id(&store.store, dataset.version_id, "3")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_id.pos, 3);
    assert_eq!(by_id.doc["note"], "early");
}

const CITIES: [&str; 3] = ["Taipei", "Tainan", "Hualien"];

async fn json_array_with_inference(store: TestStore) {
    let rows: Vec<Value> = (1..=40)
        .map(|i| {
            json!({
                "name": format!("Spot number {i} by the sea"),
                "city": CITIES[i % 3],
                "rating": i as f64 / 10.0,
                "open": i % 2 == 0,
                "updated": "2021-03-31T01:12:12+08:00",
                "position": {"lat": 23.5 + i as f64 / 100.0, "geo": {"hash": format!("wsm{}", i % 4)}},
                "tags": ["a", "b"],
            })
        })
        .collect();
    let path = write_file(
        &store,
        "spots.json",
        serde_json::to_string_pretty(&rows).unwrap().as_bytes(),
    );
    let summary = import_file(&store, &path, "spots", None, None)
        .await
        .unwrap();
    assert_eq!(summary.records, 40);
    let (dataset, fields) = live(&store, "spots").await;
    assert_eq!(dataset.id_field, None);
    assert_eq!(
        types(&fields),
        vec![
            ("name".into(), FieldType::Text),
            ("city".into(), FieldType::Keyword),
            ("rating".into(), FieldType::Number),
            ("open".into(), FieldType::Boolean),
            ("updated".into(), FieldType::Date),
            ("position.lat".into(), FieldType::Number),
            ("position.geo.hash".into(), FieldType::Keyword),
            ("tags".into(), FieldType::Json),
        ]
    );
    let docs = docs(&store, dataset.version_id).await;
    assert_eq!(
        docs[0]["_id"], "1",
        "without an id field, _id is the row number"
    );
    assert_eq!(docs[39]["_id"], "40");
    assert_eq!(docs[0]["position"]["geo"]["hash"], "wsm1");
    assert_eq!(docs[0]["tags"], json!(["a", "b"]));
}

async fn ndjson_gzipped_with_nested_and_missing(store: TestStore) {
    let text = "\
{\"ID\":\"A1\",\"Name\":\"猴探井天空之橋\",\"City\":\"南投縣\",\"Position\":{\"PositionLat\":23.9,\"GeoHash\":\"wsmb\"},\"Picture\":{}}

{\"ID\":\"A2\",\"Name\":\"清水岩遊樂區\",\"Position\":{\"PositionLat\":24.1,\"GeoHash\":\"wsmc\"},\"Class1\":\"廟宇\"}
";
    let path = write_file(&store, "spots.ndjson.gz", &gzip(text.as_bytes()));
    let summary = import_file(&store, &path, "tw", None, Some("ID"))
        .await
        .unwrap();
    assert_eq!(summary.records, 2);
    let (dataset, fields) = live(&store, "tw").await;
    let names: Vec<_> = fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "ID",
            "Name",
            "City",
            "Position.PositionLat",
            "Position.GeoHash",
            "Class1"
        ]
    );
    let a2 = records::by_id(&store.store, dataset.version_id, "A2")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(a2.doc["Position"]["PositionLat"], json!(24.1));
    assert_eq!(a2.doc.get("City"), None);
    let a1 = records::by_id(&store.store, dataset.version_id, "A1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        a1.doc["Picture"],
        json!({}),
        "JSON records are kept as they were"
    );
}

async fn duplicate_ids_are_rejected(store: TestStore) {
    let path = write_file(&store, "dup.csv", b"code,n\nA,1\nB,2\nA,3\n");
    let err = import_file(&store, &path, "dup", None, Some("code"))
        .await
        .unwrap_err();
    match &err {
        ImportError::DuplicateId { id, first, second } => {
            assert_eq!((id.as_str(), *first, *second), ("A", 1, 3));
        }
        other => panic!("expected a duplicate id error, got {other}"),
    }
    assert!(err.to_string().contains("records 1 and 3"), "{err}");
    assert!(
        crate::helpers::stored::find_dataset(&store.store, "dup")
            .await
            .unwrap()
            .is_none()
    );
    assert_no_leftovers(&store).await;
    // A file too large for its ids to be checked in memory: the store's unique index finds it.
    let mut large = String::from("code,n\n");
    for i in 0..420_000 {
        let code = if i == 399_999 { 1 } else { i };
        large.push_str(&format!("K{code},{i}\n"));
    }
    let path = write_file(&store, "dup-large.csv", large.as_bytes());
    let err = import_file(&store, &path, "dup", None, Some("code"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("records 2 and 400000"), "{err}");
    assert_no_leftovers(&store).await;
}

/// No version is left loading and no table of a failed import remains.
async fn assert_no_leftovers(store: &TestStore) {
    use sea_orm::EntityTrait;
    let versions = entity::dataset_version::Entity::find()
        .all(&store.store.db)
        .await
        .unwrap();
    assert!(
        versions.iter().all(|v| v.state != "loading"),
        "left behind: {versions:?}"
    );
    let live: Vec<i64> = versions.iter().map(|v| v.id).collect();
    for table in table_names(store).await {
        if let Some(n) = table.strip_prefix("records_v") {
            let id: i64 = n.parse().unwrap();
            assert!(live.contains(&id), "table {table} outlived its version");
        }
    }
}

async fn table_names(store: &TestStore) -> Vec<String> {
    use sea_orm::{ConnectionTrait, Statement};
    let sql = match store.kind {
        crate::helpers::Kind::Sqlite => "SELECT name FROM sqlite_master WHERE type = 'table'",
        crate::helpers::Kind::Postgres => {
            "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()"
        }
    };
    store
        .store
        .db
        .query_all_raw(Statement::from_string(store.store.backend(), sql))
        .await
        .unwrap()
        .into_iter()
        .map(|row| row.try_get::<String>("", "name").unwrap())
        .collect()
}

async fn malformed_line_leaves_old_version(store: TestStore) {
    let good = write_file(
        &store,
        "v1.ndjson",
        b"{\"k\":\"a\",\"n\":1}\n{\"k\":\"b\",\"n\":2}\n",
    );
    import_file(&store, &good, "ds", None, None).await.unwrap();
    let (before, before_fields) = live(&store, "ds").await;

    let bad = write_file(
        &store,
        "v2.ndjson",
        b"{\"k\":\"a\",\"n\":1}\n{\"k\":\"b\",\"n\":2}\n\n{\"k\":\"c\",\"n\":\n{\"k\":\"d\"}\n",
    );
    let err = import_file(&store, &bad, "ds", None, None)
        .await
        .unwrap_err();
    assert!(err.to_string().starts_with("line 4 "), "{err}");

    let bad_type = write_file(&store, "v3.csv", b"k,n\na,1\nb,two\n");
    let schema = r#"{"fields":[{"name":"k","type":"keyword"},{"name":"n","type":"number"}]}"#;
    let err = import_file(&store, &bad_type, "ds", Some(schema), None)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 3 field \"n\" expects a number, got \"two\""
    );

    let (after, after_fields) = live(&store, "ds").await;
    assert_eq!(after, before);
    assert_eq!(after_fields, before_fields);
    assert_eq!(docs(&store, after.version_id).await.len(), 2);
    assert_no_leftovers(&store).await;
}

async fn reimport_replaces_atomically(store: TestStore) {
    let v1: String = (1..=300)
        .map(|i| format!("{{\"k\":\"a{i}\",\"n\":{i}}}\n"))
        .collect();
    let v1 = write_file(&store, "v1.ndjson", v1.as_bytes());
    import_file(&store, &v1, "swap", None, None).await.unwrap();
    let (old, _) = live(&store, "swap").await;

    // A reader that keeps resolving the live version while the re-import runs: every time, the
    // dataset row, its schema and its records must belong to the same version.
    let reader_store = store.store.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader_stop = stop.clone();
    let reader = tokio::spawn(async move {
        let mut seen = std::collections::BTreeSet::new();
        while !reader_stop.load(std::sync::atomic::Ordering::Relaxed) {
            let dataset = crate::helpers::stored::find_dataset(&reader_store, "swap")
                .await
                .unwrap()
                .unwrap();
            let fields = crate::helpers::stored::fields(&reader_store, dataset.version_id)
                .await
                .unwrap();
            let count = records::count(&reader_store, dataset.version_id)
                .await
                .unwrap();
            assert_eq!(count, dataset.record_count, "records of another version");
            let expected = if count == 300 { 2 } else { 3 };
            assert_eq!(fields.len(), expected, "schema of another version");
            seen.insert(count);
        }
        seen
    });
    let v2: String = (1..=5000)
        .map(|i| format!("{{\"k\":\"b{i}\",\"n\":{i},\"extra\":\"x{}\"}}\n", i % 7))
        .collect();
    let v2 = write_file(&store, "v2.ndjson", v2.as_bytes());
    import_file(&store, &v2, "swap", None, None).await.unwrap();
    // Let the reader observe the new version at least once before stopping it.
    loop {
        let dataset = crate::helpers::stored::find_dataset(&store.store, "swap")
            .await
            .unwrap()
            .unwrap();
        if dataset.record_count == 5000 {
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let seen = reader.await.unwrap();
    assert!(seen.iter().all(|c| *c == 300 || *c == 5000), "{seen:?}");

    let (new, fields) = live(&store, "swap").await;
    assert_ne!(new.version_id, old.version_id);
    assert_eq!(
        new.created_at, old.created_at,
        "a re-import keeps the creation time"
    );
    assert_eq!(fields.len(), 3);
    // The old version stays readable while retained (three versions by default), and the
    // collector keeps it; once the window leaves it out, the collector drops it.
    assert_eq!(
        records::count(&store.store, old.version_id).await.unwrap(),
        300
    );
    assert_eq!(
        gc::collect(&store.store, std::time::Duration::ZERO)
            .await
            .unwrap(),
        0
    );
    let mut narrow = store.store.clone();
    narrow.keep_versions = 1;
    assert_eq!(
        gc::collect(&narrow, std::time::Duration::ZERO)
            .await
            .unwrap(),
        1
    );
    assert!(
        !table_names(&store)
            .await
            .contains(&format!("records_v{}", old.version_id))
    );
    assert_eq!(
        records::count(&store.store, new.version_id).await.unwrap(),
        5000
    );
}

async fn remove_unpublishes(store: TestStore) {
    let path = write_file(&store, "r.csv", b"a\n1\n");
    import_file(&store, &path, "gone", None, None)
        .await
        .unwrap();
    let (dataset, _) = live(&store, "gone").await;
    assert!(catalog::remove(&store.store, "gone").await.unwrap());
    assert!(!catalog::remove(&store.store, "gone").await.unwrap());
    assert!(
        crate::helpers::stored::find_dataset(&store.store, "gone")
            .await
            .unwrap()
            .is_none()
    );
    gc::collect(&store.store, std::time::Duration::ZERO)
        .await
        .unwrap();
    assert!(
        !table_names(&store)
            .await
            .contains(&format!("records_v{}", dataset.version_id))
    );
}

async fn bad_requests_are_refused_before_loading(store: TestStore) {
    let path = write_file(&store, "x.csv", b"a\n1\n");
    let err = import_file(&store, &path, "has/slash", None, None)
        .await
        .unwrap_err();
    assert!(matches!(err, ImportError::InvalidSlug(_)), "{err}");
    let err = import_file(&store, &path, "x", None, Some("nope"))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the id field \"nope\" is not a field of the file"
    );
    let txt = write_file(&store, "x.txt", b"a\n1\n");
    let err = import_file(&store, &txt, "x", None, None)
        .await
        .unwrap_err();
    assert!(matches!(err, ImportError::UnknownFormat(_)), "{err}");
    let empty = write_file(&store, "empty.csv", b"a,b\n");
    let err = import_file(&store, &empty, "x", None, None)
        .await
        .unwrap_err();
    assert!(matches!(err, ImportError::Empty), "{err}");
    let err =
        odqs::import::schema::SchemaFile::parse(r#"{"fields":[{"name":"a","type":"float"}]}"#)
            .unwrap_err();
    assert!(err.to_string().contains("unknown type \"float\""), "{err}");
    assert!(
        crate::helpers::stored::datasets(&store.store)
            .await
            .unwrap()
            .is_empty()
    );
    assert_no_leftovers(&store).await;
}

/// Imports with a record size limit other than the default.
async fn import_limited(
    store: &TestStore,
    path: &std::path::Path,
    slug: &str,
    max_record_bytes: u64,
) -> Result<odqs::import::ImportSummary, ImportError> {
    odqs::import::import(
        &store.store,
        odqs::import::ImportRequest {
            source: odqs::import::reader::Source::File(path.to_path_buf()),
            slug: slug.to_string(),
            schema: odqs::import::schema::SchemaFile::default(),
            id_field: None,
            title: None,
            description: None,
            max_record_bytes,
            store_indexes: false,
        },
        std::sync::Arc::new(odqs::import::progress::Silent),
    )
    .await
}

/// Asserts `slug` was not published and nothing of the failed import remains.
async fn assert_not_published(store: &TestStore, slug: &str) {
    assert!(
        crate::helpers::stored::find_dataset(&store.store, slug)
            .await
            .unwrap()
            .is_none()
    );
    assert_no_leftovers(store).await;
}

/// A data column named `_id` is the identifier when the import says so, and is refused
/// otherwise, with the line and what to do: it is never silently overwritten.
async fn id_column_is_kept_or_refused(store: TestStore) {
    let path = write_file(&store, "ids.csv", b"id,_id,a\n1,x,y\n2,z,w\n");
    let refusal = "line 2 has a value in a field named \"_id\", the name odqs gives each \
                   record's identifier: to use these values as identifiers, import with \
                   --id-field _id (or \"id_field\": \"_id\" in the schema file); otherwise \
                   rename the field";
    for id_field in [Some("id"), None] {
        let err = import_file(&store, &path, "ids", None, id_field)
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), refusal, "id field {id_field:?}");
        assert_not_published(&store, "ids").await;
    }
    // The same refusal from the loading pass, when a schema lists every other column.
    let schema = r#"{"fields":[{"name":"id","type":"keyword"},{"name":"a","type":"keyword"}]}"#;
    let err = import_file(&store, &path, "ids", Some(schema), Some("id"))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), refusal);
    assert_not_published(&store, "ids").await;

    // `--id-field _id`: the column's values are the identifiers, every other column is kept.
    let summary = import_file(&store, &path, "ids", None, Some("_id"))
        .await
        .unwrap();
    assert_eq!((summary.records, summary.fields), (2, 2));
    let (dataset, fields) = live(&store, "ids").await;
    assert_eq!(dataset.id_field.as_deref(), Some("_id"));
    assert_eq!(
        types(&fields),
        vec![
            ("id".into(), FieldType::Number),
            ("a".into(), FieldType::Keyword)
        ]
    );
    assert_eq!(
        docs(&store, dataset.version_id).await,
        vec![
            json!({"_id": "x", "id": 1, "a": "y"}),
            json!({"_id": "z", "id": 2, "a": "w"})
        ]
    );
    let z = records::by_id(&store.store, dataset.version_id, "z")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(z.doc["a"], "w");
    // The schema's id_field says the same.
    import_file(&store, &path, "ids2", Some(r#"{"id_field": "_id"}"#), None)
        .await
        .unwrap();
    assert_eq!(
        live(&store, "ids2").await.0.id_field.as_deref(),
        Some("_id")
    );

    // JSON: a number becomes its string form; a value that cannot identify is refused; an
    // `_id` inside an object is an ordinary field; `null` is no value and loses nothing.
    let ndjson = write_file(
        &store,
        "ids.ndjson",
        b"{\"_id\": 7, \"a\": {\"_id\": 1}}\n{\"_id\": \"b\", \"a\": {\"_id\": 2}}\n",
    );
    import_file(&store, &ndjson, "nd", None, Some("_id"))
        .await
        .unwrap();
    let (dataset, fields) = live(&store, "nd").await;
    assert_eq!(types(&fields), vec![("a._id".into(), FieldType::Number)]);
    assert_eq!(
        docs(&store, dataset.version_id).await,
        vec![
            json!({"_id": "7", "a": {"_id": 1}}),
            json!({"_id": "b", "a": {"_id": 2}})
        ]
    );
    let object_id = write_file(
        &store,
        "obj.ndjson",
        b"{\"_id\": \"a\"}\n{\"_id\": {\"k\": 1}}\n",
    );
    let err = import_file(&store, &object_id, "obj", None, Some("_id"))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 2 field \"_id\" is the identifier and must be a string or a number, got an object"
    );
    let late = write_file(
        &store,
        "late.ndjson",
        b"{\"k\": 1, \"_id\": null}\n{\"k\": 2}\n{\"k\": 3, \"_id\": \"q\"}\n",
    );
    let err = import_file(&store, &late, "late", None, None)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("line 3 has a value in a field named \"_id\""),
        "{err}"
    );
    assert_not_published(&store, "obj").await;
    assert_not_published(&store, "late").await;
    let missing = import_file(&store, &late, "late", None, Some("_id"))
        .await
        .unwrap_err();
    assert_eq!(
        missing.to_string(),
        "line 1 has no value for the id field \"_id\""
    );
}

/// A NUL character (which PostgreSQL cannot store) is refused on both stores alike, naming the
/// line and the field, before it reaches the store; nothing is published.
async fn nul_is_refused_with_its_line(store: TestStore) {
    let csv = write_file(&store, "nul.csv", b"id,a\n1,x\n2,a\0b\n");
    let message = "line 3 field \"a\" holds a NUL character (\\0), which a store cannot keep";
    let err = import_file(&store, &csv, "nul", None, None)
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), message);
    assert_not_published(&store, "nul").await;
    // Without inference (the schema lists every column) the loading pass refuses it.
    let schema = r#"{"fields":[{"name":"id","type":"keyword"},{"name":"a","type":"text"}]}"#;
    let err = import_file(&store, &csv, "nul", Some(schema), None)
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), message);
    assert_not_published(&store, "nul").await;

    let ndjson = write_file(
        &store,
        "nul.ndjson",
        b"{\"a\": \"x\"}\n{\"b\": {\"c\": [\"ok\", \"x\\u0000\"]}}\n",
    );
    let err = import_file(&store, &ndjson, "nul", None, None)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 2 field \"b.c\" holds a NUL character (\\0), which a store cannot keep"
    );
    let json = write_file(&store, "nul.json", b"[{\"a\": 1}, {\"x\\u0000y\": 2}]");
    let err = import_file(&store, &json, "nul", None, None)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "record 2 has a field name with a NUL character (\"x\\0y\"), which a store cannot keep"
    );
    let err = import_file(
        &store,
        &json,
        "nul",
        Some(r#"{"title": "bad\u0000title"}"#),
        None,
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the schema file's title holds a NUL character (\\0), which a store cannot keep"
    );
    assert_not_published(&store, "nul").await;
}

/// A record over the size limit is refused with its line (record, for a JSON array) and the
/// limit, from the command line as from the library; a record within it is imported.
async fn oversized_record_is_refused(store: TestStore) {
    let dir = store.dir.path();
    let big = "y".repeat(2 << 20);
    let csv = write_file(
        &store,
        "big.csv",
        format!("id,a\n1,x\n2,{big}\n3,z\n").as_bytes(),
    );
    let odqs = || {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_odqs"));
        command
            .current_dir(dir)
            .env_remove("ODQS_MAX_RECORD_MB")
            .env("DATABASE_URL", &store.url);
        command
    };
    let output = odqs()
        .arg("import")
        .arg(&csv)
        .args(["--slug", "big", "--max-record-mb", "1"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).lines().last(),
        Some(
            "odqs: error: line 3 is a record of more than 1 MB, the most one record may take \
             (--max-record-mb or ODQS_MAX_RECORD_MB)"
        )
    );
    assert_not_published(&store, "big").await;
    // The environment variable sets it too, and the default (16 MB) lets the record in.
    let output = odqs()
        .arg("import")
        .arg(&csv)
        .args(["--slug", "big"])
        .env("ODQS_MAX_RECORD_MB", "1")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_not_published(&store, "big").await;
    let output = odqs()
        .arg("import")
        .arg(&csv)
        .args(["--slug", "big", "--max-record-mb", "0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let output = odqs()
        .arg("import")
        .arg(&csv)
        .args(["--slug", "big"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (dataset, _) = live(&store, "big").await;
    assert_eq!(
        docs(&store, dataset.version_id).await[1]["a"]
            .as_str()
            .map(str::len),
        Some(2 << 20)
    );

    // A line of NDJSON, and an element of a JSON array, are bounded alike.
    let limit = 1 << 20;
    let ndjson = write_file(
        &store,
        "big.ndjson",
        format!("{{\"a\": 1}}\n\n{{\"a\": \"{big}\"}}\n").as_bytes(),
    );
    let err = import_limited(&store, &ndjson, "bignd", limit)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 3 is a record of more than 1 MB, the most one record may take \
         (--max-record-mb or ODQS_MAX_RECORD_MB)"
    );
    let json = write_file(
        &store,
        "big.json",
        format!("[{{\"a\": 1}}, {{\"a\": \"{big}\"}}]").as_bytes(),
    );
    let err = import_limited(&store, &json, "bigjs", limit)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("record 2 is a record of more than 1 MB"),
        "{err}"
    );
    assert_not_published(&store, "bignd").await;
    assert_not_published(&store, "bigjs").await;
    // Just under the limit passes, in every format.
    let near = "n".repeat(limit as usize - 100);
    for (name, text) in [
        ("near.csv", format!("a\n{near}\nb\n")),
        (
            "near.ndjson",
            format!("{{\"a\": \"{near}\"}}\n{{\"a\": \"b\"}}\n"),
        ),
        (
            "near.json",
            format!("[{{\"a\": \"{near}\"}}, {{\"a\": \"b\"}}]"),
        ),
    ] {
        let path = write_file(&store, name, text.as_bytes());
        let summary = import_limited(&store, &path, "near", limit).await.unwrap();
        assert_eq!(summary.records, 2, "{name}");
    }
}

/// A dataset holds at most `MAX_FIELDS` fields, and an exact-match value or identifier at most
/// `MAX_KEY_BYTES` bytes: the widest row and the longest keys allowed fit PostgreSQL (one row
/// in a page, one key in a B-tree entry), and anything beyond is refused on both stores alike.
async fn widest_records_fit_and_wider_are_refused(store: TestStore) {
    use odqs::import::schema::{MAX_FIELDS, MAX_KEY_BYTES};
    // Each value is 23 characters, the longest PostgreSQL keeps inside the row.
    let header: Vec<String> = (0..MAX_FIELDS).map(|i| format!("f{i}")).collect();
    let values: Vec<String> = (0..MAX_FIELDS)
        .map(|i| format!("{i:04}abcdefghijklmnopqrs"))
        .collect();
    let wide = write_file(
        &store,
        "wide.csv",
        format!("{}\n{}\n", header.join(","), values.join(",")).as_bytes(),
    );
    let summary = import_file(&store, &wide, "wide", None, None)
        .await
        .unwrap();
    assert_eq!(summary.fields, MAX_FIELDS);
    let (_, fields) = live(&store, "wide").await;
    assert!(fields.iter().all(|f| f.field_type == FieldType::Keyword));

    let wider = write_file(
        &store,
        "wider.csv",
        format!("{},extra\n{},1\n", header.join(","), values.join(",")).as_bytes(),
    );
    let err = import_file(&store, &wider, "wider", None, None)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "line 1 has {} columns; a dataset holds at most {MAX_FIELDS} fields (MAX_FIELDS), so \
             that every record fits one row of the store: split the file",
            MAX_FIELDS + 1
        )
    );
    let mut objects: Vec<String> = (0..MAX_FIELDS)
        .map(|i| format!("{{\"f{i}\": 1}}"))
        .collect();
    objects.push("{\"f0\": 2, \"last\": 3}".into());
    let many = write_file(&store, "many.ndjson", objects.join("\n").as_bytes());
    let err = import_file(&store, &many, "many", None, None)
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "line {} brings the number of fields past {MAX_FIELDS}",
            MAX_FIELDS + 1
        )),
        "{err}"
    );
    // Declared as one json field in a schema file, an object with many keys is one field.
    let keys: Vec<String> = (0..MAX_FIELDS + 10)
        .map(|i| format!("\"k{i}\": {i}"))
        .collect();
    let nested = write_file(
        &store,
        "nested.ndjson",
        format!("{{\"id\": 1, \"o\": {{{}}}}}\n", keys.join(", ")).as_bytes(),
    );
    import_file(
        &store,
        &nested,
        "nested",
        Some(r#"{"fields":[{"name":"o","type":"json"}]}"#),
        None,
    )
    .await
    .unwrap();
    let err = import_file(&store, &nested, "nested2", None, None)
        .await
        .unwrap_err();
    assert!(err.to_string().starts_with("line 1 brings"), "{err}");

    // Keys: random letters, which PostgreSQL cannot compress below the B-tree's limit.
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut letters = |n: usize| -> String {
        (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (b'a' + (seed % 26) as u8) as char
            })
            .collect()
    };
    let schema = r#"{"fields":[{"name":"k","type":"keyword"},{"name":"n","type":"number"}]}"#;
    let longest = write_file(
        &store,
        "keys.csv",
        format!(
            "k,n\n{},1\n{},2\n",
            letters(MAX_KEY_BYTES),
            letters(MAX_KEY_BYTES)
        )
        .as_bytes(),
    );
    import_file(&store, &longest, "keys", Some(schema), Some("k"))
        .await
        .unwrap();
    let too_long = write_file(
        &store,
        "long.csv",
        format!("k,n\nshort,1\n{},2\n", letters(MAX_KEY_BYTES + 1)).as_bytes(),
    );
    let err = import_file(&store, &too_long, "long", Some(schema), Some("n"))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "line 3 field \"k\" holds a value of {} bytes; a keyword value holds at most \
             {MAX_KEY_BYTES} bytes (MAX_KEY_BYTES): declare the field text in a schema file",
            MAX_KEY_BYTES + 1
        )
    );
    let err = import_file(&store, &too_long, "long", Some(schema), Some("k"))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "line 3 has an identifier of {} bytes; an identifier holds at most {MAX_KEY_BYTES} \
             bytes (MAX_KEY_BYTES)",
            MAX_KEY_BYTES + 1
        )
    );
    let as_text = r#"{"fields":[{"name":"k","type":"text"}]}"#;
    import_file(&store, &too_long, "long", Some(as_text), None)
        .await
        .unwrap();
    for slug in ["wider", "many", "nested2"] {
        assert_not_published(&store, slug).await;
    }
}

/// Each import message names the line the problem is on and the problem itself.
async fn messages_name_the_right_line_and_problem(store: TestStore) {
    let refused = |name: &'static str, data: Vec<u8>, id_field: Option<&'static str>| {
        let path = write_file(&store, name, &data);
        let store = &store;
        async move {
            let err = import_file(store, &path, "msg", None, id_field)
                .await
                .unwrap_err();
            assert_not_published(store, "msg").await;
            err.to_string()
        }
    };
    // An unterminated quote: named at its line, not read silently into the next line's value
    // (which imported one record) nor as a record with too few columns.
    let err = refused("q1.csv", b"a,b\n1,\"x\n2,y\n".to_vec(), None).await;
    assert!(
        err.starts_with("line 2 opens a quoted value (\") that is never closed")
            && err.contains("(line 3)"),
        "{err}"
    );
    let err = refused("q2.csv", b"a,b\n\"x,1\ny,2\nz,3\n".to_vec(), None).await;
    assert!(err.starts_with("line 2 opens a quoted value"), "{err}");
    // A closed quote spanning lines is a value like any other; lines after it count right.
    let err = refused("q3.csv", b"a,b\n1,\"x\ny\"\n3,4,5\n".to_vec(), None).await;
    assert_eq!(err, "line 4 has 3 columns where the header has 2");
    // A truncated gzip: the line being read when the data stopped, and why.
    let mut rows = b"a,b\n".to_vec();
    for i in 0..50_000 {
        rows.extend_from_slice(format!("{i},{i}\n").as_bytes());
    }
    let gz = gzip(&rows);
    let err = refused("cut.csv.gz", gz[..gz.len() / 2].to_vec(), None).await;
    let line: u64 = err
        .strip_prefix("line ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(line > 1000 && line < 50_002, "{err}");
    assert!(err.contains("the file is truncated"), "{err}");
    // A header and no records, with an id field named: no records, not "no such field".
    let err = refused("header.csv", b"a,b\n".to_vec(), Some("a")).await;
    assert_eq!(
        err,
        "the file holds no records (a CSV file's header line is not one)"
    );
    // An object as identifier: said so, not "not a field of the file".
    let err = refused(
        "object.json",
        br#"[{"_id": {"x": 1}, "a": "1"}]"#.to_vec(),
        Some("_id"),
    )
    .await;
    assert!(
        err.starts_with("the id field \"_id\" holds objects")
            && err.contains("must be a string or a number"),
        "{err}"
    );
    // A NUL in the header is on line 1.
    let err = refused("nulhead.csv", b"a,b\0c\n1,2\n".to_vec(), None).await;
    assert!(
        err.starts_with("line 1 column 2 (\"b\\0c\") has a NUL character"),
        "{err}"
    );
    // `\r\n` line ends: the line of the 300,000th line is 300000, not 299999.
    let mut rows = b"a,n\r\n".to_vec();
    for i in 2..300_000 {
        rows.extend_from_slice(format!("k{i},{i}\r\n").as_bytes());
    }
    rows.extend_from_slice(b"k,not a number\r\n");
    let schema = r#"{"fields":[{"name":"a","type":"keyword"},{"name":"n","type":"number"}]}"#;
    let path = write_file(&store, "crlf.csv", &rows);
    let err = import_file(&store, &path, "msg", Some(schema), None)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 300000 field \"n\" expects a number, got \"not a number\""
    );
    assert_not_published(&store, "msg").await;
}

both_stores!(
    messages_name_the_right_line_and_problem,
    id_column_is_kept_or_refused,
    nul_is_refused_with_its_line,
    oversized_record_is_refused,
    widest_records_fit_and_wider_are_refused,
    csv_with_schema_gzipped,
    json_array_with_inference,
    ndjson_gzipped_with_nested_and_missing,
    duplicate_ids_are_rejected,
    malformed_line_leaves_old_version,
    reimport_replaces_atomically,
    remove_unpublishes,
    bad_requests_are_refused_before_loading,
);
