//! TLS to PostgreSQL, against the local server with a certificate made here:
//! a test authority signs a certificate for `localhost` only, installed into the server with
//! `ALTER SYSTEM` and a configuration reload, and taken out again at the end. Every mode goes
//! through the store's own `Store::connect`, and the server itself says (`pg_stat_ssl`) whether
//! the connection is encrypted.
//!
//! Needs what CI has: the PostgreSQL of `ODQS_TEST_PG_URL` on this machine (its data directory
//! is written to), a superuser, the `openssl` command, and root (the key file must belong to
//! the server's user). Runs of this test on one server take turns under an advisory lock.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::helpers::{Kind, TestStore};
use odqs::config::StoreUrl;
use odqs::store::Store;
use sqlx::{Connection, PgConnection};

/// A password that must never appear in a message (trust authentication ignores it).
const PASSWORD: &str = "pw-never-shown";

/// The advisory lock key under which runs of this test take turns on one server.
const LOCK_KEY: i64 = 0x0d9_7150;

/// `url` with another host, `query` as its parameters, and [`PASSWORD`] when it names a user
/// without one.
fn url_with(url: &str, host: &str, query: &str) -> String {
    let base = url.split('?').next().unwrap();
    let (scheme, rest) = base.split_once("://").unwrap();
    let (authority, path) = match rest.split_once('/') {
        Some((authority, path)) => (authority, format!("/{path}")),
        None => (rest, String::new()),
    };
    let (user, host_port) = match authority.rsplit_once('@') {
        Some((user, host_port)) => (Some(user), host_port),
        None => (None, authority),
    };
    let port = match host_port.rsplit_once(':') {
        Some((_, port)) if !host_port.ends_with(']') => format!(":{port}"),
        _ => String::new(),
    };
    let user = match user {
        Some(user) if user.contains(':') => format!("{user}@"),
        Some(user) => format!("{user}:{PASSWORD}@"),
        None => String::new(),
    };
    format!("{scheme}://{user}{host}{port}{path}?{query}")
}

/// Runs `openssl` with `args` in `dir`; panics with its output when it fails.
fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl command is needed to make the test certificates");
    assert!(
        output.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Makes a certificate authority `{name}.crt`/`{name}.key` in `dir`.
fn make_authority(dir: &Path, name: &str) {
    std::fs::write(
        dir.join(format!("{name}.cnf")),
        format!(
            "[req]\ndistinguished_name = dn\nx509_extensions = v3_ca\nprompt = no\n\
             [dn]\nCN = odqs test {name}\n\
             [v3_ca]\nbasicConstraints = critical,CA:TRUE\n\
             keyUsage = critical,keyCertSign,cRLSign\nsubjectKeyIdentifier = hash\n"
        ),
    )
    .unwrap();
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-config",
            &format!("{name}.cnf"),
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
            "-days",
            "7",
        ],
    );
}

/// Makes `server.crt`/`server.key` in `dir`, for the name `localhost` only, signed by `ca`.
fn make_server_certificate(dir: &Path) {
    std::fs::write(
        dir.join("server.cnf"),
        "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = localhost\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName = DNS:localhost\nbasicConstraints = critical,CA:FALSE\n\
         keyUsage = critical,digitalSignature\nextendedKeyUsage = serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-config",
            "server.cnf",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "7",
            "-extfile",
            "server.ext",
        ],
    );
}

/// Runs SQL that the test wrote itself (no input) on `conn`.
async fn exec(conn: &mut PgConnection, sql: String) {
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .execute(&mut *conn)
        .await
        .unwrap();
}

