//! Record bodies stored without their keys on SQLite, where keys would be most of a body's
//! bytes.
//!
//! A body whose keys are `_id` and then some of the schema's top-level names, in the schema's
//! order, is stored as the JSON array of its values: `{"_id":"7","year":2013,"tz":-5}` becomes
//! `["7",2013,-5]`. When keys are missing (an empty CSV cell), the array starts with the
//! ascending list of the missing keys' places: `{"_id":"8","tz":-4}` becomes `[[1],"8",-4]`
//! (`_id` is always a string, so a leading array can only be that list). Reading puts the keys
//! back, byte for byte. Any other body (an unknown key, another order) is stored as written;
//! an object never starts with `[`, so the first byte tells which. The import checks every
//! packed body by unpacking it, so a stored array always reads back to the text the import
//! wrote. PostgreSQL keeps JSONB objects.
//!
//! Both directions, and the check whether a stored text is already in schema order
//! ([`super::schema`]), must be fast on every record, so they read a body with [`Scan`]: its
//! keys and its values' extents, without parsing the values.

use serde_json::{Map, Value};

/// The top-level keys of a version's records, in the order bodies are packed in.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    keys: Vec<String>,
    /// The bytes the keys add back: `"key":` and a comma each, and the braces.
    keys_len: usize,
}

impl Layout {
    /// `_id`, then the first segment of each field name (`pos` for `pos.lat`), first seen
    /// first: the order [`crate::dataset::schema::DatasetSchema::shape`] writes records in.
    pub fn new<'a>(field_names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut keys = vec![String::from("_id")];
        for name in field_names {
            let top = name.split('.').next().unwrap_or(name);
            if !keys.iter().any(|k| k == top) {
                keys.push(top.to_string());
            }
        }
        let keys_len = keys.iter().map(|k| k.len() + 4).sum::<usize>() + 2;
        Layout { keys, keys_len }
    }

    /// The place of a top-level key in packed bodies (`_id` is 0).
    pub fn place(&self, key: &str) -> Option<usize> {
        self.keys.iter().position(|k| k == key)
    }

    /// How many places a packed body has.
    pub fn places(&self) -> usize {
        self.keys.len()
    }

    /// Whether a stored body is packed.
    pub fn is_packed(stored: &str) -> bool {
        stored.starts_with('[')
    }

    /// `doc` packed, when its keys fit this layout and unpacking gives `doc` back exactly;
    /// `None` keeps `doc` as it is.
    pub fn pack(&self, doc: &str) -> Option<String> {
        let mut scan = Scan::new(doc);
        scan.eat(b'{')?;
        let mut values = String::with_capacity(doc.len().saturating_sub(self.keys_len) + 2);
        let mut missing = Vec::new();
        let mut next = 0;
        loop {
            let key = scan.key()?;
            let skipped = self.keys[next..].iter().position(|k| k.as_bytes() == key)?;
            missing.extend(next..next + skipped);
            next += skipped + 1;
            scan.eat(b':')?;
            if !values.is_empty() {
                values.push(',');
            }
            values.push_str(scan.value_text()?);
            if scan.eat(b',').is_none() {
                break;
            }
        }
        scan.eat(b'}')?;
        missing.extend(next..self.keys.len());
        if !scan.at_end() || missing.first() == Some(&0) {
            return None;
        }
        let mut packed = String::with_capacity(values.len() + 4 * missing.len() + 4);
        packed.push('[');
        if !missing.is_empty() {
            packed.push('[');
            for (i, place) in missing.iter().enumerate() {
                if i > 0 {
                    packed.push(',');
                }
                packed.push_str(&place.to_string());
            }
            packed.push_str("],");
        }
        packed.push_str(&values);
        packed.push(']');
        (self.unpack(&packed)? == doc).then_some(packed)
    }

    /// The object text a packed body was made from; `None` when it does not fit the layout.
    pub fn unpack(&self, packed: &str) -> Option<String> {
        let mut scan = Scan::new(packed);
        scan.eat(b'[')?;
        let mut missing = Vec::new();
        if scan.eat(b'[').is_some() {
            loop {
                missing.push(scan.value_text()?.parse::<usize>().ok()?);
                if scan.eat(b',').is_none() {
                    break;
                }
            }
            scan.eat(b']')?;
            scan.eat(b',')?;
        }
        let mut missing = missing.into_iter().peekable();
        let mut doc = String::with_capacity(packed.len() + self.keys_len);
        doc.push('{');
        for (i, key) in self.keys.iter().enumerate() {
            if missing.next_if_eq(&i).is_some() {
                continue;
            }
            if doc.len() > 1 {
                scan.eat(b',')?;
                doc.push(',');
            }
            doc.push('"');
            doc.push_str(key);
            doc.push_str("\":");
            doc.push_str(scan.value_text()?);
        }
        scan.eat(b']')?;
        if missing.next().is_some() || !scan.at_end() {
            return None;
        }
        doc.push('}');
        Some(doc)
    }

    /// [`Self::unpack`] for a body the store handed back as a value (SQLite's `json()`); the
    /// values back when they do not fit the layout.
    pub fn unpack_value(&self, mut values: Vec<Value>) -> Result<Map<String, Value>, Vec<Value>> {
        let missing: Vec<usize> = match values.first() {
            Some(Value::Array(places)) => match places
                .iter()
                .map(|p| p.as_u64().map(|p| p as usize))
                .collect::<Option<_>>()
            {
                Some(places) => places,
                None => return Err(values),
            },
            _ => Vec::new(),
        };
        let skip = usize::from(!missing.is_empty());
        let ascending = missing.windows(2).all(|w| w[0] < w[1]);
        let in_range = missing.last().is_none_or(|&last| last < self.keys.len());
        if !ascending || !in_range || self.keys.len() - missing.len() != values.len() - skip {
            return Err(values);
        }
        let mut missing = missing.into_iter().peekable();
        let keys = self
            .keys
            .iter()
            .enumerate()
            .filter(|(i, _)| missing.next_if_eq(i).is_none())
            .map(|(_, key)| key.clone());
        Ok(keys.zip(values.drain(skip..)).collect())
    }
}

