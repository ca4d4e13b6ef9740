//! A version's content hash (contract §13.1) read in one pass of the store: `sha256:<hex>` of
//! its NDJSON export with the records in `_id` byte order, each line the bytes the export
//! writes.

use std::collections::VecDeque;
use std::sync::Arc;

use sea_orm::{DatabaseBackend, DatabaseConnection};
use sha2::{Digest, Sha256};

use super::bodies::{BATCH_RECORDS, Stored, at_positions};
use super::copy;
use super::direct::DirectSqlite;
use super::replicas::Reader;
use super::versions::rows_by_id;
use crate::dataset::DatasetSchema;
use crate::error::ApiError;

/// The content hash of `schema`'s version: one read of every body in `_id` order (a `COPY`
/// stream on PostgreSQL, one statement on an SQLite file), else batches of bodies by position
/// through `reader` in the order of the `_id` index.
pub(crate) async fn content_hash(
    db: &DatabaseConnection,
    direct: Option<&Arc<DirectSqlite>>,
    reader: &Reader,
    schema: &DatasetSchema,
) -> Result<String, ApiError> {
    match (db.get_database_backend(), direct) {
        (DatabaseBackend::Postgres, _) => {
            let pool = db.get_postgres_connection_pool();
            match on_postgres(pool, schema).await {
                Ok(hash) => return Ok(hash),
                Err(error) => {
                    tracing::warn!(%error, "content hash not read by COPY; reading through the pool")
                }
            }
        }
        (_, Some(direct)) => return on_sqlite(Arc::clone(direct), schema).await,
        (_, None) => {}
    }
    let rows = rows_by_id(reader, schema).await?;
    let mut hasher = Sha256::new();
    let mut out = Vec::new();
    for batch in rows.chunks(BATCH_RECORDS) {
        let positions: Vec<i64> = batch.iter().map(|&row| i64::from(row) + 1).collect();
        out.clear();
        for stored in at_positions(None, reader, schema, &positions).await? {
            write_line(schema, stored, &mut out)?;
        }
        hasher.update(&out);
    }
    Ok(format!("sha256:{}", crate::answer::hex(&hasher.finalize())))
}

/// The content hash on an SQLite file: one statement reads the bodies in `_id` order
/// on a thread of its own, by the unique `_id` index, while this task shapes and hashes them,
/// so a large version's hash keeps both cores busy and no list of every row is held.
async fn on_sqlite(direct: Arc<DirectSqlite>, schema: &DatasetSchema) -> Result<String, ApiError> {
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
    Ok(format!("sha256:{}", crate::answer::hex(&hasher.finalize())))
}

/// The content hash on PostgreSQL: the bodies in `_id` order as one `COPY` stream
/// of JSONB's text (one statement, where batches by position read each body through a
/// statement's result map), cut into blocks that [`SHAPERS`] threads parse and shape while the
/// server reads on; their lines are hashed in the stream's order.
async fn on_postgres(pool: &sqlx::PgPool, schema: &DatasetSchema) -> Result<String, String> {
    // The table's name comes from an integer: nothing of a request reaches the SQL text.
    let select = format!(
        "SELECT \"doc\" FROM \"{}\" ORDER BY \"_id\"",
        entity::record::records_table(schema.version_id)
    );
    let schema = Arc::new(schema.clone());
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
                            export_lines(&schema, &block)
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
    Ok(format!("sha256:{}", crate::answer::hex(&hasher.finalize())))
}

/// Threads parsing and shaping the bodies of the PostgreSQL hash: parsing JSONB's text costs
/// more than the server's read of it, so one thread left the server waiting.
const SHAPERS: usize = 2;

/// A block of `COPY` lines (one JSONB body each) as the export's lines: a flat body reordered
/// as text ([`crate::dataset::flat::FlatOrder`]), any other parsed and shaped.
fn export_lines(schema: &DatasetSchema, block: &[u8]) -> Result<Vec<u8>, String> {
    let flat = schema.flat_order();
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
pub(crate) fn write_line(
    schema: &DatasetSchema,
    stored: Stored,
    out: &mut Vec<u8>,
) -> Result<(), ApiError> {
    stored
        .shaped(schema, None)?
        .write_json(out)
        .map_err(|_| ApiError::Internal)?;
    out.push(b'\n');
    Ok(())
}
