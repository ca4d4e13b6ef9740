//! Dictionary-encoded columns: keyword, date, boolean and `_id` ([`StrColumn`], [`IdColumn`]),
//! and the text fields' terms ([`TextColumn`]). Each is
//!
//! - a dictionary ([`Dict`]): the distinct values in byte order, so comparing codes compares
//!   values the way both stores do (`COLLATE "C"`, SQLite's `BINARY`);
//! - per-row codes ([`Codes`]) in the narrowest integer type that holds the dictionary
//!   ([`Code`]), with [`MISSING`] for a row without a value;
//! - the rows of each value ([`Postings`]): frequent values as bit sets, the others as row
//!   lists, so a filter reads them without scanning the column;
//!
//! and the builder that reads a string column in row order ([`StrBuilder`]).

use std::cmp::Ordering;
use std::collections::HashMap;

use super::*;

// The dictionary.

/// Distinct strings in byte order, in one buffer.
#[derive(Debug, Default)]
pub(crate) struct Dict {
    pub(in crate::engine::memory) text: String,
    pub(in crate::engine::memory) ends: Vec<u32>,
}

impl Dict {
    /// Number of values.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The value with code `code`.
    pub(crate) fn get(&self, code: u32) -> &str {
        let i = code as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    /// The code of `value`, if present (binary search: the values are sorted).
    pub(crate) fn find(&self, value: &str) -> Option<u32> {
        let (mut low, mut high) = (0usize, self.len());
        while low < high {
            let mid = (low + high) / 2;
            match self.get(mid as u32).cmp(value) {
                Ordering::Less => low = mid + 1,
                Ordering::Greater => high = mid,
                Ordering::Equal => return Some(mid as u32),
            }
        }
        None
    }

    /// Appends `value` as the next code. [`Self::find`] needs values appended in byte order;
    /// a dictionary only searched with [`Self::containing`] may take any order.
    pub(crate) fn push(&mut self, value: &str) {
        self.text.push_str(value);
        self.ends.push(self.text.len() as u32);
    }

    /// Appends `other`'s values after this one's, in its order (a build read in parts: the
    /// ids of the rows after this part's).
    pub(crate) fn append(&mut self, other: &Dict) {
        let base = self.text.len() as u32;
        self.text.push_str(&other.text);
        self.ends.extend(other.ends.iter().map(|end| end + base));
    }

    /// Codes of the values containing `needle`.
    pub(crate) fn containing(&self, needle: &str) -> Vec<u32> {
        (0..self.len() as u32)
            .filter(|&code| self.get(code).contains(needle))
            .collect()
    }

    /// Heap bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.text.capacity() + self.ends.capacity() * 4
    }
}

// Per-row codes.

/// Rows per code of `codes` (codes below `distinct`).
pub(crate) fn code_counts(codes: &Codes, distinct: usize) -> Vec<u32> {
    let mut counts = vec![0u32; distinct];
    for row in 0..codes.len() {
        let code = codes.get(row);
        if code != MISSING {
            counts[code as usize] += 1;
        }
    }
    counts
}

/// One of the code types of [`Codes`], for loops compiled once per type.
pub(crate) trait Code: Copy + PartialEq {
    /// The value standing for [`MISSING`].
    const NONE: Self;
    /// The code as `u32`.
    fn wide(self) -> u32;
    /// A code below [`Self::NONE`], from `u32`.
    fn narrow(code: u32) -> Self;

    /// The code as `u32`, [`MISSING`] for none.
    #[inline]
    fn code(self) -> u32 {
        if self == Self::NONE {
            MISSING
        } else {
            self.wide()
        }
    }

    /// `code` ([`MISSING`] for none) in this type.
    #[inline]
    fn from_code(code: u32) -> Self {
        if code == MISSING {
            Self::NONE
        } else {
            Self::narrow(code)
        }
    }
}

impl Code for u8 {
    const NONE: Self = u8::MAX;
    fn wide(self) -> u32 {
        u32::from(self)
    }
    fn narrow(code: u32) -> Self {
        code as u8
    }
}

impl Code for u16 {
    const NONE: Self = u16::MAX;
    fn wide(self) -> u32 {
        u32::from(self)
    }
    fn narrow(code: u32) -> Self {
        code as u16
    }
}

