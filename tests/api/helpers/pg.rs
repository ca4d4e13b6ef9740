//! Scratch PostgreSQL clusters for the tests: made with the machine's own `initdb` and
//! `pg_ctl` in a temporary folder, listening on a free port of 127.0.0.1 with trust
//! authentication, and gone when the test process ends, however it ends.
//!
//! The PostgreSQL half of the suite shares one cluster per test process ([`admin_url`]),
//! unless `ODQS_TEST_PG_URL` names a server to use instead. Tests that change a server's
//! configuration or need a streaming replica make clusters of their own ([`Cluster::start`],
//! [`Cluster::replica_of`]), so no test touches a shared server's settings.
//!
//! A cluster is started and stopped by a keeper: a shell in a process group of its own that
//! starts the server, says `ready`, then waits on its standard input, a pipe from this process.
//! When this process ends (a normal exit, a panic, a kill) the kernel closes the pipe; the
//! keeper then stops the server and removes the folder. Ctrl-C in a terminal reaches the test
//! process, not the keeper in its own group, so the clean-up still runs. As root the cluster
//! runs as the `postgres` user, since `initdb` refuses root.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// Settings every scratch cluster starts with: no durability (a scratch cluster is thrown
/// away), and room for the connection pools of the tests running side by side.
const SCRATCH_SETTINGS: &str = "\
listen_addresses = '127.0.0.1'
max_connections = 400
fsync = off
synchronous_commit = off
full_page_writes = off
";

/// How long `pg_ctl start` may wait for a new cluster to accept connections.
const START_TIMEOUT_SECONDS: u32 = 60;

/// The Debian package that brings `initdb` and `pg_ctl`, named when they are missing.
const SERVER_PACKAGE: &str = "postgresql";

/// A running scratch cluster; dropping it stops the server and removes its folder.
pub struct Cluster {
    pub port: u16,
    /// The folder holding the data directory (`data`), the socket and the log.
    pub dir: PathBuf,
    /// The keeper, whose standard input is ours: closing it stops the cluster.
    keeper: Option<Child>,
}

impl Cluster {
    /// A new cluster with `settings` appended to its `postgresql.conf`, started.
    pub fn start(settings: &str) -> Cluster {
        let tools = tools();
        let dir = scratch_dir();
        let data = dir.join("data");
        run_as_owner(
            Command::new(tools.bin("initdb"))
                .arg("-D")
                .arg(&data)
                .args(["-U", "postgres", "--auth=trust", "-E", "UTF8"])
                .args(["--locale=C.UTF-8", "--no-sync"]),
            "initdb",
        );
        Self::configure_and_start(dir, settings)
    }

