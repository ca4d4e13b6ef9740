//! Sets of rows, the currency of the index.
//!
//! - [`Bits`]: a dense set, one bit a row. A filter's matches are built as one of these: on a
//!   few hundred thousand rows it is a few dozen kilobytes, and intersection, counting and
//!   walking in row order are word operations.
//! - [`RowList`]: a list of rows in about half the bytes. A row list (one value's rows, a
//!   number column's value order) runs through the rows in ascending stretches, so neighbours
//!   mostly share their upper 16 bits: each row keeps its lower 16 bits, and each stretch of
//!   equal upper bits keeps where it starts. A list without such stretches (`_id`'s order, a
//!   permutation) stays 4 bytes a row. A list of consecutive rows (the value order of a
//!   number that only grows through the file, like a year in time-ordered data) is its first
//!   row and its length: nothing a row.

use std::ops::Range;

// Bit sets.

/// Rows `0..len` as bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Bits {
    pub(super) words: Vec<u64>,
}

impl Bits {
    /// The empty set over `len` rows.
    pub(crate) fn new(len: usize) -> Self {
        Bits {
            words: vec![0; len.div_ceil(64)],
        }
    }

    /// Adds `row`.
    #[inline]
    pub(crate) fn insert(&mut self, row: u32) {
        self.words[row as usize / 64] |= 1 << (row % 64);
    }

    /// Adds the rows `base + low` for each of `lows` (`base` a multiple of 65,536 below the
    /// set's length).
    #[inline]
    pub(crate) fn insert_block(&mut self, base: u32, lows: &[u16]) {
        let block = &mut self.words[base as usize / 64..];
        for &low in lows {
            block[usize::from(low >> 6)] |= 1 << (low & 63);
        }
    }

    /// Adds the rows `range`, a word at a time.
    pub(crate) fn insert_range(&mut self, range: Range<u32>) {
        let (start, end) = (range.start as usize, range.end as usize);
        if start >= end {
            return;
        }
        let (first, last) = (start / 64, (end - 1) / 64);
        let from = |bit: usize| u64::MAX << (bit % 64);
        let upto = |bit: usize| u64::MAX >> (63 - (bit - 1) % 64);
        if first == last {
            self.words[first] |= from(start) & upto(end);
            return;
        }
        self.words[first] |= from(start);
        self.words[first + 1..last].fill(u64::MAX);
        self.words[last] |= upto(end);
    }

    /// Whether `row` is in the set.
    #[inline]
    pub(crate) fn contains(&self, row: u32) -> bool {
        self.words[row as usize / 64] & (1 << (row % 64)) != 0
    }

    /// Keeps only the rows also in `other`.
    pub(crate) fn intersect(&mut self, other: &Bits) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= b;
        }
    }

    /// The rows in both `self` and `other`, as a new set.
    pub(crate) fn and(&self, other: &Bits) -> Bits {
        Bits {
            words: self
                .words
                .iter()
                .zip(&other.words)
                .map(|(a, b)| a & b)
                .collect(),
        }
    }

    /// Adds every row of `other`.
    pub(crate) fn union(&mut self, other: &Bits) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    /// Turns the set of `0..len` into its complement.
    pub(crate) fn invert(&mut self, len: usize) {
        for w in &mut self.words {
            *w = !*w;
        }
        let tail = len % 64;
        if tail != 0
            && let Some(last) = self.words.last_mut()
        {
            *last &= (1u64 << tail) - 1;
        }
    }

    /// Number of rows in the set.
    pub(crate) fn count(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// The rows in ascending order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.iter_from(0)
    }

    /// The rows in ascending order from the `skip`-th on, skipping whole words by their counts.
    pub(crate) fn iter_from(&self, skip: u64) -> impl Iterator<Item = u32> + '_ {
        let mut left = skip;
        let mut first = self.words.len();
        for (i, word) in self.words.iter().enumerate() {
            let n = u64::from(word.count_ones());
            if left < n {
                first = i;
                break;
            }
            left -= n;
        }
        let first = first.min(self.words.len());
        set_rows(&self.words[first..], first).skip(left as usize)
    }

    /// The rows in ascending order within `from..to`, `from` a multiple of 64 (a share of
    /// the rows for one thread of a parallel scan).
    pub(crate) fn iter_within(&self, from: usize, to: usize) -> impl Iterator<Item = u32> + '_ {
        debug_assert_eq!(from % 64, 0);
        let first = (from / 64).min(self.words.len());
        let last = to.div_ceil(64).clamp(first, self.words.len());
        set_rows(&self.words[first..last], first).take_while(move |&row| (row as usize) < to)
    }

    /// Heap bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.words.capacity() * 8
    }
}

