//! The benchmark: the query mix a–h against odqs (and, with `--datasette`, against
//! Datasette on the same data), in one run.
//!
//! ```sh
//! cargo bench --bench mix -- --store sqlite [--datasette] [--seconds N]
//! cargo bench --bench mix -- --store postgres [--pg-url URL]
//! ```
//!
//! Steps: import `testdata/flights.csv.gz` with its schema into a fresh store (timed), and
//! the demo's scenic spots beside it; mint a token; start `odqs serve` without a rate limit;
//! wait for `/readyz` and for the in-memory index's `index ready` log line; load the same CSV
//! into memory and time the in-memory reference for query f; check every answer once; drive
//! each query with the load generator at 1 and 16 connections; optionally do the same with
//! Datasette; print one Markdown table (also written to `target/bench/mix-<store>.md`).

#[path = "mix/args.rs"]
mod args;
#[path = "mix/baseline.rs"]
mod baseline;
#[path = "mix/checks.rs"]
mod checks;
#[path = "mix/cursors.rs"]
mod cursors;
#[path = "mix/datasette.rs"]
mod datasette;
#[path = "mix/finding.rs"]
mod finding;
#[path = "mix/load.rs"]
mod load;
#[path = "mix/odqs.rs"]
mod odqs;
#[path = "mix/reference.rs"]
mod reference;
#[path = "mix/report.rs"]
mod report;
#[path = "mix/scale.rs"]
mod scale;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;

use args::Args;
use load::{Client, LoadSpec};
use report::{Report, Side};

/// The connection counts of every row.
const CONNECTIONS: [usize; 2] = [1, 16];

fn main() {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    odqs::exit_on_error(runtime.block_on(run(args)));
}

async fn run(args: Args) -> Result<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let data = args.data_dir(&root);
    let out_dir = root.join("target").join("bench");
    std::fs::create_dir_all(&out_dir).context("create target/bench")?;
    let scratch = tempfile::Builder::new()
        .prefix("odqs-bench-")
        .tempdir()
        .context("create a temporary directory")?;
    let original = data.join("flights.csv.gz");
    if args.only_cursors {
        // Cursor paging alone, on flights ×scale.
        let csv = if args.scale > 1 {
            let scaled = scratch
                .path()
                .join(format!("flights-x{}.csv.gz", args.scale));
            scale::write(&original, &scaled, args.scale)?;
            scaled
        } else {
            original
        };
        let report = run_mix(&args, &root, &csv, scratch.path(), false).await?;
        println!("\n{}", cursors::render(&report.cursors, report.store_path));
        return Ok(());
    }
    let one_dir = scratch.path().join("x1");
    std::fs::create_dir_all(&one_dir)?;
    let one = run_mix(&args, &root, &original, &one_dir, args.datasette).await?;
    let mut table = one.render(args.datasette);
    let mut failed = one.failed();
    let mut name = format!("mix-{}.md", args.store.name());
    if args.scale > 1 {
        let scaled = scratch
            .path()
            .join(format!("flights-x{}.csv.gz", args.scale));
        step(&format!(
            "writing flights ×{} to {}",
            args.scale,
            scaled.display()
        ));
        let started = Instant::now();
        let csv_bytes = scale::write(&original, &scaled, args.scale)?;
        step(&format!(
            "flights ×{}: {} MB of CSV in {:.1} s",
            args.scale,
            csv_bytes / 1_000_000,
            started.elapsed().as_secs_f64()
        ));
        let many_dir = scratch.path().join(format!("x{}", args.scale));
        std::fs::create_dir_all(&many_dir)?;
        let mut many = run_mix(&args, &root, &scaled, &many_dir, false).await?;
        many.csv_bytes = Some(csv_bytes);
        table.push('\n');
        table.push_str(&many.render(false));
        table.push('\n');
        table.push_str(&report::compare(&one, &many, args.scale));
        failed |= many.failed();
        name = format!("mix-{}-x{}.md", args.store.name(), args.scale);
    }
    let file = out_dir.join(name);
    std::fs::write(&file, &table).with_context(|| format!("write {}", file.display()))?;
    println!();
    println!("{table}");
    step(&format!("table written to {}", file.display()));
    if failed {
        anyhow::bail!("some answers were wrong or failed (see the ✗ and error counts above)");
    }
    Ok(())
}

