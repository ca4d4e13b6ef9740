//! One function per sub-command (contract §1). Each error ends as one line on standard error
//! and a non-zero exit: 2 for a configuration mistake, 1 for anything else.

use std::process::ExitCode;
use std::sync::Arc;

use query::memory::IndexPolicy;

use crate::app;
use crate::auth::publishers;
use crate::auth::scope as auth_scope;
use crate::auth::token;
use crate::config::{
    Cli, Command, ConfigError, DatasetsCommand, GrantCommand, ImportArgs, ServeArgs, ServeConfig,
    StoreArgs, StoreUrl, TokenCommand,
};
use crate::http::log_writer::BackgroundStderr;
use crate::import::{self, ImportRequest, reader::Source, schema::SchemaFile};
use crate::state::AppState;
use crate::store::{Store, StoreError, redact_url};

/// A failed command: what to print, and whether it was the configuration's fault.
#[derive(Debug)]
pub enum Failure {
    Config(String),
    Runtime(String),
}

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::Runtime(e.to_string())
    }
}

fn config_failure(e: ConfigError) -> Failure {
    Failure::Config(e.0)
}

/// Runs the parsed command line to completion.
pub fn run(cli: Cli) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("odqs: error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let given = cli.given.clone();
    let result = runtime.block_on(async move {
        match cli.command {
            None => serve(cli.serve).await,
            Some(Command::Serve(args)) => serve(args).await,
            Some(Command::Import(args)) => import(args).await,
            Some(Command::Migrate(args)) => migrate(args).await,
            Some(Command::Datasets { command }) => datasets(command).await,
            Some(Command::Token { command }) => token(command).await,
            Some(Command::Grant { command }) => grant(command).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Config(message)) => {
            // Named as the operator gave it: the flag when it was a flag.
            let message = given.rename(&message);
            eprintln!("odqs: configuration error: {message}");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(message)) => {
            eprintln!("odqs: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(json: bool, default_level: &str) {
    init_logging_to(json, default_level, std::io::stderr);
}

fn init_logging_to<W>(json: bool, default_level: &str, writer: W)
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    let filter =
        crate::api::mcp::log_filter(std::env::var("ODQS_LOG").ok().as_deref(), default_level);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    let _ = if json {
        builder.json().flatten_event(true).try_init()
    } else {
        builder.try_init()
    };
}

/// Opens the store and applies pending migrations: every command starts this way, so each
/// works on a fresh store.
async fn open(args: &StoreArgs) -> Result<Store, Failure> {
    let url = StoreUrl::parse(&args.database_url).map_err(|e| config_failure(ConfigError(e)))?;
    let mut store = Store::connect(&url).await?;
    store.keep_versions = args.keep_versions;
    store.migrate().await?;
    Ok(store)
}

async fn serve(args: ServeArgs) -> Result<(), Failure> {
    let mut config = ServeConfig::from_args(&args).map_err(config_failure)?;
    // A line per request: written by a thread of its own, all pending lines written out
    // before this returns.
    let log_lines = BackgroundStderr::start();
    init_logging_to(
        config.json_logs,
        "info,sqlx=warn,sea_orm=warn",
        log_lines.handle(),
    );
    if config.json_logs {
        crate::http::access_log::write_json_to(log_lines.handle());
    }
    // Bind and take over the signals first: a taken port fails at once, and a SIGTERM during
    // the start-up work below shuts down cleanly once serving begins.
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| Failure::Runtime(format!("cannot listen on {}: {e}", config.listen)))?;
    let shutdown = app::shutdown_signal();
    let metrics_listener = match config.metrics_listen {
        Some(address) => Some(tokio::net::TcpListener::bind(address).await.map_err(|e| {
            Failure::Runtime(format!(
                "cannot listen on {address} (ODQS_METRICS_LISTEN): {e}"
            ))
        })?),
        None => None,
    };
    let store = open(&args.store).await?;
    if config.demo_data {
        import_demo(&store).await?;
    }
    let bound = listener.local_addr()?;
    if config.public_url_follows_listen {
        // Port 0 picked a free port: links and the site's origin check use the real one.
        config.public_url = crate::config::public_url_for(bound);
    }
    tracing::info!(
        listen = %bound,
        public_url = %config.public_url,
        store = ?config.store,
        "odqs is serving"
    );
    let replicas = config
        .read_replicas
        .iter()
        .map(|url| Ok((redact_url(url), Store::connect_replica(url)?)))
        .collect::<Result<Vec<_>, StoreError>>()?;
    if !replicas.is_empty() {
        tracing::info!(
            replicas = replicas.len(),
            "reads of records go to the read replicas once checked"
        );
    }
    log_index_settings(&config);
    let state = AppState::new(store, &config.public_url)
        .with_replicas(replicas)
        .with_rate_limits(config.api_rate_limit, config.address_rate_limit)
        .with_conn_limits(config.conn_limits)
        .with_publishing(crate::publish::Publishing {
            max_upload_bytes: config.max_upload_bytes,
            max_record_bytes: config.max_record_bytes,
            upload_dir: config.upload_dir.clone(),
            ..Default::default()
        })
        .with_trusted_proxies(config.trusted_proxies.clone())
        .with_index_dir(config.index_dir.clone())
        .with_index_policy(IndexPolicy::background(config.index_memory_bytes));
    if let Some(listener) = metrics_listener {
        tracing::info!(listen = %listener.local_addr()?, "metrics are served at /metrics");
        tokio::spawn(app::serve_metrics(state.clone(), listener));
    }
    app::serve(state, listener, shutdown).await?;
    Ok(())
}

/// The in-memory indexes' budget and where they are kept, as the log tells the operator.
fn log_index_settings(config: &ServeConfig) {
    tracing::info!(
        index_memory_mib = config.index_memory_bytes >> 20,
        from = if config.index_memory_given {
            "ODQS_INDEX_MEMORY_MB"
        } else {
            "the machine's memory"
        },
        "in-memory index budget"
    );
    match &config.index_dir {
        Some(dir) => {
            tracing::info!(index_dir = %dir.display(), "in-memory indexes are kept in files between runs")
        }
        None => {
            tracing::info!("in-memory indexes are not kept between runs (ODQS_INDEX_DIR is empty)")
        }
    }
}

async fn import_demo(store: &Store) -> Result<(), Failure> {
    let loaded = crate::demo::load_if_empty(store).await?;
    if loaded > 0 {
        tracing::info!(
            datasets = loaded,
            "the store was empty: loaded the demo datasets"
        );
    }
    Ok(())
}

async fn import(args: ImportArgs) -> Result<(), Failure> {
    init_logging(false, "warn");
    let max_record_bytes = args.max_record_bytes().map_err(config_failure)?;
    let schema = match &args.schema {
        Some(path) => SchemaFile::load(path)?,
        None => SchemaFile::default(),
    };
    let store = open(&args.store).await?;
    let source = Source::File(args.file.clone());
    let progress = Arc::new(import::progress::Stderr::new(&args.slug, source.size()));
    let request = ImportRequest {
        source,
        slug: args.slug,
        schema,
        id_field: args.id_field,
        title: args.title,
        description: args.description,
        max_record_bytes,
        store_indexes: args.store_indexes,
    };
    let summary = import::import(&store, request, progress).await?;
    if summary.unchanged {
        println!(
            "{}: unchanged, still version {}",
            summary.slug, summary.version
        );
    } else {
        println!(
            "imported {} version {}: {} records, {} fields in {:.1} s",
            summary.slug, summary.version, summary.records, summary.fields, summary.seconds
        );
    }
    Ok(())
}

async fn migrate(args: StoreArgs) -> Result<(), Failure> {
    init_logging(false, "warn");
    open(&args).await?;
    println!("migrations applied");
    Ok(())
}

async fn datasets(command: DatasetsCommand) -> Result<(), Failure> {
    init_logging(false, "warn");
    match command {
        DatasetsCommand::List(args) => {
            let store = open(&args).await?;
            let resolver = query::Resolver::new(store.db.clone(), "", store.catalog.clone());
            let datasets = resolver.catalog().await?;
            println!(
                "{:<32} {:>10} {:>7}  {:<25} TITLE",
                "SLUG", "RECORDS", "FIELDS", "UPDATED"
            );
            for dataset in datasets {
                let fields = resolver.dataset(&dataset.slug).await?.schema.fields.len();
                let updated = dataset
                    .updated_at
                    .format(&time::format_description::well_known::Rfc3339)
                    .unwrap_or_default();
                println!(
                    "{:<32} {:>10} {:>7}  {:<25} {}",
                    dataset.slug, dataset.record_count, fields, updated, dataset.title
                );
            }
            Ok(())
        }
        DatasetsCommand::Remove { slug, store } => {
            let store = open(&store).await?;
            if crate::publish::remove(&store, &slug).await? {
                println!("removed {slug}");
                Ok(())
            } else {
                Err(Failure::Runtime(format!(
                    "no dataset is published as {slug:?}"
                )))
            }
        }
    }
}

async fn token(command: TokenCommand) -> Result<(), Failure> {
    init_logging(false, "warn");
    match command {
        TokenCommand::Create {
            email,
            name,
            scope,
            expires_in,
            store,
        } => {
            let email = token::normalize_email(&email)
                .ok_or_else(|| Failure::Config(format!("{email:?} is not an e-mail address")))?;
            let lifetime = auth_scope::lifetime(&expires_in)
                .map_err(|e| Failure::Config(format!("--expires-in: {e}")))?;
            let store = open(&store).await?;
            let scope = auth_scope::asked(&store, &scope)
                .await
                .map_err(|e| match e {
                    query::ApiError::InvalidScope { message } => {
                        Failure::Config(format!("--scope: {message}"))
                    }
                    other => Failure::Runtime(other.message()),
                })?;
            if scope.publishes()
                && publishers::patterns_of_email(&store, &email)
                    .await?
                    .is_empty()
            {
                return Err(Failure::Config(format!(
                    "--scope: {email} holds no grant to publish; `odqs grant publish` gives one"
                )));
            }
            let user = token::find_or_create_user(&store, &email).await?;
            let expires_at = auth_scope::expiry(lifetime);
            let (secret, _) =
                token::mint(&store, user.id, &name, "cli", &scope, expires_at).await?;
            println!("{}", secret.expose());
            Ok(())
        }
    }
}

async fn grant(command: GrantCommand) -> Result<(), Failure> {
    init_logging(false, "warn");
    match command {
        GrantCommand::Publish {
            email,
            datasets,
            by,
            store,
        } => {
            let email = grant_email(&email)?;
            grant_pattern(&datasets)?;
            let store = open(&store).await?;
            if publishers::grant_publish(&store, &email, &datasets, &by).await? {
                println!("{email} may publish {datasets}");
            } else {
                println!("{email} already may publish {datasets}");
            }
            Ok(())
        }
        GrantCommand::List(args) => {
            let store = open(&args).await?;
            println!(
                "{:<40} {:<8} {:<32} {:<16} CREATED",
                "EMAIL", "RIGHT", "DATASETS", "GRANTED BY"
            );
            for listed in publishers::list(&store).await? {
                println!(
                    "{:<40} {:<8} {:<32} {:<16} {}",
                    listed.email,
                    listed.right,
                    listed.pattern,
                    listed.granted_by,
                    query::catalog::rfc3339(listed.created_at)
                );
            }
            Ok(())
        }
        GrantCommand::Revoke {
            email,
            datasets,
            store,
        } => {
            let email = grant_email(&email)?;
            let store = open(&store).await?;
            if publishers::revoke_publish(&store, &email, &datasets).await? {
                println!("{email} may no longer publish {datasets}");
                Ok(())
            } else {
                Err(Failure::Runtime(format!(
                    "{email} holds no grant of {datasets:?}; `odqs grant list` shows the grants"
                )))
            }
        }
    }
}

/// `--email` of `odqs grant`, normalized.
fn grant_email(email: &str) -> Result<String, Failure> {
    token::normalize_email(email)
        .ok_or_else(|| Failure::Config(format!("--email: {email:?} is not an e-mail address")))
}

/// `--datasets` of `odqs grant publish`, checked.
fn grant_pattern(pattern: &str) -> Result<(), Failure> {
    if publishers::valid_pattern(pattern) {
        return Ok(());
    }
    Err(Failure::Config(format!(
        "--datasets: {pattern:?} is no slug, no prefix ending in `*` and not `*`"
    )))
}