/// The rows of `words`, the set's words from its `first` on, in ascending order.
fn set_rows(words: &[u64], first: usize) -> impl Iterator<Item = u32> + '_ {
    words.iter().enumerate().flat_map(move |(i, &word)| {
        let base = ((first + i) * 64) as u32;
        let mut rest = word;
        std::iter::from_fn(move || {
            if rest == 0 {
                return None;
            }
            let bit = rest.trailing_zeros();
            rest &= rest - 1;
            Some(base + bit)
        })
    })
}

// Row lists.

/// Rows addressed by their lower bits; the upper bits come from the stretch.
const LOW_BITS: u32 = 16;

/// Where a stretch of rows with the same upper bits starts in the list, and those bits.
/// Laid out as two `u32`s, no padding: an index file holds the stretches as one raw array
/// ([`super::persist`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Stretch {
    pub(super) start: u32,
    pub(super) high: u32,
}

/// A sequence of rows, held split into lower bits and stretches where that is smaller.
#[derive(Debug)]
pub(crate) enum RowList {
    /// Each row in full.
    Wide(Vec<u32>),
    /// Each row's lower 16 bits, and the stretches of equal upper bits.
    Split {
        low: Vec<u16>,
        stretches: Vec<Stretch>,
    },
    /// The rows `first..first + len`, in order.
    Run { first: u32, len: u32 },
}

impl Default for RowList {
    fn default() -> Self {
        RowList::Wide(Vec::new())
    }
}

impl RowList {
    /// `rows` in whichever form takes fewer bytes.
    pub(crate) fn new(rows: Vec<u32>) -> Self {
        if let Some(&first) = rows.first()
            && u32::try_from(rows.len()).is_ok_and(|len| first.checked_add(len).is_some())
            && rows
                .iter()
                .zip(first..)
                .all(|(&row, expected)| row == expected)
        {
            return RowList::Run {
                first,
                len: rows.len() as u32,
            };
        }
        let mut stretches: Vec<Stretch> = Vec::new();
        for (i, &row) in rows.iter().enumerate() {
            let high = row >> LOW_BITS;
            if stretches.last().is_none_or(|s| s.high != high) {
                stretches.push(Stretch {
                    start: i as u32,
                    high,
                });
                // Split costs 2 bytes a row and 8 a stretch; wide 4 a row.
                if stretches.len() * 4 > rows.len() {
                    let mut rows = rows;
                    rows.shrink_to_fit();
                    return RowList::Wide(rows);
                }
            }
        }
        stretches.shrink_to_fit();
        RowList::Split {
            low: rows.iter().map(|&r| r as u16).collect(),
            stretches,
        }
    }

    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        match self {
            RowList::Wide(rows) => rows.len(),
            RowList::Split { low, .. } => low.len(),
            RowList::Run { len, .. } => *len as usize,
        }
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The row at `i`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> u32 {
        match self {
            RowList::Wide(rows) => rows[i],
            RowList::Split { low, stretches } => {
                let s = stretches.partition_point(|s| s.start as usize <= i) - 1;
                (stretches[s].high << LOW_BITS) | u32::from(low[i])
            }
            RowList::Run { first, len } => {
                assert!(i < *len as usize, "row {i} of a run of {len}");
                first + i as u32
            }
        }
    }

    /// The first row.
    pub(crate) fn first(&self) -> Option<u32> {
        (!self.is_empty()).then(|| self.get(0))
    }

    /// The last row.
    pub(crate) fn last(&self) -> Option<u32> {
        (!self.is_empty()).then(|| self.get(self.len() - 1))
    }

    /// Rows `range` of the list.
    pub(crate) fn slice(&self, range: Range<usize>) -> Rows<'_> {
        debug_assert!(range.start <= range.end && range.end <= self.len());
        Rows { list: self, range }
    }

    /// The whole list.
    pub(crate) fn all(&self) -> Rows<'_> {
        self.slice(0..self.len())
    }

    /// The first index whose row `before` is false for (`before` holds for a prefix).
    pub(crate) fn partition_point(&self, before: impl Fn(u32) -> bool) -> usize {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let mid = low + (high - low) / 2;
            if before(self.get(mid)) {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        low
    }

    /// Heap bytes held.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            RowList::Wide(rows) => rows.capacity() * 4,
            RowList::Split { low, stretches } => {
                low.capacity() * 2 + stretches.capacity() * size_of::<Stretch>()
            }
            RowList::Run { .. } => 0,
        }
    }
}

