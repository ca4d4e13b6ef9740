//! The store: one SeaORM connection over SQLite or PostgreSQL, opened with the settings each
//! needs (WAL and a busy timeout for SQLite, quick acquire time-outs for PostgreSQL), migrations
//! serialized across instances, and the catalog queries the rest of the service shares.

mod alive;
pub mod catalog;
pub mod gc;
pub mod lease;
pub mod lock;
mod nodelay;
pub mod pg_tls;
pub mod url;

use std::time::Duration;

use migration::MigratorTrait;
use sea_orm::{ConnectionTrait, DatabaseBackend, DatabaseConnection, DbErr};
use sqlx::postgres::PgPoolOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

pub use url::{StoreUrl, redact_url};

/// See `journal_size_limit` where the SQLite store is opened.
pub(crate) const WAL_LIMIT_BYTES: u64 = 64 * 1024 * 1024;
/// Page cache of each SQLite connection, in KiB (see `cache_size` where the store is opened).
pub(crate) const SQLITE_CACHE_KIB: u64 = 4 * 1024;
/// How long a read waits for a read replica's connection before the primary answers it.
pub(crate) const REPLICA_ACQUIRE_TIMEOUT: Duration = Duration::from_millis(500);
/// How long an SQLite statement waits for another writer of the file.
pub(crate) const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// A connected store. Cloning is cheap (the pool is shared).
#[derive(Clone, Debug)]
pub struct Store {
    pub db: DatabaseConnection,
    /// Changes of the catalog made through this store (and its clones): imports and removals
    /// bump it, and the resolver built over the store sees them at once.
    pub catalog: query::CatalogEpoch,
    /// Versions of each dataset kept readable, the current one included (`ODQS_KEEP_VERSIONS`):
    /// the import that publishes a version and the garbage collector expire the older ones.
    pub keep_versions: u64,
}

/// Versions of a dataset kept readable unless configured: the current and the two before, so
/// a client that cited an answer or is reading by cursor survives two re-imports.
pub const DEFAULT_KEEP_VERSIONS: u64 = 3;

