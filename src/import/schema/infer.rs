//! Type inference for the fields a schema file does not list: one pass over the whole file, a
//! record at a time, in bounded memory, choosing for each field the narrowest type every value
//! fits, a field whose values disagree falling back to a wider one.

use std::collections::{HashMap, HashSet};

use entity::FieldType;
use serde_json::{Map, Value};

use super::values::{is_iso_date, parse_bool, parse_number};
use super::{MAX_FIELDS, SchemaFile};

/// Type inference over a whole file, one record at a time, in bounded memory: at most
/// [`MAX_FIELDS`] fields are tracked, each with at most [`DISTINCT_CAP`] short values.
#[derive(Default)]
pub struct Inference {
    order: Vec<String>,
    stats: HashMap<String, Stats>,
    /// Objects the schema file declares as one `json` field: inference does not look inside.
    opaque: HashSet<String>,
    /// Whether a record brought more than [`MAX_FIELDS`] fields.
    too_many: bool,
}

/// Distinct values tracked per field before we stop counting (memory stays bounded).
const DISTINCT_CAP: usize = 20_000;
/// Longest string that still counts as a keyword when inferring.
const KEYWORD_MAX_CHARS: usize = 64;

#[derive(Default)]
struct Stats {
    seen: u64,
    numbers: u64,
    bools: u64,
    dates: u64,
    nested: u64,
    max_chars: usize,
    whitespace: bool,
    distinct: HashSet<String>,
    overflow: bool,
}

impl Inference {
    /// Inference for fields `schema` does not list; what it declares as `json` stays whole.
    pub fn new(schema: &SchemaFile) -> Self {
        Inference {
            opaque: schema
                .fields
                .iter()
                .filter(|f| FieldType::parse(&f.field_type) == Some(FieldType::Json))
                .map(|f| f.name.clone())
                .collect(),
            ..Inference::default()
        }
    }

    /// Takes one record into account; refuses it when it brings the fields past
    /// [`MAX_FIELDS`] (the error says why, the caller says where).
    pub fn observe(&mut self, object: &Map<String, Value>, untyped: bool) -> Result<(), String> {
        let mut path = String::new();
        self.walk(object, &mut path, untyped);
        if self.too_many {
            return Err(format!(
                "brings the number of fields past {MAX_FIELDS}, the most a dataset holds \
                 (MAX_FIELDS), so that every record fits one row of the store: declare an \
                 object holding many of them as one json field in a schema file, or split the file"
            ));
        }
        Ok(())
    }

    fn walk(&mut self, object: &Map<String, Value>, path: &mut String, untyped: bool) {
        for (key, value) in object {
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
            match value {
                Value::Object(inner) if !self.opaque.contains(path.as_str()) => {
                    self.walk(inner, path, untyped)
                }
                Value::Null => {}
                leaf => self.leaf(path, leaf, untyped),
            }
            path.truncate(len);
        }
    }

    fn leaf(&mut self, path: &str, value: &Value, untyped: bool) {
        if !self.stats.contains_key(path) {
            if self.order.len() >= MAX_FIELDS {
                self.too_many = true;
                return;
            }
            self.order.push(path.to_string());
        }
        let stats = self.stats.entry(path.to_string()).or_default();
        let as_text = match value {
            Value::String(s) if s.is_empty() => return,
            Value::String(s) => {
                if untyped && parse_number(s).is_some() {
                    stats.numbers += 1;
                }
                if untyped && parse_bool(s).is_some() {
                    stats.bools += 1;
                }
                if is_iso_date(s) {
                    stats.dates += 1;
                }
                s.clone()
            }
            Value::Number(n) => {
                stats.numbers += 1;
                n.to_string()
            }
            Value::Bool(b) => {
                stats.bools += 1;
                b.to_string()
            }
            _ => {
                stats.nested += 1;
                String::new()
            }
        };
        stats.seen += 1;
        stats.max_chars = stats.max_chars.max(as_text.chars().count());
        stats.whitespace |= as_text.contains(char::is_whitespace);
        if stats.max_chars > KEYWORD_MAX_CHARS && !stats.overflow {
            // Too long to be a keyword whatever repeats: no need to remember long values.
            stats.overflow = true;
            stats.distinct = HashSet::new();
        }
        if !stats.overflow {
            stats.distinct.insert(as_text);
            if stats.distinct.len() > DISTINCT_CAP {
                stats.overflow = true;
                stats.distinct = HashSet::new();
            }
        }
    }

    /// The inferred fields in order of first appearance (contract §1: numbers → number; short,
    /// repeated strings → keyword; other strings → text), plus boolean, date and json.
    pub fn finish(self, id_field: Option<&str>) -> Vec<(String, FieldType)> {
        let Inference { order, stats, .. } = self;
        order
            .into_iter()
            .map(|name| {
                let s = &stats[&name];
                let field_type = if Some(name.as_str()) == id_field {
                    FieldType::Keyword
                } else if s.nested > 0 {
                    FieldType::Json
                } else if s.numbers == s.seen {
                    FieldType::Number
                } else if s.bools == s.seen {
                    FieldType::Boolean
                } else if s.dates == s.seen {
                    FieldType::Date
                } else {
                    let repeated = !s.overflow && (s.distinct.len() as u64) * 2 <= s.seen;
                    if s.max_chars <= KEYWORD_MAX_CHARS && (repeated || !s.whitespace) {
                        FieldType::Keyword
                    } else {
                        FieldType::Text
                    }
                };
                (name, field_type)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn infer(rows: &[Value], untyped: bool) -> Vec<(String, FieldType)> {
        let mut inference = Inference::default();
        for row in rows {
            inference
                .observe(row.as_object().unwrap(), untyped)
                .unwrap();
        }
        inference.finish(None)
    }

    #[test]
    fn infers_types() {
        let rows: Vec<Value> = (0..10)
            .map(|i| {
                json!({
                    "n": i, "kw": if i % 2 == 0 { "a b" } else { "c d" },
                    "code": format!("X{i}"), "prose": format!("words number {i}"),
                    "flag": i % 3 == 0, "when": "2021-03-31T01:12:12+08:00",
                    "pos": {"lat": 1.5}, "tags": ["x"], "zip": "540"
                })
            })
            .collect();
        let types: HashMap<_, _> = infer(&rows, false).into_iter().collect();
        assert_eq!(types["n"], FieldType::Number);
        assert_eq!(types["kw"], FieldType::Keyword);
        assert_eq!(types["code"], FieldType::Keyword);
        assert_eq!(types["prose"], FieldType::Text);
        assert_eq!(types["flag"], FieldType::Boolean);
        assert_eq!(types["when"], FieldType::Date);
        assert_eq!(types["pos.lat"], FieldType::Number);
        assert_eq!(types["tags"], FieldType::Json);
        assert_eq!(
            types["zip"],
            FieldType::Keyword,
            "JSON strings stay strings"
        );
    }

    #[test]
    fn csv_strings_can_be_numbers() {
        let rows = vec![json!({"a": "1", "b": "x"}), json!({"a": "2.5", "b": "1"})];
        let types = infer(&rows, true);
        assert_eq!(types[0], ("a".into(), FieldType::Number));
        assert_eq!(types[1], ("b".into(), FieldType::Keyword));
    }
}
