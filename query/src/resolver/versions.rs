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
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseBackend, EntityTrait, QueryFilter, QueryOrder, Set,
};
use sha2::{Digest, Sha256};

use super::Resolver;
use super::bodies::Stored;
use super::catalog::rfc3339;
use super::export::BATCH_RECORDS;
use crate::answer::views::{VersionItem, VersionList};
use crate::dataset::flat::FlatOrder;
use crate::dataset::{Dataset, DatasetSchema};
use crate::engine::store::copy;
use crate::engine::store::direct::DirectSqlite;
use crate::engine::store::sql::Sql;
use crate::error::ApiError;

/// Rows read a statement when a version is read whole in `_id` order.
const ID_BATCH: i64 = 50_000;

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
        dataset_version::Entity::find()
            .filter(dataset_version::Column::Slug.eq(slug))
            .filter(dataset_version::Column::Number.eq(wanted))
            .one(&self.db)
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
        Ok(dataset_version::Entity::find()
            .filter(dataset_version::Column::Slug.eq(slug))
            .filter(dataset_version::Column::Number.is_not_null())
            .order_by_desc(dataset_version::Column::Number)
            .all(&self.db)
            .await?)
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
        dataset_version::ActiveModel {
            id: Set(schema.version_id),
            content_hash: Set(Some(hash.clone())),
            ..Default::default()
        }
        .update(&self.db)
        .await?;
        Ok(hash)
    }

    /// `sha256:<hex>` of the version's NDJSON export with its records in `_id` byte order
    /// (contract §13.1): read from the store whatever the index holds, a batch at a time, each
    /// line the bytes the export writes, so anyone can recompute it from an export.
    pub async fn content_hash(&self, schema: &DatasetSchema) -> Result<String, ApiError> {
        // One read of every body in `_id` order; the batches below only when it cannot be made.
        match (self.backend(), &self.direct) {
            (DatabaseBackend::Postgres, _) => {
                let pool = self.db.get_postgres_connection_pool();
                match content_hash_postgres(pool, schema).await {
                    Ok(hash) => return Ok(hash),
                    Err(error) => {
                        tracing::warn!(%error, "content hash not read by COPY; reading through the pool")
                    }
                }
            }
            (_, Some(direct)) => return content_hash_sqlite(Arc::clone(direct), schema).await,
            (_, None) => {}
        }
        let rows = self.rows_by_id(schema).await?;
        let mut hasher = Sha256::new();
        let mut out = Vec::new();
        for batch in rows.chunks(BATCH_RECORDS) {
            // Read past the body cache, which serves pages.
            let positions: Vec<i64> = batch.iter().map(|&row| i64::from(row) + 1).collect();
            out.clear();
            for stored in self.read_at_positions(schema, &positions).await? {
                write_line(schema, stored, &mut out)?;
            }
            hasher.update(&out);
        }
        Ok(format!("sha256:{}", super::hex(&hasher.finalize())))
    }

    /// Every row of the version `schema` belongs to, in `_id` byte order: read by the unique
    /// `_id` index a batch at a time, each batch after the last `_id` of the one before (a
    /// keyset, so the whole read costs one pass, however large the version).
    async fn rows_by_id(&self, schema: &DatasetSchema) -> Result<Vec<u32>, ApiError> {
        let table = entity::record::records_table(schema.version_id);
        let mut rows = Vec::new();
        let mut last: Option<String> = None;
        loop {
            let mut sql = Sql::new(self.backend());
            sql.push("SELECT \"pos\", \"_id\" FROM ").ident(&table);
            if let Some(last) = &last {
                sql.push(" WHERE \"_id\" > ").bind(last.clone());
            }
            sql.push(" ORDER BY \"_id\" LIMIT ").bind(ID_BATCH);
            let found = self
                .reader(schema.version_id)
                .await
                .query_all(sql.build())
                .await?;
            let n = found.len();
            for row in &found {
                let pos: i64 = row.try_get_by_index(0)?;
                rows.push(u32::try_from(pos - 1).map_err(|_| ApiError::Internal)?);
            }
            match found.last() {
                Some(row) if n as i64 == ID_BATCH => last = Some(row.try_get_by_index(1)?),
                _ => return Ok(rows),
            }
        }
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
        let rows = resolver.rows_by_id(schema).await?;
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

/// [`Resolver::content_hash`] on an SQLite file: one statement reads the bodies in `_id` order
/// on a thread of its own, by the unique `_id` index, while this task shapes and hashes them,
/// so a large version's hash keeps both cores busy and no list of every row is held.
async fn content_hash_sqlite(
    direct: Arc<DirectSqlite>,
    schema: &DatasetSchema,
) -> Result<String, ApiError> {
    // The table's name comes from an integer: nothing of a request reaches the SQL text.
    let sql = format!(
        "SELECT \"doc\" FROM \"{}\" ORDER BY \"_id\"",
        entity::record::records_table(schema.version_id)
    );
    let (sender, mut batches) = tokio::sync::mpsc::channel::<Vec<String>>(4);
    let read = tokio::task::spawn_blocking(move || {
        let mut batch = Vec::with_capacity(BATCH_RECORDS);
        direct.each_row::<ApiError>(&sql, &[], |row| {
            batch.push(row.get(0)?);
            if batch.len() == BATCH_RECORDS {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_RECORDS));
                // The hashing side stopped (its own error is the one to report).
                sender.blocking_send(full).map_err(|_| ApiError::Internal)?;
            }
            Ok(())
        })?;
        if !batch.is_empty() {
            sender
                .blocking_send(batch)
                .map_err(|_| ApiError::Internal)?;
        }
        Ok::<_, ApiError>(())
    });
    let mut hasher = Sha256::new();
    let mut out = Vec::new();
    while let Some(batch) = batches.recv().await {
        out.clear();
        for text in batch {
            write_line(schema, Stored::text(schema, text)?, &mut out)?;
        }
        hasher.update(&out);
    }
    read.await.expect("the hash's read does not panic")?;
    Ok(format!("sha256:{}", super::hex(&hasher.finalize())))
}

