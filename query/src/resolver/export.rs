//! Export (contract §12.3): every record a request matches, in its order, as NDJSON or CSV,
//! produced batch by batch so memory stays flat whatever the dataset's size.
//!
//! Planning happens once, before the first byte: the ordered positions of the matching
//! records are computed (from the in-memory index: its filter and the sort walk of
//! [`MemIndex::page`](crate::engine::memory::MemIndex::page) without a limit; from the store: `SELECT
//! pos … ORDER BY …` with the same two-part sort as a records page, in statements of
//! [`POSITION_BATCH`] rows), so the total is
//! known up front and the order is the one `records` pages through. That list is what an
//! export holds: **4 bytes a matching record** (flights whole: 1.3 MB), plus one batch of
//! [`BATCH_RECORDS`] bodies read by primary key ([`Resolver::at_positions`]) and encoded
//! before the next is read. Each batch is one chunk of the response; a caller that stops
//! asking for chunks (a client that hung up) stops the reads.
//!
//! - NDJSON: one record a line, exactly as `records` shows it (schema key order, `_id` first,
//!   the projection applied).
//! - CSV (RFC 4180 quoting, CRLF line ends): a header of `_id` and the selected fields in
//!   schema order, nested fields under their dotted names (which `odqs import` turns back into
//!   nested objects), missing and null values as empty cells, `json` values as their JSON text.
//!
//! The positions are read at the start; the bodies after, from the same immutable version.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::{Engine, Prepared, Resolver};
use crate::answer::encode::{self, CsvColumn};
use crate::dataset::schema::Column;
use crate::dataset::{Dataset, DatasetSchema};
use crate::engine::store::page;
use crate::engine::store::sql::{Access, Part};
use crate::error::ApiError;
use crate::request::params::ExportFormat;
use crate::request::params::ExportParams;
use crate::request::{self, ExportQuery, Filter};

pub use crate::engine::store::bodies::BATCH_RECORDS;

/// Positions read from the store per statement while planning: the rows of one statement are
/// held at once (about 150 bytes each in the driver), so this bounds the planning's transient
/// memory at a few MB; the order (`pos` breaks every tie) is the same in every statement.
pub const POSITION_BATCH: u64 = 50_000;

/// Store reads exports may run at once in this process (a batch of bodies, or a statement of
/// positions while planning); an export's next read waits for a turn. Two of the SQLite
/// pool's 8 connections and of PostgreSQL's 16, so ordinary requests always keep the rest.
pub(crate) const EXPORT_READS_AT_ONCE: usize = 2;

/// What exports have done in this process, for tests and logs: how many run now and how many
/// record bodies they have read; and their share of the store.
#[derive(Debug)]
pub struct ExportCounters {
    running: AtomicU64,
    records_read: AtomicU64,
    /// Turns at the store ([`EXPORT_READS_AT_ONCE`]).
    reads: tokio::sync::Semaphore,
}

impl Default for ExportCounters {
    fn default() -> Self {
        ExportCounters {
            running: AtomicU64::new(0),
            records_read: AtomicU64::new(0),
            reads: tokio::sync::Semaphore::new(EXPORT_READS_AT_ONCE),
        }
    }
}

impl ExportCounters {
    /// Exports whose stream is still alive.
    pub fn running(&self) -> u64 {
        self.running.load(Ordering::SeqCst)
    }

    /// Record bodies read by all exports so far.
    pub fn records_read(&self) -> u64 {
        self.records_read.load(Ordering::SeqCst)
    }
}

/// An export under way: the ordered positions of its records and how far it got. Dropping it
/// ends the export (and logs how far it got).
#[derive(Debug)]
pub struct Export {
    resolver: Arc<Resolver>,
    dataset: Dataset,
    query: ExportQuery,
    /// In-memory row numbers (position − 1) of the matches, in the export's order.
    rows: Vec<u32>,
    /// Rows already written.
    next: usize,
    /// CSV: the columns, and whether the header went out.
    columns: Vec<CsvColumn>,
    header_sent: bool,
    started: Instant,
}

impl Resolver {
    /// `GET /datasets/{slug}/export`, prepared: the dataset resolved and the parameters
    /// validated against its schema. Its weight is known once planned ([`Export::total`]).
    pub async fn prepare_export(
        &self,
        slug: &str,
        params: &ExportParams,
    ) -> Result<Prepared<ExportQuery>, ApiError> {
        let dataset = self.dataset_at(slug, params.version).await?;
        let query = request::export_query(params, &dataset.schema)?;
        let etag = self.etag(&dataset, "export", &query);
        Ok(Prepared {
            dataset,
            query,
            etag,
            extra: None,
        })
    }

    /// Plans a prepared export ([`Self::export`]).
    pub async fn run_export(
        self: &Arc<Self>,
        prepared: Prepared<ExportQuery>,
    ) -> Result<Export, ApiError> {
        self.export(prepared.dataset, prepared.query).await
    }

