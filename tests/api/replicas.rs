//! Read replicas (`ODQS_READ_DATABASE_URL`) against a real PostgreSQL streaming replica: a
//! scratch primary and a `pg_basebackup -R` replica of it, made for this test process with the
//! machine's PostgreSQL programs (`helpers::pg`), and stopped when it ends.
//!
//! Every answer read through a replica is compared byte for byte with the primary's own answer
//! to the same request; the resolver's counters say which store answered.

use std::sync::OnceLock;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use odqs::store::Store;
use query::memory::{DEFAULT_BUDGET_BYTES, IndexPolicy};
use sqlx::Connection;

use axum::http::Method;

use crate::helpers::client::{exchange, request};
use crate::helpers::pg::Cluster;
use crate::helpers::*;

/// The pair is one cluster: a test that pauses its replay must not run beside another.
static PAIR: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// This process's primary and its replica, started on first use.
fn pair() -> &'static (Cluster, Cluster) {
    static CLUSTERS: OnceLock<(Cluster, Cluster)> = OnceLock::new();
    CLUSTERS.get_or_init(|| {
        let primary = Cluster::start("wal_level = replica\n");
        let replica = Cluster::replica_of(&primary);
        (primary, replica)
    })
}

fn primary_admin() -> String {
    pair().0.url()
}

fn replica_admin() -> String {
    pair().1.url()
}

/// How long a replica may take to replay what the primary wrote (it takes milliseconds).
const REPLAY_DEADLINE: Duration = Duration::from_secs(30);

/// A scratch database on the primary, migrated, and its URL on the replica once the replica
/// has it.
async fn scratch_pair() -> (TestStore, String) {
    let admin = tokio::task::spawn_blocking(primary_admin).await.unwrap();
    let store = TestStore::new_at(Kind::Postgres, &admin).await;
    let replica = with_database(&replica_admin(), store.pg_database().unwrap());
    let deadline = Instant::now() + REPLAY_DEADLINE;
    loop {
        if let Ok(mut conn) = sqlx::PgConnection::connect(&replica).await
            && sqlx::query("SELECT 1 FROM seaql_migrations LIMIT 1")
                .fetch_optional(&mut conn)
                .await
                .is_ok_and(|row| row.is_some())
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the replica {} has not replayed the scratch database within 30 s",
            replica_admin()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (store, replica)
}

/// The application over `store` reading from `replicas` too.
fn app_with(store: &TestStore, replicas: &[String], policy: IndexPolicy) -> odqs::state::AppState {
    let replicas = replicas
        .iter()
        .map(|url| (url.clone(), Store::connect_replica(url).unwrap()))
        .collect();
    store.state_with(policy).with_replicas(replicas)
}

/// A GET with a token: status and body.
async fn get(router: &axum::Router, path: &str, token: &str) -> (u16, Vec<u8>) {
    let (status, _, body) =
        exchange(router, request(Method::GET, path, Some(token), &[], None)).await;
    (status, body.to_vec())
}

/// Reads answered so far by (replica, primary).
fn answered(state: &odqs::state::AppState) -> (u64, u64) {
    let a = &state.resolver.replicas().answered;
    (
        a.replica.load(Ordering::SeqCst),
        a.primary.load(Ordering::SeqCst),
    )
}

/// SQL run on the replica's admin database.
async fn on_replica(sql: &str) {
    let mut conn = sqlx::PgConnection::connect(&replica_admin()).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
        .execute(&mut conn)
        .await
        .unwrap();
}

/// Resumes the replica's replay when dropped, so a failing test leaves it replaying.
struct ReplayPaused;

impl ReplayPaused {
    async fn start() -> Self {
        on_replica("SELECT pg_wal_replay_pause()").await;
        ReplayPaused
    }
}

impl Drop for ReplayPaused {
    fn drop(&mut self) {
        let url = replica_admin();
        let _ = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async move {
                    if let Ok(mut conn) = sqlx::PgConnection::connect(&url).await {
                        let _ = sqlx::query("SELECT pg_wal_replay_resume()")
                            .execute(&mut conn)
                            .await;
                    }
                });
        })
        .join();
    }
}

const VERSION_1: &str = "id,name,score\n1,alpha,3\n2,beta,5\n3,gamma,-1\n";
const VERSION_2: &str = "id,name,score\n1,alpha,4\n2,beta,5\n4,delta,9\n5,epsilon,0\n";

/// The requests compared: a page (with its count), a sorted filter, a record, an agg, an
/// export.
const PATHS: &[&str] = &[
    "/api/v1/datasets/towns/records",
    "/api/v1/datasets/towns/records?score[gte]=0&sort=score%3E",
    "/api/v1/datasets/towns/records/2",
    "/api/v1/datasets/towns/agg?group_by=name&field=score",
    "/api/v1/datasets/towns/export?format=csv",
];

async fn import(store: &TestStore, name: &str, csv: &str) {
    let path = write_file(store, name, csv.as_bytes());
    import_file(store, &path, "towns", None, Some("id"))
        .await
        .unwrap();
}

/// Asks every path of [`PATHS`] of `router` and of the primary alone: the same bytes.
async fn same_answers(router: &axum::Router, primary: &axum::Router, token: &str) {
    for path in PATHS {
        let got = get(router, path, token).await;
        let want = get(primary, path, token).await;
        assert_eq!(got.0, 200, "{path}: {}", String::from_utf8_lossy(&got.1));
        assert_eq!(
            String::from_utf8_lossy(&got.1),
            String::from_utf8_lossy(&want.1),
            "{path}"
        );
    }
}

