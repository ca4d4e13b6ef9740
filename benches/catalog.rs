//! The catalog benchmark: a store of many small datasets, as a portal holds them.
//!
//! ```sh
//! cargo bench --bench catalog -- --store sqlite --datasets 10000
//! cargo bench --bench catalog -- --store postgres [--pg-url URL] --datasets 10000
//! ```
//!
//! Steps: import `--datasets` small datasets (200 rows each, titles, descriptions and field
//! descriptions drawn from a vocabulary) one after the other into a fresh store, each import
//! timed (in this process, through the same code `odqs import` runs); time a few `odqs import`
//! processes on the full catalog as well; start `odqs serve` and time it to `/readyz`; ask 90
//! catalog searches (every tenth after a pause longer than the catalog's freshness window), 30
//! list pages and `catalog.md`; read the server's resident memory. One Markdown table goes to
//! stdout and to `target/bench/catalog-<store>.md`.

#[path = "mix/args.rs"]
#[allow(dead_code)]
mod args;
#[path = "mix/load.rs"]
#[allow(dead_code)]
mod load;
#[path = "mix/odqs.rs"]
#[allow(dead_code)]
mod odqs;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;

/// Records in each dataset.
const ROWS: usize = 200;
/// Catalog searches asked; every [`PAUSE_EVERY`]th after a pause.
const SEARCHES: usize = 90;
const PAUSE_EVERY: usize = 10;
/// Longer than the catalog's freshness window (`query::DATASET_FRESH_FOR`).
const PAUSE: Duration = Duration::from_millis(1500);
/// List pages asked.
const LIST_PAGES: usize = 30;
/// `odqs import` processes timed on the full catalog.
const CLI_IMPORTS: usize = 5;

#[derive(Parser, Debug)]
#[command(about = "odqs's catalog at scale: import cost by tenth, search, list, catalog.md")]
struct CatalogArgs {
    #[arg(long, value_enum, default_value = "sqlite")]
    store: args::StoreKind,
    /// PostgreSQL server for `--store postgres` (a scratch database is made on it).
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    pg_url: String,
    /// Datasets in the catalog.
    #[arg(long, default_value_t = 10_000)]
    datasets: usize,
    /// The odqs binary to serve with (default: the one this bench was built with).
    #[arg(long, value_name = "PATH")]
    odqs_bin: Option<PathBuf>,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() {
    let args = CatalogArgs::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    odqs::exit_on_error(runtime.block_on(run(args)));
}

async fn run(args: CatalogArgs) -> Result<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out_dir = root.join("target").join("bench");
    std::fs::create_dir_all(&out_dir).context("create target/bench")?;
    let scratch = tempfile::Builder::new()
        .prefix("odqs-catalog-")
        .tempdir()
        .context("create a temporary directory")?;
    let mix_args = args::Args::parse_from([
        "catalog",
        "--store",
        args.store.name(),
        "--pg-url",
        &args.pg_url,
    ]);
    let store = odqs::Store::create(&mix_args, scratch.path()).await?;
    let outcome = measure(&args, &store, scratch.path()).await;
    store.drop_scratch().await;
    let report = outcome?;
    print!("{report}");
    let out = out_dir.join(format!("catalog-{}.md", args.store.name()));
    std::fs::write(&out, &report).with_context(|| format!("write {}", out.display()))?;
    eprintln!("bench: written to {}", out.display());
    Ok(())
}

/// Everything measured on one store, as the report's Markdown.
async fn measure(args: &CatalogArgs, store: &odqs::Store, dir: &Path) -> Result<String> {
    let files = DatasetFiles::write(dir)?;
    let url = ::odqs::store::StoreUrl::parse(&store.url).map_err(anyhow::Error::msg)?;
    let opened = ::odqs::store::Store::connect(&url).await?;
    opened.migrate().await?;
    let mut words = Words::new(7);
    let mut import_ms = Vec::with_capacity(args.datasets);
    let started = Instant::now();
    for n in 0..args.datasets {
        let began = Instant::now();
        import_one(&opened, &files, &mut words, n).await?;
        import_ms.push(began.elapsed().as_secs_f64() * 1000.0);
        if (n + 1) % (args.datasets / 10).max(1) == 0 {
            eprintln!(
                "bench: {} datasets in {:.0} s (last import {:.1} ms)",
                n + 1,
                started.elapsed().as_secs_f64(),
                import_ms[n]
            );
        }
    }
    drop(opened);
    let bin = args
        .odqs_bin
        .clone()
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_odqs")));
    let mut cli_ms = Vec::new();
    for i in 0..CLI_IMPORTS {
        let slug = format!("cli-{i}");
        let done = odqs::import(
            &bin,
            &store.url,
            &files.csv,
            &slug,
            &files.schema,
            dir,
            false,
        )?;
        cli_ms.push(done.seconds * 1000.0);
    }
    let served = serve(&bin, store, dir, &mut words).await?;
    Ok(report(args, store, &import_ms, &cli_ms, &served))
}

