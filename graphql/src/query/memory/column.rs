//! The column shapes of an in-memory index. Strings (keyword, date, boolean, `_id`, and the
//! text dictionary) are dictionary-encoded with the dictionary in byte order, so comparing codes
//! compares values the way both stores do (`COLLATE "C"`, SQLite's `BINARY`). Each string
//! column also lists its rows per value (postings), and each number column its rows in value
//! order: a filter reads postings, a sort walks either list in order.

use std::cmp::Ordering;
use std::collections::HashMap;

use super::bits::Bits;

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

/// Rows per code: `rows[starts[c]..starts[c + 1]]`, ascending.
#[derive(Debug, Default)]
pub struct Postings {
    starts: Vec<u32>,
    rows: Vec<u32>,
}

impl Postings {
    /// Groups the rows of `codes` by code (`MISSING` rows are left out).
    pub fn new(codes: &[u32], distinct: usize) -> Self {
        let mut starts = vec![0u32; distinct + 1];
        for &code in codes {
            if code != MISSING {
                starts[code as usize + 1] += 1;
            }
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut rows = vec![0u32; starts[distinct] as usize];
        for (row, &code) in codes.iter().enumerate() {
            if code != MISSING {
                let slot = &mut next[code as usize];
                rows[*slot as usize] = row as u32;
                *slot += 1;
            }
        }
        Postings { starts, rows }
    }

    /// The rows holding `code`, ascending.
    pub fn rows(&self, code: u32) -> &[u32] {
        let c = code as usize;
        &self.rows[self.starts[c] as usize..self.starts[c + 1] as usize]
    }

    /// Number of rows holding `code`.
    pub fn len(&self, code: u32) -> u32 {
        self.starts[code as usize + 1] - self.starts[code as usize]
    }

    fn bytes(&self) -> usize {
        (self.starts.capacity() + self.rows.capacity()) * 4
    }
}

/// A keyword, date or boolean field, or `_id`: codes into a sorted dictionary.
#[derive(Debug, Default)]
pub struct StrColumn {
    pub dict: Dict,
    /// Per row; [`MISSING`] when the row has no value.
    pub codes: Vec<u32>,
    pub postings: Postings,
    /// The rows of frequent values as bit sets, by code: a filter on `carrier=UA` (58,665
    /// flights) intersects 5,263 words instead of setting 58,665 bits. A value qualifies when it
    /// holds at least 1/[`DENSE_SHARE`] of the rows, so a column keeps at most that many sets,
    /// as large together as its row lists.
    dense: Vec<(u32, Bits)>,
}

/// See [`StrColumn::dense`].
const DENSE_SHARE: usize = 32;

impl StrColumn {
    /// The rows of `code` as a bit set, when the value is frequent enough to keep one.
    pub fn dense(&self, code: u32) -> Option<&Bits> {
        self.dense
            .binary_search_by_key(&code, |(c, _)| *c)
            .ok()
            .map(|i| &self.dense[i].1)
    }

    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        self.dict.bytes()
            + self.codes.capacity() * 4
            + self.postings.bytes()
            + self.dense.iter().map(|(_, b)| b.bytes()).sum::<usize>()
    }
}

/// Collects a string column row by row, then sorts its dictionary.
#[derive(Default)]
pub struct StrBuilder {
    /// Each distinct value once, with its provisional code (order of first appearance).
    seen: HashMap<Box<str>, u32>,
    codes: Vec<u32>,
}

impl StrBuilder {
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
        for code in &mut codes {
            if *code != MISSING {
                *code = rank[*code as usize];
            }
        }
        codes.shrink_to_fit();
        let postings = Postings::new(&codes, dict.len());
        let rows = codes.len();
        let dense = (0..dict.len() as u32)
            .filter(|&code| postings.len(code) as usize * DENSE_SHARE >= rows)
            .map(|code| {
                let mut bits = Bits::new(rows);
                postings.rows(code).iter().for_each(|&r| bits.insert(r));
                (code, bits)
            })
            .collect();
        StrColumn {
            dict,
            codes,
            postings,
            dense,
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
        Numbers::F64(Vec::new())
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
    pub order: Vec<u32>,
}

impl NumColumn {
    /// The column of `values` (NaN for a missing value). `-0.0` is kept as `0.0`, as the
    /// stores give it back.
    pub fn new(mut values: Vec<f64>) -> Self {
        for v in &mut values {
            if *v == 0.0 {
                *v = 0.0;
            } else if !v.is_finite() {
                *v = f64::NAN;
            }
        }
        let mut order: Vec<u32> = (0..values.len() as u32)
            .filter(|&r| !values[r as usize].is_nan())
            .collect();
        order.sort_by(|&a, &b| values[a as usize].total_cmp(&values[b as usize]));
        NumColumn {
            values: Numbers::new(values),
            order,
        }
    }

    /// The part of [`Self::order`] whose value equals `value`.
    pub fn equal(&self, value: f64) -> &[u32] {
        let low = self
            .order
            .partition_point(|&r| self.values.get(r as usize) < value);
        let high = self
            .order
            .partition_point(|&r| self.values.get(r as usize) <= value);
        &self.order[low..high.max(low)]
    }

    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        self.values.bytes() + self.order.capacity() * 4
    }
}

/// A text field: codes into the version's text dictionary.
#[derive(Debug, Default)]
pub struct TextColumn {
    pub codes: Vec<u32>,
    pub postings: Postings,
}

impl TextColumn {
    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        self.codes.capacity() * 4 + self.postings.bytes()
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
        assert_eq!(c.codes, [2, MISSING, 0, 2, 1]);
        assert_eq!(c.postings.rows(2), [0, 3]);
        assert_eq!(c.dict.find("b"), Some(2));
        assert_eq!(c.dict.find("c"), None);
    }

    #[test]
    fn numbers_keep_file_order_within_equal_values() {
        let n = NumColumn::new(vec![2.0, f64::NAN, 1.0, 2.0, -0.0]);
        assert_eq!(n.order, [4, 2, 0, 3]);
        assert_eq!(n.equal(2.0), [0, 3]);
        assert_eq!(n.equal(0.0), [4]);
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
}