/// Why the store could not be opened or prepared.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the directory for the SQLite store {path}: {source}")]
    CreateDir {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot open the store {url}: {source}")]
    Connect { url: String, source: sqlx::Error },
    #[error("store error: {0}")]
    Db(#[from] DbErr),
    #[error("store error: {0}")]
    Sqlx(#[from] sqlx::Error),
    /// The import's own connection to the SQLite file (`import::sqlite`).
    #[error("store error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A version's file could not be removed.
    #[error("store error: {0}")]
    Io(#[from] std::io::Error),
}

/// A PostgreSQL pool's options, the primary's or a replica's, waiting at most `acquire_timeout`
/// for a session: which sessions are pinged before use ([`alive`]), and `TCP_NODELAY` on each
/// new one ([`nodelay`]).
fn pg_pool_options(acquire_timeout: Duration) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(acquire_timeout)
        .test_before_acquire(false)
        .before_acquire(|conn, meta| Box::pin(alive::before_acquire(conn, meta)))
        .after_connect(|conn, _| Box::pin(nodelay::on_connect(conn)))
}

impl Store {
    /// Opens the store at `url`, creating an SQLite file (and its directory) when missing.
    pub async fn connect(url: &StoreUrl) -> Result<Self, StoreError> {
        let failed = |source| StoreError::Connect {
            url: format!("{url:?}"),
            source,
        };
        let db = match url {
            StoreUrl::Sqlite(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                        path: path.display().to_string(),
                        source,
                    })?;
                }
                let options = SqliteConnectOptions::new()
                    .filename(path)
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal)
                    .busy_timeout(SQLITE_BUSY_TIMEOUT)
                    .foreign_keys(true)
                    // 4 MB of page cache a connection, 32 MB for the pool at most: the in-memory
                    // indexes answer most reads, the kernel caches the file anyway, and the
                    // resident size stays bounded.
                    .pragma("cache_size", format!("-{SQLITE_CACHE_KIB}"))
                    // The WAL file shrinks back to this after a checkpoint: an import's index
                    // builds grow it to a large share of the store, which otherwise stays on
                    // disk for good.
                    .pragma("journal_size_limit", WAL_LIMIT_BYTES.to_string());
                let pool = SqlitePoolOptions::new()
                    .max_connections(8)
                    .acquire_timeout(Duration::from_secs(30))
                    .connect_with(options)
                    .await
                    .map_err(failed)?;
                sea_orm::SqlxSqliteConnector::from_sqlx_sqlite_pool(pool)
            }
            StoreUrl::Postgres(raw) => {
                let options = pg_tls::connect_options(raw, pg_tls::home_dir())
                    .map_err(|e| failed(sqlx::Error::Configuration(e.into())))?;
                // The mode in effect, which libpq's rules may have raised (require → verify-ca),
                // explains a failed handshake.
                let failed = |source| StoreError::Connect {
                    url: format!(
                        "{url:?} (sslmode={})",
                        pg_tls::mode_name(options.get_ssl_mode())
                    ),
                    source,
                };
                let pool =
                    pg_pool_options(Duration::from_secs(5)).connect_lazy_with(options.clone());
                // The sessions a command holds together (an import: its lease, its load, its
                // transaction), opened at once rather than each when first needed: over TLS a
                // handshake waits for two of the server's delayed acknowledgements (`nodelay`).
                let (first, second, third) =
                    tokio::join!(pool.acquire(), pool.acquire(), pool.acquire());
                for opened in [first, second, third] {
                    // Back in the pool before the command asks for one (a dropped session goes
                    // back later, from a task of its own, and a new one would be opened).
                    opened.map_err(failed)?.return_to_pool().await;
                }
                pg_tls::log_transport(&pool, &options).await;
                sea_orm::SqlxPostgresConnector::from_sqlx_postgres_pool(pool)
            }
        };
        Ok(Store {
            db,
            catalog: query::CatalogEpoch::default(),
            keep_versions: DEFAULT_KEEP_VERSIONS,
        })
    }

    /// A pool over the read replica at `url` (PostgreSQL), opened lazily: a replica that is
    /// down at start delays nothing, and the resolver reads from it only once its checks find
    /// it a replica of this store's database.
    pub fn connect_replica(url: &str) -> Result<DatabaseConnection, StoreError> {
        let options =
            pg_tls::connect_options(url, pg_tls::home_dir()).map_err(|e| StoreError::Connect {
                url: redact_url(url),
                source: sqlx::Error::Configuration(e.into()),
            })?;
        // A replica that does not hand out a connection soon is passed over for the primary
        // (the read is run again there): a stopped replica costs the reads already sent to it
        // this long, until its check or a failed read marks it down, so the time-out is short.
        let pool = pg_pool_options(REPLICA_ACQUIRE_TIMEOUT).connect_lazy_with(options);
        Ok(sea_orm::SqlxPostgresConnector::from_sqlx_postgres_pool(
            pool,
        ))
    }

    /// The file of version `version_id`'s tables on an SQLite store
    /// ([`entity::record::version_file`]); `None` on PostgreSQL.
    pub fn version_file(&self, version_id: i64) -> Option<std::path::PathBuf> {
        (self.backend() == DatabaseBackend::Sqlite).then(|| {
            let pool = self.db.get_sqlite_connection_pool();
            entity::record::version_file(pool.connect_options().get_filename(), version_id)
        })
    }

    /// Which SQL dialect the store speaks.
    pub fn backend(&self) -> DatabaseBackend {
        self.db.get_database_backend()
    }

    /// Applies pending migrations. Several instances may start at once against one PostgreSQL
    /// database; the migration lock makes them take turns.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        let lock = lock::StoreLock::acquire(self, lock::MIGRATIONS).await?;
        migration::Migrator::up(&self.db, None).await?;
        lock.release().await;
        Ok(())
    }

    /// Whether the store answers (`/readyz`).
    pub async fn ping(&self) -> bool {
        self.db.execute_unprepared("SELECT 1").await.is_ok()
    }
}