impl Code for u32 {
    const NONE: Self = MISSING;
    fn wide(self) -> u32 {
        self
    }
    fn narrow(code: u32) -> Self {
        code
    }
}

/// A column's codes by row in the narrowest unsigned type its dictionary needs (a
/// carrier takes one byte, not four); each type's largest value stands for [`MISSING`].
#[derive(Clone, Debug)]
pub(crate) enum Codes {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
}

impl Default for Codes {
    fn default() -> Self {
        Codes::U8(Vec::new())
    }
}

impl Codes {
    /// Room for `rows` codes below `distinct`, in the type they need.
    pub(crate) fn with_capacity(distinct: usize, rows: usize) -> Self {
        if distinct < usize::from(u8::MAX) {
            Codes::U8(Vec::with_capacity(rows))
        } else if distinct < usize::from(u16::MAX) {
            Codes::U16(Vec::with_capacity(rows))
        } else {
            Codes::U32(Vec::with_capacity(rows))
        }
    }

    /// `codes` (each below `distinct`, or [`MISSING`]) in the narrowest type.
    #[cfg(test)]
    pub(crate) fn new(codes: Vec<u32>, distinct: usize) -> Self {
        let mut narrow = Codes::with_capacity(distinct, codes.len());
        codes.into_iter().for_each(|code| narrow.push(code));
        narrow
    }

    /// Appends the next row's code, widening the type when the code needs it (a build does
    /// not know its number of distinct values until the end).
    pub(crate) fn push(&mut self, code: u32) {
        /// `v` in the wider type `U`, with room for as many codes.
        fn widen<T: Code, U: Code>(v: &Vec<T>) -> Vec<U> {
            let mut wide = Vec::with_capacity(v.capacity());
            wide.extend(v.iter().map(|&x| U::from_code(x.code())));
            wide
        }
        match self {
            Codes::U8(v) if code == MISSING || code < u32::from(u8::MAX) => {
                v.push(u8::from_code(code))
            }
            Codes::U16(v) if code == MISSING || code < u32::from(u16::MAX) => {
                v.push(u16::from_code(code))
            }
            Codes::U32(v) => v.push(code),
            Codes::U8(v) => {
                *self = Codes::U16(widen(v));
                self.push(code);
            }
            Codes::U16(v) => {
                *self = Codes::U32(widen(v));
                self.push(code);
            }
        }
    }

    /// Appends `other`'s rows, each code `c` as `map(c)` ([`MISSING`] stays missing).
    pub(crate) fn append(&mut self, other: &Codes, map: impl Fn(u32) -> u32) {
        for row in 0..other.len() {
            let code = other.get(row);
            self.push(if code == MISSING { MISSING } else { map(code) });
        }
    }

    /// Replaces each code `c` by `rank[c]` (a renumbering of the same codes: the type holds).
    pub(super) fn remap(&mut self, rank: &[u32]) {
        fn renumber<G: Code>(v: &mut [G], rank: &[u32]) {
            v.iter_mut()
                .filter(|c| **c != G::NONE)
                .for_each(|c| *c = G::narrow(rank[c.wide() as usize]));
        }
        match self {
            Codes::U8(v) => renumber(v, rank),
            Codes::U16(v) => renumber(v, rank),
            Codes::U32(v) => renumber(v, rank),
        }
    }

    pub(super) fn shrink_to_fit(&mut self) {
        match self {
            Codes::U8(v) => v.shrink_to_fit(),
            Codes::U16(v) => v.shrink_to_fit(),
            Codes::U32(v) => v.shrink_to_fit(),
        }
    }

    /// The code of `row`; [`MISSING`] when it has none.
    #[inline]
    pub(crate) fn get(&self, row: usize) -> u32 {
        match self {
            Codes::U8(c) => c[row].code(),
            Codes::U16(c) => c[row].code(),
            Codes::U32(c) => c[row],
        }
    }

    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        match self {
            Codes::U8(c) => c.len(),
            Codes::U16(c) => c.len(),
            Codes::U32(c) => c.len(),
        }
    }

    /// The codes, widened.
    pub(crate) fn to_vec(&self) -> Vec<u32> {
        (0..self.len()).map(|r| self.get(r)).collect()
    }

    /// Heap bytes held.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Codes::U8(c) => c.capacity(),
            Codes::U16(c) => c.capacity() * 2,
            Codes::U32(c) => c.capacity() * 4,
        }
    }
}