/// The value of `ssl_cert_file` that a new connection sees: once it is the one just set, the
/// server has reloaded its configuration (and its TLS context, in the same step).
async fn wait_for_cert_file(plain_url: &str, expected: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut conn = PgConnection::connect(plain_url).await.unwrap();
        let (value,): (String,) =
            sqlx::query_as("SELECT setting FROM pg_settings WHERE name = 'ssl_cert_file'")
                .fetch_one(&mut conn)
                .await
                .unwrap();
        if value == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "PostgreSQL did not reload its configuration within 20 s (ssl_cert_file is {value:?})"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The test certificate installed in the server; dropping it puts the server's own back
/// (`ALTER SYSTEM RESET`, reload) and then deletes the files. If the test is killed first, the
/// files stay, so the server still starts with them; the next run resets it.
struct Installed {
    plain_url: String,
    dir: PathBuf,
    ssl_was_off: bool,
}

impl Drop for Installed {
    fn drop(&mut self) {
        let url = self.plain_url.clone();
        let ssl_was_off = self.ssl_was_off;
        let reset = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async move {
                    let mut conn = PgConnection::connect(&url).await?;
                    let mut statements = vec![
                        "ALTER SYSTEM RESET ssl_cert_file",
                        "ALTER SYSTEM RESET ssl_key_file",
                    ];
                    if ssl_was_off {
                        statements.push("ALTER SYSTEM RESET ssl");
                    }
                    statements.push("SELECT pg_reload_conf()");
                    for sql in statements {
                        sqlx::query(sql).execute(&mut conn).await?;
                    }
                    Ok::<_, sqlx::Error>(())
                })
        })
        .join();
        if matches!(reset, Ok(Ok(()))) {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            eprintln!(
                "could not reset the server's TLS settings: {reset:?}; run ALTER SYSTEM RESET ssl_cert_file, ssl_key_file"
            );
        }
    }
}

