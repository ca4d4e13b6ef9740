//! Streaming readers for CSV, JSON arrays and NDJSON, plain or gzipped.
//!
//! Each reader hands one record at a time to a callback, with its line (CSV, NDJSON) or record
//! number (JSON arrays), so memory stays flat whatever the file size and every error can say
//! where it is. A CSV header `a.b` makes a nested object `{"a": {"b": …}}`, mirroring how
//! nested objects of JSON files become dotted field names.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{ImportError, Location};

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
/// from the file or from `each`.
pub fn read_records(
    input: Box<dyn BufRead + Send>,
    format: Format,
    mut each: impl FnMut(SourceRecord) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    match format {
        Format::Csv => read_csv(input, &mut each),
        Format::Ndjson => read_ndjson(input, &mut each),
        Format::Json => read_json_array(input, &mut each),
    }
}

/// The column names of a CSV file, read from its header alone.
pub fn csv_headers(input: Box<dyn BufRead + Send>) -> Result<Vec<String>, ImportError> {
    let mut reader = csv::ReaderBuilder::new().flexible(false).from_reader(input);
    header_names(reader.headers().map_err(|e| csv_error(&e))?)
}

/// Checked column names: trimmed, without the UTF-8 byte-order mark spreadsheets write, none
/// empty (nor with an empty dotted part), none twice.
fn header_names(headers: &csv::StringRecord) -> Result<Vec<String>, ImportError> {
    let mut names: Vec<String> = Vec::with_capacity(headers.len());
    for (i, header) in headers.iter().enumerate() {
        let name = header.trim_start_matches('\u{feff}').trim().to_string();
        let problem = if name.split('.').any(str::is_empty) {
            Some("has an empty name")
        } else if names.contains(&name) {
            Some("repeats an earlier column's name")
        } else if names.iter().any(|other| {
            let (short, long) = if other.len() < name.len() {
                (other, &name)
            } else {
                (&name, other)
            };
            long.starts_with(short.as_str()) && long[short.len()..].starts_with('.')
        }) {
            Some("and another column are one value and an object at once (a and a.b)")
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(ImportError::Malformed {
                location: Location::Line(1),
                message: format!("column {} ({name:?}) {problem}", i + 1),
            });
        }
        names.push(name);
    }
    Ok(names)
}

fn csv_error(error: &csv::Error) -> ImportError {
    let line = error.position().map(|p| p.line()).unwrap_or(1);
    let message = match error.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("has {len} columns where the header has {expected_len}"),
        csv::ErrorKind::Utf8 { .. } => "is not valid UTF-8".to_string(),
        _ => error.to_string(),
    };
    ImportError::Malformed {
        location: Location::Line(line),
        message,
    }
}

fn read_csv(
    input: Box<dyn BufRead + Send>,
    each: &mut dyn FnMut(SourceRecord) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let mut reader = csv::ReaderBuilder::new().flexible(false).from_reader(input);
    let names = header_names(reader.headers().map_err(|e| csv_error(&e))?)?;
    let headers: Vec<Vec<String>> = names
        .iter()
        .map(|h| h.split('.').map(str::to_string).collect())
        .collect();
    let mut record = csv::StringRecord::new();
    let mut number = 0;
    while reader.read_record(&mut record).map_err(|e| csv_error(&e))? {
        number += 1;
        let line = record.position().map(|p| p.line()).unwrap_or(number + 1);
        let mut object = Map::new();
        for (path, cell) in headers.iter().zip(record.iter()) {
            if cell.is_empty() {
                continue; // an empty cell is a missing value (NA)
            }
            insert_path(&mut object, path, Value::String(cell.to_string()));
        }
        each(SourceRecord {
            number,
            location: Location::Line(line),
            object,
            untyped: true,
        })?;
    }
    Ok(())
}

