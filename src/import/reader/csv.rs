//! CSV files: the header's names checked, then each record framed (its line, its size, its
//! number of cells). A record is handed on as its cells ([`read_csv_cells`], which a flat
//! file's import converts straight to rows) or as an object ([`read_csv`], every other use),
//! where a header `a.b` makes a nested object `{"a": {"b": …}}` and an empty cell is a
//! missing value.

use std::io::BufRead;

use serde_json::{Map, Value};

use super::{SourceRecord, nul_in_field, read_problem};
use crate::import::bounded::{Bounded, Bounds};
use crate::import::schema::MAX_FIELDS;
use crate::import::{ImportError, Location};

/// A CSV record as the file has it: its cells, in the order of the header's `names`.
pub struct CsvRecord<'a> {
    /// 1-based record number.
    pub number: u64,
    pub location: Location,
    /// The header's checked names.
    pub names: &'a [String],
    pub cells: &'a csv::StringRecord,
}

/// Reads every record of a CSV file as its cells, calling `each` for each; stops at the first
/// error. A record of more than `max_record_bytes` is refused, and so is a cell holding a NUL
/// character, as [`super::read_records`] refuses them.
pub fn read_csv_cells(
    input: Box<dyn BufRead + Send>,
    max_record_bytes: u64,
    mut each: impl FnMut(CsvRecord) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let (input, bounds) = Bounded::with_lines(input, max_record_bytes, true);
    csv_records(input, &bounds, &mut |record| {
        let nul = record
            .names
            .iter()
            .zip(record.cells)
            .find(|(_, c)| c.contains('\0'));
        if let Some((name, _)) = nul {
            return Err(ImportError::Malformed {
                location: record.location,
                message: nul_in_field(name),
            });
        }
        each(record)
    })
}

/// Reads every record of a CSV file as an object of untyped (string) values.
pub(super) fn read_csv(
    input: Bounded<Box<dyn BufRead + Send>>,
    bounds: &Bounds,
    each: &mut dyn FnMut(SourceRecord) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let mut paths: Vec<Vec<String>> = Vec::new();
    csv_records(input, bounds, &mut |record| {
        if paths.is_empty() {
            paths = record
                .names
                .iter()
                .map(|h| h.split('.').map(str::to_string).collect())
                .collect();
        }
        let mut object = Map::new();
        for (path, cell) in paths.iter().zip(record.cells) {
            if cell.is_empty() {
                continue; // an empty cell is a missing value (NA)
            }
            insert_path(&mut object, path, Value::String(cell.to_string()));
        }
        each(SourceRecord {
            number: record.number,
            location: record.location,
            object,
            untyped: true,
        })
    })
}

/// Frames the records of a CSV file: the header's names checked, then each record with its
/// line, its size bounded and its number of cells checked.
fn csv_records(
    input: Bounded<Box<dyn BufRead + Send>>,
    bounds: &Bounds,
    each: &mut dyn FnMut(CsvRecord) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    // Flexible: the number of cells is checked here, where the record can be looked at (a
    // quote never closed makes one long cell of the rest of the file).
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(input);
    let headers = reader
        .headers()
        .map_err(|e| bounds.error_or(Location::Line(1), || csv_error(&e, Location::Line(1))))?
        .clone();
    bounds.check(Location::Line(1), reader.position().byte())?;
    let names = header_names(&headers)?;
    let mut record = csv::StringRecord::new();
    let mut number = 0;
    loop {
        // The csv reader counts the bytes it parsed; the input has handed out those and at most
        // its read-ahead buffer more.
        let start = reader.position().byte();
        bounds.record_starts_at(start);
        // Where the next record starts, for a failure before it is read: the byte after the
        // last record's terminator (a `\r\n`'s `\n` is still unread).
        let next_line = || Location::Line(bounds.line_at(start + 1));
        let more = match reader.read_record(&mut record) {
            Ok(more) => more,
            Err(e) => {
                let location = next_line();
                return Err(bounds.error_or(location, || csv_error(&e, location)));
            }
        };
        if !more {
            return Ok(());
        }
        // The record's lines: its last (the line of its last byte before the terminator), less
        // the line breaks inside its cells.
        let end = reader.position().byte();
        let last_line = bounds.line_at(end.saturating_sub(1).max(start + 1));
        let breaks = record.as_slice().bytes().filter(|&b| b == b'\n').count() as u64;
        let line = last_line.saturating_sub(breaks).max(2);
        let location = Location::Line(line);
        bounds.check(location, end - start)?;
        if let Some(problem) = unclosed_quote(&record, bounds, end, last_line) {
            return Err(ImportError::Malformed {
                location,
                message: problem,
            });
        }
        if record.len() != names.len() {
            return Err(ImportError::Malformed {
                location,
                message: format!(
                    "has {} columns where the header has {}",
                    record.len(),
                    names.len()
                ),
            });
        }
        number += 1;
        each(CsvRecord {
            number,
            location,
            names: &names,
            cells: &record,
        })?;
    }
}

