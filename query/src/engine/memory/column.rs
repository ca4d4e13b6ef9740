//! The column shapes of an in-memory index. Strings (keyword, date, boolean, `_id`, and the
//! text dictionary) are dictionary-encoded with the dictionary in byte order, so comparing codes
//! compares values the way both stores do (`COLLATE "C"`, SQLite's `BINARY`). Each string
//! column also lists its rows per value (postings), and each number column its rows in value
//! order: a filter reads postings, a sort walks either list in order.

use std::cmp::Ordering;
use std::collections::HashMap;

use super::bits::Bits;
use super::rows::{RowList, Rows};

/// The code of a row that has no value.
pub const MISSING: u32 = u32::MAX;

/// Distinct strings in byte order, in one buffer.
#[derive(Debug, Default)]
pub struct Dict {
    text: String,
    ends: Vec<u32>,
}

impl Dict {
    /// Number of values.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The value with code `code`.
    pub fn get(&self, code: u32) -> &str {
        let i = code as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    /// The code of `value`, if present (binary search: the values are sorted).
    pub fn find(&self, value: &str) -> Option<u32> {
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
    pub fn push(&mut self, value: &str) {
        self.text.push_str(value);
        self.ends.push(self.text.len() as u32);
    }

    /// Appends `other`'s values after this one's, in its order (a build read in parts: the
    /// ids of the rows after this part's).
    pub fn append(&mut self, other: &Dict) {
        let base = self.text.len() as u32;
        self.text.push_str(&other.text);
        self.ends.extend(other.ends.iter().map(|end| end + base));
    }

    /// Codes of the values containing `needle`.
    pub fn containing(&self, needle: &str) -> Vec<u32> {
        (0..self.len() as u32)
            .filter(|&code| self.get(code).contains(needle))
            .collect()
    }

    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        self.text.capacity() + self.ends.capacity() * 4
    }
}

/// Rows per code: `rows[starts[c]..starts[c + 1]]`, ascending. A frequent code's rows are a
/// bit set instead ([`Self::dense`]); its count is kept.
#[derive(Debug, Default)]
pub struct Postings {
    starts: Vec<u32>,
    rows: RowList,
    /// Rows per code, when some codes' rows are left out (empty otherwise).
    sizes: Vec<u32>,
    /// The rows of frequent codes as bit sets, by code, instead of row lists: a filter on
    /// `carrier=UA` (58,665 flights) intersects 5,263 words instead of setting 58,665 bits, and
    /// `q=boeing` unions the sets of its frequent plane models. A code qualifies when it holds
    /// at least 1/[`DENSE_SHARE`] of the rows, so a column keeps at most that many sets, each
    /// no larger than the row list it replaces.
    dense: Vec<(u32, Bits)>,
}

/// See [`Postings::dense`].
const DENSE_SHARE: usize = 32;

impl Postings {
    /// Groups the rows of `codes` by code (`MISSING` rows are left out), frequent codes as bit
    /// sets (`counts`: each code's rows).
    pub fn new(codes: &Codes, counts: &[u32]) -> Self {
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
    pub fn listing(codes: &Codes, counts: &[u32], listed: impl Fn(u32) -> bool) -> Self {
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
    pub fn dense(&self, code: u32) -> Option<&Bits> {
        self.dense
            .binary_search_by_key(&code, |(c, _)| *c)
            .ok()
            .map(|i| &self.dense[i].1)
    }

    /// Adds the rows holding `code` to `bits`: a word-wise union for a frequent code.
    pub fn add_to(&self, code: u32, bits: &mut Bits) {
        match self.dense(code) {
            Some(dense) => bits.union(dense),
            None => self.rows(code).insert_into(bits),
        }
    }

    /// The first row holding `code`.
    pub fn first(&self, code: u32) -> Option<u32> {
        match self.dense(code) {
            Some(dense) => dense.iter().next(),
            None => self.rows(code).first(),
        }
    }

    /// The rows holding `code`, ascending (none for a frequent code: see [`Self::dense`]).
    pub fn rows(&self, code: u32) -> Rows<'_> {
        let c = code as usize;
        self.rows
            .slice(self.starts[c] as usize..self.starts[c + 1] as usize)
    }

    /// Number of rows holding `code`.
    pub fn len(&self, code: u32) -> u32 {
        match self.sizes.get(code as usize) {
            Some(&n) => n,
            None => self.starts[code as usize + 1] - self.starts[code as usize],
        }
    }

    fn bytes(&self) -> usize {
        (self.starts.capacity() + self.sizes.capacity()) * 4
            + self.rows.bytes()
            + self.dense.iter().map(|(_, b)| b.bytes()).sum::<usize>()
    }
}

/// Rows per code of `codes` (codes below `distinct`).
pub fn code_counts(codes: &Codes, distinct: usize) -> Vec<u32> {
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
pub trait Code: Copy + PartialEq {
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

/// A column's codes by row in the narrowest unsigned type its dictionary needs (issue 13: a
/// carrier takes one byte, not four); each type's largest value stands for [`MISSING`].
#[derive(Clone, Debug)]
pub enum Codes {
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
    pub fn with_capacity(distinct: usize, rows: usize) -> Self {
        if distinct < usize::from(u8::MAX) {
            Codes::U8(Vec::with_capacity(rows))
        } else if distinct < usize::from(u16::MAX) {
            Codes::U16(Vec::with_capacity(rows))
        } else {
            Codes::U32(Vec::with_capacity(rows))
        }
    }

    /// `codes` (each below `distinct`, or [`MISSING`]) in the narrowest type.
    pub fn new(codes: Vec<u32>, distinct: usize) -> Self {
        let mut narrow = Codes::with_capacity(distinct, codes.len());
        codes.into_iter().for_each(|code| narrow.push(code));
        narrow
    }

    /// Appends the next row's code, widening the type when the code needs it (a build does
    /// not know its number of distinct values until the end).
    pub fn push(&mut self, code: u32) {
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
    pub fn append(&mut self, other: &Codes, map: impl Fn(u32) -> u32) {
        for row in 0..other.len() {
            let code = other.get(row);
            self.push(if code == MISSING { MISSING } else { map(code) });
        }
    }

    /// Replaces each code `c` by `rank[c]` (a renumbering of the same codes: the type holds).
    fn remap(&mut self, rank: &[u32]) {
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

    fn shrink_to_fit(&mut self) {
        match self {
            Codes::U8(v) => v.shrink_to_fit(),
            Codes::U16(v) => v.shrink_to_fit(),
            Codes::U32(v) => v.shrink_to_fit(),
        }
    }

    /// The code of `row`; [`MISSING`] when it has none.
    #[inline]
    pub fn get(&self, row: usize) -> u32 {
        match self {
            Codes::U8(c) => c[row].code(),
            Codes::U16(c) => c[row].code(),
            Codes::U32(c) => c[row],
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Codes::U8(c) => c.len(),
            Codes::U16(c) => c.len(),
            Codes::U32(c) => c.len(),
        }
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The codes, widened.
    pub fn to_vec(&self) -> Vec<u32> {
        (0..self.len()).map(|r| self.get(r)).collect()
    }

    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        match self {
            Codes::U8(c) => c.capacity(),
            Codes::U16(c) => c.capacity() * 2,
            Codes::U32(c) => c.capacity() * 4,
        }
    }
}

/// A keyword, date or boolean field, or `_id`: codes into a sorted dictionary.
#[derive(Debug, Default)]
pub struct StrColumn {
    pub dict: Dict,
    /// Per row; [`MISSING`] when the row has no value.
    pub codes: Codes,
    pub postings: Postings,
}

impl StrColumn {
    /// The rows of `code` as a bit set, when the value is frequent enough to keep one.
    pub fn dense(&self, code: u32) -> Option<&Bits> {
        self.postings.dense(code)
    }

    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        self.dict.bytes() + self.codes.bytes() + self.postings.bytes()
    }
}

/// `_id`: unique texts kept in file order, with the rows in byte order of their ids. A
/// dictionary would add each row's code and each code's row list (issue 13: 23 bytes a row at
/// flights ×10 where this takes 15), and building one hashed every id.
#[derive(Debug, Default)]
pub struct IdColumn {
    /// Row `r`'s id is `ids.get(r)`.
    ids: Dict,
    /// The rows in byte order of their ids.
    sorted: RowList,
}

impl IdColumn {
    /// The column of `ids`, one per row in file order; `None` when two rows share one (an
    /// import never publishes that).
    pub fn new(mut ids: Dict) -> Option<Self> {
        ids.text.shrink_to_fit();
        ids.ends.shrink_to_fit();
        let mut sorted: Vec<u32> = (0..ids.len() as u32).collect();
        sorted.sort_unstable_by(|&a, &b| ids.get(a).cmp(ids.get(b)));
        if sorted.windows(2).any(|w| ids.get(w[0]) == ids.get(w[1])) {
            return None;
        }
        Some(IdColumn {
            ids,
            sorted: RowList::new(sorted),
        })
    }

    /// The id of `row`.
    pub fn get(&self, row: u32) -> &str {
        self.ids.get(row)
    }

    /// The row whose id is `id`.
    pub fn find(&self, id: &str) -> Option<u32> {
        let i = self.sorted.partition_point(|r| self.get(r) < id);
        let row = (i < self.sorted.len()).then(|| self.sorted.get(i))?;
        (self.get(row) == id).then_some(row)
    }

    /// The rows in byte order of their ids.
    pub fn sorted(&self) -> &RowList {
        &self.sorted
    }

    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        self.ids.bytes() + self.sorted.bytes()
    }
}

/// Collects a string column row by row, then sorts its dictionary.
#[derive(Default)]
pub struct StrBuilder {
    /// Each distinct value once, with its provisional code (order of first appearance). Hashed
    /// with foldhash, not SipHash: a build hashes every value of every row, and these keys come
    /// from the store, not from a request (issue 13: SipHash was a tenth of a build's time).
    seen: HashMap<Box<str>, u32, foldhash::fast::RandomState>,
    codes: Codes,
}

impl StrBuilder {
    /// A builder with room for `rows` rows of few distinct values.
    pub fn with_capacity(rows: usize) -> Self {
        StrBuilder {
            seen: HashMap::default(),
            codes: Codes::with_capacity(0, rows),
        }
    }

    /// Appends the next row's value.
    pub fn push(&mut self, value: Option<&str>) {
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
    pub fn append(&mut self, other: StrBuilder) {
        let mut map = vec![0u32; other.seen.len()];
        for (value, code) in other.seen {
            let next = self.seen.len() as u32;
            map[code as usize] = *self.seen.entry(value).or_insert(next);
        }
        self.codes.append(&other.codes, |code| map[code as usize]);
    }

    /// The column, with codes renumbered in byte order of the values.
    pub fn finish(self) -> StrColumn {
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

/// A number column's values by row, each held in the narrowest type that keeps every value of
/// the column exactly (issue 13: flights' numbers are small integers, 1–2 bytes instead of 8).
/// Integer types give their smallest value to "missing"; floats use NaN.
#[derive(Debug)]
pub enum Numbers {
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Default for Numbers {
    fn default() -> Self {
        Numbers::I8(Vec::new())
    }
}

impl Numbers {
    /// `values` (NaN for missing, no `-0.0`) in the narrowest exact type.
    fn new(values: Vec<f64>) -> Self {
        // One pass: whether every value is whole, and the range of the values.
        let (mut whole, mut low, mut high) = (true, f64::INFINITY, f64::NEG_INFINITY);
        for &v in values.iter().filter(|v| !v.is_nan()) {
            whole &= v.fract() == 0.0;
            low = low.min(v);
            high = high.max(v);
        }
        let fits = |min: f64, max: f64| whole && low > min && high <= max;
        fn narrow<T: Copy>(values: &[f64], missing: T, cast: impl Fn(f64) -> T) -> Vec<T> {
            values
                .iter()
                .map(|&v| if v.is_nan() { missing } else { cast(v) })
                .collect()
        }
        if fits(f64::from(i8::MIN), f64::from(i8::MAX)) {
            Numbers::I8(narrow(&values, i8::MIN, |v| v as i8))
        } else if fits(f64::from(i16::MIN), f64::from(i16::MAX)) {
            Numbers::I16(narrow(&values, i16::MIN, |v| v as i16))
        } else if fits(f64::from(i32::MIN), f64::from(i32::MAX)) {
            Numbers::I32(narrow(&values, i32::MIN, |v| v as i32))
        } else if values
            .iter()
            .all(|&v| v.is_nan() || f64::from(v as f32) == v)
        {
            Numbers::F32(narrow(&values, f32::NAN, |v| v as f32))
        } else {
            Numbers::F64(values)
        }
    }

    /// The value of `row`; NaN when it has none.
    #[inline]
    pub fn get(&self, row: usize) -> f64 {
        match self {
            Numbers::I8(v) => match v[row] {
                i8::MIN => f64::NAN,
                x => f64::from(x),
            },
            Numbers::I16(v) => match v[row] {
                i16::MIN => f64::NAN,
                x => f64::from(x),
            },
            Numbers::I32(v) => match v[row] {
                i32::MIN => f64::NAN,
                x => f64::from(x),
            },
            Numbers::F32(v) => f64::from(v[row]),
            Numbers::F64(v) => v[row],
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Numbers::I8(v) => v.len(),
            Numbers::I16(v) => v.len(),
            Numbers::I32(v) => v.len(),
            Numbers::F32(v) => v.len(),
            Numbers::F64(v) => v.len(),
        }
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn reserve(&mut self, more: usize) {
        match self {
            Numbers::I8(v) => v.reserve_exact(more),
            Numbers::I16(v) => v.reserve_exact(more),
            Numbers::I32(v) => v.reserve_exact(more),
            Numbers::F32(v) => v.reserve_exact(more),
            Numbers::F64(v) => v.reserve_exact(more),
        }
    }

    fn shrink_to_fit(&mut self) {
        match self {
            Numbers::I8(v) => v.shrink_to_fit(),
            Numbers::I16(v) => v.shrink_to_fit(),
            Numbers::I32(v) => v.shrink_to_fit(),
            Numbers::F32(v) => v.shrink_to_fit(),
            Numbers::F64(v) => v.shrink_to_fit(),
        }
    }

    /// Heap bytes held.
    fn bytes(&self) -> usize {
        match self {
            Numbers::I8(v) => v.capacity(),
            Numbers::I16(v) => v.capacity() * 2,
            Numbers::I32(v) => v.capacity() * 4,
            Numbers::F32(v) => v.capacity() * 4,
            Numbers::F64(v) => v.capacity() * 8,
        }
    }
}

/// A number field: values per row (NaN when missing) and the rows that have one, in order.
#[derive(Debug, Default)]
pub struct NumColumn {
    pub values: Numbers,
    /// Rows with a value, by value then row (SQL's order, ties in file order).
    pub order: RowList,
}

/// Integer columns spanning at most this many values are put in order by counting.
const COUNTING_SPAN: i64 = 1 << 20;

impl NumColumn {
    /// The column of `values` (NaN for a missing value).
    pub fn new(values: Vec<f64>) -> Self {
        let mut builder = NumBuilder::default();
        values.into_iter().for_each(|v| builder.push(v));
        builder.finish()
    }

    /// The part of [`Self::order`] whose value equals `value`.
    pub fn equal(&self, value: f64) -> Rows<'_> {
        let low = self
            .order
            .partition_point(|r| self.values.get(r as usize) < value);
        let high = self
            .order
            .partition_point(|r| self.values.get(r as usize) <= value);
        self.order.slice(low..high.max(low))
    }

    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        self.values.bytes() + self.order.bytes()
    }
}

/// Collects a number column row by row in the narrowest type its values so far allow, so a
/// build never holds every column as `f64`.
#[derive(Debug, Default)]
pub struct NumBuilder {
    values: Numbers,
    /// Rows expected: room kept for them when the type widens.
    rows: usize,
}

impl NumBuilder {
    /// A builder with room for `rows` rows.
    pub fn with_capacity(rows: usize) -> Self {
        NumBuilder {
            values: Numbers::I8(Vec::with_capacity(rows)),
            rows,
        }
    }

    /// Appends the next row's value (NaN or an infinity: none). `-0.0` is kept as `0.0`, as
    /// the stores give it back.
    pub fn push(&mut self, value: f64) {
        let v = if value == 0.0 {
            0.0
        } else if value.is_finite() {
            value
        } else {
            f64::NAN
        };
        match &mut self.values {
            Numbers::I8(x) if v.is_nan() => x.push(i8::MIN),
            Numbers::I16(x) if v.is_nan() => x.push(i16::MIN),
            Numbers::I32(x) if v.is_nan() => x.push(i32::MIN),
            Numbers::I8(x) if whole_in(v, i8::MIN.into(), i8::MAX.into()) => x.push(v as i8),
            Numbers::I16(x) if whole_in(v, i16::MIN.into(), i16::MAX.into()) => x.push(v as i16),
            Numbers::I32(x) if whole_in(v, i32::MIN.into(), i32::MAX.into()) => x.push(v as i32),
            Numbers::F32(x) if v.is_nan() || f64::from(v as f32) == v => x.push(v as f32),
            Numbers::F64(x) => x.push(v),
            _ => {
                // A value the type cannot hold: widen to what the values and it need.
                let mut all: Vec<f64> =
                    (0..self.values.len()).map(|r| self.values.get(r)).collect();
                all.push(v);
                self.values = Numbers::new(all);
                self.values
                    .reserve(self.rows.saturating_sub(self.values.len()));
            }
        }
    }

    /// Appends the rows `other` collected after this builder's (a build read in parts),
    /// widening the type when `other`'s values need it.
    pub fn append(&mut self, other: NumBuilder) {
        let more = other.values;
        match (&mut self.values, &more) {
            (Numbers::I8(a), Numbers::I8(b)) => a.extend_from_slice(b),
            (Numbers::I16(a), Numbers::I16(b)) => a.extend_from_slice(b),
            (Numbers::I32(a), Numbers::I32(b)) => a.extend_from_slice(b),
            (Numbers::F32(a), Numbers::F32(b)) => a.extend_from_slice(b),
            (Numbers::F64(a), Numbers::F64(b)) => a.extend_from_slice(b),
            _ => (0..more.len()).for_each(|row| self.push(more.get(row))),
        }
    }

    /// The column, with its value order.
    pub fn finish(self) -> NumColumn {
        let mut values = self.values;
        values.shrink_to_fit();
        let order = match &values {
            Numbers::I8(v) => counting_order(v, i8::MIN),
            Numbers::I16(v) => counting_order(v, i16::MIN),
            Numbers::I32(v) => counting_order(v, i32::MIN),
            Numbers::F32(_) | Numbers::F64(_) => None,
        }
        .unwrap_or_else(|| {
            let mut order: Vec<u32> = (0..values.len() as u32)
                .filter(|&r| !values.get(r as usize).is_nan())
                .collect();
            order.sort_by(|&a, &b| values.get(a as usize).total_cmp(&values.get(b as usize)));
            order
        });
        NumColumn {
            values,
            order: RowList::new(order),
        }
    }
}

/// Whether `v` is a whole number in `min < v <= max` (`min` stands for "missing").
fn whole_in(v: f64, min: f64, max: f64) -> bool {
    v.fract() == 0.0 && v > min && v <= max
}

/// The rows with a value by value then row, by counting: linear where a comparison sort of
/// flights ×10 took seconds a column. `None` when the values span too wide a range.
fn counting_order<T: Copy + PartialEq + Into<i64>>(values: &[T], missing: T) -> Option<Vec<u32>> {
    let present = || values.iter().filter(|&&v| v != missing).map(|&v| v.into());
    let (low, high) = present().fold((i64::MAX, i64::MIN), |(l, h), v| (l.min(v), h.max(v)));
    if low > high {
        return Some(Vec::new());
    }
    if high - low >= COUNTING_SPAN {
        return None;
    }
    let mut next = vec![0u32; (high - low + 2) as usize];
    present().for_each(|v| next[(v - low + 1) as usize] += 1);
    for i in 1..next.len() {
        next[i] += next[i - 1];
    }
    let mut order = vec![0u32; next[next.len() - 1] as usize];
    for (row, &v) in values.iter().enumerate() {
        if v != missing {
            let slot = &mut next[(v.into() - low) as usize];
            order[*slot as usize] = row as u32;
            *slot += 1;
        }
    }
    Some(order)
}

/// A text field: codes into the version's text dictionary, with rows per code (frequent codes
/// as bit sets, like a keyword's values).
#[derive(Debug, Default)]
pub struct TextColumn {
    pub codes: Codes,
    pub postings: Postings,
}

impl TextColumn {
    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        self.codes.bytes() + self.postings.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionaries_sort_by_bytes_and_list_rows() {
        let mut b = StrBuilder::default();
        for v in [Some("b"), None, Some("B"), Some("b"), Some("a")] {
            b.push(v);
        }
        let c = b.finish();
        assert_eq!(
            (0..3).map(|i| c.dict.get(i)).collect::<Vec<_>>(),
            ["B", "a", "b"]
        );
        assert_eq!(c.codes.to_vec(), [2, MISSING, 0, 2, 1]);
        assert_eq!(c.dict.find("b"), Some(2));
        assert_eq!(c.dict.find("c"), None);
    }

    #[test]
    fn frequent_values_are_bit_sets_and_others_row_lists() {
        let mut b = StrBuilder::default();
        // "f" holds 40 of 240 rows (at least 1/32: a bit set); each "r…" 2 or 3 (a list).
        for row in 0..240 {
            let value = if row % 6 == 0 {
                "f".to_string()
            } else {
                format!("r{}", row % 100)
            };
            b.push(Some(&value));
        }
        let c = b.finish();
        let f = c.dict.find("f").expect("f");
        assert_eq!(c.postings.len(f), 40);
        assert!(c.postings.rows(f).is_empty());
        let bits = c.dense(f).expect("a bit set");
        assert_eq!(
            bits.iter().collect::<Vec<_>>(),
            (0..240).step_by(6).collect::<Vec<u32>>()
        );
        let r7 = c.dict.find("r7").expect("r7");
        assert!(c.dense(r7).is_none());
        assert_eq!(c.postings.len(r7), 3);
        assert_eq!(c.postings.rows(r7).to_vec(), [7, 107, 207]);
    }

    #[test]
    fn ids_are_found_and_sorted_by_bytes() {
        let mut ids = Dict::default();
        for id in ["b", "B", "10", "2", "a"] {
            ids.push(id);
        }
        let column = IdColumn::new(ids).expect("unique");
        assert_eq!(column.sorted().all().to_vec(), [2, 3, 1, 4, 0]);
        assert_eq!(column.find("2"), Some(3));
        assert_eq!(column.find("1"), None);
        assert_eq!(column.find("c"), None);
        let mut twice = Dict::default();
        for id in ["x", "y", "x"] {
            twice.push(id);
        }
        assert!(IdColumn::new(twice).is_none());
    }

    #[test]
    fn codes_take_the_narrowest_type_and_keep_missing() {
        for (distinct, kind) in [(3, "U8"), (254, "U8"), (255, "U16"), (70_000, "U32")] {
            let codes = vec![0, MISSING, distinct as u32 - 1, 1];
            let narrow = Codes::new(codes.clone(), distinct);
            assert!(format!("{narrow:?}").starts_with(kind), "{distinct}");
            assert_eq!(narrow.to_vec(), codes);
        }
        // A build pushes codes before it knows how many there are: the type widens.
        let pushed: Vec<u32> = (0..70_000).chain([MISSING, 3]).collect();
        let mut grown = Codes::default();
        pushed.iter().for_each(|&c| grown.push(c));
        assert!(matches!(grown, Codes::U32(_)));
        assert_eq!(grown.to_vec(), pushed);
        let mut grown = Codes::default();
        [MISSING, 300, 2].iter().for_each(|&c| grown.push(c));
        assert!(matches!(grown, Codes::U16(_)));
        assert_eq!(grown.to_vec(), [MISSING, 300, 2]);
    }

    #[test]
    fn numbers_keep_file_order_within_equal_values() {
        let n = NumColumn::new(vec![2.0, f64::NAN, 1.0, 2.0, -0.0]);
        assert_eq!(n.order.all().to_vec(), [4, 2, 0, 3]);
        assert_eq!(n.equal(2.0).to_vec(), [0, 3]);
        assert_eq!(n.equal(0.0).to_vec(), [4]);
        assert!(n.equal(5.0).is_empty());
    }

    #[test]
    fn numbers_take_the_narrowest_exact_type() {
        let nan = f64::NAN;
        for (values, kind) in [
            (vec![1.0, nan, -127.0, 127.0], "I8"),
            (vec![1.0, -128.0], "I16"),
            (vec![2013.0, nan, 32767.0], "I16"),
            (vec![40000.0, -5.0], "I32"),
            (vec![1.5, nan, 0.25], "F32"),
            (vec![3e9, 1.0], "F32"),
            (vec![0.1, 2.0], "F64"),
            (vec![1e300, 1.0], "F64"),
        ] {
            let column = NumColumn::new(values.clone());
            assert!(
                format!("{:?}", column.values).starts_with(kind),
                "{values:?}"
            );
            for (row, v) in values.iter().enumerate() {
                let got = column.values.get(row);
                assert!(
                    got == *v || (got.is_nan() && v.is_nan()),
                    "{v} came back {got}"
                );
            }
        }
    }

    /// A build read in two parts and appended gives the columns one read gives: strings met
    /// first in either part, missing values, a second part whose numbers need a wider type
    /// (and one that fits the first's), codes that widen, ids in order.
    #[test]
    fn parts_appended_equal_one_read() {
        let nan = f64::NAN;
        let strings: Vec<Option<String>> = (0..600)
            .map(|r| {
                (r % 7 != 3).then(|| format!("v{}", (r * 37) % if r < 300 { 40 } else { 290 }))
            })
            .collect();
        let numbers: Vec<Vec<f64>> = vec![
            (0..600)
                .map(|r| if r % 5 == 0 { nan } else { (r % 100) as f64 })
                .collect(),
            (0..600)
                .map(|r| {
                    if r < 300 {
                        (r % 9) as f64
                    } else {
                        r as f64 * 1000.5
                    }
                })
                .collect(),
            (0..600)
                .map(|r| if r < 300 { r as f64 * 0.1 } else { 3.0 })
                .collect(),
        ];
        let codes: Vec<u32> = (0..600)
            .map(|r| if r % 4 == 0 { MISSING } else { r as u32 })
            .collect();
        for split in [0, 1, 299, 300, 599, 600] {
            let (mut s1, mut s2) = (StrBuilder::default(), StrBuilder::default());
            let mut whole = StrBuilder::default();
            let (mut c1, mut c2) = (Codes::with_capacity(0, 0), Codes::with_capacity(0, 0));
            let (mut d1, mut d2, mut dw) = (Dict::default(), Dict::default(), Dict::default());
            for (r, value) in strings.iter().enumerate() {
                let (b, c, d) = if r < split {
                    (&mut s1, &mut c1, &mut d1)
                } else {
                    (&mut s2, &mut c2, &mut d2)
                };
                b.push(value.as_deref());
                c.push(codes[r]);
                d.push(&format!("{r:04}"));
                whole.push(value.as_deref());
                dw.push(&format!("{r:04}"));
            }
            s1.append(s2);
            let (joined, one) = (s1.finish(), whole.finish());
            assert_eq!(joined.codes.to_vec(), one.codes.to_vec(), "split {split}");
            assert_eq!(
                (0..joined.dict.len() as u32)
                    .map(|c| joined.dict.get(c))
                    .collect::<Vec<_>>(),
                (0..one.dict.len() as u32)
                    .map(|c| one.dict.get(c))
                    .collect::<Vec<_>>()
            );
            c1.append(&c2, |code| code);
            assert_eq!(c1.to_vec(), codes, "split {split}");
            d1.append(&d2);
            assert_eq!(
                (0..600).map(|r| d1.get(r)).collect::<Vec<_>>(),
                (0..600).map(|r| dw.get(r)).collect::<Vec<_>>()
            );
            for values in &numbers {
                let (mut n1, mut n2) = (NumBuilder::default(), NumBuilder::default());
                for (r, &v) in values.iter().enumerate() {
                    if r < split { n1.push(v) } else { n2.push(v) }
                }
                n1.append(n2);
                let (joined, one) = (n1.finish(), NumColumn::new(values.clone()));
                assert_eq!(format!("{:?}", joined.values), format!("{:?}", one.values));
                assert_eq!(joined.order.all().to_vec(), one.order.all().to_vec());
            }
        }
    }

    /// Text postings keep frequent codes as bit sets too: `add_to` unions them word by word,
    /// `first` and `len` answer for both kinds.
    #[test]
    fn postings_keep_frequent_codes_as_bit_sets() {
        // Code 0 on every third row of 96 (32 rows: a set), code 1 on rows 1 and 50 (a list),
        // code 2 nowhere, the rest missing.
        let codes: Vec<u32> = (0..96)
            .map(|r| match r {
                r if r % 3 == 0 => 0,
                1 | 50 => 1,
                _ => MISSING,
            })
            .collect();
        let codes = Codes::new(codes, 3);
        let postings = Postings::new(&codes, &code_counts(&codes, 3));
        assert!(postings.dense(0).is_some());
        assert!(postings.dense(1).is_none());
        assert_eq!(
            (postings.len(0), postings.len(1), postings.len(2)),
            (32, 2, 0)
        );
        assert_eq!(
            (postings.first(0), postings.first(1), postings.first(2)),
            (Some(0), Some(1), None)
        );
        let mut bits = Bits::new(96);
        postings.add_to(0, &mut bits);
        postings.add_to(1, &mut bits);
        postings.add_to(2, &mut bits);
        let expected: Vec<u32> = (0..96)
            .filter(|r| r % 3 == 0 || *r == 1 || *r == 50)
            .collect();
        assert_eq!(bits.iter().collect::<Vec<_>>(), expected);
    }
}