/// Polls until the replica answers reads of the live version, within [`REPLAY_DEADLINE`].
async fn until_replica_answers(state: &odqs::state::AppState, router: &axum::Router, token: &str) {
    let deadline = Instant::now() + REPLAY_DEADLINE;
    loop {
        state.resolver.replicas().check().await;
        let before = answered(state).0;
        get(router, PATHS[0], token).await;
        if answered(state).0 > before {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the replica did not answer within 30 s: {:?}",
            state.resolver.replicas().health()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An application with a waiting index whose build read the replica, within
/// [`REPLAY_DEADLINE`]. A fresh application notes the primary's WAL position at its first read;
/// anything the primary's cluster writes between the check and that read (a standby snapshot,
/// a checkpoint) puts the mark past what the replica has replayed, and that build reads the
/// primary, rightly. So each try is a fresh application, checked, then asked once.
async fn until_index_built_from_replica(
    store: &TestStore,
    replica: &str,
    token: &str,
) -> odqs::state::AppState {
    let deadline = Instant::now() + REPLAY_DEADLINE;
    loop {
        let indexed = app_with(
            store,
            &[replica.to_string()],
            IndexPolicy::waiting(DEFAULT_BUDGET_BYTES),
        );
        indexed.resolver.replicas().check().await;
        let router = odqs::app::router(indexed.clone());
        let (status, _) = get(&router, PATHS[0], token).await;
        assert_eq!(status, 200);
        if answered(&indexed).0 > 0 {
            return indexed;
        }
        assert!(
            Instant::now() < deadline,
            "the index was not built from the replica within 30 s: {:?}",
            indexed.resolver.replicas().health()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_answers_the_versions_it_has_replayed_and_the_primary_the_rest() {
    let _pair = PAIR.lock().await;
    let (store, replica) = scratch_pair().await;
    import(&store, "v1.csv", VERSION_1).await;
    let token = api_token(&store).await;
    let state = app_with(&store, std::slice::from_ref(&replica), IndexPolicy::OFF);
    let router = odqs::app::router(state.clone());
    let primary = store.router_with(IndexPolicy::OFF);

    // Unchecked, the replica is not read.
    assert_eq!(state.resolver.replicas().health()[0].word(), "unknown");
    same_answers(&router, &primary, &token).await;
    assert_eq!(answered(&state).0, 0, "an unchecked replica answered");

    // Checked and replayed: it answers every read of records, with the primary's bytes.
    until_replica_answers(&state, &router, &token).await;
    let (replica_before, primary_before) = answered(&state);
    same_answers(&router, &primary, &token).await;
    let (replica_after, primary_after) = answered(&state);
    assert!(
        replica_after >= replica_before + PATHS.len() as u64,
        "{replica_before} → {replica_after}"
    );
    assert_eq!(
        primary_after, primary_before,
        "the primary answered a read a replica could"
    );
    let (status, body) = get(&router, "/readyz", &token).await;
    assert_eq!(status, 200);
    let ready: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(ready["replicas"], serde_json::json!(["up"]), "{ready}");

    // A version the replica has not replayed: the primary answers it, never the old one.
    {
        let _paused = ReplayPaused::start().await;
        import(&store, "v2.csv", VERSION_2).await;
        state.resolver.replicas().check().await;
        let (replica_before, primary_before) = answered(&state);
        same_answers(&router, &primary, &token).await;
        let (replica_after, primary_after) = answered(&state);
        assert_eq!(
            replica_after, replica_before,
            "a replica answered a version it lacks"
        );
        assert!(primary_after > primary_before);
        let (_, page) = get(&router, PATHS[0], &token).await;
        let page: serde_json::Value = serde_json::from_slice(&page).unwrap();
        assert_eq!(page["total"], 4, "{page}");
    }
    // Replayed again: the replica answers the new version.
    until_replica_answers(&state, &router, &token).await;
    same_answers(&router, &primary, &token).await;

    // The replica's connections cut: every read still answers, with the primary's bytes.
    let database = store.pg_database().unwrap();
    on_replica(&format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = '{database}' AND pid <> pg_backend_pid()"
    ))
    .await;
    same_answers(&router, &primary, &token).await;

    // The index built from the replica answers as the primary's store does.
    let indexed = until_index_built_from_replica(&store, &replica, &token).await;
    let indexed_router = odqs::app::router(indexed.clone());
    same_answers(&indexed_router, &primary, &token).await;
    assert!(indexed.resolver.index_bytes() > 0, "no index was built");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_not_a_replica_of_the_store_is_never_read() {
    let _pair = PAIR.lock().await;
    let (store, _replica) = scratch_pair().await;
    import(&store, "v1.csv", VERSION_1).await;
    let token = api_token(&store).await;
    let closed = {
        // A port nothing listens on: bound, then let go.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        format!("postgres://postgres@127.0.0.1:{port}/postgres")
    };
    let not_replicas = [
        // The primary itself.
        store.url.clone(),
        // Another database on the replica.
        replica_admin(),
        // Another cluster altogether (the tests' own PostgreSQL).
        pg_admin_url(),
        // Nothing at all.
        closed,
    ];
    let state = app_with(&store, &not_replicas, IndexPolicy::OFF);
    state.resolver.replicas().check().await;
    let words: Vec<&str> = state
        .resolver
        .replicas()
        .health()
        .iter()
        .map(|h| h.word())
        .collect();
    assert_eq!(words, ["refused", "refused", "refused", "down"]);
    let router = odqs::app::router(state.clone());
    let primary = store.router_with(IndexPolicy::OFF);
    same_answers(&router, &primary, &token).await;
    assert_eq!(
        answered(&state).0,
        0,
        "something that is not a replica answered"
    );
    let (status, body) = get(&router, "/readyz", &token).await;
    assert_eq!(status, 200, "the primary answers, so the instance is ready");
    let ready: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        ready["replicas"],
        serde_json::json!(["refused", "refused", "refused", "down"])
    );
}
