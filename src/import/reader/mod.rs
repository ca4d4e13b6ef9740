//! Streaming readers for CSV, JSON arrays and NDJSON, plain or gzipped.
//!
//! Each reader hands one record at a time to a callback, with its line (CSV, NDJSON) or record
//! number (JSON arrays), so memory stays flat whatever the file size and every error can say
//! where it is. A CSV header `a.b` makes a nested object `{"a": {"b": …}}`, mirroring how
//! nested objects of JSON files become dotted field names.
//!
//! A record may take at most `max_record_bytes` of the (decompressed) file: the readers sit on
//! a [`Bounded`] input that refuses to hand out more than that much past the start of the
//! record being read, so one huge field or line is refused before it is held whole in memory.
//! Every record is also checked for NUL characters, which PostgreSQL cannot store, so both
//! stores refuse the same files with the same message.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::bounded::{Bounded, Bounds};
use super::{ImportError, Location};

mod csv;

use self::csv::read_csv;
pub use self::csv::{CsvRecord, csv_headers, read_csv_cells};

/// The file formats `odqs import` reads.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Format {
    Csv,
    /// One JSON array of objects.
    Json,
    /// One JSON object per line.
    Ndjson,
}

impl Format {
    /// Picks the format and compression from the file name: `.csv`, `.json`, `.ndjson` or
    /// `.jsonl`, each optionally followed by `.gz`.
    pub fn from_name(name: &str) -> Option<(Format, bool)> {
        let lower = name.to_ascii_lowercase();
        let (stem, gzip) = match lower.strip_suffix(".gz") {
            Some(stem) => (stem, true),
            None => (lower.as_str(), false),
        };
        let format = if stem.ends_with(".csv") {
            Format::Csv
        } else if stem.ends_with(".ndjson") || stem.ends_with(".jsonl") {
            Format::Ndjson
        } else if stem.ends_with(".json") {
            Format::Json
        } else {
            return None;
        };
        Some((format, gzip))
    }
}

/// Where the bytes come from: a file, or data compiled into the binary (the demo datasets).
#[derive(Clone, Debug)]
pub enum Source {
    File(std::path::PathBuf),
    Bytes {
        name: &'static str,
        data: &'static [u8],
    },
}

impl Source {
    /// The name the format is read from.
    pub fn name(&self) -> String {
        match self {
            Source::File(path) => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            Source::Bytes { name, .. } => name.to_string(),
        }
    }

    /// Size in bytes as stored (compressed, for `.gz`), for progress.
    pub fn size(&self) -> Option<u64> {
        match self {
            Source::File(path) => std::fs::metadata(path).ok().map(|m| m.len()),
            Source::Bytes { data, .. } => Some(data.len() as u64),
        }
    }

    /// Opens the source, decompressing when `gzip`; `consumed` counts the stored bytes read.
    pub fn open(
        &self,
        gzip: bool,
        consumed: Arc<AtomicU64>,
    ) -> Result<Box<dyn BufRead + Send>, ImportError> {
        let raw: Box<dyn Read + Send> = match self {
            Source::File(path) => Box::new(std::fs::File::open(path).map_err(|e| io(path, e))?),
            Source::Bytes { data, .. } => Box::new(*data),
        };
        let counted = Counting {
            inner: raw,
            consumed,
        };
        Ok(if gzip {
            Box::new(BufReader::with_capacity(
                1 << 16,
                flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, counted)),
            ))
        } else {
            Box::new(BufReader::with_capacity(1 << 16, counted))
        })
    }
}