/// One dataset: the shared rows under a title, description and field descriptions of its own.
async fn import_one(
    store: &::odqs::store::Store,
    files: &DatasetFiles,
    words: &mut Words,
    n: usize,
) -> Result<()> {
    use ::odqs::import::{self, ImportRequest, reader::Source, schema::SchemaFile};
    let schema = serde_json::json!({
        "title": words.phrase(3),
        "description": words.phrase(12),
        "fields": [
            {"name": "code", "type": "keyword", "description": words.phrase(3)},
            {"name": "name", "type": "text", "description": words.phrase(4)},
            {"name": "amount", "type": "number", "description": words.phrase(3)},
            {"name": "day", "type": "date"},
        ],
    });
    let schema = SchemaFile::parse(&schema.to_string())?;
    import::import(
        store,
        ImportRequest {
            source: Source::File(files.csv.clone()),
            slug: format!("d{n:06}"),
            schema,
            id_field: Some("code".into()),
            title: None,
            description: None,
            max_record_bytes: import::DEFAULT_MAX_RECORD_MB * import::MIB,
            store_indexes: false,
        },
        Arc::new(import::progress::Silent),
    )
    .await
    .with_context(|| format!("import dataset {n}"))?;
    Ok(())
}

/// The rows every dataset holds, and a schema file for `odqs import`.
struct DatasetFiles {
    csv: PathBuf,
    schema: PathBuf,
}

impl DatasetFiles {
    fn write(dir: &Path) -> Result<Self> {
        let mut words = Words::new(3);
        let mut csv = String::from("code,name,amount,day\n");
        for i in 0..ROWS {
            let day = 1 + i % 28;
            writeln!(
                csv,
                "C{i:05},{},{}.5,2026-01-{day:02}",
                words.phrase(2),
                i * 7
            )?;
        }
        let csv_path = dir.join("rows.csv");
        std::fs::write(&csv_path, csv)?;
        let schema_path = dir.join("rows.schema.json");
        std::fs::write(
            &schema_path,
            r#"{"title": "CLI import", "fields": [{"name": "code", "type": "keyword"},
                {"name": "name", "type": "text"}, {"name": "amount", "type": "number"},
                {"name": "day", "type": "date"}], "id_field": "code"}"#,
        )?;
        Ok(DatasetFiles {
            csv: csv_path,
            schema: schema_path,
        })
    }
}

/// Words drawn from a fixed vocabulary of made-up words, some far more frequent than others
/// (as in real titles), by a seeded generator: the same catalog every run.
struct Words {
    state: u64,
    vocabulary: Vec<String>,
}

