//! The per-row codes of a dictionary-encoded column, in the narrowest integer type that holds
//! the dictionary ([`Code`]), with [`MISSING`](super::MISSING) for a row without a value.

use super::*;

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

/// A column's codes by row in the narrowest unsigned type its dictionary needs (a
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
