//! Publishing over HTTP (contract §14.1, §14.2): who may write ([`require`]), one write per
//! dataset at a time ([`serial`]), a request body spooled to a file for the import
//! ([`upload`]), the schema kept for a dataset's next version ([`pending`]) and `If-Match`
//! ([`precondition`]). The import itself is the one `odqs import` runs.

pub mod jobs;
pub mod pending;
pub mod precondition;
pub mod serial;
pub mod upload;

use std::path::PathBuf;

use query::scope::Need;

use crate::auth::publishers;
use crate::auth::token::Principal;
use crate::store::{Store, StoreError, catalog};
use query::ApiError;

/// The settings and state of writes on one instance.
#[derive(Debug)]
pub struct Publishing {
    /// Bytes one upload may take as sent (compressed, with `Content-Encoding: gzip`).
    pub max_upload_bytes: u64,
    /// Bytes one record may take, decompressed, as for `odqs import`.
    pub max_record_bytes: u64,
    /// Where uploads are spooled while they are imported; `None`: the system's temporary
    /// directory.
    pub upload_dir: Option<PathBuf>,
    /// The datasets being written on this instance.
    pub writes: serial::Writes,
}

impl Default for Publishing {
    fn default() -> Self {
        Publishing {
            max_upload_bytes: upload::DEFAULT_MAX_UPLOAD_MB * crate::import::MIB,
            max_record_bytes: crate::import::DEFAULT_MAX_RECORD_MB * crate::import::MIB,
            upload_dir: None,
            writes: serial::Writes::default(),
        }
    }
}

/// The token may write `slug`: its scope carries `publish` for it (403 `insufficient_scope`
/// naming that scope), and one of its account's grants names it (403 `insufficient_scope`
/// saying so).
pub async fn require(store: &Store, principal: &Principal, slug: &str) -> Result<(), ApiError> {
    principal.require(Need::Publish, slug)?;
    if publishers::may_publish(store, principal.user_id, slug).await? {
        return Ok(());
    }
    Err(ApiError::NotGranted {
        slug: slug.to_string(),
    })
}

/// Unpublishes `slug`, as `odqs datasets remove` does, and forgets any schema kept for its next
/// version; `false` when it was not published.
pub async fn remove(store: &Store, slug: &str) -> Result<bool, StoreError> {
    let removed = catalog::remove(store, slug).await?;
    if removed {
        pending::forget(store, slug).await?;
    }
    Ok(removed)
}

/// The published datasets `patterns` name, by slug: `(slug, title, current version, records)`.
pub async fn publishable(
    resolver: &query::Resolver,
    patterns: &[String],
) -> Result<Vec<(String, String, i64, i64)>, ApiError> {
    let mut rows: Vec<_> = resolver
        .catalog()
        .await?
        .into_iter()
        .filter(|d| patterns.iter().any(|p| publishers::matches(p, &d.slug)))
        .map(|d| (d.slug, d.title, d.version, d.record_count))
        .collect();
    rows.sort();
    Ok(rows)
}
