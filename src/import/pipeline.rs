//! The reading half of an import: a blocking thread that reads, converts and batches records,
//! and gives text values their dictionary ids.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::reader::{self, Format, Source};
use super::schema::plan::{Cell, Plan, Row};
use super::{ImportError, Progress};

/// Rows per batch handed to the loader.
pub const BATCH_ROWS: usize = 1000;
/// Bytes of records (their JSON) past which a batch is handed over before it has
/// [`BATCH_ROWS`] rows, so batches of large records do not hold thousands of them.
const BATCH_BYTES: usize = 8 << 20;
/// Batches in flight between reader and loader; bounds memory.
const CHANNEL_BATCHES: usize = 4;
/// Distinct text values remembered for de-duplication before the memory is reset. A value seen
/// again after a reset gets a second id; search still finds every id whose value matches.
const DICTIONARY_CAP: usize = 100_000;

/// Converted rows and the text-dictionary entries they introduced.
#[derive(Debug, Default)]
pub struct Batch {
    pub rows: Vec<Row>,
    /// `(id, lower-cased text)`.
    pub texts: Vec<(i64, String)>,
}

/// Starts the reader thread; it returns how many records it read.
pub fn start(
    source: Source,
    format: Format,
    gzip: bool,
    max_record_bytes: u64,
    plan: Plan,
    progress: Arc<dyn Progress>,
) -> (JoinHandle<Result<u64, ImportError>>, mpsc::Receiver<Batch>) {
    let (sender, receiver) = mpsc::channel(CHANNEL_BATCHES);
    let handle = tokio::task::spawn_blocking(move || {
        let consumed = Arc::new(AtomicU64::new(0));
        let input = source.open(gzip, Arc::clone(&consumed))?;
        let mut dictionary: HashMap<String, i64> = HashMap::new();
        let mut next_text_id = 1;
        let mut batch = Batch::default();
        let mut batch_bytes = 0;
        let mut count = 0u64;
        let mut loader_gone = false;
        reader::read_records(input, format, max_record_bytes, |record| {
            count += 1;
            let mut row = plan
                .convert(record.number as i64, record.object)
                .map_err(|message| ImportError::Malformed {
                    location: record.location,
                    message,
                })?;
            for cell in &mut row.cells {
                if let Cell::Text(text) = cell {
                    let lower = text.to_lowercase();
                    let id = match dictionary.get(&lower) {
                        Some(&id) => id,
                        None => {
                            if dictionary.len() >= DICTIONARY_CAP {
                                dictionary.clear();
                            }
                            let id = next_text_id;
                            next_text_id += 1;
                            dictionary.insert(lower.clone(), id);
                            batch.texts.push((id, lower));
                            id
                        }
                    };
                    *cell = Cell::TextId(id);
                }
            }
            batch_bytes += row.doc.len();
            batch.rows.push(row);
            if batch.rows.len() >= BATCH_ROWS || batch_bytes >= BATCH_BYTES {
                batch_bytes = 0;
                progress.records(count, &consumed);
                if sender.blocking_send(std::mem::take(&mut batch)).is_err() {
                    loader_gone = true;
                    return Err(ImportError::Schema("the loader stopped".into()));
                }
            }
            Ok(())
        })
        .or_else(|e| if loader_gone { Ok(()) } else { Err(e) })?;
        if !batch.rows.is_empty() {
            let _ = sender.blocking_send(batch);
        }
        progress.records(count, &consumed);
        Ok(count)
    });
    (handle, receiver)
}
