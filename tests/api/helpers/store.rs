//! Test fixtures: a real store on a fresh SQLite file or a fresh PostgreSQL database, and a
//! macro that runs one test body on both.
//!
//! PostgreSQL is the scratch cluster of [`super::pg`] (or the server `ODQS_TEST_PG_URL` names),
//! used only to create and drop one scratch database per test. It is never skipped: without
//! PostgreSQL's programs, or with an `ODQS_TEST_PG_URL` that does not answer, the run stops with
//! one line saying so.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use odqs::config::StoreUrl;
use odqs::import::{self, ImportRequest, ImportSummary, reader::Source, schema::SchemaFile};
use odqs::store::Store;
use query::memory::{DEFAULT_BUDGET_BYTES, IndexPolicy};
use sqlx::Connection;

/// The two stores every behaviour is tested on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
}

/// A migrated store that cleans up after itself.
pub struct TestStore {
    pub kind: Kind,
    pub store: Store,
    /// The `DATABASE_URL` of this store, for running the binary against it.
    pub url: String,
    pub dir: tempfile::TempDir,
    pg_database: Option<String>,
    /// The admin URL the scratch database was made with, to drop it.
    pg_admin: String,
}

/// The admin URL used to create scratch databases.
pub fn pg_admin_url() -> String {
    super::pg::admin_url()
}

pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let base = base.rsplit_once('/').map(|(b, _)| b).unwrap_or(base);
    format!("{base}/{database}{query}")
}

impl TestStore {
    /// A fresh, migrated store of `kind`.
    pub async fn new(kind: Kind) -> Self {
        let store = Self::unmigrated(kind).await;
        store.store.migrate().await.expect("migrate");
        store
    }

    /// A fresh store of `kind` with nothing in it, not even the migrations' tables.
    pub async fn unmigrated(kind: Kind) -> Self {
        // SQLite needs no server: the scratch cluster starts with the first PostgreSQL test.
        let admin = match kind {
            Kind::Sqlite => String::new(),
            Kind::Postgres => pg_admin_url(),
        };
        Self::unmigrated_at(kind, &admin).await
    }

    /// A fresh, migrated store of `kind`; on PostgreSQL, a scratch database made through
    /// `admin` (another cluster than the shared one).
    pub async fn new_at(kind: Kind, admin: &str) -> Self {
        let store = Self::unmigrated_at(kind, admin).await;
        store.store.migrate().await.expect("migrate");
        store
    }

    async fn unmigrated_at(kind: Kind, admin: &str) -> Self {
        let admin = admin.to_string();
        let dir = tempfile::tempdir().expect("temp dir");
        let (url, pg_database) = match kind {
            Kind::Sqlite => (
                format!("sqlite://{}", dir.path().join("odqs.db").display()),
                None,
            ),
            Kind::Postgres => {
                let name = format!("odqs_t_{:016x}", rand_suffix());
                let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap_or_else(|e| {
                    panic!("PostgreSQL is required for the tests and is not reachable at {admin}: {e}")
                });
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
                    .execute(&mut conn)
                    .await
                    .expect("create scratch database");
                (with_database(&admin, &name), Some(name))
            }
        };
        let store = Store::connect(&StoreUrl::parse(&url).unwrap())
            .await
            .expect("connect");
        TestStore {
            kind,
            store,
            url,
            dir,
            pg_database,
            pg_admin: admin,
        }
    }
}

impl TestStore {
    /// The scratch PostgreSQL database's name (`None` on SQLite).
    pub fn pg_database(&self) -> Option<&str> {
        self.pg_database.as_deref()
    }

    /// The HTTP application over this store, as `odqs serve` builds it, except that a
    /// request waits for its dataset's in-memory index instead of being answered by the store
    /// while the index is built: every test knows which path answers.
    pub fn router(&self) -> axum::Router {
        self.router_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES))
    }

    /// The HTTP application with in-memory indexes under `policy` (`IndexPolicy::OFF`: the
    /// store answers everything).
    pub fn router_with(&self, policy: IndexPolicy) -> axum::Router {
        odqs::app::router(self.state_with(policy))
    }

    /// The application state with in-memory indexes under `policy`.
    pub fn state_with(&self, policy: IndexPolicy) -> odqs::state::AppState {
        odqs::state::AppState::new(self.store.clone(), "http://odqs.test").with_index_policy(policy)
    }
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    h.finish()
}

