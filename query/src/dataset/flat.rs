//! A flat record's JSON text put in schema order without building a value: the content hash
//! reads every body of a PostgreSQL version as JSONB's text, and parsing each into a
//! `serde_json::Value` to reorder it would keep a core busy while the server waits.
//!
//! [`FlatOrder::shape`] writes the bytes [`super::DatasetSchema::shape`] writes without a
//! projection, for an object whose values are all scalars and whose keys are all `_id` or the
//! schema's top-level keys, unescaped; anything else (a nested value, another key, an escape in
//! a key, malformed text) answers `false` and the caller takes the general path. Strings are
//! copied as they are: PostgreSQL and `serde_json` escape exactly the same characters the same
//! way (`"`, `\`, `\b \f \n \r \t`, other controls as lowercase `\u00XX`). Numbers go through
//! `serde_json::Number`, so they read back and are written as the general path writes them.

use std::collections::HashMap;

/// The top-level key order of a version's records.
#[derive(Debug)]
pub(crate) struct FlatOrder {
    /// Each key's place in the written object: `_id` is 0, the schema's keys follow in order.
    place: HashMap<String, usize>,
    /// Each place's key as `serde_json` writes it, with its colon.
    keys: Vec<Vec<u8>>,
}

impl FlatOrder {
    pub(crate) fn new<'a>(top_keys: impl IntoIterator<Item = &'a str>) -> Self {
        let mut place = HashMap::new();
        let mut keys = Vec::new();
        for key in std::iter::once("_id").chain(top_keys) {
            if place.contains_key(key) {
                continue;
            }
            place.insert(key.to_string(), keys.len());
            let mut written = serde_json::to_vec(key).expect("a string serializes");
            written.push(b':');
            keys.push(written);
        }
        FlatOrder { place, keys }
    }

    /// Writes `text` (one JSON object) in schema order to `out`, or answers `false` and leaves
    /// `out` as it was. `values` is scratch space, kept between calls.
    pub(crate) fn shape(
        &self,
        text: &str,
        values: &mut Vec<Option<(usize, usize)>>,
        out: &mut Vec<u8>,
    ) -> bool {
        values.clear();
        values.resize(self.keys.len(), None);
        if self.read(text, values).is_none() {
            return false;
        }
        let start = out.len();
        out.push(b'{');
        let mut first = true;
        for (key, value) in self.keys.iter().zip(values.iter()) {
            let Some((from, to)) = *value else { continue };
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(key);
            if !write_scalar(&text[from..to], out) {
                out.truncate(start);
                return false;
            }
        }
        out.push(b'}');
        true
    }

    /// Each key's value, as its range in `text`, put at its place; `None` for anything [`Self::shape`] leaves to the
    /// general path.
    fn read(&self, text: &str, values: &mut [Option<(usize, usize)>]) -> Option<()> {
        let bytes = text.as_bytes();
        let mut at = skip_space(bytes, 0);
        (bytes.get(at) == Some(&b'{')).then_some(())?;
        at = skip_space(bytes, at + 1);
        if bytes.get(at) == Some(&b'}') {
            return (skip_space(bytes, at + 1) == bytes.len()).then_some(());
        }
        loop {
            (bytes.get(at) == Some(&b'"')).then_some(())?;
            let key_end = at + 1 + bytes[at + 1..].iter().position(|&b| b == b'"')?;
            let key = &text[at + 1..key_end];
            if key.contains('\\') {
                return None;
            }
            let slot = values.get_mut(*self.place.get(key)?)?;
            at = skip_space(bytes, key_end + 1);
            (bytes.get(at) == Some(&b':')).then_some(())?;
            at = skip_space(bytes, at + 1);
            let value_end = scalar_end(bytes, at)?;
            if slot.replace((at, value_end)).is_some() {
                return None; // a key twice
            }
            at = skip_space(bytes, value_end);
            match bytes.get(at)? {
                b',' => at = skip_space(bytes, at + 1),
                b'}' => return (skip_space(bytes, at + 1) == bytes.len()).then_some(()),
                _ => return None,
            }
        }
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes
        .get(at)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        at += 1;
    }
    at
}

/// The end of the scalar starting at `at`: a string (escapes skipped) or a bare token;
/// `None` for an object, an array or nothing.
fn scalar_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => {
            let mut i = at + 1;
            loop {
                match bytes.get(i)? {
                    b'"' => return Some(i + 1),
                    b'\\' => i += escape_len(&bytes[i + 1..])?,
                    _ => i += 1,
                }
            }
        }
        b'{' | b'[' => None,
        _ => {
            let len = bytes[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(bytes.len() - at);
            (len > 0).then_some(at + len)
        }
    }
}

