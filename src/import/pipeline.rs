//! The reading half of an import: a blocking thread that reads, converts and batches records,
//! and gives text values their dictionary ids.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::reader::{self, Format, Source};
use super::schema::csv_rows::CsvRows;
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

/// How the reader hands rows over.
#[derive(Copy, Clone, Debug)]
pub struct Handing {
    /// A flat CSV file's rows come packed for SQLite ([`CsvRows::new`]).
    pub pack: bool,
    /// The reader finds a duplicated `_id` itself (a small file's ids fit in memory), so the
    /// store may check uniqueness while it loads instead of building the index after.
    pub check_ids: bool,
}

/// Starts the reader thread; it returns how many records it read.
pub fn start(
    source: Source,
    format: Format,
    gzip: bool,
    max_record_bytes: u64,
    plan: Plan,
    handing: Handing,
    progress: Arc<dyn Progress>,
) -> (JoinHandle<Result<u64, ImportError>>, mpsc::Receiver<Batch>) {
    let pack = handing.pack;
    let (sender, receiver) = mpsc::channel(CHANNEL_BATCHES);
    let handle = tokio::task::spawn_blocking(move || {
        let consumed = Arc::new(AtomicU64::new(0));
        let input = source.open(gzip, Arc::clone(&consumed))?;
        let mut dictionary = Dictionary::default();
        let mut batch = Batch::default();
        let mut batch_bytes = 0;
        let mut count = 0u64;
        let mut loader_gone = false;
        let mut ids = handing.check_ids.then(HashMap::<String, i64>::new);
        let mut take = |mut row: Row| {
            count += 1;
            if let Some(ids) = ids.as_mut()
                && let Some(first) = ids.insert(row.id.clone(), row.pos)
            {
                return Err(ImportError::DuplicateId {
                    id: row.id,
                    first,
                    second: row.pos,
                });
            }
            for cell in &mut row.cells {
                if let Cell::Text(text) = cell {
                    *cell = Cell::TextId(dictionary.id(text, &mut batch.texts));
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
        };
        let malformed = |location, message| ImportError::Malformed { location, message };
        let flat = match format {
            Format::Csv => {
                reader::csv_headers(source.open(gzip, Arc::default())?, max_record_bytes)
                    .ok()
                    .and_then(|names| CsvRows::new(&plan, &names, pack))
            }
            _ => None,
        };
        match flat {
            Some(mut rows) => reader::read_csv_cells(input, max_record_bytes, |record| {
                let row = rows
                    .convert(record.number as i64, record.cells)
                    .map_err(|message| malformed(record.location, message))?;
                take(row)
            }),
            None => reader::read_records(input, format, max_record_bytes, |record| {
                let row = plan
                    .convert(record.number as i64, record.object)
                    .map_err(|message| malformed(record.location, message))?;
                take(row)
            }),
        }
        .or_else(|e| if loader_gone { Ok(()) } else { Err(e) })?;
        if !batch.rows.is_empty() {
            let _ = sender.blocking_send(batch);
        }
        progress.records(count, &consumed);
        Ok(count)
    });
    (handle, receiver)
}

/// The text values seen so far and their ids, so that a value repeated (a carrier's name on
/// every flight) is one entry of the version's text table. Values are looked up as read first:
/// most repeat with the same case, and then need no lower-casing.
struct Dictionary {
    /// Lower-cased value → id.
    lower: HashMap<String, i64, foldhash::fast::RandomState>,
    /// Value as read → id.
    read: HashMap<String, i64, foldhash::fast::RandomState>,
    next: i64,
}

impl Default for Dictionary {
    fn default() -> Self {
        Dictionary {
            lower: HashMap::default(),
            read: HashMap::default(),
            next: 1,
        }
    }
}

impl Dictionary {
    /// The id of `text`'s lower-cased value; a new one is added to `texts`.
    fn id(&mut self, text: &str, texts: &mut Vec<(i64, String)>) -> i64 {
        if let Some(&id) = self.read.get(text) {
            return id;
        }
        if self.read.len() >= DICTIONARY_CAP || self.lower.len() >= DICTIONARY_CAP {
            self.read.clear();
            self.lower.clear();
        }
        let lower = text.to_lowercase();
        let id = match self.lower.get(&lower) {
            Some(&id) => id,
            None => {
                let id = self.next;
                self.next += 1;
                self.lower.insert(lower.clone(), id);
                texts.push((id, lower));
                id
            }
        };
        self.read.insert(text.to_string(), id);
        id
    }
}
