//! Configuration: one clap struct per sub-command, every flag backed by an environment variable
//! (contract §0), checked once into [`StoreUrl`] and [`ServeConfig`] so a mistake is one clear
//! line at start-up instead of a failure later.

use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

pub mod machine;
mod mistakes;

pub use mistakes::GivenFlags;
use mistakes::clap_mistake;

pub use crate::auth::rate_limit::{DEFAULT_ADDRESS_RATE_LIMIT, DEFAULT_API_RATE_LIMIT};
use crate::http::client_addr::TrustedProxies;
use crate::http::server::{self, ConnLimits};
pub use crate::store::{StoreUrl, redact_url};

/// Open Dataset Query Service: a read-only REST API over published open datasets.
#[derive(Debug, Parser)]
#[command(name = "odqs", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Flags of `serve`, also accepted when no sub-command is given (plain `odqs`).
    #[command(flatten)]
    pub serve: ServeArgs,
    /// The settings given as flags rather than environment variables, so that a message
    /// names what the operator wrote.
    #[arg(skip)]
    pub given: GivenFlags,
}

/// What reading the command line and the environment ended with.
#[derive(Debug)]
pub enum Parsed {
    /// A command to run.
    Run(Box<Cli>),
    /// `--help`, `--version`, or a command group without its sub-command: clap prints it and
    /// exits with its own status ([`clap::Error::exit`]).
    Print(clap::Error),
    /// A configuration mistake: one line naming the flag or variable that was given.
    Mistake(ConfigError),
}

impl Cli {
    /// Reads `args` (the program name first) and the environment. Unlike [`Parser::parse`], a
    /// value clap refuses is reported as our one line, naming the flag or the environment
    /// variable the value came from: `ODQS_API_RATE_LIMIT=lots: invalid digit found in string`.
    pub fn read<I, T>(args: I) -> Parsed
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let command = Cli::command();
        let matches = match command.clone().try_get_matches_from(&args) {
            Ok(matches) => matches,
            Err(error) => {
                return match error.kind() {
                    ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => Parsed::Print(error),
                    _ => Parsed::Mistake(ConfigError(clap_mistake(&command, &error, &args))),
                };
            }
        };
        match Cli::from_arg_matches(&matches) {
            Ok(mut cli) => {
                cli.given = GivenFlags::of(&command, &matches);
                Parsed::Run(Box::new(cli))
            }
            Err(error) => Parsed::Mistake(ConfigError(clap_mistake(&command, &error, &args))),
        }
    }
}

/// The sub-commands of contract §1.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply pending migrations, load the demo datasets into an empty store, and serve HTTP.
    Serve(ServeArgs),
    /// Publish a CSV, JSON (array of objects) or NDJSON file, optionally gzipped, as a dataset.
    Import(ImportArgs),
    /// List or remove published datasets.
    Datasets {
        #[command(subcommand)]
        command: DatasetsCommand,
    },
    /// Manage API tokens.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Grant accounts the right to publish datasets over HTTP, list and revoke grants.
    Grant {
        #[command(subcommand)]
        command: GrantCommand,
    },
    /// Apply pending migrations and exit.
    Migrate(StoreArgs),
}

/// Where the store is.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// The store: `sqlite://PATH` (created on first start) or `postgres://USER@HOST/DB`.
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "sqlite://data/odqs.db",
        hide_env_values = true
    )]
    pub database_url: String,
    /// Versions of each dataset kept readable with `version=`, the current one included; `1`
    /// keeps only the current. An older one's tables are dropped a
    /// minute after it leaves this window.
    #[arg(long, env = "ODQS_KEEP_VERSIONS", default_value_t = crate::store::DEFAULT_KEEP_VERSIONS,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub keep_versions: u64,
}