/// What every step of one run shares: the arguments, the paths, and how long each load lasts.
struct Run<'a> {
    args: &'a Args,
    root: &'a Path,
    bin: PathBuf,
    flights_csv: &'a Path,
    flights_schema: PathBuf,
    /// The run's scratch directory.
    dir: &'a Path,
    /// Where the tables and kept logs go.
    out_dir: PathBuf,
    seconds: Duration,
    warmup: Duration,
}

impl<'a> Run<'a> {
    fn new(args: &'a Args, root: &'a Path, flights_csv: &'a Path, dir: &'a Path) -> Self {
        let run = Run {
            args,
            root,
            bin: args.odqs_bin(),
            flights_csv,
            flights_schema: args.data_dir(root).join("flights.schema.json"),
            dir,
            out_dir: root.join("target").join("bench"),
            seconds: Duration::from_secs_f64(args.seconds),
            warmup: Duration::from_secs_f64(args.warmup_seconds),
        };
        step(&format!(
            "odqs binary {}, store {}, data {}, {} s per query and connection count (+{} s warm-up), scratch {}",
            run.bin.display(),
            args.store.name(),
            flights_csv.display(),
            args.seconds,
            args.warmup_seconds,
            dir.display()
        ));
        run
    }
}

/// What the in-memory reference gives the checks: the flights, f's median time and groups,
/// and a sample of identifiers.
struct Reference {
    flights: reference::Flights,
    median: Duration,
    expected_f: Vec<reference::GroupStats>,
    ids: Vec<String>,
}

/// One run of the mix on `flights_csv` in the scratch directory `dir`: import, serve, check,
/// load, the baseline server, and (when asked) Datasette.
async fn run_mix(
    args: &Args,
    root: &Path,
    flights_csv: &Path,
    dir: &Path,
    with_datasette: bool,
) -> Result<Report> {
    let run = Run::new(args, root, flights_csv, dir);
    let reference = load_reference(&run)?;

    // odqs: a fresh store, the import (timed), a token, the server.
    let store = odqs::Store::create(args, dir).await?;
    let import = import_flights(&run, &store, reference.flights.len())?;
    let store_bytes = store.bytes().await;
    import_demo(&run, &store)?;
    let token = odqs::token(&run.bin, &store.url)?;
    let (mut server, index_ready, index_line) = start_server(&run, &store, &token).await?;
    let odqs_client = Client::new(server.addr, Some(format!("Bearer {token}")));
    let mut report = Report::new(
        args.store.name(),
        reference.flights.len(),
        reference.median,
        import.clone(),
    );
    if args.only_cursors {
        step("cursor paging: the deepest page against the first, 1 connection");
        report.store_path = args.index_memory_mb == Some(0);
        report.cursors = cursors::measure(&odqs_client, run.warmup, run.seconds).await?;
        server.stop();
        store.drop_scratch().await;
        return Ok(report);
    }
    report.index_ready = index_ready;
    report.store_bytes = store_bytes;
    report.guide_ms = Some(first_guide(&odqs_client).await?);
    report.index_mib = index_line
        .as_deref()
        .and_then(|l| odqs::log_number(l, "mib"));
    report.index_ms = index_line
        .as_deref()
        .and_then(|l| odqs::log_number(l, "ms"));
    let queries = report::queries(&reference.ids);
    measure_odqs(&run, &odqs_client, &queries, &reference, &mut report).await?;
    let bodies = baseline_bodies(&odqs_client, &queries).await?;
    report.peak_rss_kb = odqs::peak_rss_kb(server.pid());
    step(&format!(
        "odqs serve peak RSS after the mix: {}",
        report::mb(report.peak_rss_kb)
    ));
    if index_ready == Some(true) {
        wait_for_index_file(&mut server);
    }
    server.stop();
    report.restart = Some(restart(args, &run.bin, &store.url, dir, &token).await?);
    store.drop_scratch().await;
    measure_baseline(&run, &token, bodies, &queries, &mut report).await?;
    if with_datasette {
        measure_datasette(&run, &queries, &reference, &mut report).await?;
    }
    Ok(report)
}

