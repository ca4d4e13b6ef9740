//! Record bodies read straight from the SQLite file, on the calling thread. sqlx
//! runs each SQLite connection on a worker thread of its own; handing it a statement and taking
//! the rows back costs more than the primary-key read itself (futex wake-ups). Only this one
//! read, the hottest, takes the direct way, and when it fails for any reason the caller reads
//! through sqlx instead, so answers and errors stay the same.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use entity::record::records_table;
use rusqlite::{Connection, OpenFlags};

/// Connections kept open between reads: one per thread answering at once is enough.
const MAX_IDLE: usize = 8;

/// Read-only connections to one SQLite file, taken one per read.
#[derive(Debug)]
pub(crate) struct DirectSqlite {
    path: PathBuf,
    /// The file never changes (a version's own file): read without locks.
    immutable: bool,
    idle: Mutex<Vec<Connection>>,
}

impl DirectSqlite {
    /// Reads of the SQLite file at `path`, `immutable` when nothing writes it any more;
    /// `None` when it is not a file (an in-memory store, a version in the store's file).
    pub(crate) fn new(path: &Path, immutable: bool) -> Option<Self> {
        path.is_file().then(|| DirectSqlite {
            path: path.to_path_buf(),
            immutable,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// The stored texts of version `version_id` at `positions`, as (position, text) in no
    /// particular order. One position (a record by id) is a primary-key lookup, a run of
    /// consecutive positions (a page in file order) one range of the primary key, and others
    /// are passed as one JSON array, so a page is one statement whatever its size.
    pub(crate) fn bodies(
        &self,
        version_id: i64,
        positions: &[i64],
    ) -> rusqlite::Result<Vec<(i64, String)>> {
        let conn = self.take()?;
        // The table's name comes from an integer: nothing of the request reaches the SQL text.
        let table = records_table(version_id);
        let list;
        let consecutive = positions.windows(2).all(|w| w[1] == w[0] + 1);
        let (condition, bound): (&str, Vec<&dyn rusqlite::ToSql>) = match positions {
            [one] => ("\"pos\" = ?1", vec![one]),
            [first, .., last] if consecutive => ("\"pos\" BETWEEN ?1 AND ?2", vec![first, last]),
            _ => {
                list = serde_json::to_string(positions).expect("integers serialize");
                ("\"pos\" IN (SELECT value FROM json_each(?1))", vec![&list])
            }
        };
        let sql = format!("SELECT \"pos\", \"doc\" FROM \"{table}\" WHERE {condition}");
        let read = conn.prepare_cached(&sql).and_then(|mut statement| {
            statement
                .query_map(bound.as_slice(), |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect()
        });
        if read.is_ok() {
            self.give_back(conn);
        }
        read
    }

    /// Runs `sql` (rows after position `?1`, at most `?2`, up to position `?3`, position
    /// first) chunk after chunk from position `after` up to `through`, until a chunk comes
    /// back short, handing each row to `each` on this thread (an index build). Each chunk is a
    /// statement of its own, so no read holds the WAL for the whole scan.
    pub(crate) fn scan(
        &self,
        sql: &str,
        chunk: i64,
        (mut after, through): (i64, i64),
        mut each: impl FnMut(&rusqlite::Row<'_>) -> Result<(), String>,
    ) -> Result<(), String> {
        let conn = self.take().map_err(|e| e.to_string())?;
        let scanned = (|| {
            let mut statement = conn.prepare(sql).map_err(|e| e.to_string())?;
            loop {
                let mut rows = statement
                    .query([after, chunk, through])
                    .map_err(|e| e.to_string())?;
                let mut read = 0;
                while let Some(row) = rows.next().map_err(|e| e.to_string())? {
                    after = row.get(0).map_err(|e| e.to_string())?;
                    each(row)?;
                    read += 1;
                }
                if read < chunk {
                    return Ok(());
                }
            }
        })();
        if scanned.is_ok() {
            self.give_back(conn);
        }
        scanned
    }

    /// Runs `sql` with `values` bound as one statement, handing each row to `each` on this
    /// thread (a grouped statistic on the store path folds millions of rows this way); stops
    /// at the first error `each` returns.
    pub(crate) fn each_row<E: From<rusqlite::Error>>(
        &self,
        sql: &str,
        values: &[rusqlite::types::Value],
        mut each: impl FnMut(&rusqlite::Row<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let conn = self.take()?;
        let read = (|| {
            let mut statement = conn.prepare(sql)?;
            let mut rows = statement.query(rusqlite::params_from_iter(values))?;
            while let Some(row) = rows.next()? {
                each(row)?;
            }
            Ok(())
        })();
        if read.is_ok() {
            self.give_back(conn);
        }
        read
    }

    fn take(&self) -> rusqlite::Result<Connection> {
        if let Some(conn) = self.idle.lock().expect("not poisoned").pop() {
            return Ok(conn);
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = if self.immutable {
            Connection::open_with_flags(
                immutable_uri(&self.path),
                flags | OpenFlags::SQLITE_OPEN_URI,
            )?
        } else {
            Connection::open_with_flags(&self.path, flags)?
        };
        conn.busy_timeout(Duration::from_secs(5))?;
        Ok(conn)
    }

    fn give_back(&self, conn: Connection) {
        let mut idle = self.idle.lock().expect("not poisoned");
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }
}

/// The URI that opens the file at `path` as immutable: the characters a URI gives a meaning
/// to are escaped.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' | '?' | '#' => uri.push_str(&format!("%{:02X}", c as u32)),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// `values` as rusqlite binds them; `None` when one has a type the SQLite statements never
/// bind (the caller then goes through sqlx).
pub(crate) fn bound(values: &[sea_orm::Value]) -> Option<Vec<rusqlite::types::Value>> {
    use rusqlite::types::Value as Sqlite;
    use sea_orm::Value;
    values
        .iter()
        .map(|value| match value {
            Value::String(Some(s)) => Some(Sqlite::Text(s.clone())),
            Value::BigInt(Some(n)) => Some(Sqlite::Integer(*n)),
            Value::Double(Some(x)) => Some(Sqlite::Real(*x)),
            Value::Bool(Some(b)) => Some(Sqlite::Integer(i64::from(*b))),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bodies come back by position from a real file; a missing table is an error (the caller
    /// then reads through sqlx), and a path that is no file gives no direct reader.
    #[test]
    fn bodies_are_read_by_position_from_the_file() {
        let path = std::env::temp_dir().join(format!("odqs-direct-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let conn = Connection::open(&path).expect("create");
        conn.execute_batch(&format!(
            "CREATE TABLE \"{}\" (\"pos\" INTEGER PRIMARY KEY, \"doc\" TEXT NOT NULL);
             INSERT INTO \"{0}\" VALUES (1, '{{\"a\":1}}'), (2, '{{\"a\":2}}'), (3, '{{\"a\":3}}');",
            records_table(7)
        ))
        .expect("fill");
        drop(conn);
        let direct = DirectSqlite::new(&path, false).expect("a file");
        let mut read = direct.bodies(7, &[3, 1, 9]).expect("read");
        read.sort();
        assert_eq!(
            read,
            [(1, "{\"a\":1}".to_string()), (3, "{\"a\":3}".to_string())]
        );
        // Twice: the second read takes the kept connection and its prepared statement.
        assert_eq!(
            direct.bodies(7, &[2]).expect("again"),
            [(2, "{\"a\":2}".to_string())]
        );
        // A run of consecutive positions is one range; its ends count.
        let mut read = direct.bodies(7, &[2, 3]).expect("a run");
        read.sort();
        assert_eq!(
            read,
            [(2, "{\"a\":2}".to_string()), (3, "{\"a\":3}".to_string())]
        );
        assert!(direct.bodies(8, &[1]).is_err());
        assert!(DirectSqlite::new(&path.with_extension("missing"), false).is_none());
        std::fs::remove_file(&path).expect("clean up");
    }

    /// A version's file is opened immutable through a URI, whatever characters its path holds.
    #[test]
    fn an_immutable_file_is_read_whatever_its_path() {
        let dir = std::env::temp_dir().join(format!("odqs direct?#%{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a folder");
        let path = dir.join("v7.sqlite");
        let conn = Connection::open(&path).expect("create");
        conn.execute_batch(&format!(
            "CREATE TABLE \"{}\" (\"pos\" INTEGER PRIMARY KEY, \"doc\" TEXT NOT NULL);
             INSERT INTO \"{0}\" VALUES (1, '{{\"a\":1}}');",
            records_table(7)
        ))
        .expect("fill");
        drop(conn);
        let direct = DirectSqlite::new(&path, true).expect("a file");
        assert_eq!(
            direct.bodies(7, &[1]).expect("read"),
            [(1, "{\"a\":1}".to_string())]
        );
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    /// A statement with bound values hands every row to the callback, values bound as
    /// rusqlite takes them; an error of the callback stops the read and is returned.
    #[test]
    fn rows_are_handed_over_with_values_bound() {
        let path = std::env::temp_dir().join(format!("odqs-direct-rows-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let conn = Connection::open(&path).expect("create");
        conn.execute_batch(
            "CREATE TABLE t (k TEXT, v REAL);
             INSERT INTO t VALUES ('a', 1.5), ('b', 2), ('a', NULL), ('c', 4);",
        )
        .expect("fill");
        drop(conn);
        let direct = DirectSqlite::new(&path, false).expect("a file");
        let values = bound(&[
            sea_orm::Value::String(Some("c".into())),
            sea_orm::Value::Double(Some(0.5)),
        ])
        .expect("bindable");
        let mut seen = Vec::new();
        direct
            .each_row::<rusqlite::Error>(
                "SELECT k, v FROM t WHERE k <> ? AND (v IS NULL OR v > ?) ORDER BY rowid",
                &values,
                |row| {
                    seen.push((row.get::<_, String>(0)?, row.get::<_, Option<f64>>(1)?));
                    Ok(())
                },
            )
            .expect("read");
        assert_eq!(
            seen,
            [
                ("a".to_string(), Some(1.5)),
                ("b".to_string(), Some(2.0)),
                ("a".to_string(), None)
            ]
        );
        let mut calls = 0;
        let stopped = direct.each_row("SELECT k FROM t", &[], |_| {
            calls += 1;
            Err(rusqlite::Error::InvalidQuery)
        });
        assert!(stopped.is_err());
        assert_eq!(calls, 1);
        assert!(bound(&[sea_orm::Value::Json(None)]).is_none());
        std::fs::remove_file(&path).expect("clean up");
    }
}
