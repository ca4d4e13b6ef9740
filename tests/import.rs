//! `odqs import` on both stores: every input format, gzip, inference, dotted fields, the id
//! field, and the failures that must leave the store as it was.

mod common;

use common::{TestStore, gzip, import_file, write_file};
use entity::FieldType;
use odqs::import::ImportError;
use odqs::store::{catalog, gc, records};
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
    let dataset = catalog::find(&store.store, slug)
        .await
        .unwrap()
        .expect("published");
    let fields = catalog::fields(&store.store, dataset.version_id)
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
    assert!(catalog::find(&store.store, "dup").await.unwrap().is_none());
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
        common::Kind::Sqlite => "SELECT name FROM sqlite_master WHERE type = 'table'",
        common::Kind::Postgres => {
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
            let dataset = catalog::find(&reader_store, "swap").await.unwrap().unwrap();
            let fields = catalog::fields(&reader_store, dataset.version_id)
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
        let dataset = catalog::find(&store.store, "swap").await.unwrap().unwrap();
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
    // The old version stays readable for in-flight requests, then the collector drops it.
    assert_eq!(
        records::count(&store.store, old.version_id).await.unwrap(),
        300
    );
    assert_eq!(
        gc::collect(&store.store, std::time::Duration::ZERO)
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
    assert!(catalog::find(&store.store, "gone").await.unwrap().is_none());
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
    assert!(catalog::list(&store.store).await.unwrap().is_empty());
    assert_no_leftovers(&store).await;
}

both_stores!(
    csv_with_schema_gzipped,
    json_array_with_inference,
    ndjson_gzipped_with_nested_and_missing,
    duplicate_ids_are_rejected,
    malformed_line_leaves_old_version,
    reimport_replaces_atomically,
    remove_unpublishes,
    bad_requests_are_refused_before_loading,
);
