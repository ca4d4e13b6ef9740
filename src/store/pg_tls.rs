//! TLS to PostgreSQL with libpq's rules for `sslmode` and `sslrootcert`, so a `DATABASE_URL`
//! that works with `psql` works here too, and a log line at start-up that says what the
//! connection actually is: `sslmode=prefer` may fall back to plain text without a word.
//!
//! sqlx does the TLS (rustls with ring, trusting the system's certificate authorities, read
//! by `rustls-native-certs` from `/etc/ssl/certs` or `SSL_CERT_FILE`/`SSL_CERT_DIR`); this
//! module adds what libpq does and sqlx does not:
//! - `sslmode=require` with a `sslrootcert` verifies the certificate chain (`verify-ca`);
//! - `verify-ca` and `verify-full` without `sslrootcert` use `~/.postgresql/root.crt`, and
//!   fail with advice when it does not exist;
//! - `sslrootcert=system` trusts the system's authorities and needs (and defaults to)
//!   `verify-full`.

use std::net::IpAddr;
use std::path::PathBuf;
use std::str::FromStr;

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgSslMode};

/// The query parameter names sqlx accepts for the mode and the root certificate.
const MODE_KEYS: [&str; 2] = ["sslmode", "ssl-mode"];
const ROOT_KEYS: [&str; 3] = ["sslrootcert", "ssl-root-cert", "ssl-ca"];

/// libpq's spelling of a mode, for messages and logs.
pub fn mode_name(mode: PgSslMode) -> &'static str {
    match mode {
        PgSslMode::Disable => "disable",
        PgSslMode::Allow => "allow",
        PgSslMode::Prefer => "prefer",
        PgSslMode::Require => "require",
        PgSslMode::VerifyCa => "verify-ca",
        PgSslMode::VerifyFull => "verify-full",
    }
}

/// The connect options of a `postgres://` URL with libpq's TLS rules applied; the error is one
/// sentence that names the parameter (never the password). `home` is where
/// `.postgresql/root.crt` is looked for (the user's home directory).
pub fn connect_options(url: &str, home: Option<PathBuf>) -> Result<PgConnectOptions, String> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let last = |keys: &[&str]| {
        pairs
            .iter()
            .rev()
            .find(|(k, _)| keys.contains(&k.as_str()))
            .map(|(_, v)| v.clone())
    };
    let mode = match last(&MODE_KEYS).or_else(|| std::env::var("PGSSLMODE").ok()) {
        None => None,
        Some(text) => Some(PgSslMode::from_str(&text).map_err(|_| {
            format!(
                "sslmode must be disable, allow, prefer, require, verify-ca or verify-full, got {text:?}"
            )
        })?),
    };
    let env_root = std::env::var("PGSSLROOTCERT").ok();
    if env_root.as_deref() == Some("system") {
        return Err(
            "PGSSLROOTCERT=system is not supported: write sslrootcert=system in the URL".into(),
        );
    }
    let root = last(&ROOT_KEYS).or(env_root);
    // sqlx would read `system` as a file name: it is left out, and sqlx's default trust store
    // (the system's authorities) is what `system` means.
    let url = if root.as_deref() == Some("system") {
        without_root(base, &pairs)
    } else {
        url.to_string()
    };
    let options = PgConnectOptions::from_str(&url).map_err(|e| match e {
        sqlx::Error::Configuration(e) => format!("is not a valid PostgreSQL URL: {e}"),
        other => format!("is not a valid PostgreSQL URL: {other}"),
    })?;
    with_libpq_mode(options, mode, root.as_deref(), home)
}

/// The URL without its root certificate parameters.
fn without_root(base: &str, pairs: &[(String, String)]) -> String {
    let kept = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(
            pairs
                .iter()
                .filter(|(k, _)| !ROOT_KEYS.contains(&k.as_str())),
        )
        .finish();
    if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{kept}")
    }
}

