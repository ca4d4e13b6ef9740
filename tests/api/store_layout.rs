//! How the store keeps versions as the catalog grows: on SQLite each version's tables are in a
//! file of their own, so the store's own schema does not grow with the datasets; a killed
//! import leaves no half dataset and no orphan tables once the garbage collector has run.

use std::time::{Duration, Instant};

use entity::dataset_version;
use odqs::store::gc;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Statement};

use crate::helpers::stored::{find_dataset, records_tables};
use crate::helpers::{Kind, TestStore, import_file, write_file};

/// Objects in the store's own SQLite schema (tables, indexes, triggers).
async fn schema_objects(store: &TestStore) -> i64 {
    let row = store
        .store
        .db
        .query_one_raw(Statement::from_string(
            store.store.backend(),
            "SELECT COUNT(*) FROM sqlite_schema",
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index(0).unwrap()
}

/// Each dataset's version is a file beside the store's; the store's own schema is the same
/// after the tenth import as after the first, and a removed dataset's file goes with it.
async fn versions_are_files_of_their_own(store: TestStore) {
    let csv = write_file(&store, "small.csv", b"id,name\n1,a\n2,b\n");
    import_file(&store, &csv, "d0", None, Some("id"))
        .await
        .unwrap();
    let objects = schema_objects(&store).await;
    for n in 1..10 {
        import_file(&store, &csv, &format!("d{n}"), None, Some("id"))
            .await
            .unwrap();
    }
    assert_eq!(schema_objects(&store).await, objects);
    let mut live = Vec::new();
    for n in 0..10 {
        let dataset = find_dataset(&store.store, &format!("d{n}")).await.unwrap();
        let version_id = dataset.unwrap().version_id;
        let file = store.store.version_file(version_id).unwrap();
        assert!(file.is_file(), "{}", file.display());
        live.push(entity::record::records_table(version_id));
    }
    live.sort();
    assert_eq!(records_tables(&store.store).await, live);
}

/// An `odqs import` killed while it loads leaves a loading version that the next collection
/// removes at once, with its tables (its file on SQLite) and its hold: the store lists the
/// same tables as before it started, and the dataset was never published.
async fn a_killed_import_leaves_nothing_behind(store: TestStore) {
    let small = write_file(&store, "small.csv", b"id,name\n1,a\n2,b\n");
    import_file(&store, &small, "kept", None, Some("id"))
        .await
        .unwrap();
    let before = records_tables(&store.store).await;
    let (large, schema) = large_file(&store);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_odqs"))
        .arg("import")
        .arg(&large)
        .args(["--slug", "large", "--schema"])
        .arg(&schema)
        .env("DATABASE_URL", &store.url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !loading_and_held(&store).await {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the import ended before it could be killed"
        );
        assert!(
            Instant::now() < deadline,
            "the import never started loading"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // PostgreSQL lets go of the session's lock once its backend sees the client gone.
    while gc::collect_due(&store.store, gc::RETIRED_GRACE)
        .await
        .unwrap()
        == 0
    {
        assert!(
            Instant::now() < deadline,
            "the killed import's version stayed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let left = dataset_version::Entity::find()
        .filter(dataset_version::Column::Slug.eq("large"))
        .all(&store.store.db)
        .await
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
    assert!(find_dataset(&store.store, "large").await.unwrap().is_none());
    assert_eq!(records_tables(&store.store).await, before);
    if store.kind == Kind::Sqlite {
        let kept = find_dataset(&store.store, "kept").await.unwrap().unwrap();
        let file = store.store.version_file(kept.version_id).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(file.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, [format!("v{}.sqlite", kept.version_id)]);
    }
}

/// A CSV file whose import takes long enough to be caught loading, and a schema that lists
/// its fields (so no inference pass comes before the load).
fn large_file(store: &TestStore) -> (std::path::PathBuf, std::path::PathBuf) {
    let mut csv = String::from("id,word,amount\n");
    for i in 0..600_000 {
        csv.push_str(&format!("{i},word{},{i}.5\n", i % 997));
    }
    let schema = r#"{"id_field": "id", "fields": [{"name": "id", "type": "keyword"},
        {"name": "word", "type": "text"}, {"name": "amount", "type": "number"}]}"#;
    (
        write_file(store, "large.csv", csv.as_bytes()),
        write_file(store, "large.schema.json", schema.as_bytes()),
    )
}

/// Whether the `large` import's version is loading and held (on SQLite, its lock file is in
/// place: the hold is taken just after the row is written).
async fn loading_and_held(store: &TestStore) -> bool {
    let loading = dataset_version::Entity::find()
        .filter(dataset_version::Column::Slug.eq("large"))
        .filter(dataset_version::Column::State.eq(dataset_version::STATE_LOADING))
        .one(&store.store.db)
        .await
        .unwrap();
    let Some(version) = loading else {
        return false;
    };
    match store.store.version_file(version.id) {
        Some(file) => file.with_extension("lock").is_file(),
        None => true,
    }
}

both_stores!(a_killed_import_leaves_nothing_behind);

/// Version files are SQLite's layout; PostgreSQL keeps tables in one database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_are_files_of_their_own_on_sqlite() {
    versions_are_files_of_their_own(TestStore::new(Kind::Sqlite).await).await
}

/// A small file on PostgreSQL: its tables have no TOAST table when every row fits a page, no
/// index when they fit a few pages, and hash indexes, not B-trees (whose builds are synced to
/// disk), when they are larger; a small file with a value larger than a page (a long text, so
/// in both tables) still loads, with TOAST. All answer their records by id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_loads_on_postgres_build_no_b_tree() {
    let store = TestStore::new(Kind::Postgres).await;
    let long = "x".repeat(20_000);
    let mut larger = String::from("id,name\n");
    for i in 1..=3000 {
        larger.push_str(&format!("{i},the name of record {i}\n"));
    }
    let files = [
        ("tiny", "id,name\n1,a\n2,b\n".to_string()),
        ("long", format!("id,name\n1,a\n2,{long}\n")),
        ("larger", larger),
    ];
    for (slug, csv) in &files {
        let path = write_file(&store, &format!("{slug}.csv"), csv.as_bytes());
        import_file(&store, &path, slug, None, Some("id"))
            .await
            .unwrap();
    }
    let router = store.router_with(query::memory::IndexPolicy::OFF);
    let token = crate::helpers::api_token(&store).await;
    let no_index = || None;
    for (slug, toast, [records_methods, texts_methods], name) in [
        ("tiny", false, [no_index(), no_index()], "b".to_string()),
        ("long", true, [no_index(), no_index()], long.clone()),
        (
            "larger",
            false,
            [Some("hash".to_string()), Some("gin,hash".to_string())],
            "the name of record 2".to_string(),
        ),
    ] {
        let version = find_dataset(&store.store, slug)
            .await
            .unwrap()
            .unwrap()
            .version_id;
        let records = entity::record::records_table(version);
        let texts = entity::record::text_table(version);
        let sql = format!(
            "SELECT c.relname, c.reltoastrelid <> 0 AS toast, \
             (SELECT string_agg(DISTINCT am.amname, ',') FROM pg_index i \
              JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am am ON am.oid = ic.relam \
              WHERE i.indrelid = c.oid) AS methods \
             FROM pg_class c WHERE c.relname IN ('{records}', '{texts}') ORDER BY c.relname"
        );
        let rows = store
            .store
            .db
            .query_all_raw(Statement::from_string(store.store.backend(), sql))
            .await
            .unwrap();
        let found: Vec<(String, bool, Option<String>)> = rows
            .iter()
            .map(|row| {
                (
                    row.try_get::<String>("", "relname").unwrap(),
                    row.try_get::<bool>("", "toast").unwrap(),
                    row.try_get::<Option<String>>("", "methods").unwrap(),
                )
            })
            .collect();
        let text_toast = toast && slug == "long";
        assert_eq!(
            found,
            [
                (records.clone(), toast, records_methods),
                (texts, text_toast, texts_methods),
            ],
            "{slug}"
        );
        let path = format!("/api/v1/datasets/{slug}/records/2");
        let answer = crate::helpers::get_with(&router, &path, Some(&token), &[]).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
        assert_eq!(answer.body["name"], name.as_str(), "{slug}");
        let search = format!("/api/v1/datasets/{slug}/records?q=me%20of%20record%202&per_page=1");
        let answer = crate::helpers::get_with(&router, &search, Some(&token), &[]).await;
        assert_eq!(answer.status, 200, "{search}: {}", answer.body);
    }
}

/// A killed import's server session may still be creating its tables when the collector
/// drops the version: the collector removes the row first, so it waits for the session that
/// holds the row, and then drops the tables that session made. No table outlives its row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_version_waits_for_its_tables_being_made() {
    use sea_orm::{ActiveModelTrait, Set};
    use sqlx::Connection;

    let store = TestStore::new(Kind::Postgres).await;
    let version = dataset_version::ActiveModel {
        slug: Set("made-late".into()),
        state: Set(dataset_version::STATE_LOADING.into()),
        record_count: Set(0),
        created_at: Set(time::OffsetDateTime::now_utc()),
        retired_at: Set(None),
        ..Default::default()
    }
    .insert(&store.store.db)
    .await
    .unwrap();
    let table = entity::record::records_table(version.id);
    // The import's session: the row held, the table made, not yet committed.
    let mut import = sqlx::PgConnection::connect(&store.url).await.unwrap();
    let exec = |sql: String| sqlx::query(sqlx::AssertSqlSafe(sql));
    exec("BEGIN".into()).execute(&mut import).await.unwrap();
    exec(format!(
        "SELECT 1 FROM dataset_versions WHERE id = {} FOR UPDATE",
        version.id
    ))
    .execute(&mut import)
    .await
    .unwrap();
    exec(format!("CREATE TABLE \"{table}\" (pos bigint)"))
        .execute(&mut import)
        .await
        .unwrap();
    let collector = {
        let db = store.store.clone();
        tokio::spawn(async move { gc::drop_version(&db, version.id).await })
    };
    // The collector waits on the row's lock.
    let waiting = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = '{}' AND wait_event_type = 'Lock'",
        store.pg_database().unwrap()
    );
    let mut admin = sqlx::PgConnection::connect(&store.url).await.unwrap();
    while sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(waiting.clone()))
        .fetch_one(&mut admin)
        .await
        .unwrap()
        == 0
    {
        assert!(!collector.is_finished(), "the collector did not wait");
        tokio::task::yield_now().await;
    }
    exec("COMMIT".into()).execute(&mut import).await.unwrap();
    collector.await.unwrap().unwrap();
    assert!(!records_tables(&store.store).await.contains(&table));
    assert!(
        dataset_version::Entity::find_by_id(version.id)
            .one(&store.store.db)
            .await
            .unwrap()
            .is_none()
    );
}
