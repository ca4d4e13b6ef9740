//! In-memory indexes kept in files between runs (`ODQS_INDEX_DIR`): written once built, loaded
//! (not built) by the next run on the same store, with the same answers; a corrupt file, or
//! one of another version, is not used (the index is built again, answers unchanged); files
//! of versions no longer live are deleted; with no directory nothing is written.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use axum::http::Method;

use crate::helpers::client::{exchange, request};
use crate::helpers::{TestStore, api_token, get_with, import_file, write_file};
use query::memory::{DEFAULT_BUDGET_BYTES, IndexPolicy};
use serde_json::{Value, json};

const SCHEMA: &str = r#"{
  "title": "Cities", "id_field": "id",
  "fields": [
    {"name": "id", "type": "keyword"},
    {"name": "city", "type": "keyword"},
    {"name": "people", "type": "number"},
    {"name": "founded", "type": "date"},
    {"name": "about", "type": "text"}
  ]
}"#;

/// `n` cities, every third without a population.
fn cities(n: usize) -> String {
    let names = ["Taipei", "Tainan", "Keelung", "Hualien"];
    (0..n)
        .map(|i| {
            let name = names[i % names.len()];
            let mut record = json!({
                "id": format!("c{i:05}"),
                "city": name,
                "founded": format!("{}-01-01", 1600 + i % 300),
                "about": format!("city number {i} of {name}"),
            });
            if i % 3 != 0 {
                record["people"] = json!((i * 37 % 1001) as f64 / 4.0);
            }
            record.to_string() + "\n"
        })
        .collect()
}

async fn import(store: &TestStore, n: usize) {
    let path = write_file(store, "cities.ndjson", cities(n).as_bytes());
    import_file(store, &path, "cities", Some(SCHEMA), None)
        .await
        .expect("import");
}

/// Requests that read every column of the index.
const PATHS: &[&str] = &[
    "/api/v1/datasets/cities/records?sort=people%3C,city&per_page=7&page=3",
    "/api/v1/datasets/cities/records?city=Taipei&q=number&sort=founded%3E",
    "/api/v1/datasets/cities/records?founded%5Bgte%5D=1700-01-01&people%5Blt%5D=100",
    "/api/v1/datasets/cities/records/c00042",
    "/api/v1/datasets/cities/agg?group_by=city&field=people",
];

/// One run of the server on `store`: a request waits for its index (so the answers below are
/// the index's), kept in `dir`.
fn run(store: &TestStore, dir: Option<&Path>) -> odqs::state::AppState {
    store
        .state_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES))
        .with_index_dir(dir.map(Path::to_path_buf))
}

async fn answers(state: &odqs::state::AppState, token: &str) -> Vec<Value> {
    let router = odqs::app::router(state.clone());
    let mut out = Vec::new();
    for path in PATHS {
        let answer = get_with(&router, path, Some(token), &[]).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
        out.push(answer.body);
    }
    out
}

/// The answers of a run whose index is held (so the index gave them).
async fn indexed(state: &odqs::state::AppState, token: &str) -> Vec<Value> {
    let out = answers(state, token).await;
    assert!(state.resolver.index_bytes() > 0, "the index answered");
    out
}

/// `odqs_index_loaded{dataset="cities"}` of the run's `/metrics`.
async fn loaded(state: &odqs::state::AppState) -> Option<u8> {
    let metrics = odqs::routes::metrics_router(state.clone());
    let (_, _, body) = exchange(&metrics, request(Method::GET, "/metrics", None, &[], None)).await;
    let text = String::from_utf8_lossy(&body);
    text.lines().find_map(|line| {
        line.strip_prefix("odqs_index_loaded{dataset=\"cities\"} ")?
            .parse()
            .ok()
    })
}

/// The index files in `dir` (no temporary ones), by name.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    found.retain(|p| p.extension().is_some_and(|e| e == "idx"));
    found.sort();
    found
}

/// Waits (bounded) until `done` holds: files are written on a thread of their own.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn indexes_are_loaded_from_their_files_after_a_restart(store: TestStore) {
    import(&store, 2_000).await;
    let token = api_token(&store).await;
    let dir = store.dir.path().join("indexes");
    let store_answers = answers(&store.state_with(IndexPolicy::OFF), &token).await;

    // First run: built from the store, then written.
    let first = run(&store, Some(&dir));
    let built = indexed(&first, &token).await;
    assert_eq!(built, store_answers);
    assert_eq!(loaded(&first).await, Some(0), "built, not loaded");
    until("the index file is written", || files(&dir).len() == 1).await;
    let file = files(&dir).remove(0);
    let written = std::fs::read(&file).unwrap();

    // A restart on the same store and directory: loaded, same answers, same size.
    let second = run(&store, Some(&dir));
    assert_eq!(indexed(&second, &token).await, built);
    assert_eq!(loaded(&second).await, Some(1), "loaded, not built");
    assert_eq!(second.resolver.index_bytes(), first.resolver.index_bytes());

    // Bytes flipped in the middle of the file: refused (and deleted), built again, written again.
    let mut corrupt = written.clone();
    let middle = corrupt.len() / 2;
    corrupt[middle..middle + 4]
        .iter_mut()
        .for_each(|b| *b ^= 0xff);
    std::fs::write(&file, &corrupt).unwrap();
    let third = run(&store, Some(&dir));
    assert_eq!(indexed(&third, &token).await, built);
    assert_eq!(loaded(&third).await, Some(0), "a corrupt file is not used");
    until("the file is written again", || {
        std::fs::read(&file).is_ok_and(|bytes| bytes == written)
    })
    .await;

    // A re-import: the new version's index is built and written beside the old one's.
    import(&store, 3_000).await;
    let fourth = run(&store, Some(&dir));
    let newer = indexed(&fourth, &token).await;
    assert_eq!(
        newer,
        answers(&store.state_with(IndexPolicy::OFF), &token).await
    );
    assert_ne!(newer, built);
    until("the new version's file is written", || {
        files(&dir).len() == 2
    })
    .await;
    let new_file = files(&dir)
        .into_iter()
        .find(|f| *f != file)
        .expect("the new version's file");
    // The old version's file under the new version's name: another version, not used.
    std::fs::write(&new_file, &written).unwrap();
    let fifth = run(&store, Some(&dir));
    assert_eq!(indexed(&fifth, &token).await, newer);
    assert_eq!(
        loaded(&fifth).await,
        Some(0),
        "another version's file is not used"
    );

    // The periodic refresh deletes the files of versions no longer live.
    fifth.resolver.refresh_indexes().await.expect("refresh");
    until("the old version's file is deleted", || !file.exists()).await;
    until("the new version's file is written again", || {
        new_file.exists()
    })
    .await;
    let sixth = run(&store, Some(&dir));
    assert_eq!(indexed(&sixth, &token).await, newer);
    assert_eq!(loaded(&sixth).await, Some(1));
}

async fn without_a_directory_nothing_is_written(store: TestStore) {
    import(&store, 500).await;
    let token = api_token(&store).await;
    let off = run(&store, None);
    indexed(&off, &token).await;
    assert_eq!(loaded(&off).await, Some(0));
    off.resolver.refresh_indexes().await.expect("refresh");
    // No directory is given anywhere, so none can have been made: the store's own directory
    // holds the store alone (and the imported file).
    let mut names: Vec<String> = std::fs::read_dir(store.dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with("odqs.db"))
        .collect();
    names.sort();
    assert_eq!(names, ["cities.ndjson"]);
}

both_stores!(
    indexes_are_loaded_from_their_files_after_a_restart,
    without_a_directory_nothing_is_written
);