/// Sets `object[path[0]][path[1]]… = value`, creating objects on the way.
fn insert_path(object: &mut Map<String, Value>, path: &[String], value: Value) {
    let (last, parents) = path.split_last().expect("paths are never empty");
    let mut target = object;
    for part in parents {
        let entry = target
            .entry(part.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        target = entry.as_object_mut().expect("just made an object");
    }
    target.insert(last.clone(), value);
}

fn read_ndjson(
    mut input: Box<dyn BufRead + Send>,
    each: &mut dyn FnMut(SourceRecord) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let mut line = String::new();
    let mut line_number = 0;
    let mut number = 0;
    loop {
        line.clear();
        let read = input
            .read_line(&mut line)
            .map_err(|e| ImportError::Malformed {
                location: Location::Line(line_number + 1),
                message: format!("cannot be read: {e}"),
            })?;
        if read == 0 {
            return Ok(());
        }
        line_number += 1;
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let location = Location::Line(line_number);
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
    input: Box<dyn BufRead + Send>,
    each: &mut dyn FnMut(SourceRecord) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let mut failure = None;
    let mut deserializer = serde_json::Deserializer::from_reader(input);
    let seed = ArraySeed {
        each,
        failure: &mut failure,
    };
    let result = seed
        .deserialize(&mut deserializer)
        .and_then(|()| deserializer.end());
    match (failure, result) {
        (Some(error), _) => Err(error),
        (None, Ok(())) => Ok(()),
        (None, Err(e)) => Err(ImportError::Malformed {
            location: Location::Line(e.line() as u64),
            message: format!("is not a valid JSON array of objects: {e}"),
        }),
    }
}

struct ArraySeed<'a> {
    each: &'a mut dyn FnMut(SourceRecord) -> Result<(), ImportError>,
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
        let mut number = 0;
        while let Some(value) = seq.next_element::<Value>()? {
            number += 1;
            let location = Location::Record(number);
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
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &'static str, data: &'static [u8]) -> Result<Vec<Value>, ImportError> {
        let (format, gzip) = Format::from_name(name).unwrap();
        let source = Source::Bytes { name, data };
        let input = source.open(gzip, Arc::default())?;
        let mut out = Vec::new();
        read_records(input, format, |r| {
            out.push(Value::Object(r.object));
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn formats_from_names() {
        assert_eq!(Format::from_name("a.CSV"), Some((Format::Csv, false)));
        assert_eq!(
            Format::from_name("a.ndjson.gz"),
            Some((Format::Ndjson, true))
        );
        assert_eq!(Format::from_name("a.jsonl"), Some((Format::Ndjson, false)));
        assert_eq!(Format::from_name("a.json.gz"), Some((Format::Json, true)));
        assert_eq!(Format::from_name("a.txt"), None);
    }

    #[test]
    fn csv_nests_dotted_headers_and_skips_empty_cells() {
        let rows = read("x.csv", b"id,origin.city,n\n1,NYC,\n").unwrap();
        assert_eq!(
            rows,
            vec![serde_json::json!({"id": "1", "origin": {"city": "NYC"}})]
        );
    }

    #[test]
    fn headers_are_checked() {
        let rows = read("x.csv", "\u{feff}id,n\n1,2\n".as_bytes()).unwrap();
        assert_eq!(rows, vec![serde_json::json!({"id": "1", "n": "2"})]);
        let err = read("x.csv", b"a,b,a\n1,2,3\n").unwrap_err();
        assert!(
            err.to_string().contains("line 1 column 3 (\"a\") repeats"),
            "{err}"
        );
        let err = read("x.csv", b"a.b,a\n1,2\n").unwrap_err();
        assert!(
            err.to_string().contains("column 2 (\"a\") and another"),
            "{err}"
        );
        let err = read("x.csv", b"a,,c\n1,2,3\n").unwrap_err();
        assert!(err.to_string().contains("column 2"), "{err}");
    }

    #[test]
    fn errors_name_the_line() {
        let err = read("x.csv", b"a,b\n1,2\n3\n").unwrap_err();
        assert!(err.to_string().contains("line 3"), "{err}");
        let err = read("x.ndjson", b"{\"a\":1}\n\n{\"a\":\n").unwrap_err();
        assert!(err.to_string().contains("line 3"), "{err}");
        let err = read("x.json", b"[{\"a\":1}, 2]").unwrap_err();
        assert!(err.to_string().contains("record 2"), "{err}");
    }

    #[test]
    fn json_array_streams() {
        let rows = read("x.json", b" [ {\"a\": 1}, {\"b\": {\"c\": true}} ] ").unwrap();
        assert_eq!(rows.len(), 2);
        assert!(read("x.json", b"{\"a\": 1}").is_err());
    }
}