    /// A streaming replica of `primary` (`pg_basebackup -R`), started and replaying.
    pub fn replica_of(primary: &Cluster) -> Cluster {
        let tools = tools();
        let dir = scratch_dir();
        run_as_owner(
            Command::new(tools.bin("pg_basebackup"))
                .args(["-h", "127.0.0.1", "-U", "postgres", "-R", "-X", "stream"])
                .arg("-p")
                .arg(primary.port.to_string())
                .arg("-D")
                .arg(dir.join("data")),
            "pg_basebackup",
        );
        Self::configure_and_start(dir, "hot_standby = on\n")
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`: the cluster's admin URL.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The user the server runs as (`postgres` when the tests run as root).
    pub fn owner() -> Option<(u32, u32)> {
        owner()
    }

    fn configure_and_start(dir: PathBuf, settings: &str) -> Cluster {
        let port = free_port();
        let conf = format!(
            "{SCRATCH_SETTINGS}port = {port}\nunix_socket_directories = '{}'\n{settings}",
            dir.display()
        );
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join("data/postgresql.conf"))
            .expect("the new cluster's postgresql.conf");
        file.write_all(conf.as_bytes()).unwrap();
        let keeper = start_keeper(&dir);
        Cluster {
            port,
            dir,
            keeper: Some(keeper),
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // The keeper stops the server and removes the folder once its input closes.
        if let Some(mut keeper) = self.keeper.take() {
            drop(keeper.stdin.take());
            let _ = keeper.wait();
        }
    }
}

/// The admin URL the PostgreSQL half of the tests makes its scratch databases through:
/// `ODQS_TEST_PG_URL` when set (checked once; unreachable, the run stops with one line naming
/// it), or else this process's shared scratch cluster, started on first use.
pub fn admin_url() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| match std::env::var("ODQS_TEST_PG_URL") {
        Ok(url) => {
            check_reachable(&url);
            url
        }
        Err(_) => {
            static SHARED: OnceLock<Cluster> = OnceLock::new();
            SHARED.get_or_init(|| Cluster::start("")).url()
        }
    })
    .clone()
}

/// Stops the whole run with one line on standard error: the environment cannot run the
/// PostgreSQL half, and a panic in each of its tests would say the same thing a hundred times.
fn stop_the_run(line: &str) -> ! {
    // Written to the process's stderr itself, not through the harness's capture.
    let _ = writeln!(std::io::stderr().lock(), "\nerror: {line}");
    std::process::exit(2)
}

fn check_reachable(url: &str) {
    let url_for_thread = url.to_string();
    let connected = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                use sqlx::Connection;
                let connect = sqlx::PgConnection::connect(&url_for_thread);
                match tokio::time::timeout(std::time::Duration::from_secs(10), connect).await {
                    Ok(Ok(conn)) => conn.close().await.map_err(|e| e.to_string()),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err("no answer within 10 s".to_string()),
                }
            })
    })
    .join()
    .unwrap();
    if let Err(e) = connected {
        let e = e.replace('\n', " ");
        stop_the_run(&format!(
            "ODQS_TEST_PG_URL={url} cannot be reached ({e}); unset it to let the tests start their own PostgreSQL"
        ));
    }
}

/// Where the machine's PostgreSQL server programs are.
struct Tools {
    bindir: PathBuf,
}

impl Tools {
    fn bin(&self, name: &str) -> PathBuf {
        self.bindir.join(name)
    }
}

/// The folder of `initdb`: on `PATH`, or the newest under Debian's `/usr/lib/postgresql`.
fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let on_path = std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .map(|dir| dir.join("initdb"))
            .find(|p| p.is_file());
        let found = on_path
            .and_then(|p| std::fs::canonicalize(p).ok())
            .or_else(newest_debian_initdb);
        let Some(initdb) = found else {
            stop_the_run(&format!(
                "the PostgreSQL tests start their own server and need its programs (initdb, pg_ctl), \
                 found neither on PATH nor under /usr/lib/postgresql: install them (Debian: \
                 apt-get install {SERVER_PACKAGE}), or set ODQS_TEST_PG_URL to a running server"
            ))
        };
        Tools {
            bindir: initdb.parent().unwrap().to_path_buf(),
        }
    })
}

fn newest_debian_initdb() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let initdb = entry.path().join("bin/initdb");
            initdb.is_file().then_some((version, initdb))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, path)| path)
}

/// The uid and gid the clusters run as when the tests run as root: the `postgres` user's.
/// `None` when not root (the clusters run as the current user).
fn owner() -> Option<(u32, u32)> {
    static OWNER: OnceLock<Option<(u32, u32)>> = OnceLock::new();
    *OWNER.get_or_init(|| {
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        let output = Command::new("id").args(["-u", "postgres"]).output();
        let uid = output.ok().filter(|o| o.status.success()).and_then(|o| {
            String::from_utf8_lossy(&o.stdout).trim().parse::<u32>().ok()
        });
        let gid = Command::new("id")
            .args(["-g", "postgres"])
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse::<u32>().ok());
        match (uid, gid) {
            (Some(uid), Some(gid)) => Some((uid, gid)),
            _ => stop_the_run(
                "the tests run as root, and PostgreSQL refuses root: its scratch clusters run as \
                 the `postgres` user, which does not exist (installing PostgreSQL's server makes it)",
            ),
        }
    })
}

/// `command` as the clusters' owner (through `runuser` when root), run to its end; a failure
/// stops the run with the program's last words.
fn run_as_owner(command: &mut Command, what: &str) {
    let mut command = as_owner(command);
    let output = command
        .output()
        .unwrap_or_else(|e| stop_the_run(&format!("{what} could not be run: {e}")));
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        let last = said
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        stop_the_run(&format!("{what} failed ({}): {last}", output.status));
    }
}

/// `command` run as the clusters' owner, from a folder the owner may enter.
fn as_owner(command: &Command) -> Command {
    let mut wrapped = match owner() {
        Some(_) => {
            let mut runuser = Command::new("runuser");
            runuser
                .args(["-u", "postgres", "--"])
                .arg(command.get_program());
            runuser
        }
        None => Command::new(command.get_program()),
    };
    wrapped
        .args(command.get_args())
        .current_dir(std::env::temp_dir());
    wrapped
}

/// A new folder for one cluster, owned by the clusters' owner.
fn scratch_dir() -> PathBuf {
    let dir = tempfile::Builder::new()
        .prefix("odqs-pg-")
        .tempdir()
        .expect("a temporary folder for a scratch cluster")
        .keep();
    if let Some((uid, gid)) = owner() {
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).expect("chown the cluster's folder");
    }
    dir
}

/// A port of 127.0.0.1 nothing listens on, not handed out before by this process.
fn free_port() -> u16 {
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// The keeper's script: start, say `ready`, wait for the input to close, stop, clean up.
const KEEPER: &str = r#"
pg_ctl -D "$1/data" -l "$1/log" -w -t "$2" start >/dev/null 2>&1 || { echo failed; exit 1; }
echo ready
while read -r _; do :; done
pg_ctl -D "$1/data" -m immediate -w stop >/dev/null 2>&1
rm -rf "$1"
"#;

/// Starts the keeper of the cluster in `dir` and waits until the server accepts connections.
fn start_keeper(dir: &Path) -> Child {
    let tools = tools();
    let path = std::env::join_paths(std::iter::once(tools.bindir.clone()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let mut keeper = as_owner(
        Command::new("sh")
            .args(["-c", KEEPER, "keeper"])
            .arg(dir)
            .arg(START_TIMEOUT_SECONDS.to_string()),
    );
    let mut child = keeper
        .env("PATH", path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        // Its own process group: Ctrl-C stops the tests, and the keeper still cleans up.
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| stop_the_run(&format!("could not start pg_ctl: {e}")));
    let mut said = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut said)
        .unwrap();
    if said.trim() != "ready" {
        let log = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
        let last = log
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        stop_the_run(&format!(
            "a scratch PostgreSQL in {} did not start: {last}",
            dir.display()
        ));
    }
    child
}