/// [`Resolver::content_hash`] on PostgreSQL: the bodies in `_id` order as one `COPY` stream
/// of JSONB's text (one statement, where batches by position read each body through a
/// statement's result map), cut into blocks that [`SHAPERS`] threads parse and shape while the
/// server reads on; their lines are hashed in the stream's order.
async fn content_hash_postgres(
    pool: &sqlx::PgPool,
    schema: &DatasetSchema,
) -> Result<String, String> {
    // The table's name comes from an integer: nothing of a request reaches the SQL text.
    let select = format!(
        "SELECT \"doc\" FROM \"{}\" ORDER BY \"_id\"",
        entity::record::records_table(schema.version_id)
    );
    let schema = Arc::new((schema.clone(), FlatOrder::new(schema.top_keys())));
    let (sender, mut blocks) = tokio::sync::mpsc::channel(SHAPERS);
    let read = copy::send_blocks(pool, &select, HASH_CHUNK_BYTES, sender);
    let hash = async move {
        let mut hasher = Sha256::new();
        let mut shaping = VecDeque::with_capacity(SHAPERS);
        let mut more = true;
        loop {
            while more && shaping.len() < SHAPERS {
                match blocks.recv().await {
                    Some(block) => {
                        let schema = Arc::clone(&schema);
                        shaping.push_back(tokio::task::spawn_blocking(move || {
                            export_lines(&schema.0, &schema.1, &block)
                        }));
                    }
                    None => more = false,
                }
            }
            let Some(next) = shaping.pop_front() else {
                break;
            };
            hasher.update(next.await.map_err(|e| e.to_string())??);
        }
        Ok::<_, String>(hasher)
    };
    let ((), hasher) = tokio::try_join!(read, hash)?;
    Ok(format!("sha256:{}", super::hex(&hasher.finalize())))
}

/// Threads parsing and shaping the bodies of the PostgreSQL hash: parsing JSONB's text costs
/// more than the server's read of it, so one thread left the server waiting.
const SHAPERS: usize = 2;

/// A block of `COPY` lines (one JSONB body each) as the export's lines: a flat body reordered
/// as text ([`FlatOrder`]), any other parsed and shaped.
fn export_lines(schema: &DatasetSchema, flat: &FlatOrder, block: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(block.len());
    let mut values = Vec::new();
    copy::each_line(block, |line| {
        let text = line.get(0)?.ok_or("a stored body is NULL")?;
        if flat.shape(text, &mut values, &mut out) {
            out.push(b'\n');
            return Ok(());
        }
        let body = serde_json::from_str(text).map_err(|e| e.to_string())?;
        write_line(schema, Stored::Value(body), &mut out).map_err(|e| e.to_string())
    })?;
    Ok(out)
}

/// Bytes of `COPY` text a shaping thread takes at a time.
const HASH_CHUNK_BYTES: usize = 1 << 20;

/// One record's line of the export: the record as a page writes it, which the export's lines
/// are byte for byte (contract §12.3); a stored body in the page's shape is copied, not parsed
/// and written again.
fn write_line(schema: &DatasetSchema, stored: Stored, out: &mut Vec<u8>) -> Result<(), ApiError> {
    stored
        .shaped(schema, None)?
        .write_json(out)
        .map_err(|_| ApiError::Internal)?;
    out.push(b'\n');
    Ok(())
}