/// The in-memory reference: the CSV in columns, e+f timed in this process.
fn load_reference(run: &Run<'_>) -> Result<Reference> {
    let runs = run.args.reference_runs;
    step("loading flights into memory for the reference");
    let started = Instant::now();
    let flights = reference::Flights::load(run.flights_csv)?;
    step(&format!(
        "{} flights in memory in {:.1} s; timing the reference of f ({runs} runs)",
        flights.len(),
        started.elapsed().as_secs_f64(),
    ));
    let (median, expected_f) = flights.time_agg(runs);
    step(&format!(
        "reference e+f: median {:.3} ms over {runs} runs ({} groups)",
        ms(median),
        expected_f.len()
    ));
    let ids = flights.sample_ids(1000);
    Ok(Reference {
        flights,
        median,
        expected_f,
        ids,
    })
}

/// Imports flights (timed), keeping its progress lines (a line every 10 s, and each phase)
/// for reading after the run.
fn import_flights(run: &Run<'_>, store: &odqs::Store, flights: usize) -> Result<odqs::Import> {
    step(&format!("importing flights into {}", store.display()));
    let import = odqs::import(
        &run.bin,
        &store.url,
        run.flights_csv,
        "flights",
        &run.flights_schema,
        run.dir,
        run.args.store_indexes,
    )?;
    step(&format!(
        "import: {:.1} s, peak RSS {} ({})",
        import.seconds,
        report::mb(import.peak_rss_kb),
        import.summary
    ));
    let _ = std::fs::copy(
        run.dir.join("import-flights.log"),
        run.out_dir.join(format!(
            "import-flights-{}-{flights}.log",
            run.args.store.name(),
        )),
    );
    Ok(import)
}

/// The demo's scenic spots beside flights, as a served store holds more than one dataset.
fn import_demo(run: &Run<'_>, store: &odqs::Store) -> Result<()> {
    let demo = run.root.join("demo");
    odqs::import(
        &run.bin,
        &store.url,
        &demo.join("tw-scenic-spots.ndjson.gz"),
        "tw-scenic-spots",
        &demo.join("tw-scenic-spots.schema.json"),
        run.dir,
        false,
    )
    .context("import the demo's scenic spots")?;
    Ok(())
}

/// `odqs serve`, ready, with the index of each dataset asked for: the server, whether the
/// flights index was ready (`None`: not waited for) and its `index ready` line.
async fn start_server(
    run: &Run<'_>,
    store: &odqs::Store,
    token: &str,
) -> Result<(odqs::Server, Option<bool>, Option<String>)> {
    let args = run.args;
    let mut server = odqs::Server::start(
        &run.bin,
        &store.url,
        run.dir,
        args.index_memory_mb,
        "serve.log",
    )?;
    step(&format!(
        "odqs serve: pid {}, http://{}, log {}",
        server.pid(),
        server.addr,
        server.log_path.display()
    ));
    load::wait_until_ok(server.addr, "/readyz", Duration::from_secs(60), || {
        server.check_alive()
    })
    .await
    .context("odqs serve never answered /readyz")?;
    // An instance builds a dataset's index when the dataset is first asked for: ask each once
    // (answered by the store meanwhile), then wait for the index.
    let starter = Client::new(server.addr, Some(format!("Bearer {token}")));
    for slug in ["flights", "tw-scenic-spots"] {
        starter
            .get(&format!("/api/v1/datasets/{slug}/records?per_page=1"))
            .await
            .with_context(|| format!("the first request for {slug}"))?;
    }
    if args.no_index_wait || args.index_memory_mb == Some(0) {
        step("not waiting for the in-memory index (--no-index-wait or --index-memory-mb 0)");
        return Ok((server, None, None));
    }
    step(&format!(
        "waiting up to {} s for the log line `index ready … flights`",
        args.index_wait_seconds
    ));
    let waited = server.wait_for_index("flights", Duration::from_secs(args.index_wait_seconds));
    match &waited {
        Some((after, line)) => step(&format!(
            "index ready {:.1} s after start: {line}",
            after.as_secs_f64()
        )),
        None => eprintln!(
            "bench: WARNING: odqs serve logged no `index ready` line for flights within {} s; \
             measuring anyway (this build may have no in-memory index)",
            args.index_wait_seconds
        ),
    }
    let ready = waited.is_some();
    Ok((server, Some(ready), waited.map(|(_, line)| line)))
}