impl Drop for TestStore {
    fn drop(&mut self) {
        let Some(name) = self.pg_database.take() else {
            return;
        };
        let admin = self.pg_admin.clone();
        // Drop runs outside any runtime we may block, so the clean-up gets its own thread.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                if let Ok(mut conn) = sqlx::PgConnection::connect(&admin).await {
                    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                        "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                    )))
                    .execute(&mut conn)
                    .await;
                }
            });
        })
        .join();
    }
}

/// Marks tests of tier 2: those that drive tools from outside Cargo (Chromium, Node.js
/// packages, Python clients in a venv, Docker, HAProxy, network namespaces). The README's test
/// command lists them as ignored, with this reason; `bash tests/tier2.sh` installs the tools
/// and runs them (`cargo test -- --ignored`), failing when one is missing.
macro_rules! tier2 {
    ($($item:item)*) => {$(
        #[ignore = "tier 2, tools outside Cargo: run `bash tests/tier2.sh`"]
        $item
    )*};
}

/// Runs `async fn $name(store: TestStore)` on SQLite and on PostgreSQL; `tier2: names…` makes
/// them tests of tier 2 (see [`tier2!`]).
macro_rules! both_stores {
    (tier2: $($name:ident),* $(,)?) => {$(
        mod $name {
            tier2! {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    super::$name($crate::helpers::TestStore::new($crate::helpers::Kind::Sqlite).await).await
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    super::$name($crate::helpers::TestStore::new($crate::helpers::Kind::Postgres).await).await
                }
            }
        }
    )*};
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name($crate::helpers::TestStore::new($crate::helpers::Kind::Sqlite).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name($crate::helpers::TestStore::new($crate::helpers::Kind::Postgres).await).await
            }
        }
    )*};
}

/// A file of the repository's test data (`testdata/`: the real flights and scenic-spot
/// datasets with their schema files; see `testdata/README.md`).
pub fn test_data(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(file)
}

/// Writes `contents` to `name` in the store's temp dir and returns the path.
pub fn write_file(store: &TestStore, name: &str, contents: &[u8]) -> PathBuf {
    let path = store.dir.path().join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// Gzips bytes.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

/// Imports a file with an optional schema JSON text.
pub async fn import_file(
    store: &TestStore,
    path: &Path,
    slug: &str,
    schema: Option<&str>,
    id_field: Option<&str>,
) -> Result<ImportSummary, import::ImportError> {
    import_file_with(store, path, slug, schema, id_field, false).await
}

/// [`import_file`], with the store's column indexes (`odqs import --store-indexes`) or without.
pub async fn import_file_with(
    store: &TestStore,
    path: &Path,
    slug: &str,
    schema: Option<&str>,
    id_field: Option<&str>,
    store_indexes: bool,
) -> Result<ImportSummary, import::ImportError> {
    let schema = match schema {
        Some(text) => SchemaFile::parse(text)?,
        None => SchemaFile::default(),
    };
    import::import(
        &store.store,
        ImportRequest {
            source: Source::File(path.to_path_buf()),
            slug: slug.to_string(),
            schema,
            id_field: id_field.map(str::to_string),
            title: None,
            description: None,
            max_record_bytes: import::DEFAULT_MAX_RECORD_MB * import::MIB,
            store_indexes,
        },
        Arc::new(import::progress::Silent),
    )
    .await
}

/// A long-lived API token for a test account on `store`.
pub async fn api_token(store: &TestStore) -> String {
    scoped_token(store, "read export").await
}

/// A long-lived API token of `scope` for a test account on `store`.
pub async fn scoped_token(store: &TestStore, scope: &str) -> String {
    let user = odqs::auth::token::find_or_create_user(&store.store, "tester@example.org")
        .await
        .unwrap();
    let scope = query::Scope::parse(scope).unwrap();
    let (secret, _) = odqs::auth::token::mint(&store.store, user.id, "tests", "cli", &scope, None)
        .await
        .unwrap();
    secret.expose().to_string()
}

/// Loads the bundled demo datasets (flights, tw-scenic-spots) into `store`.
pub async fn load_demo(store: &TestStore) {
    odqs::demo::load_if_empty(&store.store).await.unwrap();
}

/// odqs on a real socket (a free port on 127.0.0.1), as `odqs serve` runs it, with the public
/// URL it is reached at; sending on the channel stops it.
pub async fn serve(store: &TestStore) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let site = format!("http://{}", listener.local_addr().unwrap());
    let state = odqs::state::AppState::new(store.store.clone(), &site);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(odqs::app::serve(state, listener, async {
        let _ = stopped.await;
    }));
    (site, stop)
}
