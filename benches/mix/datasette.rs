//! Datasette on the same data, set up like a careful Datasette user would: from PyPI in a
//! virtualenv (kept in `target/bench/venv` between runs), a typed `flights.db` with indexes and
//! FTS5 (`build_flights_db.py`), served with `suggest_facets off` (immutable with
//! `--datasette-immutable`); and the URLs
//! equivalent to the query mix.

use std::fs::File;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::args::Args;
use crate::load;
use crate::reference::Flights;
use crate::report::PAGE;

/// What pip installs.
const PACKAGES: [&str; 2] = ["datasette==0.65.*", "sqlite-utils"];
/// Builds flights.db.
const BUILD_SCRIPT: &str = include_str!("build_flights_db.py");
/// Query f in SQL: count, sum, avg, min, max and the quartiles by linear interpolation.
const F_SQL: &str = include_str!("datasette_f.sql");
/// Query e in SQL.
const E_SQL: &str = "select carrier, count(*) as n from flights where carrier is not null group by carrier order by n desc, carrier";

pub struct Datasette {
    child: Child,
    pub addr: SocketAddr,
}

fn run(command: &mut Command, what: &str) -> Result<()> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("run {what}"))?;
    if !output.status.success() {
        bail!(
            "{what} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let out = String::from_utf8_lossy(&output.stdout);
    if !out.trim().is_empty() {
        eprintln!("bench:   {}", out.trim());
    }
    Ok(())
}

/// The virtualenv with Datasette and sqlite-utils, made when missing.
fn virtualenv(args: &Args, out_dir: &Path) -> Result<PathBuf> {
    let venv = out_dir.join("venv");
    let bin = venv.join("bin");
    let ready = Command::new(bin.join("datasette"))
        .arg("--version")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.starts_with(b"datasette, version 0.65"))
        && bin.join("sqlite-utils").exists();
    if ready {
        eprintln!("bench: reusing the virtualenv {}", venv.display());
        return Ok(bin);
    }
    eprintln!(
        "bench: creating the virtualenv {} and installing {}",
        venv.display(),
        PACKAGES.join(" ")
    );
    run(
        Command::new(&args.python).args(["-m", "venv"]).arg(&venv),
        "python3 -m venv",
    )?;
    run(
        Command::new(bin.join("pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .args(PACKAGES),
        "pip install",
    )?;
    Ok(bin)
}

impl Datasette {
    pub async fn start(
        args: &Args,
        out_dir: &Path,
        dir: &Path,
        csv: &Path,
        schema: &Path,
    ) -> Result<Self> {
        let bin = virtualenv(args, out_dir)?;
        let script = dir.join("build_flights_db.py");
        std::fs::write(&script, BUILD_SCRIPT)?;
        let db = dir.join("flights.db");
        eprintln!(
            "bench: building {} (typed columns, indexes, FTS5)",
            db.display()
        );
        let started = Instant::now();
        run(
            Command::new(bin.join("python"))
                .arg(&script)
                .arg(csv)
                .arg(schema)
                .arg(&db),
            "build_flights_db.py",
        )?;
        eprintln!(
            "bench: flights.db built in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let addr = crate::odqs::free_addr()?;
        let log = dir.join("datasette.log");
        let mut command = Command::new(bin.join("datasette"));
        command.arg("serve");
        if args.datasette_immutable {
            command.arg("--immutable");
        }
        let child = command
            .arg(&db)
            .args(["--host", "127.0.0.1", "--port"])
            .arg(addr.port().to_string())
            .args(["--setting", "suggest_facets", "off"])
            .args(["--setting", "sql_time_limit_ms", "60000"])
            .args(["--setting", "max_returned_rows", "1000"])
            .stdin(Stdio::null())
            .stdout(File::create(&log)?)
            .stderr(File::create(dir.join("datasette.stderr.log"))?)
            .spawn()
            .context("start datasette")?;
        let mut ds = Self { child, addr };
        eprintln!(
            "bench: datasette serve: pid {}, http://{addr}, log {}",
            ds.child.id(),
            log.display()
        );
        let child = &mut ds.child;
        load::wait_until_ok(
            addr,
            "/-/versions.json",
            Duration::from_secs(60),
            || match child.try_wait()? {
                Some(status) => bail!("datasette exited ({status})"),
                None => Ok(()),
            },
        )
        .await
        .context("Datasette never answered")?;
        Ok(ds)
    }
}

impl Drop for Datasette {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The Datasette URLs equivalent to the query mix, in the order of `report::queries`.
pub fn queries(ids: &[String], flights: &Flights) -> Vec<Arc<[String]>> {
    let table = format!("/flights/flights.json?_shape=objects&_size={PAGE}");
    let sql = |sql: &str| format!("/flights.json?_shape=objects&sql={}", encode(sql));
    // Keyset pagination: with `id` the INTEGER PRIMARY KEY (ids are the row numbers, in file
    // order), the `_next` token Datasette gives for page 1001 is the last id of page 1000.
    let page_1000_last = &flights.ids[(1000 * PAGE - 1).min(flights.len() - 1)];
    let one = |path: String| -> Arc<[String]> { vec![path].into() };
    vec![
        one(table.clone()),
        one(format!("{table}&carrier=UA&origin=EWR")),
        one(format!(
            "{table}&carrier=UA&origin=EWR&_sort_desc=dep_delay"
        )),
        one(format!("{table}&_next={}", encode(page_1000_last))),
        one(sql(E_SQL)),
        one(sql(F_SQL.trim())),
        one(format!("{table}&_search=denver")),
        one(format!("{table}&_search=boeing")),
        ids.iter()
            .map(|id| format!("/flights/flights/{}.json?_shape=objects", encode(id)))
            .collect(),
    ]
}
