//! Read replicas: PostgreSQL streaming replicas (`ODQS_READ_DATABASE_URL`) that take the reads
//! of records (pages, bodies, counts, exports, index builds) off the primary, which keeps the
//! catalog and every write.
//!
//! Why a replica's answer is never wrong: a dataset version never changes once published, so a
//! replica can answer a version as soon as it has replayed the commit that published it. The
//! first time this process reads a version, it notes the primary's WAL position (the version
//! was read from the primary's catalog before, so its commit lies at or before it); a replica
//! answers that version only once its replay position has passed that mark. Until then, and
//! whenever a replica is down, unchecked for [`STALE_AFTER`], or fails a read, the primary
//! answers: the read is run again there, so a replica's fault costs time, not an answer.
//!
//! A replica URL that is not a replica of the primary's database (the primary itself, a
//! promoted copy, another cluster, another database) is refused once, with a warning, and never
//! read: the check compares the cluster's system identifier and the database name.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sea_orm::{ConnectionTrait, DatabaseBackend, DatabaseConnection, DbErr, Statement};

use super::sessions::PgSessions;

/// A replica not checked for this long is not read (the checks run every second).
pub const STALE_AFTER: Duration = Duration::from_secs(5);
/// How long one check of a replica may take before it counts as down.
pub(crate) const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// The primary and its replicas, with what is known of each replica.
#[derive(Debug)]
pub struct Replicas {
    primary: DatabaseConnection,
    /// The primary's sessions kept out of its pool for body reads.
    primary_sessions: PgSessions,
    set: Vec<Arc<Replica>>,
    /// Round-robin among the replicas that may answer.
    next: AtomicUsize,
    /// The primary's WAL position noted when a version was first read, by version id.
    marks: Mutex<HashMap<i64, u64>>,
    /// The primary's cluster and database, read at the first check.
    identity: tokio::sync::OnceCell<Identity>,
    /// Reads answered by a replica and by the primary.
    pub answered: Answered,
}

/// Reads answered, by store.
#[derive(Debug, Default)]
pub struct Answered {
    pub replica: AtomicU64,
    pub primary: AtomicU64,
}

/// One replica.
#[derive(Debug)]
pub(crate) struct Replica {
    /// Its URL without the password, for the logs.
    pub name: String,
    db: DatabaseConnection,
    /// Its sessions kept out of its pool for body reads.
    sessions: PgSessions,
    state: Mutex<ReplicaState>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    system: String,
    database: String,
}

/// What the last check (or read) found.
#[derive(Debug, Clone)]
struct ReplicaState {
    health: Health,
    /// WAL replayed, as of `checked`.
    replayed: u64,
    checked: Option<Instant>,
}

/// A replica's standing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Not checked yet.
    Unknown,
    Up,
    /// Unreachable or failing: checked again every second.
    Down(String),
    /// Not a replica of the primary's database: never read.
    Refused(String),
}

impl Health {
    /// One word for `/readyz`.
    pub fn word(&self) -> &'static str {
        match self {
            Health::Unknown => "unknown",
            Health::Up => "up",
            Health::Down(_) => "down",
            Health::Refused(_) => "refused",
        }
    }
}

/// Where a read goes: a replica that may answer its version, else the primary; the primary is
/// kept to run it again if the replica fails.
#[derive(Debug, Clone)]
pub struct Reader {
    replica: Option<Arc<Replica>>,
    primary: DatabaseConnection,
    /// Where the answers are counted.
    replicas: Arc<Replicas>,
}

impl Replicas {
    /// `replicas` (name, connection) beside `primary`. Nothing is read from them before
    /// [`Self::check`] finds them to be replicas of the primary's database.
    pub fn new(primary: DatabaseConnection, replicas: Vec<(String, DatabaseConnection)>) -> Self {
        Replicas {
            primary,
            primary_sessions: PgSessions::default(),
            set: replicas
                .into_iter()
                .map(|(name, db)| {
                    Arc::new(Replica {
                        name,
                        db,
                        sessions: PgSessions::default(),
                        state: Mutex::new(ReplicaState {
                            health: Health::Unknown,
                            replayed: 0,
                            checked: None,
                        }),
                    })
                })
                .collect(),
            next: AtomicUsize::new(0),
            marks: Mutex::new(HashMap::new()),
            identity: tokio::sync::OnceCell::new(),
            answered: Answered::default(),
        }
    }

    /// Sessions kept out of the pools for body reads ([`PgSessions`]), open now: the
    /// primary's, then each replica's in the order configured (for `/metrics`).
    pub fn kept_sessions(&self) -> Vec<usize> {
        std::iter::once(&self.primary_sessions)
            .chain(self.set.iter().map(|replica| &replica.sessions))
            .map(PgSessions::open)
            .collect()
    }

