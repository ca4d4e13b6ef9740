//! Rows straight from a flat CSV file's cells (no dotted header, no `_id` column, every column a
//! field of the plan): no JSON object is built, looked up, rewritten and serialized for each
//! record, which would be most of the import's reading thread. The rows are byte for byte
//! those of [`Plan::convert`] on the object the CSV reader makes of the same cells, errors
//! included; the tests below hold it to that.

use std::fmt::Write;

use serde_json::Value;

use super::ID;
use super::plan::{Cell, IdSource, Plan, Row, check_id_size, coerce_text};

/// A plan field that has a column or is the id field, and the CSV column holding it.
#[derive(Debug)]
struct FieldCells {
    /// Index in [`Plan::fields`].
    field: usize,
    /// Index of the CSV column.
    column: usize,
    /// Index in [`Row::cells`], when the field has a column of its own.
    cell: Option<usize>,
    is_id: bool,
}

/// How the cells of one CSV file become rows under one plan.
#[derive(Debug)]
pub struct CsvRows {
    plan: Plan,
    /// In plan order, as [`Plan::convert`] checks them (so the first error is the same).
    fields: Vec<FieldCells>,
    /// `,"name":` for each CSV column, its name escaped as JSON.
    keys: Vec<String>,
    /// The bytes of all `keys`, for a body's capacity.
    key_bytes: usize,
    cells: usize,
    /// The typed value each column shows in the record, for the record being converted.
    shown: Vec<Option<Value>>,
    /// When rows are packed for SQLite: each column's place in the packed body, ascending.
    places: Option<Vec<usize>>,
    /// The places of a packed body: `_id` and every field's.
    place_count: usize,
}

impl CsvRows {
    /// The converter for a CSV file with these (checked) header names, when the file is flat
    /// and every column is a field of `plan`; `None` leaves the file to [`Plan::convert`].
    /// With `pack`, rows come packed as SQLite stores them ([`Row::packed`]) when the
    /// columns are in the plan's order and their names need no escaping in JSON: the loader
    /// then neither scans nor checks each body again, which would be much of its thread's time.
    pub fn new(plan: &Plan, names: &[String], pack: bool) -> Option<Self> {
        if plan.id == IdSource::Own || names.iter().any(|n| n.contains('.') || n == ID) {
            return None;
        }
        let columns: Vec<usize> = names
            .iter()
            .map(|name| plan.fields.iter().position(|f| &f.name == name))
            .collect::<Option<_>>()?;
        let mut fields = Vec::new();
        let mut cells = 0;
        for (i, field) in plan.fields.iter().enumerate() {
            let is_id = plan.id == IdSource::Field(i);
            let cell = field.has_own_column().then(|| {
                cells += 1;
                cells - 1
            });
            if field.column.is_none() && !is_id {
                continue;
            }
            match columns.iter().position(|&f| f == i) {
                Some(column) => fields.push(FieldCells {
                    field: i,
                    column,
                    cell,
                    is_id,
                }),
                // Every record would fail for want of an id: said by the general path.
                None if is_id => return None,
                None => {}
            }
        }
        let keys: Vec<String> = names
            .iter()
            .map(|name| {
                let mut key = String::from(",");
                push_json_string(&mut key, name);
                key.push(':');
                key
            })
            .collect();
        let layout = plan.layout();
        let places = pack
            .then(|| {
                names
                    .iter()
                    .map(|name| layout.place(name).filter(|_| !needs_escape(name)))
                    .collect::<Option<Vec<usize>>>()
            })
            .flatten()
            .filter(|places| places.windows(2).all(|w| w[0] < w[1]));
        Some(CsvRows {
            plan: plan.clone(),
            fields,
            key_bytes: keys.iter().map(String::len).sum(),
            keys,
            cells,
            shown: vec![None; names.len()],
            places,
            place_count: layout.places(),
        })
    }

