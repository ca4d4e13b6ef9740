//! The dictionary of a string column: its distinct values in byte order, so comparing codes
//! compares values the way both stores do (`COLLATE "C"`, SQLite's `BINARY`).

use std::cmp::Ordering;

/// Distinct strings in byte order, in one buffer.
#[derive(Debug, Default)]
pub struct Dict {
    pub(super) text: String,
    pub(super) ends: Vec<u32>,
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