    /// The replicas' connections, in the order configured (their pools' use, for `/metrics`).
    pub fn connections(&self) -> Vec<&DatabaseConnection> {
        self.set.iter().map(|r| &r.db).collect()
    }

    /// Whether any replica is configured.
    pub fn any(&self) -> bool {
        !self.set.is_empty()
    }

    /// Each replica's standing, in the order configured.
    pub fn health(&self) -> Vec<Health> {
        self.set
            .iter()
            .map(|r| r.state.lock().expect("replica lock").health.clone())
            .collect()
    }

    /// Where to read version `version_id`: a replica that has replayed it, in turn, else the
    /// primary.
    pub async fn reader(self: &Arc<Self>, version_id: i64) -> Reader {
        let primary = Reader {
            replica: None,
            primary: self.primary.clone(),
            replicas: self.clone(),
        };
        if self.set.is_empty() {
            return primary;
        }
        let Some(mark) = self.mark(version_id).await else {
            return primary;
        };
        let now = Instant::now();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        for i in 0..self.set.len() {
            let replica = &self.set[(start + i) % self.set.len()];
            let state = replica.state.lock().expect("replica lock");
            let fresh = state
                .checked
                .is_some_and(|at| now.duration_since(at) < STALE_AFTER);
            if state.health == Health::Up && fresh && state.replayed >= mark {
                return Reader {
                    replica: Some(replica.clone()),
                    ..primary
                };
            }
        }
        primary
    }

    /// The primary's WAL position when `version_id` was first read here; `None` when it
    /// cannot be read (the primary answers).
    async fn mark(&self, version_id: i64) -> Option<u64> {
        if let Some(&mark) = self.marks.lock().expect("marks lock").get(&version_id) {
            return Some(mark);
        }
        let row = self
            .primary
            .query_one_raw(Statement::from_string(
                DatabaseBackend::Postgres,
                "SELECT pg_current_wal_lsn()::text",
            ))
            .await
            .ok()??;
        let mark = parse_lsn(&row.try_get_by_index::<String>(0).ok()?)?;
        let mut marks = self.marks.lock().expect("marks lock");
        Some(*marks.entry(version_id).or_insert(mark))
    }

    /// Checks every replica that is not refused: reachable, still a replica of the primary's
    /// database, and how far it has replayed. Logs each change of standing.
    pub async fn check(&self) {
        if self.set.is_empty() {
            return;
        }
        let identity = match self
            .identity
            .get_or_try_init(|| async {
                let (system, database, _, _) = identify(&self.primary).await?;
                Ok::<_, DbErr>(Identity { system, database })
            })
            .await
        {
            Ok(identity) => identity.clone(),
            Err(error) => {
                tracing::warn!(%error, "cannot identify the primary; replicas are not read");
                return;
            }
        };
        for replica in &self.set {
            if matches!(
                replica.state.lock().expect("replica lock").health,
                Health::Refused(_)
            ) {
                continue;
            }
            let found = tokio::time::timeout(CHECK_TIMEOUT, identify(&replica.db)).await;
            let (health, replayed) = match found {
                Err(_) => (Health::Down("no answer within 2 s".into()), 0),
                Ok(Err(error)) => (Health::Down(error.to_string()), 0),
                Ok(Ok((system, database, in_recovery, replayed))) => {
                    if system != identity.system {
                        (
                            Health::Refused(format!(
                                "it belongs to another PostgreSQL cluster (system identifier {system}, the primary's is {})",
                                identity.system
                            )),
                            0,
                        )
                    } else if database != identity.database {
                        (
                            Health::Refused(format!(
                                "it is the database {database:?}, the primary's is {:?}",
                                identity.database
                            )),
                            0,
                        )
                    } else if !in_recovery {
                        (Health::Refused("it is not in recovery: the primary itself, or a promoted copy of it".into()), 0)
                    } else {
                        (
                            Health::Up,
                            replayed.as_deref().and_then(parse_lsn).unwrap_or(0),
                        )
                    }
                }
            };
            replica.set(health, replayed);
        }
    }
}

impl Replica {
    /// Records a check's finding (or a failed read's), logging a change of standing.
    fn set(&self, health: Health, replayed: u64) {
        let mut state = self.state.lock().expect("replica lock");
        if state.health != health {
            match &health {
                Health::Up => {
                    tracing::info!(replica = %self.name, "read replica up: reads of replayed versions go to it")
                }
                Health::Down(reason) => {
                    tracing::warn!(replica = %self.name, %reason, "read replica down: the primary answers its reads")
                }
                Health::Refused(reason) => {
                    tracing::warn!(replica = %self.name, %reason, "ODQS_READ_DATABASE_URL is not a replica of the primary's database; it is never read")
                }
                Health::Unknown => {}
            }
        }
        state.health = health;
        state.replayed = replayed;
        state.checked = Some(Instant::now());
    }
}

