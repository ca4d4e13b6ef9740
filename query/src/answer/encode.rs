//! The export's encoders (contract §12.3): records as NDJSON lines or CSV rows (RFC 4180
//! quoting, CRLF), one batch at a time.

use serde_json::Value;

use crate::dataset::DatasetSchema;
use crate::error::ApiError;
use crate::request::params::ExportFormat;

/// One CSV column: its header (the field's dotted name) and the path to its value.
#[derive(Debug)]
pub(crate) struct CsvColumn {
    pub name: String,
    path: Vec<String>,
}

/// `_id` and the fields a projection selects (all without one), in schema order.
pub(crate) fn csv_columns(schema: &DatasetSchema, projection: Option<&[String]>) -> Vec<CsvColumn> {
    let selected = |name: &str| {
        projection.is_none_or(|paths| {
            paths.iter().any(|p| {
                name == p || (name.starts_with(p.as_str()) && name[p.len()..].starts_with('.'))
            })
        })
    };
    std::iter::once("_id")
        .chain(schema.fields.iter().map(|f| f.name.as_str()))
        .filter(|name| *name == "_id" || selected(name))
        .map(|name| CsvColumn {
            name: name.to_string(),
            path: name.split('.').map(str::to_string).collect(),
        })
        .collect()
}

/// One batch of records (`docs`, as stored) written to `out` in `format`: NDJSON lines shaped
/// with `projection`, or CSV rows of `columns`.
pub(crate) fn write_batch(
    out: &mut Vec<u8>,
    format: ExportFormat,
    schema: &DatasetSchema,
    projection: Option<&[String]>,
    columns: &[CsvColumn],
    docs: Vec<Value>,
) -> Result<(), ApiError> {
    match format {
        ExportFormat::Ndjson => {
            for doc in docs {
                let record = schema.shape(doc, projection);
                serde_json::to_writer(&mut *out, &record).map_err(|_| ApiError::Internal)?;
                out.push(b'\n');
            }
        }
        ExportFormat::Csv => {
            let mut writer = csv_writer(out);
            let mut cells: Vec<String> = Vec::with_capacity(columns.len());
            for doc in &docs {
                cells.clear();
                cells.extend(columns.iter().map(|c| cell(doc, c)));
                writer
                    .write_record(&cells)
                    .map_err(|_| ApiError::Internal)?;
            }
            writer.flush().map_err(|_| ApiError::Internal)?;
        }
    }
    Ok(())
}

/// A CSV writer with RFC 4180 quoting (fields with a comma, quote or line break are quoted,
/// quotes doubled) and CRLF line ends.
fn csv_writer(out: &mut Vec<u8>) -> csv::Writer<&mut Vec<u8>> {
    csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(out)
}

pub(crate) fn write_csv_record(out: &mut Vec<u8>, record: &[&str]) -> Result<(), ApiError> {
    let mut writer = csv_writer(out);
    writer
        .write_record(record)
        .and_then(|()| writer.flush().map_err(csv::Error::from))
        .map_err(|_| ApiError::Internal)
}

/// The CSV cell of `column` in `doc`: empty when missing or null, strings as they are,
/// numbers and booleans as JSON writes them (which `odqs import` reads back to the same
/// value), lists and objects of `json` fields as their JSON text.
fn cell(doc: &Value, column: &CsvColumn) -> String {
    let value = match doc.get(&column.name) {
        Some(value) => Some(value),
        None => column
            .path
            .iter()
            .try_fold(doc, |value, key| value.as_object()?.get(key)),
    };
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cells_and_quoting() {
        let column = |name: &str| CsvColumn {
            name: name.into(),
            path: name.split('.').map(str::to_string).collect(),
        };
        let doc = json!({"a": "x, \"y\"\nz", "n": 2.5, "i": 7, "b": true, "p": {"q": "deep"},
                         "l": [1, 2], "nil": null});
        let cells: Vec<String> = ["a", "n", "i", "b", "p.q", "l", "nil", "gone"]
            .iter()
            .map(|n| cell(&doc, &column(n)))
            .collect();
        assert_eq!(
            cells,
            ["x, \"y\"\nz", "2.5", "7", "true", "deep", "[1,2]", "", ""]
        );
        let mut out = Vec::new();
        let refs: Vec<&str> = cells.iter().map(String::as_str).collect();
        write_csv_record(&mut out, &refs).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"x, \"\"y\"\"\nz\",2.5,7,true,deep,\"[1,2]\",,\r\n"
        );
    }
}