/// A part of a [`RowList`], borrowed.
#[derive(Clone, Debug)]
pub(crate) struct Rows<'a> {
    list: &'a RowList,
    range: Range<usize>,
}

impl<'a> Rows<'a> {
    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        self.range.len()
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    /// The row at `i` of this part.
    pub(crate) fn get(&self, i: usize) -> u32 {
        self.list.get(self.range.start + i)
    }

    /// The first row.
    pub(crate) fn first(&self) -> Option<u32> {
        (!self.is_empty()).then(|| self.get(0))
    }

    /// The rows in list order.
    pub(crate) fn iter(&self) -> RowIter<'a> {
        match self.list {
            RowList::Wide(rows) => RowIter::Wide(rows[self.range.clone()].iter().copied()),
            RowList::Run { first, .. } => RowIter::Run(self.run_rows(*first)),
            RowList::Split { low, stretches } => {
                let next = self.range.start;
                // The stretch holding `next`; with an empty range, any valid one.
                let s = stretches
                    .partition_point(|s| s.start as usize <= next)
                    .saturating_sub(1);
                RowIter::Split {
                    low,
                    stretches,
                    next,
                    end: self.range.end,
                    stretch: s,
                    high: stretches.get(s).map_or(0, |s| s.high << LOW_BITS),
                    stretch_end: stretches
                        .get(s + 1)
                        .map_or(usize::MAX, |s| s.start as usize),
                }
            }
        }
    }

    /// Adds these rows to `bits`, stretch by stretch: a stretch's rows share one block of
    /// 65,536 bits, so each is one shift and one OR into that block.
    pub(crate) fn insert_into(&self, bits: &mut Bits) {
        match self.list {
            RowList::Wide(rows) => rows[self.range.clone()]
                .iter()
                .for_each(|&row| bits.insert(row)),
            RowList::Run { first, .. } => bits.insert_range(self.run_rows(*first)),
            RowList::Split { low, stretches } => {
                let first = stretches
                    .partition_point(|s| s.start as usize <= self.range.start)
                    .saturating_sub(1);
                for (k, stretch) in stretches.iter().enumerate().skip(first) {
                    let start = (stretch.start as usize).max(self.range.start);
                    let end = stretches
                        .get(k + 1)
                        .map_or(usize::MAX, |next| next.start as usize)
                        .min(self.range.end);
                    if start >= self.range.end {
                        break;
                    }
                    if start < end {
                        bits.insert_block(stretch.high << LOW_BITS, &low[start..end]);
                    }
                }
            }
        }
    }

    /// This part's rows of a run starting at row `first`.
    fn run_rows(&self, first: u32) -> Range<u32> {
        first + self.range.start as u32..first + self.range.end as u32
    }

    /// The rows, copied.
    #[cfg(test)]
    pub(crate) fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }
}

/// The rows of a [`Rows`], in order.
pub(crate) enum RowIter<'a> {
    Wide(std::iter::Copied<std::slice::Iter<'a, u32>>),
    Run(Range<u32>),
    Split {
        low: &'a [u16],
        stretches: &'a [Stretch],
        next: usize,
        end: usize,
        stretch: usize,
        /// The current stretch's upper bits, shifted into place.
        high: u32,
        /// Where the next stretch starts.
        stretch_end: usize,
    },
}

