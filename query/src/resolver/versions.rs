//! Versions (contract §13.1): a dataset resolved at the version a request names, the list of
//! its versions with their content hashes, and the changes between two.
//!
//! An older version is answered from the store: the in-memory index holds live versions only
//! ([`Dataset::is_current`]). Which versions are retained is the store's truth (the state of
//! each `dataset_versions` row, set by the import and the garbage collector), so every instance
//! answers alike.

use std::collections::VecDeque;
use std::sync::Arc;

use entity::dataset_version;

use super::Resolver;
use super::catalog::rfc3339;
use super::export::BATCH_RECORDS;
use crate::answer::views::{VersionItem, VersionList};
use crate::dataset::{Dataset, DatasetSchema};
use crate::engine::store;
use crate::error::ApiError;

impl Resolver {
    /// The dataset published under `slug` at `version` (its live version when `None`): 404
    /// `version_not_found` for a number never published, 410 `version_gone` for one no
    /// longer retained.
    pub async fn dataset_at(&self, slug: &str, version: Option<u64>) -> Result<Dataset, ApiError> {
        match version {
            None => self.dataset(slug).await,
            // Boxed: every request's future holds this one, and a debug build's worker stack
            // overflowed.
            Some(asked) => Box::pin(self.dataset_version(slug, asked)).await,
        }
    }

    /// [`Self::dataset_at`] for a version asked for by number.
    async fn dataset_version(&self, slug: &str, asked: u64) -> Result<Dataset, ApiError> {
        let current = self.dataset(slug).await?;
        if i64::try_from(asked) == Ok(current.meta.version) {
            return Ok(current);
        }
        let row = self.version_row(slug, asked).await?;
        if !dataset_version::retained(&row.state) {
            return Err(self.gone(slug, asked).await);
        }
        let schema = self.schema_of(row.id, &current.meta).await?;
        let mut meta = current.meta;
        meta.version = row.number.unwrap_or_default();
        meta.record_count = row.record_count;
        Ok(Dataset { meta, schema })
    }

    /// The published version `number` of `slug`, retained or not.
    async fn version_row(
        &self,
        slug: &str,
        number: u64,
    ) -> Result<dataset_version::Model, ApiError> {
        let not_found = ApiError::VersionNotFound { version: number };
        let Ok(wanted) = i64::try_from(number) else {
            return Err(not_found);
        };
        store::versions::row(&self.db, slug, wanted)
            .await?
            .ok_or(not_found)
    }

    /// 410 for version `asked` of `slug`, listing the versions retained now.
    pub(crate) async fn gone(&self, slug: &str, asked: u64) -> ApiError {
        let retained = match self.version_rows(slug).await {
            Ok(rows) => rows
                .iter()
                .filter(|row| dataset_version::retained(&row.state))
                .filter_map(|row| row.number)
                .collect(),
            Err(error) => return error,
        };
        ApiError::VersionGone {
            version: asked,
            retained,
        }
    }

    /// Every published version of `slug`, newest first.
    async fn version_rows(&self, slug: &str) -> Result<Vec<dataset_version::Model>, ApiError> {
        store::versions::rows(&self.db, slug).await
    }

    /// `GET /datasets/{slug}/versions`: every version ever published, newest first. A
    /// retained version without a hash yet (published before hashes were kept) gets it here,
    /// once.
    pub async fn versions(&self, slug: &str) -> Result<VersionList, ApiError> {
        let current = self.dataset(slug).await?;
        let mut versions = Vec::new();
        for row in self.version_rows(slug).await? {
            let retained = dataset_version::retained(&row.state);
            let content_hash = match row.content_hash {
                Some(hash) => Some(hash),
                None if retained => {
                    let schema = self.schema_of(row.id, &current.meta).await?;
                    Some(Box::pin(self.keep_content_hash(&schema)).await?)
                }
                None => None,
            };
            versions.push(VersionItem {
                version: row.number.unwrap_or_default(),
                published_at: rfc3339(row.published_at.unwrap_or(row.created_at)),
                record_count: row.record_count,
                content_hash,
                retained,
            });
        }
        Ok(VersionList {
            current: current.meta.version,
            versions,
        })
    }

    /// The content hash of the version `schema` belongs to, computed and written to its row.
    pub async fn keep_content_hash(&self, schema: &DatasetSchema) -> Result<String, ApiError> {
        let hash = self.content_hash(schema).await?;
        store::versions::keep_hash(&self.db, schema.version_id, hash.clone()).await?;
        Ok(hash)
    }

    /// `sha256:<hex>` of the version's NDJSON export with its records in `_id` byte order
    /// (contract §13.1): read from the store whatever the index holds, a batch at a time, each
    /// line the bytes the export writes, so anyone can recompute it from an export.
    pub async fn content_hash(&self, schema: &DatasetSchema) -> Result<String, ApiError> {
        let reader = self.reader(schema.version_id).await;
        let direct = self.direct(schema.version_id);
        store::hash::content_hash(&self.db, direct.as_ref(), &reader, schema).await
    }