/// The mode libpq would use for the mode and root certificate given, checked as libpq checks
/// them: a root certificate makes `require` verify the chain, `system` needs `verify-full`,
/// and a verifying mode without a root certificate takes `~/.postgresql/root.crt`.
fn with_libpq_mode(
    mut options: PgConnectOptions,
    mode: Option<PgSslMode>,
    root: Option<&str>,
    home: Option<PathBuf>,
) -> Result<PgConnectOptions, String> {
    let mode = match (mode, root) {
        (None | Some(PgSslMode::VerifyFull), Some("system")) => PgSslMode::VerifyFull,
        (Some(other), Some("system")) => {
            return Err(format!(
                "sslrootcert=system needs sslmode=verify-full (as in libpq), got sslmode={}",
                mode_name(other)
            ));
        }
        (mode, Some(root)) => {
            let pem = root.trim_start().starts_with("-----BEGIN");
            if !pem && let Err(e) = std::fs::File::open(root) {
                return Err(format!("sslrootcert {root:?} cannot be read: {e}"));
            }
            match mode.unwrap_or_default() {
                // libpq: with a root certificate, `require` verifies the chain like `verify-ca`.
                PgSslMode::Require => PgSslMode::VerifyCa,
                other => other,
            }
        }
        (Some(mode @ (PgSslMode::VerifyCa | PgSslMode::VerifyFull)), None) => {
            let default = home.map(|h| h.join(".postgresql/root.crt"));
            match default.filter(|path| path.is_file()) {
                Some(path) => options = options.ssl_root_cert(path),
                None => {
                    return Err(format!(
                        "sslmode={} needs the certificate of the authority that signed the \
                         server's: set sslrootcert=/path/to/ca.pem (your provider's CA), or \
                         sslrootcert=system to trust the system's authorities \
                         (~/.postgresql/root.crt does not exist)",
                        mode_name(mode)
                    ));
                }
            }
            mode
        }
        (mode, None) => mode.unwrap_or_default(),
    };
    Ok(options.ssl_mode(mode))
}

