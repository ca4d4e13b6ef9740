//! The rows of each value of a string column (postings): frequent values as bit sets, the
//! others as row lists, so a filter reads them without scanning the column.

use super::*;

/// Rows per code: `rows[starts[c]..starts[c + 1]]`, ascending. A frequent code's rows are a
/// bit set instead ([`Self::dense`]); its count is kept.
#[derive(Debug, Default)]
pub struct Postings {
    pub(super) starts: Vec<u32>,
    pub(super) rows: RowList,
    /// Rows per code, when some codes' rows are left out (empty otherwise).
    pub(super) sizes: Vec<u32>,
    /// The rows of frequent codes as bit sets, by code, instead of row lists: a filter on
    /// `carrier=UA` (58,665 flights) intersects 5,263 words instead of setting 58,665 bits, and
    /// `q=boeing` unions the sets of its frequent plane models. A code qualifies when it holds
    /// at least 1/[`DENSE_SHARE`] of the rows, so a column keeps at most that many sets, each
    /// no larger than the row list it replaces.
    pub(super) dense: Vec<(u32, Bits)>,
}

/// See [`Postings::dense`].
pub(super) const DENSE_SHARE: usize = 32;

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

    pub(super) fn bytes(&self) -> usize {
        (self.starts.capacity() + self.sizes.capacity()) * 4
            + self.rows.bytes()
            + self.dense.iter().map(|(_, b)| b.bytes()).sum::<usize>()
    }
}