    /// Converts one record's cells; the error says which field and why.
    pub fn convert(&mut self, pos: i64, record: &csv::StringRecord) -> Result<Row, String> {
        let mut cells = vec![Cell::Null; self.cells];
        let mut id = None;
        self.shown.fill(None);
        for f in &self.fields {
            let field = &self.plan.fields[f.field];
            let text = &record[f.column];
            let (cell, shown) = coerce_text(text, field.field_type)
                .map_err(|why| format!("field {:?} {why}", field.name))?;
            if f.is_id {
                id = Some(match &cell {
                    Cell::Str(s) | Cell::Text(s) => s.clone(),
                    Cell::Num(_) => text.trim().to_string(),
                    Cell::Null | Cell::TextId(_) => return Err(field.no_id()),
                });
            } else {
                field.check_key_size(&cell)?;
            }
            self.shown[f.column] = shown;
            if let Some(i) = f.cell {
                cells[i] = cell;
            }
        }
        let id = id.unwrap_or_else(|| pos.to_string());
        check_id_size(&id)?;
        let doc = match &self.places {
            Some(places) => self.packed(&id, record, places),
            None => self.doc(&id, record),
        };
        Ok(Row {
            pos,
            id,
            doc,
            packed: self.places.is_some(),
            cells,
        })
    }

    /// The record as JSON text, `_id` first, then the columns with a value in the file's order.
    fn doc(&self, id: &str, record: &csv::StringRecord) -> String {
        let capacity = record.as_slice().len() + self.key_bytes + id.len() + 12;
        let mut doc = String::with_capacity(capacity);
        doc.push_str("{\"_id\":");
        push_json_string(&mut doc, id);
        for (column, text) in record.iter().enumerate() {
            if text.is_empty() {
                continue; // an empty cell is a missing value (NA)
            }
            doc.push_str(&self.keys[column]);
            self.push_value(&mut doc, column, text);
        }
        doc.push('}');
        doc
    }

    /// The body [`Self::doc`] would write, packed as `query::packed` packs it: the places left
    /// empty first (when any), then the values in place order.
    fn packed(&self, id: &str, record: &csv::StringRecord, places: &[usize]) -> String {
        let mut doc = String::with_capacity(record.as_slice().len() + id.len() + 16);
        doc.push('[');
        // The empty places, ascending, written as they are found: `[` before the first.
        let mut empty = 0;
        let mut next = 1;
        let filled = record
            .iter()
            .zip(places)
            .filter(|(text, _)| !text.is_empty())
            .map(|(_, &place)| place);
        for upto in filled.chain([self.place_count]) {
            for place in next..upto {
                doc.push(if empty == 0 { '[' } else { ',' });
                write!(doc, "{place}").expect("writing to a String cannot fail");
                empty += 1;
            }
            next = upto + 1;
        }
        if empty > 0 {
            doc.push_str("],");
        }
        push_json_string(&mut doc, id);
        for (column, text) in record.iter().enumerate() {
            if !text.is_empty() {
                doc.push(',');
                self.push_value(&mut doc, column, text);
            }
        }
        doc.push(']');
        doc
    }

    /// A column's value as the record shows it: typed, or the text as a JSON string.
    fn push_value(&self, doc: &mut String, column: usize, text: &str) {
        match &self.shown[column] {
            Some(value) => write!(doc, "{value}").expect("writing to a String cannot fail"),
            None => push_json_string(doc, text),
        }
    }
}

/// Whether JSON writes `s` escaped.
fn needs_escape(s: &str) -> bool {
    s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\')
}

