//! String columns (keyword, date, boolean, `_id`): dictionary, codes and postings, and the
//! builder that reads them in row order.

use std::collections::HashMap;

use super::*;

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
/// dictionary would add each row's code and each code's row list, and building one would
/// hash every id.
#[derive(Debug, Default)]
pub struct IdColumn {
    /// Row `r`'s id is `ids.get(r)`.
    pub(super) ids: Dict,
    /// The rows in byte order of their ids.
    pub(super) sorted: RowList,
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
    /// from the store, not from a request.
    pub(super) seen: HashMap<Box<str>, u32, foldhash::fast::RandomState>,
    pub(super) codes: Codes,
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
