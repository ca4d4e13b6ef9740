//! The flags checked: store URLs, redaction, proxies, replicas, the public URL.

use super::*;

#[test]
fn store_urls() {
    assert_eq!(
        StoreUrl::parse("sqlite://data/odqs.db").unwrap(),
        StoreUrl::Sqlite("data/odqs.db".into())
    );
    assert_eq!(
        StoreUrl::parse("sqlite:/tmp/x.db?mode=rwc").unwrap(),
        StoreUrl::Sqlite("/tmp/x.db".into())
    );
    assert!(matches!(
        StoreUrl::parse("postgres://u@h/db").unwrap(),
        StoreUrl::Postgres(_)
    ));
    let err = StoreUrl::parse("mysql://root:secret@h/db").unwrap_err();
    assert!(!err.contains("secret"), "{err}");
    assert!(StoreUrl::parse("sqlite://").is_err());
}

#[test]
fn passwords_are_redacted() {
    assert_eq!(
        redact_url("postgres://odqs:hunter2@db:5432/odqs"),
        "postgres://odqs:***@db:5432/odqs"
    );
    assert_eq!(
        redact_url("postgres://odqs@db/odqs"),
        "postgres://odqs@db/odqs"
    );
    let debug = format!("{:?}", StoreUrl::parse("postgres://a:pw@h/d").unwrap());
    assert!(!debug.contains("pw@"), "{debug}");
}

#[test]
fn trusted_proxies() {
    let args = |list: &str| {
        Cli::try_parse_from(["odqs", "--trusted-proxies", list])
            .unwrap()
            .serve
    };
    let config = ServeConfig::from_args(&args("10.0.0.0/8, ::1")).unwrap();
    assert!(config.trusted_proxies.contains("10.9.8.7".parse().unwrap()));
    let err = ServeConfig::from_args(&args("10.0.0.0/8,proxy.internal")).unwrap_err();
    assert!(err.0.starts_with("ODQS_TRUSTED_PROXIES"), "{err}");
    assert!(err.0.contains("\"proxy.internal\""), "{err}");
}

#[test]
fn read_replicas_need_postgres_urls_beside_a_postgres_store() {
    let config = |args: &[&str]| {
        let cli = Cli::try_parse_from([&["odqs"][..], args].concat()).unwrap();
        ServeConfig::from_args(&cli.serve)
    };
    let pg = "postgres://odqs@primary/odqs";
    let two = config(&[
        "--database-url",
        pg,
        "--read-database-url",
        " postgres://odqs:pw@r1/odqs, postgresql://odqs@r2/odqs ,",
    ])
    .unwrap();
    assert_eq!(two.read_replicas.len(), 2);
    assert!(
        config(&["--database-url", pg])
            .unwrap()
            .read_replicas
            .is_empty()
    );
    let sqlite = config(&["--read-database-url", pg]).unwrap_err();
    assert!(sqlite.0.contains("needs a PostgreSQL store"), "{sqlite}");
    let bad = config(&[
        "--database-url",
        pg,
        "--read-database-url",
        "mysql://u:secret@h/db",
    ])
    .unwrap_err();
    assert!(bad.0.starts_with("ODQS_READ_DATABASE_URL"), "{bad}");
    assert!(!bad.0.contains("secret"), "{bad}");
}

#[test]
fn public_url_follows_listen() {
    let serve = |args: &[&str]| {
        let Parsed::Run(cli) = Cli::read([&["odqs"][..], args].concat()) else {
            panic!("{args:?} did not parse");
        };
        ServeConfig::from_args(&cli.serve).unwrap()
    };
    let default = serve(&[]);
    assert_eq!(default.public_url, "http://127.0.0.1:8080");
    assert!(default.public_url_follows_listen);
    let moved = serve(&["--listen", "127.0.0.1:9090"]);
    assert_eq!(moved.public_url, "http://127.0.0.1:9090");
    assert_eq!(
        serve(&["--listen", "0.0.0.0:8081"]).public_url,
        "http://127.0.0.1:8081"
    );
    assert_eq!(
        serve(&["--listen", "[::]:8082"]).public_url,
        "http://[::1]:8082"
    );
    let both = serve(&[
        "--listen",
        "0.0.0.0:8080",
        "--public-url",
        "https://data.example.org/",
    ]);
    assert_eq!(both.public_url, "https://data.example.org");
    assert!(!both.public_url_follows_listen);
}