// The byte scanner.

/// Reads a stored text's keys and says whether they are in the schema's key order,
/// skipping values byte by byte without reading them (cheaper than serde's reader, which checks
/// each string and number on the way). Every method answers `None` at the first key out of
/// place, an escaped key (shaped slowly, by the reader) or anything malformed.
pub(crate) struct Scan<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Scan<'t> {
    pub(crate) fn new(text: &'t str) -> Self {
        Scan { text, at: 0 }
    }

    /// Whether everything was read (a space left over is not).
    pub(crate) fn at_end(&self) -> bool {
        self.at == self.text.len()
    }

    /// The text of the next value, read past.
    pub(crate) fn value_text(&mut self) -> Option<&'t str> {
        self.peek()?;
        let start = self.at;
        self.value()?;
        // A value starts and ends at ASCII bytes or the end: `get` finds char boundaries.
        self.text.get(start..self.at)
    }
    pub(crate) fn space(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.text.as_bytes().get(self.at) {
            self.at += 1;
        }
    }

    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.space();
        self.text.as_bytes().get(self.at).copied()
    }

    /// Steps past the byte just peeked at.
    pub(crate) fn advance(&mut self) {
        self.at += 1;
    }

    pub(crate) fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// A key without escapes, as its bytes.
    pub(crate) fn key(&mut self) -> Option<&'t [u8]> {
        self.eat(b'"')?;
        let start = self.at;
        loop {
            match *self.text.as_bytes().get(self.at)? {
                b'"' => break,
                b'\\' => return None,
                _ => self.at += 1,
            }
        }
        self.at += 1;
        Some(&self.text.as_bytes()[start..self.at - 1])
    }

    /// Past a string whose opening quote was read.
    pub(crate) fn string(&mut self) -> Option<()> {
        loop {
            match *self.text.as_bytes().get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
    }

    /// Past one value of any kind.
    pub(crate) fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => {
                self.at += 1;
                self.string()
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.text.as_bytes().get(self.at)? {
                        b'"' => {
                            self.at += 1;
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => depth -= 1,
                        _ => {}
                    }
                    self.at += 1;
                    if depth == 0 {
                        return Some(());
                    }
                }
            }
            _ => {
                let start = self.at;
                while let Some(&b) = self.text.as_bytes().get(self.at) {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                        break;
                    }
                    self.at += 1;
                }
                (self.at > start).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        Layout::new(["a", "pos.lat", "pos.lon", "b"])
    }

    fn round_trip(layout: &Layout, doc: &str, want: &str) {
        let packed = layout.pack(doc).expect("packs");
        assert_eq!(packed, want);
        assert!(Layout::is_packed(&packed));
        assert_eq!(layout.unpack(&packed).as_deref(), Some(doc));
        let values: Vec<Value> = serde_json::from_str(&packed).unwrap();
        let object = Value::Object(layout.unpack_value(values).unwrap());
        assert_eq!(object, serde_json::from_str::<Value>(doc).unwrap());
        assert_eq!(object.to_string(), doc, "key order kept");
    }

    #[test]
    fn bodies_with_the_layouts_keys_pack_and_read_back_byte_for_byte() {
        let layout = layout();
        round_trip(
            &layout,
            r#"{"_id":"x,1","a":-1.5e-7,"pos":{"lon":2,"lat":[3,"]"]},"b":"say \"hi\", {ok}"}"#,
            r#"["x,1",-1.5e-7,{"lon":2,"lat":[3,"]"]},"say \"hi\", {ok}"]"#,
        );
        round_trip(&layout, r#"{"_id":"1","pos":null}"#, r#"[[1,3],"1",null]"#);
        round_trip(&layout, r#"{"_id":"1","b":[]}"#, r#"[[1,2],"1",[]]"#);
        round_trip(&layout, r#"{"_id":"1"}"#, r#"[[1,2,3],"1"]"#);
        round_trip(&layout, r#"{"_id":"1","a":1,"pos":2}"#, r#"[[3],"1",1,2]"#);
    }

    #[test]
    fn other_bodies_stay_as_written() {
        let layout = layout();
        for doc in [
            r#"{"_id":"1","a":1,"pos":null,"b":2,"c":3}"#, // an unknown key
            r#"{"_id":"1","pos":null,"a":1,"b":2}"#,       // another order
            r#"{"a":1,"_id":"1","pos":null,"b":2}"#,       // _id not first
            r#"{"a":1,"pos":null,"b":2}"#,                 // no _id
            r#"{"_id":"1","a":1,"a":2}"#,                  // a key twice
            r#"{"_id":"1","a":1,"pos":null,"b":2} "#,      // not as the import writes
            r#"{"_id":"1", "a":1,"pos":null,"b":2}"#,      // spaces would not come back
            r#"{"_id":"1","\u0061":1,"pos":null,"b":2}"#,  // an escaped key
            r#"{"_id":"1","a":1,"pos":null,"b":}"#,        // malformed
            r#"{}"#,
        ] {
            assert_eq!(layout.pack(doc), None, "{doc}");
        }
        for packed in [
            r#"["1",1,null]"#,
            r#"["1",1,null,2,3]"#,
            r#"[[2,1],"1",1,2]"#,
            r#"[[1,1],"1",1,2]"#,
            r#"[[9],"1",1,2,3]"#,
            r#"[[1],"1",1,2,3]"#,
        ] {
            assert_eq!(layout.unpack(packed), None, "{packed}");
            let values: Vec<Value> = serde_json::from_str(packed).unwrap();
            assert!(layout.unpack_value(values).is_err(), "{packed}");
        }
    }
}