    /// `GET /datasets/{slug}/changes?from=&to=`: the records that differ between two retained
    /// versions, found before the first byte is sent (so the counts go in the headers).
    pub async fn changes(
        self: &Arc<Self>,
        slug: &str,
        from: u64,
        to: Option<u64>,
    ) -> Result<Changes, ApiError> {
        let to_version = match to {
            Some(to) => to,
            None => u64::try_from(self.dataset(slug).await?.meta.version).unwrap_or(0),
        };
        if from >= to_version {
            return Err(ApiError::invalid(
                "from",
                format!("from must be an earlier version than to ({to_version})."),
            ));
        }
        let old = self.dataset_at(slug, Some(from)).await?;
        let new = self.dataset_at(slug, Some(to_version)).await?;
        let mut before = Box::pin(Side::new(self, &old.schema)).await?;
        let mut after = Box::pin(Side::new(self, &new.schema)).await?;
        let mut entries = Vec::new();
        let (mut added, mut removed, mut changed) = (0u64, 0u64, 0u64);
        loop {
            let a = Box::pin(before.peek(self)).await?.map(|r| r.id.clone());
            let b = Box::pin(after.peek(self)).await?.map(|r| r.id.clone());
            match (a, b) {
                (None, None) => break,
                (Some(a), Some(b)) if a == b => {
                    let old_line = before.pop();
                    let new_line = after.pop();
                    if old_line.line != new_line.line {
                        changed += 1;
                        entries.push(Change::Differ(new_line.id, new_line.row));
                    }
                }
                (Some(a), Some(b)) if a < b => {
                    removed += 1;
                    entries.push(Change::Remove(before.pop().id));
                }
                (Some(_), None) => {
                    removed += 1;
                    entries.push(Change::Remove(before.pop().id));
                }
                _ => {
                    added += 1;
                    let line = after.pop();
                    entries.push(Change::Add(line.id, line.row));
                }
            }
        }
        Ok(Changes {
            resolver: self.clone(),
            dataset: new,
            entries,
            next: 0,
            added,
            removed,
            changed,
        })
    }
}

/// One version's records in `_id` order, read a batch at a time as NDJSON lines.
struct Side {
    schema: Arc<DatasetSchema>,
    rows: Vec<u32>,
    next: usize,
    buffer: VecDeque<Line>,
}

/// A record of one version: its `_id`, its row and its export line.
struct Line {
    id: String,
    row: u32,
    line: Vec<u8>,
}

impl Side {
    async fn new(resolver: &Resolver, schema: &Arc<DatasetSchema>) -> Result<Self, ApiError> {
        let reader = resolver.reader(schema.version_id).await;
        let rows = store::versions::rows_by_id(&reader, schema).await?;
        Ok(Side {
            schema: schema.clone(),
            rows,
            next: 0,
            buffer: VecDeque::new(),
        })
    }

    /// The next record, reading a batch when the buffer is empty.
    async fn peek(&mut self, resolver: &Resolver) -> Result<Option<&Line>, ApiError> {
        if self.buffer.is_empty() && self.next < self.rows.len() {
            let end = (self.next + BATCH_RECORDS).min(self.rows.len());
            let rows = &self.rows[self.next..end];
            let docs = resolver.export_batch(&self.schema, rows).await?;
            for (doc, &row) in docs.into_iter().zip(rows) {
                let record = self.schema.shape(doc, None);
                let id = record
                    .get("_id")
                    .and_then(|id| id.as_str())
                    .unwrap_or_default()
                    .to_string();
                let line = serde_json::to_vec(&record).map_err(|_| ApiError::Internal)?;
                self.buffer.push_back(Line { id, row, line });
            }
            self.next = end;
        }
        Ok(self.buffer.front())
    }

    /// Takes the record [`Self::peek`] showed.
    fn pop(&mut self) -> Line {
        self.buffer.pop_front().expect("peeked before")
    }
}

/// One line of the changes.
enum Change {
    Add(String, u32),
    Remove(String),
    Differ(String, u32),
}

/// The changes between two versions, found and counted, written a batch at a time.
pub struct Changes {
    resolver: Arc<Resolver>,
    /// The later version, whose records the lines carry.
    dataset: Dataset,
    entries: Vec<Change>,
    next: usize,
    pub added: u64,
    pub removed: u64,
    pub changed: u64,
}

impl Changes {
    /// The later version compared (`Dataset-Version`).
    pub fn dataset(&self) -> &Dataset {
        &self.dataset
    }

    /// Lines the answer holds.
    pub fn total(&self) -> u64 {
        self.entries.len() as u64
    }

    /// The next chunk of NDJSON lines, `None` after the last.
    pub async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, ApiError> {
        if self.next >= self.entries.len() {
            return Ok(None);
        }
        let end = (self.next + BATCH_RECORDS).min(self.entries.len());
        let batch = &self.entries[self.next..end];
        let rows: Vec<u32> = batch
            .iter()
            .filter_map(|entry| match entry {
                Change::Add(_, row) | Change::Differ(_, row) => Some(*row),
                Change::Remove(_) => None,
            })
            .collect();
        let schema = &self.dataset.schema;
        let mut docs = self.resolver.export_batch(schema, &rows).await?.into_iter();
        let mut out = Vec::with_capacity(batch.len() * 256);
        for entry in batch {
            let (op, id) = match entry {
                Change::Add(id, _) => ("add", id),
                Change::Differ(id, _) => ("change", id),
                Change::Remove(id) => ("remove", id),
            };
            out.extend_from_slice(b"{\"op\":\"");
            out.extend_from_slice(op.as_bytes());
            out.extend_from_slice(b"\",\"_id\":");
            serde_json::to_writer(&mut out, id).map_err(|_| ApiError::Internal)?;
            if !matches!(entry, Change::Remove(_)) {
                let doc = docs.next().ok_or(ApiError::Internal)?;
                out.extend_from_slice(b",\"record\":");
                serde_json::to_writer(&mut out, &schema.shape(doc, None))
                    .map_err(|_| ApiError::Internal)?;
            }
            out.extend_from_slice(b"}\n");
        }
        self.next = end;
        Ok(Some(out))
    }
}
