//! Command-line flags of the benchmark (after `cargo bench --bench mix --`).

use std::path::{Path, PathBuf};

use clap::{Parser, ValueEnum};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StoreKind {
    Sqlite,
    Postgres,
}

impl StoreKind {
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::Sqlite => "sqlite",
            StoreKind::Postgres => "postgres",
        }
    }
}

/// The query mix a–h against odqs and, with `--datasette`, against Datasette on the same data.
#[derive(Clone, Debug, Parser)]
#[command(name = "mix")]
pub struct Args {
    /// The store odqs imports into: a fresh SQLite file in a temporary directory, or a scratch
    /// PostgreSQL database `odqs_bench_<random>` (created and dropped).
    #[arg(long, value_enum, default_value = "sqlite")]
    pub store: StoreKind,

    /// PostgreSQL server to create the scratch database on (`--store postgres`).
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    pub pg_url: String,

    /// Also set up Datasette (PyPI, in a virtualenv under `target/bench/venv`) on the same data
    /// and drive the equivalent URLs.
    #[arg(long)]
    pub datasette: bool,
    /// Serve Datasette with `--immutable` (as `datasette publish` does): it then counts each
    /// table once and keeps the count, which speeds up a and b. Off by default, to match the
    /// plain `datasette serve` that issue 6's reference figures were measured with.
    #[arg(long)]
    pub datasette_immutable: bool,

    /// Measured seconds per query and connection count.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,

    /// Warm-up seconds before each measurement (not counted).
    #[arg(long, default_value_t = 1.0)]
    pub warmup_seconds: f64,

    /// How long to wait for odqs serve's `index ready` log line for flights.
    #[arg(long, default_value_t = 180)]
    pub index_wait_seconds: u64,

    /// Do not wait for the `index ready` log line at all.
    #[arg(long)]
    pub no_index_wait: bool,

    /// Runs of the in-memory reference of f (the median is reported).
    #[arg(long, default_value_t = 31)]
    pub reference_runs: usize,

    /// Folder holding flights.csv.gz and flights.schema.json (default: the repository's
    /// testdata/).
    #[arg(long)]
    pub data: Option<PathBuf>,

    /// The odqs binary to import with and serve (default: the one `cargo bench` built beside
    /// this bench), so the same mix can run against two builds back to back.
    #[arg(long, value_name = "PATH")]
    pub odqs_bin: Option<PathBuf>,

    /// The Python interpreter that creates Datasette's virtualenv.
    #[arg(long, default_value = "python3")]
    pub python: String,

    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    pub bench: bool,
    /// Also run the mix on flights repeated this many times (ids offset, years shifted),
    /// generated from `flights.csv.gz`, and print the two runs side by side.
    #[arg(long, default_value_t = 1)]
    pub scale: u32,
    /// `ODQS_INDEX_MEMORY_MB` for `odqs serve` (0: no in-memory index, the store answers
    /// everything; the bench then does not wait for one).
    #[arg(long)]
    pub index_memory_mb: Option<u64>,
    /// Import flights with `--store-indexes` (one store index per typed column), so the store
    /// path's sorted filters read an index (`--index-memory-mb 0` measures them).
    #[arg(long)]
    pub store_indexes: bool,
    /// Measure only cursor paging (the deepest page against the first): no reference, no
    /// mix, no baseline.
    #[arg(long)]
    pub only_cursors: bool,
}

impl Args {
    pub fn data_dir(&self, root: &Path) -> PathBuf {
        self.data.clone().unwrap_or_else(|| root.join("testdata"))
    }

    /// `--odqs-bin`, or the odqs binary this bench was built with.
    pub fn odqs_bin(&self) -> PathBuf {
        self.odqs_bin
            .clone()
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_odqs")))
    }
}