/// The length of an escape (its backslash included) that `serde_json` writes the same way; an
/// escape it would write otherwise (`\/`, `\u00e9`, `\u0008`) says `None`.
fn escape_len(after: &[u8]) -> Option<usize> {
    match after {
        [b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't', ..] => Some(2),
        [b'u', b'0', b'0', high @ (b'0' | b'1'), low, ..]
            if matches!(low, b'0'..=b'9' | b'a'..=b'f')
                && !matches!((high, low), (b'0', b'8' | b'9' | b'a' | b'c' | b'd')) =>
        {
            Some(6)
        }
        _ => None,
    }
}

/// Writes one scalar as `serde_json` would after reading it: a string or a literal as it is,
/// a short integer as it is, any other number read and written again.
fn write_scalar(value: &str, out: &mut Vec<u8>) -> bool {
    let bytes = value.as_bytes();
    match bytes[0] {
        b'"' => out.extend_from_slice(bytes),
        b't' | b'f' | b'n' if matches!(value, "true" | "false" | "null") => {
            out.extend_from_slice(bytes)
        }
        _ => {
            let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
            let plain_integer = !digits.is_empty()
                && digits.len() <= 18
                && digits.iter().all(u8::is_ascii_digit)
                && (digits[0] != b'0' || digits.len() == 1)
                && value != "-0";
            if plain_integer {
                out.extend_from_slice(bytes);
            } else {
                match serde_json::from_str::<serde_json::Number>(value) {
                    Ok(number) => serde_json::to_writer(&mut *out, &number).expect("Vec writes"),
                    Err(_) => return false,
                }
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::dataset::DatasetSchema;

    /// The general path's bytes: parsed, shaped, written.
    fn general(schema: &DatasetSchema, text: &str) -> String {
        let value: Value = serde_json::from_str(text).unwrap();
        serde_json::to_string(&schema.shape(value, None)).unwrap()
    }

    #[test]
    fn flat_bodies_come_out_as_the_general_path_writes_them() {
        let schema = DatasetSchema::keywords(&["id", "year", "name", "delay", "ok", "gone", "été"]);
        let order = FlatOrder::new(schema.top_keys());
        let mut values = Vec::new();
        // JSONB's text: keys by length then bytes, ", " and ": " between them; a line
        // separator and DEL written as they are.
        let escapes = r#"{"id": "1", "ok": true, "_id": "1", "gone": null, "name": "A \"q\" \\ \n\t\u0001 \u001f 台 LS DEL", "year": 2013, "delay": -2}"#
                .replace("LS", "\u{2028}")
                .replace("DEL", "\u{7f}");
        for text in [
            escapes.as_str(),
            r#"{"delay": 1.50, "year": 100000000000000000000, "name": "", "id": "x"}"#,
            r#"{"delay": -0.0, "year": 1e2, "été": "x"}"#,
            r#"{"delay": 0.1, "year": -0, "ok": false}"#,
            r#"{"delay": 123456789012345678, "year": 1234567890123456789012}"#,
            r#"{}"#,
            r#" { "id" : "spaced" } "#,
        ] {
            let mut out = Vec::new();
            assert!(order.shape(text, &mut values, &mut out), "{text}");
            assert_eq!(
                String::from_utf8(out).unwrap(),
                general(&schema, text),
                "{text}"
            );
        }
    }

    #[test]
    fn anything_else_is_left_to_the_general_path() {
        let schema = DatasetSchema::keywords(&["id", "place.lat", "place.lon"]);
        let order = FlatOrder::new(schema.top_keys());
        let mut values = Vec::new();
        for text in [
            r#"{"id": "1", "other": 2}"#,
            r#"{"id": "\u00e9"}"#,
            r#"{"id": "\/"}"#,
            r#"{"id": "\u0008"}"#,
            r#"{"id": "\u001F"}"#,
            r#"{"id": "1", "place": {"lat": 1, "lon": 2}}"#,
            r#"{"id": [1, 2]}"#,
            r#"{"i\u0064": "1"}"#,
            r#"{"id": "1", "id": "2"}"#,
            r#"{"id": "1""#,
            r#"{"id": "1"} x"#,
            r#"{"id": nope}"#,
            r#"[1]"#,
        ] {
            let mut out = b"kept".to_vec();
            assert!(!order.shape(text, &mut values, &mut out), "{text}");
            assert_eq!(out, b"kept", "{text}");
        }
    }
}
