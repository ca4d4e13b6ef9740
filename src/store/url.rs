//! Which store a `DATABASE_URL` names, checked before anything connects, and the URL as it
//! may be shown (never with its password).

use std::path::PathBuf;

/// A checked `DATABASE_URL`.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// The embedded store at this path.
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL.
    Postgres(String),
}

impl std::fmt::Debug for StoreUrl {
    /// Never prints a PostgreSQL password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreUrl::Sqlite(path) => write!(f, "sqlite://{}", path.display()),
            StoreUrl::Postgres(url) => write!(f, "{}", redact_url(url)),
        }
    }
}

impl StoreUrl {
    /// Parses `sqlite://PATH`, `sqlite:PATH`, `postgres://…` or `postgresql://…`.
    pub fn parse(url: &str) -> Result<Self, String> {
        if let Some(rest) = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
        {
            let path = rest.split('?').next().unwrap_or_default();
            if path.is_empty() {
                return Err(
                    "DATABASE_URL sqlite:// needs a file path, e.g. sqlite://data/odqs.db".into(),
                );
            }
            return Ok(StoreUrl::Sqlite(PathBuf::from(path)));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            // Checked here so a wrong sslmode or a missing root certificate is a configuration
            // error, before anything starts.
            super::pg_tls::connect_options(url, super::pg_tls::home_dir())
                .map_err(|e| format!("DATABASE_URL {e}"))?;
            return Ok(StoreUrl::Postgres(url.to_string()));
        }
        Err(format!(
            "DATABASE_URL must start with sqlite:// or postgres://, got {:?}",
            redact_url(url)
        ))
    }
}

/// Replaces the password of a URL with `***`, for messages and logs.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            if userinfo.contains(':') {
                format!("{scheme}://{user}:***@{host}{tail}")
            } else {
                url.to_string()
            }
        }
        None => url.to_string(),
    }
}