// Postings.

/// Rows per code: `rows[starts[c]..starts[c + 1]]`, ascending. A frequent code's rows are a
/// bit set instead ([`Self::dense`]); its count is kept.
#[derive(Debug, Default)]
pub(crate) struct Postings {
    pub(in crate::engine::memory) starts: Vec<u32>,
    pub(in crate::engine::memory) rows: RowList,
    /// Rows per code, when some codes' rows are left out (empty otherwise).
    pub(in crate::engine::memory) sizes: Vec<u32>,
    /// The rows of frequent codes as bit sets, by code, instead of row lists: a filter on
    /// `carrier=UA` (58,665 flights) intersects 5,263 words instead of setting 58,665 bits, and
    /// `q=boeing` unions the sets of its frequent plane models. A code qualifies when it holds
    /// at least 1/[`DENSE_SHARE`] of the rows, so a column keeps at most that many sets, each
    /// no larger than the row list it replaces.
    pub(in crate::engine::memory) dense: Vec<(u32, Bits)>,
}

/// See [`Postings::dense`].
pub(super) const DENSE_SHARE: usize = 32;

impl Postings {
    /// Groups the rows of `codes` by code (`MISSING` rows are left out), frequent codes as bit
    /// sets (`counts`: each code's rows).
    pub(crate) fn new(codes: &Codes, counts: &[u32]) -> Self {
        let rows = codes.len();
        let frequent = |code: u32| counts[code as usize] as usize * DENSE_SHARE >= rows;
        let mut postings = Postings::listing(codes, counts, |code| !frequent(code));
        let mut dense: Vec<(u32, Bits)> = (0..counts.len() as u32)
            .filter(|&code| frequent(code))
            .map(|code| (code, Bits::new(rows)))
            .collect();
        if !dense.is_empty() {
            let mut slot = vec![usize::MAX; counts.len()];
            dense
                .iter()
                .enumerate()
                .for_each(|(k, (code, _))| slot[*code as usize] = k);
            for row in 0..rows {
                let code = codes.get(row);
                if code != MISSING && slot[code as usize] != usize::MAX {
                    dense[slot[code as usize]].1.insert(row as u32);
                }
            }
        }
        postings.dense = dense;
        postings
    }

    /// Groups the rows of `codes` by code, listing only those of the codes `listed` accepts;
    /// `counts` are each code's rows.
    pub(crate) fn listing(codes: &Codes, counts: &[u32], listed: impl Fn(u32) -> bool) -> Self {
        let keep: Vec<bool> = (0..counts.len() as u32).map(&listed).collect();
        let mut starts = vec![0u32; counts.len() + 1];
        for (code, &n) in counts.iter().enumerate() {
            starts[code + 1] = starts[code] + if keep[code] { n } else { 0 };
        }
        let mut next = starts.clone();
        let mut rows = vec![0u32; starts[counts.len()] as usize];
        for row in 0..codes.len() {
            let code = codes.get(row);
            if code != MISSING && keep[code as usize] {
                let slot = &mut next[code as usize];
                rows[*slot as usize] = row as u32;
                *slot += 1;
            }
        }
        Postings {
            starts,
            rows: RowList::new(rows),
            sizes: if keep.iter().all(|&k| k) {
                Vec::new()
            } else {
                counts.to_vec()
            },
            dense: Vec::new(),
        }
    }

    /// The rows of `code` as a bit set, when the code is frequent enough to keep one.
    pub(crate) fn dense(&self, code: u32) -> Option<&Bits> {
        self.dense
            .binary_search_by_key(&code, |(c, _)| *c)
            .ok()
            .map(|i| &self.dense[i].1)
    }

    /// Adds the rows holding `code` to `bits`: a word-wise union for a frequent code.
    pub(crate) fn add_to(&self, code: u32, bits: &mut Bits) {
        match self.dense(code) {
            Some(dense) => bits.union(dense),
            None => self.rows(code).insert_into(bits),
        }
    }

    /// The first row holding `code`.
    pub(crate) fn first(&self, code: u32) -> Option<u32> {
        match self.dense(code) {
            Some(dense) => dense.iter().next(),
            None => self.rows(code).first(),
        }
    }