impl Iterator for RowIter<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        match self {
            RowIter::Wide(rows) => rows.next(),
            RowIter::Run(rows) => rows.next(),
            RowIter::Split {
                low,
                stretches,
                next,
                end,
                stretch,
                high,
                stretch_end,
            } => {
                if *next >= *end {
                    return None;
                }
                while *next >= *stretch_end {
                    *stretch += 1;
                    *high = stretches[*stretch].high << LOW_BITS;
                    *stretch_end = stretches
                        .get(*stretch + 1)
                        .map_or(usize::MAX, |s| s.start as usize);
                }
                let row = *high | u32::from(low[*next]);
                *next += 1;
                Some(row)
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self {
            RowIter::Wide(rows) => rows.len(),
            RowIter::Run(rows) => rows.len(),
            RowIter::Split { next, end, .. } => end.saturating_sub(*next),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for RowIter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_counts_and_combines() {
        let mut a = Bits::new(200);
        for row in [0, 5, 63, 64, 130, 199] {
            a.insert(row);
        }
        assert_eq!(a.count(), 6);
        assert_eq!(a.iter().collect::<Vec<_>>(), [0, 5, 63, 64, 130, 199]);
        assert_eq!(a.iter_from(3).collect::<Vec<_>>(), [64, 130, 199]);
        assert_eq!(a.iter_from(6).count(), 0);
        assert_eq!(a.iter_from(60).count(), 0);
        let mut b = Bits::new(200);
        b.insert(5);
        b.insert(130);
        b.insert(131);
        let mut both = a.clone();
        both.intersect(&b);
        assert_eq!(both.iter().collect::<Vec<_>>(), [5, 130]);
        assert_eq!(a.and(&b), both);
        assert!(both.contains(130) && !both.contains(131));
        b.union(&a);
        assert_eq!(b.count(), 7);
        let mut c = a.clone();
        c.invert(200);
        let mut block = Bits::new(200);
        block.insert_block(0, &[199, 0, 64, 5, 63, 130]);
        assert_eq!(block, a);
        assert_eq!(c.count(), 194);
        assert!(!c.contains(5) && c.contains(6) && c.contains(198));
    }

    /// Lists of every shape read back as they were given, whole and in parts.
    #[test]
    fn lists_read_back_whole_and_in_parts() {
        let ascending: Vec<u32> = (0..300_000).step_by(3).collect();
        // Runs of equal values' rows, each ascending, as a number column's order is.
        let runs: Vec<u32> = (0..4u32)
            .flat_map(|k| (0..200_000u32).filter(move |r| r % 4 == k))
            .collect();
        // Neighbours mostly in different 65,536-row blocks.
        let permutation: Vec<u32> = (0..1_000_000u64)
            .map(|r| (r * 48_271 % 1_000_000) as u32)
            .collect();
        let form = |list: &RowList| match list {
            RowList::Wide(_) => "wide",
            RowList::Split { .. } => "split",
            RowList::Run { .. } => "run",
        };
        for (rows, want) in [
            (ascending, "split"),
            (runs, "split"),
            (permutation, "wide"),
            (vec![], "split"),
            (vec![70_000, 5, u32::MAX - 1], "wide"),
            ((0..300_000).collect(), "run"),
            ((65_530..200_003).collect(), "run"),
            (vec![7], "run"),
            (vec![u32::MAX - 1, u32::MAX], "wide"),
        ] {
            let list = RowList::new(rows.clone());
            let split = want == "split";
            assert_eq!(form(&list), want, "{:?}", &rows[..rows.len().min(5)]);
            if want == "run" {
                assert_eq!(list.bytes(), 0);
            }
            assert_eq!(list.len(), rows.len());
            assert_eq!(list.all().to_vec(), rows);
            assert_eq!(list.first(), rows.first().copied());
            assert_eq!(list.last(), rows.last().copied());
            for (i, &row) in rows.iter().enumerate().step_by(997) {
                assert_eq!(list.get(i), row);
            }
            let n = rows.len();
            for range in [0..0, n / 3..n / 3, n / 3..n / 2, n / 2..n, 0..n.min(1)] {
                let part = list.slice(range.clone());
                assert_eq!(part.to_vec(), rows[range.clone()]);
                assert_eq!(part.iter().len(), range.len());
                // Set stretch by stretch, the same bits as one at a time.
                if rows.iter().all(|&r| r < 1_000_000) {
                    let (mut by_stretch, mut by_row) = (Bits::new(1_000_000), Bits::new(1_000_000));
                    part.insert_into(&mut by_stretch);
                    part.iter().for_each(|r| by_row.insert(r));
                    assert_eq!(by_stretch, by_row);
                }
            }
            if split {
                assert!(list.bytes() < n * 4 || n == 0);
            }
        }
    }

    #[test]
    fn partition_points_agree_with_slices() {
        let rows: Vec<u32> = (0..150_000).map(|r| r * 2).collect();
        let list = RowList::new(rows.clone());
        for bound in [0, 1, 2, 65_535, 65_536, 131_072, 299_998, 400_000] {
            assert_eq!(
                list.partition_point(|r| r < bound),
                rows.partition_point(|&r| r < bound)
            );
        }
    }
}
