//! odqs's side: a scratch store, `odqs import` (timed, its peak RSS sampled), `odqs token
//! create`, and `odqs serve` on a free port with its output captured (for `index ready`).

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use sqlx::Connection;

use crate::args::{Args, StoreKind};

/// The store odqs runs on.
pub struct Store {
    pub url: String,
    /// PostgreSQL: the server's admin URL and the scratch database's name, dropped at the end.
    scratch_db: Option<(String, String)>,
}

impl Store {
    pub async fn create(args: &Args, dir: &Path) -> Result<Self> {
        match args.store {
            StoreKind::Sqlite => Ok(Self {
                url: format!("sqlite://{}", dir.join("odqs.db").display()),
                scratch_db: None,
            }),
            StoreKind::Postgres => {
                let name = format!("odqs_bench_{:016x}", rand::random::<u64>());
                let mut admin = sqlx::PgConnection::connect(&args.pg_url)
                    .await
                    .with_context(|| format!("connect to PostgreSQL at {}", args.pg_url))?;
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
                    .execute(&mut admin)
                    .await
                    .context("create the scratch database")?;
                let _ = admin.close().await;
                Ok(Self {
                    url: with_database(&args.pg_url, &name),
                    scratch_db: Some((args.pg_url.clone(), name)),
                })
            }
        }
    }

    /// The store, for messages (no password).
    pub fn display(&self) -> String {
        match &self.scratch_db {
            None => self.url.clone(),
            Some((_, name)) => format!("PostgreSQL database {name}"),
        }
    }

    /// What the store holds on disk now: the SQLite file (with its WAL), or the PostgreSQL
    /// database's size.
    pub async fn bytes(&self) -> Option<u64> {
        match &self.scratch_db {
            None => {
                let path = self.url.strip_prefix("sqlite://")?;
                let size = |p: String| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
                Some(size(path.to_string()) + size(format!("{path}-wal")))
            }
            Some(_) => {
                let mut connection = sqlx::PgConnection::connect(&self.url).await.ok()?;
                let size: i64 = sqlx::query_scalar("SELECT pg_database_size(current_database())")
                    .fetch_one(&mut connection)
                    .await
                    .ok()?;
                let _ = connection.close().await;
                u64::try_from(size).ok()
            }
        }
    }

    /// Drops the scratch PostgreSQL database, if any.
    pub async fn drop_scratch(&self) {
        let Some((admin, name)) = &self.scratch_db else {
            return;
        };
        match sqlx::PgConnection::connect(admin).await {
            Ok(mut conn) => {
                let dropped = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                )))
                .execute(&mut conn)
                .await;
                if let Err(error) = dropped {
                    eprintln!("bench: WARNING: could not drop database {name}: {error}");
                }
                let _ = conn.close().await;
            }
            Err(error) => eprintln!("bench: WARNING: could not drop database {name}: {error}"),
        }
    }
}

/// `postgres://user@host:port/db?opts` with another database name.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{base}/{name}?{query}"),
        None => format!("{base}/{name}"),
    }
}

/// An `odqs` command with the store and quiet logs.
fn odqs(bin: &Path, database_url: &str) -> Command {
    let mut command = Command::new(bin);
    command
        .env("DATABASE_URL", database_url)
        .env("ODQS_LOG_FORMAT", "json")
        .env_remove("ODQS_LISTEN")
        .env_remove("ODQS_PUBLIC_URL");
    command
}

/// What an import took.
#[derive(Clone, Debug, Default)]
pub struct Import {
    pub seconds: f64,
    /// Largest VmHWM seen while it ran (sampled every 20 ms), in KiB.
    pub peak_rss_kb: Option<u64>,
    /// odqs's own summary line.
    pub summary: String,
}