impl Reader {
    /// Reads on `db` alone (a version's own SQLite file), counted with `replicas`' primary.
    pub(crate) fn on(db: DatabaseConnection, replicas: &Arc<Replicas>) -> Self {
        Reader {
            replica: None,
            primary: db,
            replicas: replicas.clone(),
        }
    }

    /// The store's kind (a replica is of the primary's).
    pub(crate) fn backend(&self) -> sea_orm::DatabaseBackend {
        sea_orm::ConnectionTrait::get_database_backend(&self.primary)
    }

    /// Runs `read` on the chosen connection; when that is a replica and it fails, marks the
    /// replica down and runs `read` again on the primary.
    pub async fn run<T, E, F, Fut>(&self, read: F) -> Result<T, E>
    where
        F: Fn(DatabaseConnection) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: std::fmt::Display,
    {
        if let Some(replica) = &self.replica {
            match read(replica.db.clone()).await {
                Ok(found) => {
                    self.count(|a| &a.replica);
                    return Ok(found);
                }
                Err(error) => {
                    replica.set(Health::Down(error.to_string()), 0);
                }
            }
        }
        let found = read(self.primary.clone()).await;
        self.count(|a| &a.primary);
        found
    }

    /// The `(position, text)` rows of `sql`, a PostgreSQL statement whose one parameter is
    /// `positions`, read on a session kept out of the chosen store's pool ([`PgSessions`]);
    /// `None` when that cannot be done, and the caller reads through [`Self::run`].
    pub(crate) async fn bodies_on_kept_session(
        &self,
        sql: &str,
        positions: &[i64],
    ) -> Option<Vec<(i64, String)>> {
        if self.backend() != DatabaseBackend::Postgres {
            return None;
        }
        let (db, sessions, answered): (_, _, fn(&Answered) -> &AtomicU64) = match &self.replica {
            Some(replica) => (&replica.db, &replica.sessions, |a| &a.replica),
            None => (&self.primary, &self.replicas.primary_sessions, |a| {
                &a.primary
            }),
        };
        let rows = sessions
            .bodies(db.get_postgres_connection_pool(), sql, positions)
            .await?;
        self.count(answered);
        Some(rows)
    }

    fn count(&self, which: impl Fn(&Answered) -> &AtomicU64) {
        which(&self.replicas.answered).fetch_add(1, Ordering::Relaxed);
    }

    /// `query_all_raw` through [`Self::run`].
    pub async fn query_all(
        &self,
        statement: Statement,
    ) -> Result<Vec<sea_orm::QueryResult>, DbErr> {
        self.run(|db| {
            let statement = statement.clone();
            async move { db.query_all_raw(statement).await }
        })
        .await
    }

    /// `query_one_raw` through [`Self::run`].
    pub async fn query_one(
        &self,
        statement: Statement,
    ) -> Result<Option<sea_orm::QueryResult>, DbErr> {
        self.run(|db| {
            let statement = statement.clone();
            async move { db.query_one_raw(statement).await }
        })
        .await
    }
}

/// A cluster's system identifier, the database's name, whether it is in recovery (a replica)
/// and, if so, how far it has replayed.
async fn identify(
    db: &DatabaseConnection,
) -> Result<(String, String, bool, Option<String>), DbErr> {
    let row = db
        .query_one_raw(Statement::from_string(
            DatabaseBackend::Postgres,
            "SELECT (SELECT system_identifier FROM pg_control_system())::text, current_database()::text, \
             pg_is_in_recovery(), pg_last_wal_replay_lsn()::text",
        ))
        .await?
        .ok_or_else(|| DbErr::RecordNotFound("no identity row".into()))?;
    Ok((
        row.try_get_by_index(0)?,
        row.try_get_by_index(1)?,
        row.try_get_by_index(2)?,
        row.try_get_by_index(3)?,
    ))
}

/// A WAL position written `hi/lo` in hexadecimal, as a number.
fn parse_lsn(text: &str) -> Option<u64> {
    let (hi, lo) = text.split_once('/')?;
    Some((u64::from_str_radix(hi, 16).ok()? << 32) | u64::from_str_radix(lo, 16).ok()?)
}

#[cfg(test)]
mod tests {
    use super::parse_lsn;

    #[test]
    fn lsn_text_is_a_number() {
        assert_eq!(parse_lsn("0/3430CA0"), Some(0x3430CA0));
        assert_eq!(parse_lsn("1/0"), Some(1 << 32));
        assert!(parse_lsn("1/0") > parse_lsn("0/FFFFFFFF"));
        assert_eq!(parse_lsn("nonsense"), None);
        assert_eq!(parse_lsn("0/xyz"), None);
    }
}