/// Flags of `odqs serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Socket address to bind.
    #[arg(long, env = "ODQS_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// The public address of the site (`{site_url}`); the API lives under `{site_url}/api/v1`.
    /// Default: `http://` and the listen address (a wildcard address such as 0.0.0.0 becomes
    /// the loopback address), so `http://127.0.0.1:8080`.
    #[arg(long, env = "ODQS_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Load the bundled demo datasets when the store holds no dataset.
    #[arg(long, env = "ODQS_DEMO_DATA", default_value_t = true, action = clap::ArgAction::Set)]
    pub demo_data: bool,
    /// Log format: `text` for people, `json` for log collectors. Default: text on a terminal,
    /// json otherwise.
    #[arg(long, env = "ODQS_LOG_FORMAT")]
    pub log_format: Option<String>,
    /// API requests a minute per token (a burst of that many, then refilled evenly); beyond it
    /// the API answers 429 `rate_limited` with `Retry-After`. 0 turns the limit off.
    #[arg(long, env = "ODQS_API_RATE_LIMIT", default_value_t = DEFAULT_API_RATE_LIMIT)]
    pub api_rate_limit: u32,
    /// API requests a minute per client address that carry no token the instance knows (no
    /// token, or one not yet confirmed): they are charged before the store is asked, so a
    /// flood of made-up tokens costs at most this many store queries. 0 turns the limit off.
    #[arg(long, env = "ODQS_ADDRESS_RATE_LIMIT", default_value_t = DEFAULT_ADDRESS_RATE_LIMIT)]
    pub address_rate_limit: u32,
    /// Seconds a connection has to send a complete request head, from being accepted or from
    /// its previous answer.
    #[arg(long, env = "ODQS_HEADER_TIMEOUT_SECS", default_value_t = server::DEFAULT_HEADER_TIMEOUT_SECS)]
    pub header_timeout_secs: u64,
    /// Seconds an idle keep-alive connection stays open after its last answer.
    #[arg(long, env = "ODQS_KEEPALIVE_TIMEOUT_SECS", default_value_t = server::DEFAULT_KEEPALIVE_TIMEOUT_SECS)]
    pub keepalive_timeout_secs: u64,
    /// Open connections at once (lowered to fit the open-file limit); more are closed at accept.
    #[arg(long, env = "ODQS_MAX_CONNECTIONS", default_value_t = server::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// Open connections from one client address (IPv6: one /64) at once.
    #[arg(long, env = "ODQS_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = server::DEFAULT_MAX_PER_ADDRESS)]
    pub max_connections_per_address: usize,
    /// Seconds in-flight requests may run after SIGTERM before their connections are dropped.
    #[arg(long, env = "ODQS_DRAIN_TIMEOUT_SECS", default_value_t = server::DEFAULT_DRAIN_TIMEOUT_SECS)]
    pub drain_timeout_secs: u64,
    /// Seconds in which a request body being read must bring at least 8 KiB (or end); a
    /// slower body fails and its connection is closed.
    #[arg(long, env = "ODQS_BODY_TIMEOUT_SECS", default_value_t = server::DEFAULT_BODY_TIMEOUT_SECS)]
    pub body_timeout_secs: u64,
    /// Seconds in which a client must take at least 8 KiB of an answer waiting to be sent; a
    /// slower reader is cut off.
    #[arg(long, env = "ODQS_SEND_TIMEOUT_SECS", default_value_t = server::DEFAULT_SEND_TIMEOUT_SECS)]
    pub send_timeout_secs: u64,
    /// Memory, in MiB, the in-memory query indexes of all datasets may take together; a
    /// dataset beyond it is answered by the store's own indexes. A sixteenth of it besides
    /// (at most 256 MiB) keeps record bodies served lately. 0 turns both off. Default: half
    /// the memory of the machine, or of its container's limit when lower (1024 where neither
    /// can be read).
    #[arg(long, env = "ODQS_INDEX_MEMORY_MB")]
    pub index_memory_mb: Option<u64>,
    /// A directory where each dataset's in-memory index is kept in a file once built, so the
    /// next start loads it instead of building it from the store. Empty turns this off.
    /// Default: `indexes` beside an SQLite store's file (`data/indexes` for
    /// `sqlite://data/odqs.db`), `data/indexes` for PostgreSQL.
    #[arg(long, env = "ODQS_INDEX_DIR")]
    pub index_dir: Option<String>,
    /// Size, in MiB, of the largest upload a write may send (as sent, compressed or not).
    #[arg(long, env = "ODQS_MAX_UPLOAD_MB", default_value_t = crate::publish::upload::DEFAULT_MAX_UPLOAD_MB)]
    pub max_upload_mb: u64,
    /// Size, in MiB, one record of an upload may take (decompressed), as for `odqs import`.
    #[arg(long, env = "ODQS_MAX_RECORD_MB", default_value_t = crate::import::DEFAULT_MAX_RECORD_MB)]
    pub max_record_mb: u64,
    /// Where uploads are spooled while they are published. Default: the system's temporary
    /// directory.
    #[arg(long, env = "ODQS_UPLOAD_DIR")]
    pub upload_dir: Option<PathBuf>,
    /// Reverse proxies whose `X-Forwarded-For` is believed: comma-separated addresses or CIDR
    /// ranges (`10.0.0.0/8,::1`). Empty (the default): the header is ignored and the TCP peer is
    /// the client every per-address limit counts.
    #[arg(long, env = "ODQS_TRUSTED_PROXIES", default_value = "")]
    pub trusted_proxies: String,
    /// PostgreSQL streaming replicas of `DATABASE_URL`'s database, comma-separated: reads of
    /// records (pages, bodies, counts, exports, index builds) go to one that has replayed the
    /// version asked for, else to the primary; the catalog, tokens and accounts stay on the
    /// primary. A URL that is not a replica of that database is refused with a warning.
    #[arg(
        long,
        env = "ODQS_READ_DATABASE_URL",
        default_value = "",
        hide_env_values = true
    )]
    pub read_database_url: String,
    /// A socket address for the operator's port: `GET /metrics` (Prometheus) is served there
    /// and nowhere else. Unset (the default): no metrics port.
    #[arg(long, env = "ODQS_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,
}