impl Words {
    fn new(seed: u64) -> Self {
        const SYLLABLES: [&str; 16] = [
            "ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ber", "dan", "fel", "gor", "hul",
            "jin", "pra", "zet",
        ];
        let vocabulary = (0..16 * 16 * 8)
            .map(|i| {
                format!(
                    "{}{}{}",
                    SYLLABLES[i % 16],
                    SYLLABLES[(i / 16) % 16],
                    SYLLABLES[(i / 256 + i) % 16]
                )
            })
            .collect();
        Words {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            vocabulary,
        }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    /// A word, the first ones of the vocabulary far likelier (a square's skew).
    fn word(&mut self) -> &str {
        let u = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        let i = ((u * u) * self.vocabulary.len() as f64) as usize;
        &self.vocabulary[i.min(self.vocabulary.len() - 1)]
    }

    fn phrase(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| self.word().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What the running server showed.
struct Served {
    ready: Duration,
    search_ms: Vec<f64>,
    after_pause_ms: Vec<f64>,
    list_ms: Vec<f64>,
    catalog_md_bytes: usize,
    catalog_md_ms: Vec<f64>,
    rss_kb: Option<u64>,
    peak_rss_kb: Option<u64>,
}

async fn serve(bin: &Path, store: &odqs::Store, dir: &Path, words: &mut Words) -> Result<Served> {
    let token = odqs::token(bin, &store.url)?;
    let mut server = odqs::Server::start(bin, &store.url, dir, None, "serve.log")?;
    let addr = server.addr;
    load::wait_until_ok(addr, "/readyz", Duration::from_secs(120), || {
        server.check_alive()
    })
    .await?;
    let ready = server.uptime();
    let client = load::Client::new(addr, Some(format!("Bearer {token}")));
    let mut served = Served {
        ready,
        search_ms: Vec::new(),
        after_pause_ms: Vec::new(),
        list_ms: Vec::new(),
        catalog_md_bytes: 0,
        catalog_md_ms: Vec::new(),
        rss_kb: None,
        peak_rss_kb: None,
    };
    for i in 0..SEARCHES {
        if i % PAUSE_EVERY == 0 {
            tokio::time::sleep(PAUSE).await;
        }
        let q = match i % 3 {
            0 => words.word().to_string(),
            1 => words.phrase(2),
            _ => "zzzqx".to_string(),
        };
        let ms = timed_get(
            &client,
            &format!("/api/v1/datasets?q={}", q.replace(' ', "+")),
        )
        .await?;
        served.search_ms.push(ms);
        if i % PAUSE_EVERY == 0 {
            served.after_pause_ms.push(ms);
        }
    }
    for i in 0..LIST_PAGES {
        let page = 1 + (words.next() as usize % 50) + i % 2;
        served
            .list_ms
            .push(timed_get(&client, &format!("/api/v1/datasets?page={page}")).await?);
    }
    for _ in 0..10 {
        let began = Instant::now();
        let answer = client.get("/catalog.md").await?;
        if answer.status != 200 {
            bail!(
                "/catalog.md answered {}: {}",
                answer.status,
                answer.snippet()
            );
        }
        served
            .catalog_md_ms
            .push(began.elapsed().as_secs_f64() * 1000.0);
        served.catalog_md_bytes = answer.body.len();
    }
    served.rss_kb = odqs::status_kb(server.pid(), "VmRSS:");
    served.peak_rss_kb = odqs::peak_rss_kb(server.pid());
    server.stop();
    Ok(served)
}

/// One GET that must answer 200; its time in milliseconds.
async fn timed_get(client: &load::Client, path: &str) -> Result<f64> {
    let began = Instant::now();
    let answer = client.get(path).await?;
    if answer.status != 200 {
        bail!("{path} answered {}: {}", answer.status, answer.snippet());
    }
    Ok(began.elapsed().as_secs_f64() * 1000.0)
}

/// The `p`-th percentile (0–100) of `values`, by the nearest rank.
fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn report(
    args: &CatalogArgs,
    store: &odqs::Store,
    import_ms: &[f64],
    cli_ms: &[f64],
    served: &Served,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## Catalog of {} datasets on {}\n",
        args.datasets,
        store.display()
    );
    let _ = writeln!(out, "| measure | value |\n|---|---|");
    let tenth = (import_ms.len() / 10).max(1);
    let medians: Vec<f64> = import_ms
        .chunks(tenth)
        .map(|chunk| percentile(chunk, 50.0))
        .collect();
    for (i, median) in medians.iter().enumerate() {
        let _ = writeln!(out, "| import median, tenth {} | {median:.1} ms |", i + 1);
    }
    if let (Some(first), Some(last)) = (medians.first(), medians.get(9).or(medians.last())) {
        let _ = writeln!(out, "| last tenth / first tenth | {:.2}× |", last / first);
    }
    let _ = writeln!(
        out,
        "| `odqs import` process, median of {} | {:.1} ms |",
        cli_ms.len(),
        percentile(cli_ms, 50.0)
    );
    let rows = [
        ("catalog search p50", percentile(&served.search_ms, 50.0)),
        ("catalog search p99", percentile(&served.search_ms, 99.0)),
        (
            "catalog search slowest",
            percentile(&served.search_ms, 100.0),
        ),
        (
            "catalog search after a pause, slowest",
            percentile(&served.after_pause_ms, 100.0),
        ),
        ("list p50", percentile(&served.list_ms, 50.0)),
        ("catalog.md p50", percentile(&served.catalog_md_ms, 50.0)),
    ];
    for (name, ms) in rows {
        let _ = writeln!(out, "| {name} | {ms:.1} ms |");
    }
    let _ = writeln!(out, "| catalog.md size | {} B |", served.catalog_md_bytes);
    let _ = writeln!(
        out,
        "| ready after start | {:.2} s |",
        served.ready.as_secs_f64()
    );
    let mib = |kb: Option<u64>| kb.map_or("?".to_string(), |kb| format!("{} MiB", kb / 1024));
    let _ = writeln!(out, "| RSS after the requests | {} |", mib(served.rss_kb));
    let _ = writeln!(out, "| peak RSS | {} |", mib(served.peak_rss_kb));
    out
}