    /// The rows holding `code`, ascending (none for a frequent code: see [`Self::dense`]).
    pub(crate) fn rows(&self, code: u32) -> Rows<'_> {
        let c = code as usize;
        self.rows
            .slice(self.starts[c] as usize..self.starts[c + 1] as usize)
    }

    /// Number of rows holding `code`.
    pub(crate) fn len(&self, code: u32) -> u32 {
        match self.sizes.get(code as usize) {
            Some(&n) => n,
            None => self.starts[code as usize + 1] - self.starts[code as usize],
        }
    }

    pub(super) fn bytes(&self) -> usize {
        (self.starts.capacity() + self.sizes.capacity()) * 4
            + self.rows.bytes()
            + self.dense.iter().map(|(_, b)| b.bytes()).sum::<usize>()
    }
}

// String columns and their builder.

/// A keyword, date or boolean field, or `_id`: codes into a sorted dictionary.
#[derive(Debug, Default)]
pub(crate) struct StrColumn {
    pub dict: Dict,
    /// Per row; [`MISSING`] when the row has no value.
    pub codes: Codes,
    pub postings: Postings,
}

impl StrColumn {
    /// The rows of `code` as a bit set, when the value is frequent enough to keep one.
    pub(crate) fn dense(&self, code: u32) -> Option<&Bits> {
        self.postings.dense(code)
    }

    /// Heap bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.dict.bytes() + self.codes.bytes() + self.postings.bytes()
    }
}

/// Collects a string column row by row, then sorts its dictionary.
#[derive(Default)]
pub(crate) struct StrBuilder {
    /// Each distinct value once, with its provisional code (order of first appearance). Hashed
    /// with foldhash, not SipHash: a build hashes every value of every row, and these keys come
    /// from the store, not from a request.
    pub(super) seen: HashMap<Box<str>, u32, foldhash::fast::RandomState>,
    pub(super) codes: Codes,
}

impl StrBuilder {
    /// A builder with room for `rows` rows of few distinct values.
    pub(crate) fn with_capacity(rows: usize) -> Self {
        StrBuilder {
            seen: HashMap::default(),
            codes: Codes::with_capacity(0, rows),
        }
    }

    /// Appends the next row's value.
    pub(crate) fn push(&mut self, value: Option<&str>) {
        let code = match value {
            None => MISSING,
            Some(v) => match self.seen.get(v) {
                Some(&code) => code,
                None => {
                    let code = self.seen.len() as u32;
                    self.seen.insert(v.into(), code);
                    code
                }
            },
        };
        self.codes.push(code);
    }

    /// Appends the rows `other` collected after this builder's (a build read in parts).
    pub(crate) fn append(&mut self, other: StrBuilder) {
        let mut map = vec![0u32; other.seen.len()];
        for (value, code) in other.seen {
            let next = self.seen.len() as u32;
            map[code as usize] = *self.seen.entry(value).or_insert(next);
        }
        self.codes.append(&other.codes, |code| map[code as usize]);
    }

    /// The column, with codes renumbered in byte order of the values.
    pub(crate) fn finish(self) -> StrColumn {
        let StrBuilder { seen, mut codes } = self;
        let mut values: Vec<(Box<str>, u32)> = seen.into_iter().collect();
        values.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut rank = vec![0u32; values.len()];
        let mut dict = Dict {
            text: String::with_capacity(values.iter().map(|(v, _)| v.len()).sum()),
            ends: Vec::with_capacity(values.len()),
        };
        for (new, (value, old)) in values.into_iter().enumerate() {
            rank[old as usize] = new as u32;
            dict.push(&value);
        }
        codes.remap(&rank);
        codes.shrink_to_fit();
        let counts = code_counts(&codes, dict.len());
        let postings = Postings::new(&codes, &counts);
        StrColumn {
            dict,
            codes,
            postings,
        }
    }
}

// Text columns: each row's terms as codes of the text dictionary, for `q`.

/// A text field: codes into the version's text dictionary, with rows per code (frequent codes
/// as bit sets, like a keyword's values).
#[derive(Debug, Default)]
pub(crate) struct TextColumn {
    pub codes: Codes,
    pub postings: Postings,
}

impl TextColumn {
    /// Heap bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.codes.bytes() + self.postings.bytes()
    }
}