/// The memory budget of the in-memory indexes, in MiB, where the machine's memory cannot be
/// read: room for a few datasets the size of flights.
pub const DEFAULT_INDEX_MEMORY_MB: u64 = 1024;

/// The share of the machine's memory the indexes take by default: half (a denominator), the
/// rest left to the record bodies, the requests and the store's own cache.
pub const INDEX_MEMORY_SHARE: u64 = 2;

/// `ODQS_INDEX_MEMORY_MB` in bytes when given, else [`INDEX_MEMORY_SHARE`] of `machine`'s
/// memory, else [`DEFAULT_INDEX_MEMORY_MB`].
pub fn index_budget_bytes(given_mb: Option<u64>, machine: Option<u64>) -> u64 {
    match (given_mb, machine) {
        (Some(mb), _) => mb.saturating_mul(1024 * 1024),
        (None, Some(bytes)) => bytes / INDEX_MEMORY_SHARE,
        (None, None) => DEFAULT_INDEX_MEMORY_MB * 1024 * 1024,
    }
}

/// Flags of `odqs import`.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The file to publish: `.csv`, `.json`, `.ndjson` or `.jsonl`, optionally ending in `.gz`.
    pub file: PathBuf,
    /// The dataset's slug (one URL path segment; letters, digits, `-`, `_`, `.`, `~`).
    #[arg(long)]
    pub slug: String,
    /// A schema file with title, description, licence, id field and field types (the format
    /// of `GET /api/v1/datasets/{slug}/schema.json`).
    #[arg(long)]
    pub schema: Option<PathBuf>,
    /// The field whose values become `_id`; default: the schema's `id_field`, else the row number.
    #[arg(long)]
    pub id_field: Option<String>,
    /// Title; default: the schema's, else the slug.
    #[arg(long)]
    pub title: Option<String>,
    /// Description; default: the schema's, else empty.
    #[arg(long)]
    pub description: Option<String>,
    /// Size, in MiB, one record may take in the file (decompressed): a larger one, such as a
    /// field or line that never ends, fails the import before it is held whole in memory.
    #[arg(long, env = "ODQS_MAX_RECORD_MB", default_value_t = crate::import::DEFAULT_MAX_RECORD_MB)]
    pub max_record_mb: u64,
    /// Also index every typed column in the store, for a dataset the store will answer itself
    /// (`ODQS_INDEX_MEMORY_MB=0`, or one beyond that budget); without, such queries scan its
    /// table, and the file is a third smaller. The in-memory index does not need them.
    #[arg(long, env = "ODQS_STORE_INDEXES")]
    pub store_indexes: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl ImportArgs {
    /// The record size limit in bytes, checked: a limit of zero would refuse every file.
    pub fn max_record_bytes(&self) -> Result<u64, ConfigError> {
        match self.max_record_mb {
            0 => Err(ConfigError(
                "ODQS_MAX_RECORD_MB must be at least 1, got 0".into(),
            )),
            mb => Ok(mb.saturating_mul(crate::import::MIB)),
        }
    }
}