pub fn import(
    bin: &Path,
    database_url: &str,
    file: &Path,
    slug: &str,
    schema: &Path,
    dir: &Path,
    store_indexes: bool,
) -> Result<Import> {
    let log = dir.join(format!("import-{slug}.log"));
    let started = Instant::now();
    let mut child = odqs(bin, database_url)
        .arg("import")
        .arg(file)
        .args(["--slug", slug, "--schema"])
        .arg(schema)
        .args(store_indexes.then_some("--store-indexes"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(File::create(&log)?)
        .spawn()
        .context("start odqs import")?;
    let mut peak = None;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if let Some(kb) = peak_rss_kb(child.id()) {
            peak = Some(peak.map_or(kb, |p: u64| p.max(kb)));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let seconds = started.elapsed().as_secs_f64();
    let mut summary = String::new();
    if let Some(mut out) = child.stdout.take() {
        std::io::Read::read_to_string(&mut out, &mut summary)?;
    }
    if !status.success() {
        let stderr = std::fs::read_to_string(&log).unwrap_or_default();
        bail!("odqs import {} failed ({status}): {stderr}", file.display());
    }
    Ok(Import {
        seconds,
        peak_rss_kb: peak,
        summary: summary.trim().to_string(),
    })
}

/// Ends a bench whose run failed: the error with its causes, and exit status 1.
pub fn exit_on_error(result: Result<()>) {
    if let Err(error) = result {
        eprintln!("bench: error: {error:#}");
        std::process::exit(1);
    }
}

/// `odqs token create`: the token it prints.
pub fn token(bin: &Path, database_url: &str) -> Result<String> {
    let output = odqs(bin, database_url)
        .args([
            "token",
            "create",
            "--email",
            "bench@example.com",
            "--name",
            "bench",
        ])
        .stdin(Stdio::null())
        .output()
        .context("run odqs token create")?;
    if !output.status.success() {
        bail!(
            "odqs token create failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let token = String::from_utf8(output.stdout)?.trim().to_string();
    if token.is_empty() || token.contains(char::is_whitespace) {
        bail!("odqs token create printed {token:?}, not a token");
    }
    Ok(token)
}

/// VmHWM (peak resident set) of a process, in KiB.
pub fn peak_rss_kb(pid: u32) -> Option<u64> {
    status_kb(pid, "VmHWM:")
}

/// A figure of `/proc/<pid>/status` given in KiB (`VmRSS:`, `VmHWM:`, …).
pub fn status_kb(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// A free port on the loopback interface (bound then released).
pub fn free_addr() -> Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").context("find a free port")?;
    Ok(listener.local_addr()?)
}

/// A running `odqs serve`.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    pub log_path: PathBuf,
    started: Instant,
    /// Lines of its output about an index (`index ready`, `index file written`, …).
    index_lines: mpsc::Receiver<String>,
    /// Those lines received so far, with when they came after start.
    seen: Vec<(Duration, String)>,
}

impl Server {
    /// `odqs serve` on `database_url`, its output in `dir/{log_name}`.
    pub fn start(
        bin: &Path,
        database_url: &str,
        dir: &Path,
        index_memory_mb: Option<u64>,
        log_name: &str,
    ) -> Result<Self> {
        let addr = free_addr()?;
        let log_path = dir.join(log_name);
        let mut command = odqs(bin, database_url);
        if let Some(mb) = index_memory_mb {
            command.env("ODQS_INDEX_MEMORY_MB", mb.to_string());
        }
        let mut child = command
            .arg("serve")
            .env("ODQS_LISTEN", addr.to_string())
            .env("ODQS_PUBLIC_URL", format!("http://{addr}"))
            .env("ODQS_API_RATE_LIMIT", "0")
            .env("ODQS_DEMO_DATA", "false")
            // In the scratch directory for either store (PostgreSQL's default is `data/indexes`
            // under the working directory).
            .env("ODQS_INDEX_DIR", dir.join("indexes"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("start odqs serve")?;
        let log = std::sync::Arc::new(std::sync::Mutex::new(File::create(&log_path)?));
        let (tx, index_lines) = mpsc::channel();
        let stdout = child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>);
        let stderr = child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>);
        for stream in [stdout, stderr].into_iter().flatten() {
            let log = log.clone();
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    if let Ok(mut log) = log.lock() {
                        let _ = writeln!(log, "{line}");
                    }
                    if line.contains("index ") {
                        let _ = tx.send(strip_ansi(&line));
                    }
                }
            });
        }
        Ok(Self {
            child,
            addr,
            log_path,
            started: Instant::now(),
            index_lines,
            seen: Vec::new(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails when the server has exited.
    pub fn check_alive(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!(
                "odqs serve exited ({status}); its log is {}",
                self.log_path.display()
            );
        }
        Ok(())
    }

    /// Waits for a line with `index ready` that names `slug`; how long after start it came,
    /// and the line (it carries the index's `mib`, its `ms` and where it came `from`).
    pub fn wait_for_index(&mut self, slug: &str, limit: Duration) -> Option<(Duration, String)> {
        self.wait_for_line("index ready", slug, limit)
    }

    /// Waits for a line holding `needle` that names `slug` (lines that came earlier count);
    /// how long after start it came, and the line.
    pub fn wait_for_line(
        &mut self,
        needle: &str,
        slug: &str,
        limit: Duration,
    ) -> Option<(Duration, String)> {
        let deadline = Instant::now() + limit;
        let mut checked = 0;
        loop {
            if let Some(found) = self.seen[checked..]
                .iter()
                .find(|(_, line)| line.contains(needle) && names_slug(line, slug))
            {
                return Some(found.clone());
            }
            checked = self.seen.len();
            let left = deadline.saturating_duration_since(Instant::now());
            match self
                .index_lines
                .recv_timeout(left.min(Duration::from_millis(500)))
            {
                Ok(line) => self.seen.push((self.started.elapsed(), line)),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if Instant::now() >= deadline || self.check_alive().is_err() {
                        return None;
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// How long since the process was started.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether a log line names the dataset (`dataset=flights`, `slug=flights`, `"flights"`, …),
/// not merely a longer slug that contains it.
fn names_slug(line: &str, slug: &str) -> bool {
    line.match_indices(slug).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + slug.len()..].chars().next();
        let edge = |c: Option<char>| {
            c.is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_' || c == '.' || c == '~'))
        };
        edge(before) && edge(after)
    })
}

/// The line without terminal colour sequences (`ESC [ … letter`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A field of a JSON log line, under `fields` or at the top.
fn log_field(line: &str, key: &str) -> Option<serde_json::Value> {
    let mut value: serde_json::Value = serde_json::from_str(line).ok()?;
    match value.get_mut("fields").and_then(|f| f.get_mut(key)) {
        Some(field) => Some(field.take()),
        None => value.get_mut(key).map(serde_json::Value::take),
    }
}

/// A number field of a JSON log line (`"mib":"967.0"` or `"ms":47000`).
pub fn log_number(line: &str, key: &str) -> Option<f64> {
    match log_field(line, key)? {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// A text field of a JSON log line (`"from":"file"`).
pub fn log_text(line: &str, key: &str) -> Option<String> {
    match log_field(line, key)? {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    }
}
