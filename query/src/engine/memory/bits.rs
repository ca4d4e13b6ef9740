//! A dense set of row numbers, one bit a row. A filter's matches are built as one of these: on a
//! few hundred thousand rows it is a few dozen kilobytes, and intersection, counting and walking
//! in row order are word operations.

/// Rows `0..len` as bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bits {
    words: Vec<u64>,
}

impl Bits {
    /// The empty set over `len` rows.
    pub fn new(len: usize) -> Self {
        Bits {
            words: vec![0; len.div_ceil(64)],
        }
    }

    /// Adds `row`.
    #[inline]
    pub fn insert(&mut self, row: u32) {
        self.words[row as usize / 64] |= 1 << (row % 64);
    }

    /// Adds the rows `base + low` for each of `lows` (`base` a multiple of 65,536 below the
    /// set's length).
    #[inline]
    pub fn insert_block(&mut self, base: u32, lows: &[u16]) {
        let block = &mut self.words[base as usize / 64..];
        for &low in lows {
            block[usize::from(low >> 6)] |= 1 << (low & 63);
        }
    }

    /// Whether `row` is in the set.
    #[inline]
    pub fn contains(&self, row: u32) -> bool {
        self.words[row as usize / 64] & (1 << (row % 64)) != 0
    }

    /// Keeps only the rows also in `other`.
    pub fn intersect(&mut self, other: &Bits) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= b;
        }
    }

    /// The rows in both `self` and `other`, as a new set.
    pub fn and(&self, other: &Bits) -> Bits {
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
    pub fn union(&mut self, other: &Bits) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    /// Turns the set of `0..len` into its complement.
    pub fn invert(&mut self, len: usize) {
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
    pub fn count(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// The rows in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.iter_from(0)
    }

    /// The rows in ascending order from the `skip`-th on, skipping whole words by their counts.
    pub fn iter_from(&self, skip: u64) -> impl Iterator<Item = u32> + '_ {
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
        self.words[first.min(self.words.len())..]
            .iter()
            .enumerate()
            .flat_map(move |(i, &word)| {
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
            .skip(left as usize)
    }

    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        self.words.capacity() * 8
    }
}

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
}