/// `odqs datasets …`
#[derive(Debug, Subcommand)]
pub enum DatasetsCommand {
    /// What the store holds: slug, records, fields, last import.
    List(StoreArgs),
    /// Unpublish a dataset.
    Remove {
        slug: String,
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// `odqs token …`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create the account if it is missing, mint an API token with a scope and a lifetime, print
    /// it alone on stdout.
    Create {
        #[arg(long)]
        email: String,
        /// A label for the token, shown on the account page.
        #[arg(long, default_value = "cli")]
        name: String,
        /// What the token may do: `read`, `export` and `dataset:<slug>` (repeatable), separated
        /// by spaces, such as "read dataset:flights".
        #[arg(long, default_value = query::scope::DEFAULT_SCOPE)]
        scope: String,
        /// How long the token lives: `never`, or a number and a unit (m, h, d, y), such as 30d.
        #[arg(long, default_value = "never", allow_hyphen_values = true)]
        expires_in: String,
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// `odqs grant …`
#[derive(Debug, Subcommand)]
pub enum GrantCommand {
    /// Let an account (made if missing) publish the datasets a pattern names: a slug, a prefix
    /// ending in `*` (such as "city-*"), or "*" for every dataset. Its tokens publish only with
    /// the `publish` scope, and only there.
    Publish {
        #[arg(long)]
        email: String,
        /// A slug, a prefix ending in `*`, or `*`.
        #[arg(long)]
        datasets: String,
        /// Who grants it, kept with the grant.
        #[arg(long, default_value = "cli")]
        by: String,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// List every grant: account, right, datasets, who granted it and when.
    List(StoreArgs),
    /// Take back an account's grant of a pattern.
    Revoke {
        #[arg(long)]
        email: String,
        /// The pattern as granted.
        #[arg(long)]
        datasets: String,
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// Everything `serve` needs, checked.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub store: StoreUrl,
    pub listen: SocketAddr,
    /// `{site_url}` without a trailing slash.
    pub public_url: String,
    /// `public_url` was not given and follows the listen address (see [`public_url_for`]);
    /// with port 0 it is fixed once the port is known.
    pub public_url_follows_listen: bool,
    pub demo_data: bool,
    pub json_logs: bool,
    /// API requests a minute per token; 0 is no limit.
    pub api_rate_limit: u32,
    /// API requests a minute per client address without a known token; 0 is no limit.
    pub address_rate_limit: u32,
    /// Timeouts and caps of connections.
    pub conn_limits: ConnLimits,
    /// Bytes the in-memory indexes may take; 0 turns them off.
    pub index_memory_bytes: u64,
    /// Whether that budget was given (`ODQS_INDEX_MEMORY_MB`) rather than read off the machine.
    pub index_memory_given: bool,
    /// Where in-memory indexes are kept between runs (`ODQS_INDEX_DIR`); `None`: not kept.
    pub index_dir: Option<PathBuf>,
    /// Whose `X-Forwarded-For` is believed.
    pub trusted_proxies: TrustedProxies,
    /// Read replicas of the PostgreSQL store (`ODQS_READ_DATABASE_URL`).
    pub read_replicas: Vec<String>,
    /// Where `/metrics` is served (`ODQS_METRICS_LISTEN`), if anywhere.
    pub metrics_listen: Option<SocketAddr>,
    /// Bytes of the largest upload (`ODQS_MAX_UPLOAD_MB`).
    pub max_upload_bytes: u64,
    /// Bytes of the largest record of an upload (`ODQS_MAX_RECORD_MB`).
    pub max_record_bytes: u64,
    /// Where uploads are spooled (`ODQS_UPLOAD_DIR`); `None`: the system's temporary directory.
    pub upload_dir: Option<PathBuf>,
}

impl ServeConfig {
    /// Checks the flags; the error is one line that names the variable and what is wrong.
    pub fn from_args(args: &ServeArgs) -> Result<Self, ConfigError> {
        let store = StoreUrl::parse(&args.store.database_url).map_err(ConfigError)?;
        let listen = args.listen.parse().map_err(|_| {
            ConfigError(format!(
                "ODQS_LISTEN must be a socket address like 127.0.0.1:8080, got {:?}",
                args.listen
            ))
        })?;
        let (public_url, public_url_follows_listen) = match &args.public_url {
            Some(url) => (parse_public_url(url)?, false),
            None => (public_url_for(listen), true),
        };
        let json_logs = match args.log_format.as_deref() {
            None => !std::io::IsTerminal::is_terminal(&std::io::stderr()),
            Some("json") => true,
            Some("text") => false,
            Some(other) => {
                return Err(ConfigError(format!(
                    "ODQS_LOG_FORMAT must be text or json, got {other:?}"
                )));
            }
        };
        let trusted_proxies = TrustedProxies::parse(&args.trusted_proxies).map_err(|entry| {
            ConfigError(format!(
                "ODQS_TRUSTED_PROXIES must be comma-separated IP addresses or CIDR ranges like 10.0.0.0/8, got {entry:?}"
            ))
        })?;
        let read_replicas = read_replicas(&args.read_database_url, &store)?;
        let metrics_listen = match &args.metrics_listen {
            None => None,
            Some(text) => Some(text.parse().map_err(|_| {
                ConfigError(format!(
                    "ODQS_METRICS_LISTEN must be a socket address like 127.0.0.1:9090, got {text:?}"
                ))
            })?),
        };
        let index_dir = index_dir(args.index_dir.as_deref(), &store);
        let [max_upload_bytes, max_record_bytes] = [
            ("ODQS_MAX_UPLOAD_MB", args.max_upload_mb),
            ("ODQS_MAX_RECORD_MB", args.max_record_mb),
        ]
        .map(|(name, mb)| match mb {
            0 => Err(ConfigError(format!("{name} must be at least 1, got 0"))),
            mb => Ok(mb.saturating_mul(crate::import::MIB)),
        });
        Ok(ServeConfig {
            max_upload_bytes: max_upload_bytes?,
            max_record_bytes: max_record_bytes?,
            upload_dir: args.upload_dir.clone(),
            read_replicas,
            metrics_listen,
            store,
            listen,
            public_url,
            public_url_follows_listen,
            demo_data: args.demo_data,
            json_logs,
            api_rate_limit: args.api_rate_limit,
            address_rate_limit: args.address_rate_limit,
            conn_limits: conn_limits(args)?,
            index_memory_bytes: index_budget_bytes(args.index_memory_mb, machine::memory_bytes()),
            index_memory_given: args.index_memory_mb.is_some(),
            index_dir,
            trusted_proxies,
        })
    }
}

/// Where a PostgreSQL store's indexes are kept unless `ODQS_INDEX_DIR` says.
pub const DEFAULT_INDEX_DIR: &str = "data/indexes";

/// `ODQS_INDEX_DIR`: as given (empty: `None`, not kept), else `indexes` beside an SQLite
/// store's file, else [`DEFAULT_INDEX_DIR`].
pub fn index_dir(given: Option<&str>, store: &StoreUrl) -> Option<PathBuf> {
    match (given, store) {
        (Some(dir), _) if dir.trim().is_empty() => None,
        (Some(dir), _) => Some(PathBuf::from(dir)),
        (None, StoreUrl::Sqlite(file)) => Some(
            file.parent()
                .unwrap_or(std::path::Path::new(""))
                .join("indexes"),
        ),
        (None, StoreUrl::Postgres(_)) => Some(PathBuf::from(DEFAULT_INDEX_DIR)),
    }
}

/// `ODQS_READ_DATABASE_URL`, checked: PostgreSQL URLs beside a PostgreSQL store.
fn read_replicas(list: &str, store: &StoreUrl) -> Result<Vec<String>, ConfigError> {
    let urls: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(String::from)
        .collect();
    if urls.is_empty() {
        return Ok(urls);
    }
    if !matches!(store, StoreUrl::Postgres(_)) {
        return Err(ConfigError(
            "ODQS_READ_DATABASE_URL needs a PostgreSQL store (DATABASE_URL=postgres://…); SQLite has no replicas".into(),
        ));
    }
    for url in &urls {
        if !matches!(StoreUrl::parse(url), Ok(StoreUrl::Postgres(_))) {
            return Err(ConfigError(format!(
                "ODQS_READ_DATABASE_URL must list postgres:// URLs separated by commas, got {:?}",
                crate::store::redact_url(url)
            )));
        }
    }
    Ok(urls)
}

/// The connection settings, checked: timeouts and caps of zero would refuse everything.
fn conn_limits(args: &ServeArgs) -> Result<ConnLimits, ConfigError> {
    for (name, value) in [
        ("ODQS_HEADER_TIMEOUT_SECS", args.header_timeout_secs),
        ("ODQS_KEEPALIVE_TIMEOUT_SECS", args.keepalive_timeout_secs),
        ("ODQS_BODY_TIMEOUT_SECS", args.body_timeout_secs),
        ("ODQS_SEND_TIMEOUT_SECS", args.send_timeout_secs),
        ("ODQS_MAX_CONNECTIONS", args.max_connections as u64),
        (
            "ODQS_MAX_CONNECTIONS_PER_ADDRESS",
            args.max_connections_per_address as u64,
        ),
    ] {
        if value == 0 {
            return Err(ConfigError(format!("{name} must be at least 1, got 0")));
        }
    }
    Ok(ConnLimits {
        header_timeout: Duration::from_secs(args.header_timeout_secs),
        keepalive_timeout: Duration::from_secs(args.keepalive_timeout_secs),
        max_connections: args.max_connections,
        max_per_address: args.max_connections_per_address,
        drain_timeout: Duration::from_secs(args.drain_timeout_secs),
        body_timeout: Duration::from_secs(args.body_timeout_secs),
        send_timeout: Duration::from_secs(args.send_timeout_secs),
    })
}

/// The public URL when `ODQS_PUBLIC_URL` is not set: `http://` and the listen address, with
/// a wildcard address (`0.0.0.0`, `::`) replaced by the loopback address of its family, so that
/// setting `ODQS_LISTEN` alone gives links, redirects and the site's origin check on that port.
pub fn public_url_for(listen: SocketAddr) -> String {
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("http://{}", SocketAddr::new(ip, listen.port()))
}

/// `ODQS_PUBLIC_URL` must be an absolute http(s) URL; a trailing slash is dropped so that
/// `{site_url}/path` never has two.
pub fn parse_public_url(url: &str) -> Result<String, ConfigError> {
    let trimmed = url.trim_end_matches('/');
    let rest = trimmed
        .strip_prefix("http://")
        .or_else(|| trimmed.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() && !host.contains(char::is_whitespace) => {
            Ok(trimmed.to_string())
        }
        _ => Err(ConfigError(format!(
            "ODQS_PUBLIC_URL must be an http:// or https:// URL, got {url:?}"
        ))),
    }
}

/// A configuration mistake, reported as one line before anything starts.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

#[cfg(test)]
mod tests;