fn io(path: &Path, source: std::io::Error) -> ImportError {
    ImportError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Counts the bytes read through it, for the progress line.
struct Counting {
    inner: Box<dyn Read + Send>,
    consumed: Arc<AtomicU64>,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// One record of the source with where it came from.
pub struct SourceRecord {
    /// 1-based record number: the record's position, and `_id` when no id field is named.
    pub number: u64,
    pub location: Location,
    pub object: Map<String, Value>,
    /// Whether leaf values are untyped strings (CSV) rather than typed JSON values.
    pub untyped: bool,
}

/// Reads every record of `input` in order, calling `each` for each; stops at the first error,
/// from the file or from `each`. A record of more than `max_record_bytes` is refused, and so is
/// one holding a NUL character.
pub fn read_records(
    input: Box<dyn BufRead + Send>,
    format: Format,
    max_record_bytes: u64,
    mut each: impl FnMut(SourceRecord) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let (input, bounds) = Bounded::with_lines(input, max_record_bytes, format == Format::Csv);
    let mut checked = |record: SourceRecord| {
        if let Some(message) = nul_problem(&record.object, &mut String::new()) {
            return Err(ImportError::Malformed {
                location: record.location,
                message,
            });
        }
        each(record)
    };
    match format {
        Format::Csv => read_csv(input, &bounds, &mut checked),
        Format::Ndjson => read_ndjson(input, &bounds, &mut checked),
        Format::Json => read_json_array(input, &bounds, &mut checked),
    }
}

/// What is wrong when a field name or a string value of `object` (at any depth, arrays
/// included) holds a NUL character: PostgreSQL's `text` and `jsonb` cannot store one, so no
/// store is given one. `path` is the dotted name of `object` itself.
fn nul_problem(object: &Map<String, Value>, path: &mut String) -> Option<String> {
    for (key, value) in object {
        let len = path.len();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
        if key.contains('\0') {
            return Some(format!(
                "has a field name with a NUL character ({path:?}), which a store cannot keep"
            ));
        }
        if let Some(problem) = nul_in_value(value, path) {
            return Some(problem);
        }
        path.truncate(len);
    }
    None
}

fn nul_in_value(value: &Value, path: &mut String) -> Option<String> {
    match value {
        Value::String(s) if s.contains('\0') => Some(nul_in_field(path)),
        Value::Array(items) => items.iter().find_map(|item| nul_in_value(item, path)),
        Value::Object(inner) => nul_problem(inner, path),
        _ => None,
    }
}

/// The problem of a field whose value holds a NUL character; `path` is its dotted name.
pub(super) fn nul_in_field(path: &str) -> String {
    format!("field {path:?} holds a NUL character (\\0), which a store cannot keep")
}

/// What went wrong reading the bytes themselves: a gzip stream that stops early (a truncated
/// download, say) is named as such.
pub(super) fn read_problem(error: &std::io::Error) -> String {
    let text = error.to_string();
    if error.kind() == std::io::ErrorKind::UnexpectedEof || text.contains("deflate") {
        format!(
            "cannot be read: the compressed data stops here ({text}), so the file is truncated or \
             damaged"
        )
    } else {
        format!("cannot be read: {text}")
    }
}

fn read_ndjson(
    mut input: Bounded<Box<dyn BufRead + Send>>,
    bounds: &Bounds,
    each: &mut dyn FnMut(SourceRecord) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let mut line = Vec::new();
    let mut line_number = 0;
    let mut number = 0;
    loop {
        line.clear();
        let location = Location::Line(line_number + 1);
        bounds.record_starts_at(bounds.read.get());
        let read = input.read_until(b'\n', &mut line).map_err(|e| {
            bounds.error_or(location, || ImportError::Malformed {
                location,
                message: read_problem(&e),
            })
        })?;
        if read == 0 {
            return Ok(());
        }
        line_number += 1;
        let text = line.trim_ascii();
        bounds.check(location, text.len() as u64)?;
        if text.is_empty() {
            continue;
        }
        let Ok(text) = std::str::from_utf8(text) else {
            return Err(ImportError::Malformed {
                location,
                message: "is not valid UTF-8".into(),
            });
        };
        let object = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(object)) => object,
            Ok(_) => {
                return Err(ImportError::Malformed {
                    location,
                    message: "is not a JSON object".into(),
                });
            }
            Err(e) => {
                return Err(ImportError::Malformed {
                    location,
                    message: format!("is not valid JSON: {e}"),
                });
            }
        };
        number += 1;
        each(SourceRecord {
            number,
            location,
            object,
            untyped: false,
        })?;
    }
}

/// A JSON array is read element by element through serde's sequence visitor, never whole.
fn read_json_array(
    input: Bounded<Box<dyn BufRead + Send>>,
    bounds: &Bounds,
    each: &mut dyn FnMut(SourceRecord) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let mut failure = None;
    let mut deserializer = serde_json::Deserializer::from_reader(input);
    let mut number = 0;
    let seed = ArraySeed {
        each,
        bounds,
        number: &mut number,
        failure: &mut failure,
    };
    let result = seed
        .deserialize(&mut deserializer)
        .and_then(|()| deserializer.end());
    match (failure, result) {
        (Some(error), _) => Err(error),
        (None, Ok(())) => Ok(()),
        (None, Err(e)) => {
            Err(
                bounds.error_or(Location::Record(number + 1), || ImportError::Malformed {
                    location: Location::Line(e.line() as u64),
                    message: match e.io_error_kind() {
                        Some(_) => read_problem(&std::io::Error::from(e)),
                        None => format!("is not a valid JSON array of objects: {e}"),
                    },
                }),
            )
        }
    }
}

struct ArraySeed<'a> {
    each: &'a mut dyn FnMut(SourceRecord) -> Result<(), ImportError>,
    bounds: &'a Bounds,
    /// Records read so far, so a failure can name the next one.
    number: &'a mut u64,
    failure: &'a mut Option<ImportError>,
}

impl<'de> DeserializeSeed<'de> for ArraySeed<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ArraySeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            let start = self.bounds.read.get();
            self.bounds.record_starts_at(start);
            let Some(value) = seq.next_element::<Value>()? else {
                return Ok(());
            };
            *self.number += 1;
            let number = *self.number;
            let location = Location::Record(number);
            if let Err(error) = self.bounds.check(location, self.bounds.read.get() - start) {
                *self.failure = Some(error);
                return Err(serde::de::Error::custom("stopped"));
            }
            let Value::Object(object) = value else {
                *self.failure = Some(ImportError::Malformed {
                    location,
                    message: "is not a JSON object".into(),
                });
                return Err(serde::de::Error::custom("stopped"));
            };
            if let Err(error) = (self.each)(SourceRecord {
                number,
                location,
                object,
                untyped: false,
            }) {
                *self.failure = Some(error);
                return Err(serde::de::Error::custom("stopped"));
            }
        }
    }
}

#[cfg(test)]
mod tests;