/// The column names of a CSV file, read from its header alone (at most `max_record_bytes`).
pub fn csv_headers(
    input: Box<dyn BufRead + Send>,
    max_record_bytes: u64,
) -> Result<Vec<String>, ImportError> {
    let (input, bounds) = Bounded::new(input, max_record_bytes);
    let mut reader = csv::ReaderBuilder::new().flexible(false).from_reader(input);
    let headers = reader
        .headers()
        .map_err(|e| bounds.error_or(Location::Line(1), || csv_error(&e, Location::Line(1))))?;
    header_names(headers)
}

/// Checked column names: trimmed, without the UTF-8 byte-order mark spreadsheets write, none
/// empty (nor with an empty dotted part), none twice.
fn header_names(headers: &csv::StringRecord) -> Result<Vec<String>, ImportError> {
    if headers.len() > MAX_FIELDS {
        return Err(ImportError::Malformed {
            location: Location::Line(1),
            message: format!(
                "has {} columns; a dataset holds at most {MAX_FIELDS} fields (MAX_FIELDS), so \
                 that every record fits one row of the store: split the file",
                headers.len()
            ),
        });
    }
    let mut names: Vec<String> = Vec::with_capacity(headers.len());
    for (i, header) in headers.iter().enumerate() {
        let name = header.trim_start_matches('\u{feff}').trim().to_string();
        let problem = if name.contains('\0') {
            Some("has a NUL character (\\0) in its name, which a store cannot keep")
        } else if name.split('.').any(str::is_empty) {
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

/// A CSV reader's error at the record that starts at `location`.
fn csv_error(error: &csv::Error, location: Location) -> ImportError {
    let message = match error.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("has {len} columns where the header has {expected_len}"),
        csv::ErrorKind::Utf8 { .. } => "is not valid UTF-8".to_string(),
        csv::ErrorKind::Io(e) => read_problem(e),
        _ => error.to_string(),
    };
    ImportError::Malformed { location, message }
}

/// The problem of a record whose last cell opened a quote that the file never closes: the csv
/// reader then reads the rest of the file into that cell, silently (or as a record with too few
/// columns). Said when the record ran to the end of the input, its last cell spans lines, and
/// the file's last byte before any line break is not the closing `"`.
fn unclosed_quote(
    record: &csv::StringRecord,
    bounds: &Bounds,
    end: u64,
    last_line: u64,
) -> Option<String> {
    let last = record.iter().next_back()?;
    let at_end = bounds.ended.get() && end == bounds.read.get();
    if !at_end || !last.contains('\n') || bounds.last_byte.get() == Some(b'"') {
        return None;
    }
    Some(format!(
        "opens a quoted value (\") that is never closed, so every line from here to the end of \
         the file (line {last_line}) was read as one value: close the quote, and write a quote \
         inside a quoted value twice (\"\")"
    ))
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
