//! TLS to PostgreSQL, against a scratch cluster of its own that serves a certificate made here:
//! a test authority signs a certificate for `localhost` only. Every mode goes through the
//! store's own `Store::connect`, and the server itself says (`pg_stat_ssl`) whether the
//! connection is encrypted. Needs the `openssl` command (Debian's PostgreSQL depends on it).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::helpers::pg::Cluster;
use odqs::config::StoreUrl;
use odqs::store::Store;

/// A password that must never appear in a message (trust authentication ignores it).
const PASSWORD: &str = "pw-never-shown";

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

/// The test certificates, and a scratch cluster serving TLS with the server's from its start.
struct TlsServer {
    /// Declared first: the cluster stops before its certificate files go.
    cluster: Cluster,
    dir: tempfile::TempDir,
}

impl TlsServer {
    fn start() -> TlsServer {
        let dir = tempfile::tempdir().unwrap();
        make_authority(dir.path(), "ca");
        make_authority(dir.path(), "wrong-ca");
        make_server_certificate(dir.path());
        // The server reads its key only if it owns it and nobody else may read it.
        if let Some((uid, gid)) = Cluster::owner() {
            for path in [
                dir.path().to_path_buf(),
                dir.path().join("server.crt"),
                dir.path().join("server.key"),
            ] {
                std::os::unix::fs::chown(&path, Some(uid), Some(gid)).unwrap();
            }
        }
        let key = dir.path().join("server.key");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        let cert = dir.path().join("server.crt");
        let cluster = Cluster::start(&format!(
            "ssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\n",
            cert.display(),
            key.display()
        ));
        TlsServer { cluster, dir }
    }

    fn file(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
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

/// Whether each TCP socket of this process connected to port `port` has `TCP_NODELAY`.
fn nodelay_of_sockets_to(port: u16) -> Vec<bool> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Some(fd) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        // SAFETY: borrowed for two socket calls; a descriptor closed meanwhile fails them.
        let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let socket = socket2::SockRef::from(&borrowed);
        let peer = socket.peer_addr().ok().and_then(|a| a.as_socket());
        if peer.is_some_and(|a| a.port() == port)
            && let Ok(nodelay) = socket.tcp_nodelay()
        {
            found.push(nodelay);
        }
    }
    found
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
    let server = tokio::task::spawn_blocking(TlsServer::start).await.unwrap();
    let base = server.cluster.url();
    let plain = url_with(&base, "127.0.0.1", "sslmode=disable");
    let ca = server.file("ca.crt");
    let wrong_ca = server.file("wrong-ca.crt");
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

    // Every session over TLS writes without waiting for acknowledgements (src/store/nodelay.rs),
    // the sessions opened at start among them.
    let store = Store::connect(&StoreUrl::parse(&at("127.0.0.1", "sslmode=require")).unwrap())
        .await
        .unwrap();
    let sockets = nodelay_of_sockets_to(server.cluster.port);
    assert!(
        sockets.len() >= 3 && sockets.iter().all(|&on| on),
        "{sockets:?}"
    );
    store.db.get_postgres_connection_pool().close().await;

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
}