/// The user's home directory, where libpq looks for `.postgresql/root.crt`.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// Whether the server is on this machine: a Unix socket, `localhost` or a loopback address.
/// Plain text or an unverified certificate matter only when the bytes cross a network.
pub fn is_local(options: &PgConnectOptions) -> bool {
    let host = options.get_host();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    options.get_socket().is_some()
        || host.starts_with('/')
        || host.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// What to warn about, if anything, for a connection in `mode` that is (`tls`) or is not
/// encrypted, to a `local` server or not. Only `verify-full` both encrypts and proves that the
/// server is the one named in the URL.
pub fn transport_warning(mode: PgSslMode, tls: bool, local: bool) -> Option<String> {
    const ADVICE: &str = "for a PostgreSQL reached over a network use \
        sslmode=verify-full&sslrootcert=/path/to/ca.pem (or sslrootcert=system)";
    match (local, tls, mode) {
        (true, _, _) | (false, true, PgSslMode::VerifyFull) => None,
        (false, false, _) => Some(format!(
            "the connection to PostgreSQL is not encrypted (sslmode={}): the password and every \
             query and answer cross the network in plain text; {ADVICE}",
            mode_name(mode)
        )),
        (false, true, _) => Some(format!(
            "the connection to PostgreSQL is encrypted but sslmode={} does not check that the \
             server is the one named in DATABASE_URL; {ADVICE}",
            mode_name(mode)
        )),
    }
}

/// Logs what the pool's connections are: encrypted or not (asked of the server itself, in
/// `pg_stat_ssl`), the TLS version and the mode; a warning when a server off this machine is
/// reached without `verify-full`.
pub async fn log_transport(pool: &PgPool, options: &PgConnectOptions) {
    let mode = options.get_ssl_mode();
    let host = match options.get_socket() {
        Some(socket) => socket.display().to_string(),
        None => options.get_host().to_string(),
    };
    let found: Result<(bool, Option<String>), _> =
        sqlx::query_as("SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            .fetch_one(pool)
            .await;
    let (tls, version) = match found {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(error = %e, host, "cannot tell whether the PostgreSQL connection is encrypted");
            return;
        }
    };
    let version = version.unwrap_or_default();
    match transport_warning(mode, tls, is_local(options)) {
        Some(warning) => tracing::warn!(
            host,
            sslmode = mode_name(mode),
            tls,
            tls_version = version,
            "{warning}"
        ),
        None => tracing::info!(
            host,
            sslmode = mode_name(mode),
            tls,
            tls_version = version,
            "connected to PostgreSQL"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(url: &str, home: Option<PathBuf>) -> Result<&'static str, String> {
        connect_options(url, home).map(|o| mode_name(o.get_ssl_mode()))
    }

    #[test]
    fn libpq_rules() {
        let base = "postgres://u:secret@db.example.org/odqs";
        assert_eq!(mode(base, None).unwrap(), "prefer");
        assert_eq!(
            mode(&format!("{base}?sslmode=require"), None).unwrap(),
            "require"
        );
        assert_eq!(
            mode(&format!("{base}?sslrootcert=system"), None).unwrap(),
            "verify-full"
        );
        let err = mode(&format!("{base}?sslmode=require&sslrootcert=system"), None).unwrap_err();
        assert!(
            err.starts_with("sslrootcert=system needs sslmode=verify-full"),
            "{err}"
        );
        let err = mode(&format!("{base}?sslmode=verify-full"), None).unwrap_err();
        assert!(
            err.contains("~/.postgresql/root.crt does not exist"),
            "{err}"
        );
        let err = mode(&format!("{base}?sslmode=sometimes"), None).unwrap_err();
        assert!(err.starts_with("sslmode must be"), "{err}");
        let err = mode(
            &format!("{base}?sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem"),
            None,
        )
        .unwrap_err();
        assert!(
            err.starts_with("sslrootcert \"/nonexistent/ca.pem\" cannot be read"),
            "{err}"
        );
        for err in [
            mode(&format!("{base}?sslmode=verify-full"), None).unwrap_err(),
            mode(&format!("{base}?sslmode=bad"), None).unwrap_err(),
        ] {
            assert!(!err.contains("secret"), "{err}");
        }

        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".postgresql")).unwrap();
        let ca = home.path().join(".postgresql/root.crt");
        std::fs::write(&ca, "not checked until the handshake").unwrap();
        assert_eq!(
            mode(
                &format!("{base}?sslmode=verify-full"),
                Some(home.path().into())
            )
            .unwrap(),
            "verify-full"
        );
        let with_root = format!("{base}?sslmode=require&sslrootcert={}", ca.display());
        assert_eq!(mode(&with_root, None).unwrap(), "verify-ca");
    }

    #[test]
    fn warnings() {
        assert!(transport_warning(PgSslMode::Prefer, false, true).is_none());
        assert!(transport_warning(PgSslMode::VerifyFull, true, false).is_none());
        let plain = transport_warning(PgSslMode::Prefer, false, false).unwrap();
        assert!(plain.contains("not encrypted (sslmode=prefer)"), "{plain}");
        let unverified = transport_warning(PgSslMode::Require, true, false).unwrap();
        assert!(
            unverified.contains("sslmode=require does not check"),
            "{unverified}"
        );
        let local = |url: &str| is_local(&connect_options(url, None).unwrap());
        assert!(local("postgres://u@127.0.0.1/d"));
        assert!(local("postgres://u@localhost/d"));
        assert!(local("postgres://u@[::1]/d"));
        assert!(local("postgres://u@%2Fvar%2Frun%2Fpostgresql/d"));
        assert!(!local("postgres://u@db.example.org/d"));
        assert!(!local("postgres://u@10.0.0.5/d"));
    }
}
