//! Where a version's records are on an SQLite store: in a file of their own
//! ([`entity::record::version_file`]), or in the store's file for versions imported before
//! there were version files. A version never changes once loaded, so its file is read
//! read-only and immutable (no locks, no WAL); the files opened last stay open, the others are
//! closed as newer ones are opened.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sea_orm::{DatabaseBackend, DatabaseConnection};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};

use super::direct::DirectSqlite;

/// Version files kept open at once (each with its idle connections).
const OPEN_FILES: usize = 64;
/// Connections of one version file's pool: reads of one version at once are few.
const FILE_CONNECTIONS: u32 = 4;
/// How long a version file's idle pooled connection stays open.
const FILE_IDLE: Duration = Duration::from_secs(60);

/// The version files of one SQLite store and the readers open on them.
#[derive(Debug, Default)]
pub(crate) struct VersionFiles {
    /// The store's file; `None` on PostgreSQL or an SQLite store held in memory, where every
    /// version is in the store.
    store_file: Option<PathBuf>,
    /// Direct reads of the store's file, for versions in it.
    in_store: Option<Arc<DirectSqlite>>,
    open: Mutex<Open>,
}

/// The files open, by version, oldest opened first, and the versions found to have none.
#[derive(Debug, Default)]
struct Open {
    by_version: HashMap<i64, Arc<Opened>>,
    order: VecDeque<i64>,
    /// Versions imported before version files: they never get one, so the disk is asked once.
    in_store: HashSet<i64>,
}

/// One version file's readers: direct reads, and a pool for statements through sqlx, opened
/// when first needed.
#[derive(Debug)]
struct Opened {
    path: PathBuf,
    direct: Arc<DirectSqlite>,
    pool: tokio::sync::OnceCell<DatabaseConnection>,
}

impl VersionFiles {
    /// The version files of the store `db` is connected to.
    pub(crate) fn of(db: &DatabaseConnection) -> Self {
        if db.get_database_backend() != DatabaseBackend::Sqlite {
            return VersionFiles::default();
        }
        let path = db
            .get_sqlite_connection_pool()
            .connect_options()
            .get_filename()
            .to_path_buf();
        let in_store = DirectSqlite::new(&path, false).map(Arc::new);
        VersionFiles {
            store_file: in_store.is_some().then_some(path),
            in_store,
            open: Mutex::default(),
        }
    }

    /// Direct reads of version `version_id` on an SQLite file: its own file, else the store's.
    pub(crate) fn direct(&self, version_id: i64) -> Option<Arc<DirectSqlite>> {
        match self.opened(version_id) {
            Some(opened) => Some(opened.direct.clone()),
            None => self.in_store.clone(),
        }
    }

    /// A connection on version `version_id`'s own file; `None` when it is in the store.
    pub(crate) async fn db(&self, version_id: i64) -> Option<DatabaseConnection> {
        let opened = self.opened(version_id)?;
        let pool = opened
            .pool
            .get_or_init(|| async { read_pool(&opened.path) })
            .await;
        Some(pool.clone())
    }

    /// The readers of version `version_id`'s own file, opened now if they are not yet;
    /// `None` when the version has no file of its own.
    fn opened(&self, version_id: i64) -> Option<Arc<Opened>> {
        let store_file = self.store_file.as_deref()?;
        {
            let open = self.open_lock();
            if let Some(found) = open.by_version.get(&version_id) {
                return Some(found.clone());
            }
            if open.in_store.contains(&version_id) {
                return None;
            }
        }
        let path = entity::record::version_file(store_file, version_id);
        let Some(direct) = DirectSqlite::new(&path, true) else {
            self.open_lock().in_store.insert(version_id);
            return None;
        };
        let direct = Arc::new(direct);
        let opened = Arc::new(Opened {
            path,
            direct,
            pool: tokio::sync::OnceCell::new(),
        });
        let mut open = self.open_lock();
        if open.by_version.insert(version_id, opened.clone()).is_none() {
            open.order.push_back(version_id);
        }
        while open.order.len() > OPEN_FILES {
            let oldest = open.order.pop_front().expect("longer than the limit");
            open.by_version.remove(&oldest);
        }
        Some(opened)
    }

    fn open_lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().expect("not poisoned")
    }
}

/// A lazily connected pool of read-only, immutable connections on a version file.
fn read_pool(path: &std::path::Path) -> DatabaseConnection {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .immutable(true)
        .create_if_missing(false);
    let pool = SqlitePoolOptions::new()
        .max_connections(FILE_CONNECTIONS)
        .min_connections(0)
        .idle_timeout(FILE_IDLE)
        .connect_lazy_with(options);
    sea_orm::SqlxSqliteConnector::from_sqlx_sqlite_pool(pool)
}