/// The guide's facts: the first skill.md is written from the index. Its time in ms.
async fn first_guide(client: &Client) -> Result<f64> {
    let started = Instant::now();
    let guide = client.get("/datasets/flights/skill.md").await?;
    let guide_ms = started.elapsed().as_secs_f64() * 1e3;
    anyhow::ensure!(guide.status == 200, "skill.md: {}", guide.status);
    step(&format!(
        "first skill.md of flights (its facts from the index): {guide_ms:.1} ms"
    ));
    Ok(guide_ms)
}

/// odqs's answers: correctness first (each answer once), then the load, finding things and
/// cursor paging.
async fn measure_odqs(
    run: &Run<'_>,
    client: &Client,
    queries: &[report::Query],
    reference: &Reference,
    report: &mut Report,
) -> Result<()> {
    step("checking every odqs answer once");
    for query in queries {
        let check = checks::odqs(client, query, &reference.flights, &reference.expected_f).await;
        println!("  odqs {:<3} {}", query.name, check.describe());
        report.check(query.name, Side::Odqs, check);
    }
    for query in queries {
        for &connections in &CONNECTIONS {
            let spec = LoadSpec {
                paths: query.odqs_paths.clone(),
                connections,
                warmup: run.warmup,
                duration: run.seconds,
            };
            let outcome = load::run(client, &spec).await;
            println!(
                "  odqs {:<3} c={connections:<2} {}",
                query.name,
                outcome.summary()
            );
            report.measure(query.name, Side::Odqs, connections, outcome);
        }
    }
    step("finding things: each against its plain request, 1 connection");
    report.finding = finding::measure(client, run.warmup, run.seconds).await?;
    step("cursor paging: the deepest page against the first, 1 connection");
    report.store_path = run.args.index_memory_mb == Some(0);
    report.cursors = cursors::measure(client, run.warmup, run.seconds).await?;
    Ok(())
}

/// The bodies of the simple reads, for the baseline server to answer with.
async fn baseline_bodies(
    client: &Client,
    queries: &[report::Query],
) -> Result<HashMap<String, axum::body::Bytes>> {
    let mut bodies = HashMap::new();
    for query in queries.iter().filter(|q| baseline::ROWS.contains(&q.name)) {
        for path in query.odqs_paths.iter() {
            let answer = client.get(path).await?;
            anyhow::ensure!(answer.status == 200, "{path}: {}", answer.status);
            bodies.insert(path.clone(), axum::body::Bytes::from(answer.body));
        }
    }
    Ok(bodies)
}

/// The restart reads the index back only once its file is complete.
fn wait_for_index_file(server: &mut odqs::Server) {
    step("waiting for the log line `index file written … flights`");
    if server
        .wait_for_line("index file written", "flights", INDEX_FILE_WAIT)
        .is_none()
    {
        eprintln!("bench: WARNING: no `index file written` line for flights; restarting anyway");
    }
}

