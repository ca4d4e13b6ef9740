//! A JSON byte scanner: reads a stored body's keys and values' extents without parsing the
//! values, for the two places that must be fast on every record: whether a stored text is
//! already in schema order ([`super::schema`]) and packing bodies ([`super::packed`]).

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