/// `s` as a JSON string, escaped as `serde_json` escapes it.
fn push_json_string(out: &mut String, s: &str) {
    if !needs_escape(s) {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&Value::from(s).to_string());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use entity::FieldType;

    use super::*;
    use crate::import::reader::{self, Format, Source};
    use crate::import::schema::{MAX_KEY_BYTES, SchemaFile};

    /// Each record converted both ways: the same row or the same error.
    fn both_ways(csv: &'static str, schema: &str, types: &[(&str, FieldType)], id: Option<&str>) {
        let schema = SchemaFile::parse(schema).unwrap();
        let inferred: Vec<(String, FieldType)> =
            types.iter().map(|(n, t)| (n.to_string(), *t)).collect();
        let plan = Plan::new(&schema, &inferred, id).unwrap();
        let source = Source::Bytes {
            name: "t.csv",
            data: csv.as_bytes(),
        };
        let mut general = Vec::new();
        reader::read_records(
            source.open(false, Arc::default()).unwrap(),
            Format::Csv,
            1 << 20,
            |r| {
                general.push(plan.convert(r.number as i64, r.object));
                Ok(())
            },
        )
        .unwrap();
        let layout = plan.layout();
        for pack in [false, true] {
            let mut direct = Vec::new();
            let mut rows = None;
            reader::read_csv_cells(source.open(false, Arc::default()).unwrap(), 1 << 20, |r| {
                let rows =
                    rows.get_or_insert_with(|| CsvRows::new(&plan, r.names, pack).expect("flat"));
                direct.push(rows.convert(r.number as i64, r.cells));
                Ok(())
            })
            .unwrap();
            assert_eq!(general.len(), direct.len());
            for (g, d) in general.iter().zip(&direct) {
                match (g, d) {
                    (Ok(g), Ok(d)) => {
                        assert_eq!((g.pos, &g.id, &g.cells), (d.pos, &d.id, &d.cells));
                        if d.packed {
                            // Packed as the loader would have packed the general path's body.
                            assert!(pack);
                            assert_eq!(layout.pack(&g.doc).as_ref(), Some(&d.doc));
                        } else {
                            assert_eq!(g.doc, d.doc);
                        }
                    }
                    (Err(g), Err(d)) => assert_eq!(g, d),
                    _ => panic!("{g:?} against {d:?}"),
                }
            }
        }
    }

    #[test]
    fn rows_are_those_of_the_general_path() {
        use FieldType::*;
        let types = [
            ("id", Number),
            ("n", Number),
            ("b", Boolean),
            ("d", Date),
            ("k", Keyword),
            ("t", Text),
            ("j", Json),
        ];
        let csv = "id,n,b,d,k,t,j\n\
                   1,42,true,2013-01-01,a,Hello,x\n\
                   \" 2 \",1.50,FALSE,2013-01-01T10:00:00Z,\"q\"\"uote\",\"line\nbreak\",\"{}\"\n\
                   3,,,,,,\n\
                   4, ,TRUE,2020-02-02,\\back,tab\there,é\u{7f}\n\
                   5,1e3,false,2020-02-02,\u{1}ctl,\u{2028},\n\
                   6,-0,true,,k,t,j\n\
                   7,many,true,,k,t,j\n\
                   8,1,maybe,,k,t,j\n\
                   9,1,true,yesterday,k,t,j\n\
                   ,1,true,,k,t,j\n\
                   11,12345678901234567890,true,,k,t,j\n";
        // Numbers as ids, the record number as id, and a keyword id (whose column is `_id`).
        both_ways(csv, "{}", &types, Some("id"));
        both_ways(csv, "{}", &types, None);
        let mut keyword_id = types;
        keyword_id[0].1 = Keyword;
        both_ways(csv, "{}", &keyword_id, Some("id"));
        both_ways(csv, "{}", &keyword_id, Some("k"));
        both_ways(csv, "{}", &keyword_id, Some("t"));
        // A schema file's order differs from the file's: the first error is still the same,
        // and bodies are not packed by the reader.
        both_ways(
            csv,
            r#"{"fields":[{"name":"b","type":"boolean"},{"name":"n","type":"number"}]}"#,
            &types,
            Some("id"),
        );
        // Values and an identifier too long to be keys.
        let long = format!(
            "id,k\n1,{}\n{},k\n",
            "x".repeat(MAX_KEY_BYTES + 1),
            "9".repeat(MAX_KEY_BYTES + 1)
        );
        both_ways(
            Box::leak(long.into_boxed_str()),
            "{}",
            &[("id", Keyword), ("k", Keyword)],
            Some("id"),
        );
        // A field the schema declares and the file lacks: a place every packed body leaves empty.
        both_ways(
            csv,
            r#"{"fields":[{"name":"id","type":"number"},{"name":"gone","type":"number"}]}"#,
            &types,
            Some("id"),
        );
    }

    #[test]
    fn files_it_does_not_take() {
        let plan = |types: &[(&str, FieldType)], id: Option<&str>| {
            let inferred: Vec<(String, FieldType)> =
                types.iter().map(|(n, t)| (n.to_string(), *t)).collect();
            Plan::new(&SchemaFile::parse("{}").unwrap(), &inferred, id).unwrap()
        };
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let flat = plan(&[("a", FieldType::Number)], None);
        assert!(CsvRows::new(&flat, &names(&["a"]), true).is_some());
        // A nested column, an `_id` column, a column the plan does not have.
        let nested = plan(&[("o.c", FieldType::Number)], None);
        assert!(CsvRows::new(&nested, &names(&["o.c"]), true).is_none());
        assert!(CsvRows::new(&flat, &names(&["a", "_id"]), true).is_none());
        assert!(CsvRows::new(&flat, &names(&["a", "b"]), true).is_none());
        let own = plan(&[("_id", FieldType::Keyword)], Some("_id"));
        assert!(CsvRows::new(&own, &names(&["_id"]), true).is_none());
    }
}
