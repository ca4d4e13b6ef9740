//! PostgreSQL sessions kept out of the pool for the hottest read, record bodies by position:
//! the counterpart of [`super::direct::DirectSqlite`]. sqlx pings a pooled session as it goes
//! back to the pool, a round trip after every statement that the server and this process each
//! wake up for; under many single-record reads that cost as much as the reads. A session here
//! is taken out of its pool once (`detach`, after the pool's connect hooks ran) and reused
//! without a ping. Any failure drops the session and the caller reads through the pool
//! instead, so answers and errors stay the same; a session cut while idle costs one failed
//! statement, not an answer.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use sqlx::postgres::{PgConnection, PgPool};

/// Sessions one pool gives up at most: a detached session no longer counts toward the pool's
/// own limit, so these come on top of it. Concurrent body reads of a version are joined into
/// a few statements (`resolver::body_reads`), so a few sessions serve them; when all are busy
/// the read goes through the pool.
pub(crate) const MAX_SESSIONS: usize = 4;

/// Run once on each kept session: its one statement, bodies by primary key, has the same best
/// plan whatever the positions, so the server plans it once instead of at every execution
/// (PostgreSQL plans a prepared statement's first executions for their parameters).
const GENERIC_PLANS: &str = "SET plan_cache_mode = force_generic_plan";

/// The sessions one pool gave up, idle ones kept for the next read.
#[derive(Debug, Default)]
pub(crate) struct PgSessions {
    idle: Mutex<Vec<PgConnection>>,
    /// Sessions open, idle or in use.
    open: AtomicUsize,
}

impl PgSessions {
    /// The `(position, text)` rows of `sql` (built by `bodies`, with `positions` its one
    /// parameter), read on a session of `pool`'s kept here; `None` when none could be had or
    /// the read failed (the caller reads through the pool).
    pub(crate) async fn bodies(
        &self,
        pool: &PgPool,
        sql: &str,
        positions: &[i64],
    ) -> Option<Vec<(i64, String)>> {
        let mut session = self.take(pool).await?;
        let read = sqlx::query_as(sqlx::AssertSqlSafe(sql.to_string()))
            .bind(positions)
            .fetch_all(session.conn())
            .await;
        match read {
            Ok(rows) => {
                session.give_back();
                Some(rows)
            }
            Err(error) => {
                tracing::debug!(%error, "a body read on a kept session failed; the pool reads it");
                None
            }
        }
    }

    /// An idle session, else a new one taken out of `pool` while fewer than [`MAX_SESSIONS`]
    /// are open.
    async fn take<'s>(&'s self, pool: &PgPool) -> Option<Taken<'s>> {
        let idle = self.idle.lock().expect("sessions lock").pop();
        if let Some(conn) = idle {
            return Some(Taken {
                sessions: self,
                conn: Some(conn),
                kept: false,
            });
        }
        if self.open.fetch_add(1, Ordering::SeqCst) >= MAX_SESSIONS {
            self.open.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        // Counted from here: a failure below is given back through `Taken`'s drop.
        let mut taken = Taken {
            sessions: self,
            conn: None,
            kept: false,
        };
        let mut conn = pool.acquire().await.ok()?.detach();
        if let Err(error) = sqlx::raw_sql(GENERIC_PLANS).execute(&mut conn).await {
            // Reads still work with plans made per execution; a dead session fails its read.
            tracing::debug!(%error, "a kept session keeps PostgreSQL's default plan caching");
        }
        taken.conn = Some(conn);
        Some(taken)
    }

    /// Sessions open, idle or in use.
    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }
}

/// A session in use. Given back to the idle ones after a read that succeeded; dropped any
/// other way (a failed read, a cancelled request mid-statement), it is closed and no longer
/// counted.
struct Taken<'s> {
    sessions: &'s PgSessions,
    conn: Option<PgConnection>,
    /// Given back to the idle ones: still open.
    kept: bool,
}

impl Taken<'_> {
    fn conn(&mut self) -> &mut PgConnection {
        self.conn.as_mut().expect("taken sessions hold one")
    }

    fn give_back(mut self) {
        if let Some(conn) = self.conn.take() {
            self.sessions.idle.lock().expect("sessions lock").push(conn);
            self.kept = true;
        }
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        if !self.kept {
            self.sessions.open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}