#[test]
fn flags_are_named_as_given() {
    let Parsed::Run(cli) = Cli::read(["odqs", "serve", "--listen", "nowhere"]) else {
        panic!("parses");
    };
    let Some(Command::Serve(args)) = &cli.command else {
        panic!("serve");
    };
    let err = ServeConfig::from_args(args).unwrap_err();
    assert!(err.0.starts_with("ODQS_LISTEN "), "{err}");
    assert_eq!(
        cli.given.rename(&err.0),
        err.0.replacen("ODQS_LISTEN", "--listen", 1)
    );
    // A variable is renamed only as a whole word.
    assert_eq!(cli.given.rename("ODQS_LISTENER x"), "ODQS_LISTENER x");
    let Parsed::Mistake(err) = Cli::read(["odqs", "--api-rate-limit", "lots"]) else {
        panic!("refused");
    };
    assert_eq!(
        err.0,
        "--api-rate-limit=lots: invalid digit found in string"
    );
    let Parsed::Mistake(err) = Cli::read(["odqs", "--demo-data=maybe"]) else {
        panic!("refused");
    };
    assert_eq!(err.0, "--demo-data=maybe: must be one of true, false");
}

#[test]
fn public_url() {
    assert_eq!(
        parse_public_url("https://data.example.org/").unwrap(),
        "https://data.example.org"
    );
    assert!(parse_public_url("data.example.org").is_err());
}

#[test]
fn the_index_budget_follows_the_machine_unless_given() {
    const MIB: u64 = 1024 * 1024;
    assert_eq!(
        machine::meminfo_total("MemTotal:       24683656 kB\nMemFree: 1 kB\n"),
        Some(24683656 * 1024)
    );
    assert_eq!(machine::meminfo_total("MemFree: 1 kB\n"), None);
    assert_eq!(machine::cgroup_limit("max\n"), None);
    assert_eq!(machine::cgroup_limit("4294967296\n"), Some(4 << 30));
    // cgroup v1's "no limit".
    assert_eq!(machine::cgroup_limit("9223372036854771712\n"), None);

    assert_eq!(index_budget_bytes(Some(300), Some(24 << 30)), 300 * MIB);
    assert_eq!(
        index_budget_bytes(Some(0), Some(24 << 30)),
        0,
        "0 still turns indexes off"
    );
    assert_eq!(index_budget_bytes(None, Some(24 << 30)), 12 << 30);
    assert_eq!(
        index_budget_bytes(None, None),
        DEFAULT_INDEX_MEMORY_MB * MIB
    );

    // As `odqs serve` reads it: half of this machine's memory, or the flag.
    let config = |args: &[&str]| {
        let cli = Cli::try_parse_from([&["odqs"][..], args].concat()).unwrap();
        ServeConfig::from_args(&cli.serve).unwrap()
    };
    let machine = machine::memory_bytes().expect("this machine's memory can be read");
    let default = config(&[]);
    assert_eq!(default.index_memory_bytes, machine / INDEX_MEMORY_SHARE);
    assert!(!default.index_memory_given);
    let given = config(&["--index-memory-mb", "64"]);
    assert_eq!(given.index_memory_bytes, 64 * MIB);
    assert!(given.index_memory_given);
}

#[test]
fn the_index_dir_sits_beside_the_store_unless_given() {
    let config = |args: &[&str]| {
        let cli = Cli::try_parse_from([&["odqs"][..], args].concat()).unwrap();
        ServeConfig::from_args(&cli.serve).unwrap().index_dir
    };
    assert_eq!(
        config(&["--database-url", "sqlite://data/odqs.db"]),
        Some(PathBuf::from("data/indexes"))
    );
    assert_eq!(
        config(&["--database-url", "sqlite:///srv/odqs/store.db"]),
        Some(PathBuf::from("/srv/odqs/indexes"))
    );
    assert_eq!(
        config(&["--database-url", "postgres://u@h/db"]),
        Some(PathBuf::from(DEFAULT_INDEX_DIR))
    );
    assert_eq!(
        config(&["--index-dir", "/var/cache/odqs"]),
        Some(PathBuf::from("/var/cache/odqs"))
    );
    assert_eq!(config(&["--index-dir", ""]), None, "empty turns it off");
}

/// `--help` of every command speaks for itself: it cites no section of a document users do
/// not have.
#[test]
fn help_cites_no_contract_section() {
    fn check(mut command: clap::Command, path: &str) {
        let help = command.render_long_help().to_string();
        assert!(!help.contains("contract §"), "odqs {path} --help: {help}");
        for sub in command.get_subcommands() {
            check(sub.clone(), &format!("{path} {}", sub.get_name()));
        }
    }
    check(Cli::command(), "");
}