    /// Plans an export: validates nothing more (the query is valid), computes the ordered
    /// positions of the matches, and returns the export ready to write its first batch.
    pub async fn export(
        self: &Arc<Self>,
        dataset: Dataset,
        query: ExportQuery,
    ) -> Result<Export, ApiError> {
        let rows = match self.engine(&dataset).await {
            Engine::Memory(index) => {
                let matches = index.matches(&query.filter);
                let total = index.total(matches.as_ref());
                index.page(matches.as_ref(), &query.sort, 0, total)
            }
            Engine::Store => {
                self.export_positions(&dataset.schema, &query.filter, &query.sort)
                    .await?
            }
        };
        let columns = match query.format {
            ExportFormat::Csv => encode::csv_columns(&dataset.schema, query.fields.as_deref()),
            ExportFormat::Ndjson => Vec::new(),
        };
        self.exports.running.fetch_add(1, Ordering::SeqCst);
        Ok(Export {
            resolver: self.clone(),
            dataset,
            query,
            rows,
            next: 0,
            columns,
            header_sent: false,
            started: Instant::now(),
        })
    }

    /// What exports have done in this process.
    pub fn export_counters(&self) -> &ExportCounters {
        &self.exports
    }

    /// A turn for one export read at the store (see [`EXPORT_READS_AT_ONCE`]).
    async fn export_turn(&self) -> Result<tokio::sync::SemaphorePermit<'_>, ApiError> {
        self.exports
            .reads
            .acquire()
            .await
            .map_err(|_| ApiError::Internal)
    }

    /// The ordered row numbers of the matches, from the store: the same two-part sort as a
    /// records page (records with the first key's value, then those without it), read
    /// [`POSITION_BATCH`] positions a statement, so only the 4-byte list is kept.
    async fn export_positions(
        &self,
        schema: &DatasetSchema,
        filter: &Filter,
        sort: &[(Column, bool)],
    ) -> Result<Vec<u32>, ApiError> {
        let resolved = self.resolve(schema, filter).await?;
        if resolved.matches_nothing() {
            return Ok(Vec::new());
        }
        let parts: &[Part] = match sort.first() {
            Some(&(first, _)) if first != Column::Id => &[Part::HasValue, Part::Missing],
            _ => &[Part::All],
        };
        let reader = self.reader(schema.version_id).await;
        let mut rows = Vec::new();
        for &part in parts {
            let read = page::Read {
                schema,
                resolved: &resolved,
                sort,
                part,
                access: Access::Planner,
            };
            let mut offset = 0u64;
            loop {
                let found = {
                    let _turn = self.export_turn().await?;
                    page::positions(&reader, &read, offset, POSITION_BATCH).await?
                };
                let n = found.len() as u64;
                rows.extend(found);
                if n < POSITION_BATCH {
                    break;
                }
                offset += n;
            }
        }
        Ok(rows)
    }
}

impl Export {
    /// Records the export sends, known before the first byte (`X-Total-Count`).
    pub fn total(&self) -> u64 {
        self.rows.len() as u64
    }

    /// The format being written.
    pub fn format(&self) -> ExportFormat {
        self.query.format
    }

    /// The number of the version exported (`Dataset-Version`).
    pub fn version(&self) -> i64 {
        self.dataset.version()
    }

    /// The dataset's slug.
    pub fn slug(&self) -> &str {
        &self.dataset.meta.slug
    }

    /// The next chunk of the body: the CSV header with the first batch, then one batch of
    /// [`BATCH_RECORDS`] records a call; `None` when everything was written. A store error
    /// ends the export (the body is then cut short: the status went out with the first byte).
    pub async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, ApiError> {
        let mut out = Vec::new();
        if self.query.format == ExportFormat::Csv && !self.header_sent {
            self.header_sent = true;
            let header: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
            encode::write_csv_record(&mut out, &header)?;
        }
        if self.next >= self.rows.len() {
            return Ok((!out.is_empty()).then_some(out));
        }
        let end = (self.next + BATCH_RECORDS).min(self.rows.len());
        let docs = {
            let _turn = self.resolver.export_turn().await?;
            self.resolver
                .export_batch(&self.dataset.schema, &self.rows[self.next..end])
                .await?
        };
        self.resolver
            .exports
            .records_read
            .fetch_add(docs.len() as u64, Ordering::SeqCst);
        self.next = end;
        out.reserve(docs.len() * 256);
        encode::write_batch(
            &mut out,
            self.query.format,
            &self.dataset.schema,
            self.query.fields.as_deref(),
            &self.columns,
            docs,
        )?;
        Ok(Some(out))
    }
}

impl Drop for Export {
    fn drop(&mut self) {
        self.resolver.exports.running.fetch_sub(1, Ordering::SeqCst);
        let (sent, total) = (self.next, self.rows.len());
        let seconds = self.started.elapsed().as_secs_f64();
        if sent == 0 && !self.header_sent && total > 0 {
            // Planned but never started (refused by the rate limit).
            tracing::debug!(slug = %self.dataset.meta.slug, total, "export not started");
        } else if sent >= total {
            tracing::info!(slug = %self.dataset.meta.slug, format = self.query.format.as_str(),
                records = total, seconds, "export finished");
        } else {
            tracing::info!(slug = %self.dataset.meta.slug, format = self.query.format.as_str(),
                records_read = sent, total, seconds, "export stopped before its end (the client went away or a read failed)");
        }
    }
}