/// Makes the certificates and installs the server's into the server of `plain_url`.
async fn install(admin: &mut PgConnection, plain_url: &str) -> Installed {
    let (data_dir,): (String,) = sqlx::query_as("SELECT current_setting('data_directory')")
        .fetch_one(&mut *admin)
        .await
        .unwrap();
    let owner = std::fs::metadata(&data_dir).unwrap_or_else(|e| {
        panic!(
            "the TLS test installs a certificate into the data directory of the PostgreSQL of \
             ODQS_TEST_PG_URL, {data_dir}, which must be on this machine: {e}"
        )
    });
    let dir = Path::new(&data_dir).join("odqs-test-tls");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    make_authority(&dir, "ca");
    make_authority(&dir, "wrong-ca");
    make_server_certificate(&dir);
    // The server reads its key only if it owns it and nobody else may read it.
    for path in [dir.clone(), dir.join("server.crt"), dir.join("server.key")] {
        std::os::unix::fs::chown(&path, Some(owner.uid()), Some(owner.gid())).unwrap_or_else(|e| {
            panic!(
                "cannot give {} to the server's user (run the tests as root): {e}",
                path.display()
            )
        });
    }
    std::fs::set_permissions(
        dir.join("server.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();

    let (ssl,): (String,) = sqlx::query_as("SELECT current_setting('ssl')")
        .fetch_one(&mut *admin)
        .await
        .unwrap();
    let installed = Installed {
        plain_url: plain_url.to_string(),
        dir: dir.clone(),
        ssl_was_off: ssl != "on",
    };
    let cert = dir.join("server.crt").display().to_string();
    let key = dir.join("server.key").display().to_string();
    assert!(!cert.contains('\'') && !key.contains('\''), "{cert}");
    exec(admin, format!("ALTER SYSTEM SET ssl_cert_file = '{cert}'")).await;
    exec(admin, format!("ALTER SYSTEM SET ssl_key_file = '{key}'")).await;
    if installed.ssl_was_off {
        exec(admin, "ALTER SYSTEM SET ssl = on".into()).await;
    }
    exec(admin, "SELECT pg_reload_conf()".into()).await;
    wait_for_cert_file(plain_url, &cert).await;
    installed
}

/// Connects through `Store::connect` and asks the server whether this connection is
/// encrypted; the error is the message `odqs` would print.
async fn encrypted(url: &str) -> Result<bool, String> {
    let url = StoreUrl::parse(url).map_err(|e| format!("configuration error: {}", e))?;
    let store = Store::connect(&url).await.map_err(|e| e.to_string())?;
    let (ssl,): (bool,) =
        sqlx::query_as("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            .fetch_one(store.db.get_postgres_connection_pool())
            .await
            .unwrap();
    store.db.get_postgres_connection_pool().close().await;
    Ok(ssl)
}

/// Removes the colour codes of a terminal log line.
fn plain_text(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmodes_against_a_local_server_with_its_own_authority() {
    let store = TestStore::new(Kind::Postgres).await;
    let base = store.url.clone();
    let admin_host = {
        let authority = base.split("://").nth(1).unwrap().split('/').next().unwrap();
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        match host_port.rsplit_once(':') {
            Some((host, _)) if !host_port.ends_with(']') => host.to_string(),
            _ => host_port.to_string(),
        }
    };
    let plain = url_with(&base, &admin_host, "sslmode=disable");
    let mut admin = PgConnection::connect(&plain).await.unwrap();
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(LOCK_KEY)
        .execute(&mut admin)
        .await
        .unwrap();
    let installed = install(&mut admin, &plain).await;
    let ca = installed.dir.join("ca.crt").display().to_string();
    let wrong_ca = installed.dir.join("wrong-ca.crt").display().to_string();
    let at = |host: &str, query: &str| url_with(&base, host, query);

    // Plain text only when asked for; TLS whenever the server offers it otherwise.
    assert_eq!(encrypted(&plain).await, Ok(false));
    assert_eq!(
        encrypted(&at("127.0.0.1", "sslmode=prefer")).await,
        Ok(true)
    );
    assert_eq!(
        encrypted(&at("127.0.0.1", "sslmode=require")).await,
        Ok(true)
    );
    // verify-ca checks the chain, not the name; verify-full both.
    let verify_ca = at("127.0.0.1", &format!("sslmode=verify-ca&sslrootcert={ca}"));
    assert_eq!(encrypted(&verify_ca).await, Ok(true));
    let verify_full = at(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    assert_eq!(
        encrypted(&verify_full).await,
        Ok(true),
        "verify-full with the right authority (if this fails, see the server's log: the \
         certificate may not have been loaded)"
    );

    // Refusals: clear, one line, without the password, naming the mode in effect.
    let refused = |result: Result<bool, String>, mode: &str, why: &str| {
        let message = result.expect_err("the connection must be refused");
        assert!(!message.contains(PASSWORD), "{message}");
        assert!(!message.contains('\n'), "{message}");
        assert!(message.contains(&format!("(sslmode={mode})")), "{message}");
        assert!(message.contains(why), "{message}");
    };
    let wrong_name = at(
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    refused(
        encrypted(&wrong_name).await,
        "verify-full",
        "certificate not valid for name \"127.0.0.1\"",
    );
    let wrong_root = at(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={wrong_ca}"),
    );
    refused(
        encrypted(&wrong_root).await,
        "verify-full",
        "invalid peer certificate: UnknownIssuer",
    );
    // As in libpq, require with a root certificate verifies the chain (verify-ca).
    let require_wrong_root = at(
        "127.0.0.1",
        &format!("sslmode=require&sslrootcert={wrong_ca}"),
    );
    refused(
        encrypted(&require_wrong_root).await,
        "verify-ca",
        "UnknownIssuer",
    );
    // The public authorities do not vouch for a private one.
    refused(
        encrypted(&at("localhost", "sslrootcert=system")).await,
        "verify-full",
        "UnknownIssuer",
    );

    // The binary: the default root certificate is ~/.postgresql/root.crt, as in libpq, and the
    // start-up log says what the connection is.
    let home = tempfile::tempdir().unwrap();
    let odqs = |url: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_odqs"))
            .args(["datasets", "list", "--database-url", url])
            .env("HOME", home.path())
            .env("ODQS_LOG", "info")
            .env_remove("DATABASE_URL")
            .env_remove("PGSSLMODE")
            .env_remove("PGSSLROOTCERT")
            .output()
            .unwrap();
        (
            output.status.code(),
            plain_text(&String::from_utf8_lossy(&output.stderr)),
        )
    };
    let default_root = at("localhost", "sslmode=verify-full");
    let (code, stderr) = odqs(&default_root);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(
            // The setting is named as it was given: here the flag.
            "configuration error: --database-url sslmode=verify-full needs the certificate"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains(PASSWORD), "{stderr}");
    std::fs::create_dir(home.path().join(".postgresql")).unwrap();
    std::fs::copy(&ca, home.path().join(".postgresql/root.crt")).unwrap();
    let (code, stderr) = odqs(&default_root);
    assert_eq!(code, Some(0), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("connected to PostgreSQL"))
        .unwrap_or_else(|| panic!("no connection line in:\n{stderr}"));
    assert!(line.contains("sslmode=\"verify-full\" tls=true"), "{line}");
    let (code, stderr) = odqs(&plain);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("sslmode=\"disable\" tls=false"), "{stderr}");

    // The server's own certificate back before the lock is released.
    drop(installed);
    admin.close().await.unwrap();
}