/// The yardstick: the same bytes from memory through a minimal axum server.
async fn measure_baseline(
    run: &Run<'_>,
    token: &str,
    bodies: HashMap<String, axum::body::Bytes>,
    queries: &[report::Query],
    report: &mut Report,
) -> Result<()> {
    let authorization = format!("Bearer {token}");
    let yardstick = baseline::Baseline::start(&authorization, bodies)?;
    step(&format!(
        "baseline: a minimal axum server on http://{} answering a, d, h from memory",
        yardstick.addr
    ));
    let baseline_client = Client::new(yardstick.addr, Some(authorization));
    for query in queries.iter().filter(|q| baseline::ROWS.contains(&q.name)) {
        let spec = LoadSpec {
            paths: query.odqs_paths.clone(),
            connections: 16,
            warmup: run.warmup,
            duration: run.seconds,
        };
        let outcome = load::run(&baseline_client, &spec).await;
        println!("  baseline {:<3} c=16 {}", query.name, outcome.summary());
        report.measure_baseline(query.name, outcome);
    }
    drop(yardstick);
    Ok(())
}

/// Datasette on the same data: its answers checked once, then the same load.
async fn measure_datasette(
    run: &Run<'_>,
    queries: &[report::Query],
    reference: &Reference,
    report: &mut Report,
) -> Result<()> {
    let ds = datasette::Datasette::start(
        run.args,
        &run.out_dir,
        run.dir,
        run.flights_csv,
        &run.flights_schema,
    )
    .await?;
    let ds_client = Client::new(ds.addr, None);
    step("checking every Datasette answer once");
    let ds_queries = datasette::queries(&reference.ids, &reference.flights);
    for (query, path) in queries.iter().zip(&ds_queries) {
        let check = checks::datasette(
            &ds_client,
            query.name,
            path,
            &reference.flights,
            &reference.expected_f,
        )
        .await;
        println!("  datasette {:<3} {}", query.name, check.describe());
        report.check(query.name, Side::Datasette, check);
    }
    for (query, paths) in queries.iter().zip(&ds_queries) {
        for &connections in &CONNECTIONS {
            let spec = LoadSpec {
                paths: paths.clone(),
                connections,
                warmup: run.warmup,
                duration: run.seconds,
            };
            let outcome = load::run(&ds_client, &spec).await;
            println!(
                "  datasette {:<3} c={connections:<2} {}",
                query.name,
                outcome.summary()
            );
            report.measure(query.name, Side::Datasette, connections, outcome);
        }
    }
    drop(ds);
    Ok(())
}

/// How long to wait for the flights index's file before the restart.
const INDEX_FILE_WAIT: Duration = Duration::from_secs(600);

/// `odqs serve` again on the same store and index directory: how soon it answers a page of
/// flights (from the store while the index is read or built), and how soon the index is ready.
async fn restart(
    args: &Args,
    bin: &std::path::Path,
    url: &str,
    dir: &std::path::Path,
    token: &str,
) -> Result<report::Restart> {
    let mut server = odqs::Server::start(bin, url, dir, args.index_memory_mb, "serve-again.log")?;
    let client = Client::new(server.addr, Some(format!("Bearer {token}")));
    let path = "/api/v1/datasets/flights/records?per_page=1";
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let first_answer = loop {
        server.check_alive()?;
        match client.get(path).await {
            Ok(answer) if answer.status == 200 => break server.uptime(),
            _ if std::time::Instant::now() > deadline => {
                anyhow::bail!("the restarted odqs serve did not answer {path} within 60 s")
            }
            _ => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    };
    let mut restart = report::Restart {
        first_answer,
        ..Default::default()
    };
    if args.index_memory_mb != Some(0) {
        let waited = server.wait_for_index("flights", Duration::from_secs(args.index_wait_seconds));
        if let Some((after, line)) = waited {
            restart.index_ready = Some(after);
            restart.from = odqs::log_text(&line, "from");
        }
    }
    restart.peak_rss_kb = odqs::peak_rss_kb(server.pid());
    step(&format!(
        "started again: first answer {:.0} ms after start, index ready {:?} from {:?}, peak RSS {}",
        first_answer.as_secs_f64() * 1e3,
        restart.index_ready,
        restart.from,
        report::mb(restart.peak_rss_kb)
    ));
    server.stop();
    Ok(restart)
}

/// One progress line on standard error.
fn step(message: &str) {
    eprintln!("bench: {message}");
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
