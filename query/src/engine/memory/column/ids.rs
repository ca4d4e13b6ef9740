//! `_id`'s column: every row's id, unique, in file order, with the rows in byte order of their
//! ids (how both stores compare them, `COLLATE "C"` and `BINARY`).
//!
//! Ids that are all plain decimal numbers (`0`, `17`, `4294967295`: digits only, no leading
//! zero, at most `u32::MAX`), which is what a row number or a counter makes, are held as one
//! `u32` a row instead of their text and its end (about 12 bytes a row for eight digits).
//! Their byte order is still the order of their texts: a number's digits padded on the right
//! to ten, then its digit count, compare as its text does ([`byte_order_key`]), so sorting
//! them needs no text at all.

use std::cmp::Ordering;
use std::ops::Deref;

use super::Dict;
use super::RowList;

/// The most digits of a `u32`.
const DIGITS: usize = 10;

/// Every row's id, in file order.
#[derive(Debug)]
pub(crate) enum Ids {
    /// Plain decimal numbers, each the text of its id.
    Numbers(Vec<u32>),
    /// Any texts.
    Texts(Dict),
}

impl Default for Ids {
    fn default() -> Self {
        Ids::Numbers(Vec::new())
    }
}

impl Ids {
    /// Appends `id` as the next row's. A text that is not a plain number turns the numbers
    /// held so far into texts, once.
    pub(crate) fn push(&mut self, id: &str) {
        match self {
            Ids::Numbers(numbers) => match plain_number(id) {
                Some(n) => numbers.push(n),
                None => {
                    self.as_texts().push(id);
                }
            },
            Ids::Texts(texts) => texts.push(id),
        }
    }

    /// Appends `other`'s ids after this one's (a build read in parts).
    pub(crate) fn append(&mut self, other: &Ids) {
        match (&mut *self, other) {
            (Ids::Numbers(a), Ids::Numbers(b)) => a.extend_from_slice(b),
            (_, other) => {
                let texts = self.as_texts();
                match other {
                    Ids::Texts(b) => texts.append(b),
                    Ids::Numbers(b) => b.iter().for_each(|&n| texts.push(&Digits::of(n))),
                }
            }
        }
    }

    /// The ids as texts, turned into texts if they were numbers.
    fn as_texts(&mut self) -> &mut Dict {
        if let Ids::Numbers(numbers) = self {
            let mut texts = Dict::default();
            numbers.iter().for_each(|&n| texts.push(&Digits::of(n)));
            *self = Ids::Texts(texts);
        }
        match self {
            Ids::Texts(texts) => texts,
            Ids::Numbers(_) => unreachable!("made texts above"),
        }
    }

    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        match self {
            Ids::Numbers(numbers) => numbers.len(),
            Ids::Texts(texts) => texts.len(),
        }
    }

    /// Row `row`'s id.
    pub(crate) fn get(&self, row: u32) -> IdText<'_> {
        match self {
            Ids::Numbers(numbers) => IdText::Digits(Digits::of(numbers[row as usize])),
            Ids::Texts(texts) => IdText::Text(texts.get(row)),
        }
    }

    /// How rows `a` and `b`'s ids compare, byte by byte.
    pub(crate) fn compare(&self, a: u32, b: u32) -> Ordering {
        match self {
            Ids::Numbers(numbers) => {
                byte_order_key(numbers[a as usize]).cmp(&byte_order_key(numbers[b as usize]))
            }
            Ids::Texts(texts) => texts.get(a).cmp(texts.get(b)),
        }
    }

    fn shrink_to_fit(&mut self) {
        match self {
            Ids::Numbers(numbers) => numbers.shrink_to_fit(),
            Ids::Texts(texts) => {
                texts.text.shrink_to_fit();
                texts.ends.shrink_to_fit();
            }
        }
    }

    /// Heap bytes held.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Ids::Numbers(numbers) => numbers.capacity() * 4,
            Ids::Texts(texts) => texts.bytes(),
        }
    }
}

/// `text` as a plain decimal number: digits only, no leading zero, at most `u32::MAX`.
fn plain_number(text: &str) -> Option<u32> {
    let bytes = text.as_bytes();
    let plain = !bytes.is_empty()
        && bytes.len() <= DIGITS
        && bytes.iter().all(u8::is_ascii_digit)
        && (bytes[0] != b'0' || bytes.len() == 1);
    if !plain {
        return None;
    }
    text.parse().ok()
}

/// A key whose order is the byte order of `n`'s decimal text: its digits padded on the right
/// with zeros to ten (so a digit compares with the digit at the same place), then the digit
/// count (so `1` comes before `10`, which pads to the same digits).
fn byte_order_key(n: u32) -> u64 {
    let digits = n.checked_ilog10().unwrap_or(0) + 1;
    let padded = u64::from(n) * 10u64.pow(DIGITS as u32 - digits);
    (padded << 4) | u64::from(digits)
}

/// A number's decimal text, held inline.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Digits {
    buf: [u8; DIGITS],
    start: u8,
}

impl Digits {
    fn of(mut n: u32) -> Self {
        let mut buf = [0u8; DIGITS];
        let mut start = DIGITS;
        loop {
            start -= 1;
            buf[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        Digits {
            buf,
            start: start as u8,
        }
    }
}

impl Deref for Digits {
    type Target = str;

    fn deref(&self) -> &str {
        std::str::from_utf8(&self.buf[self.start as usize..]).expect("ASCII digits")
    }
}

/// One row's id: borrowed text, or a number's digits.
#[derive(Clone, Copy, Debug)]
pub(crate) enum IdText<'a> {
    Text(&'a str),
    Digits(Digits),
}

impl Deref for IdText<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            IdText::Text(text) => text,
            IdText::Digits(digits) => digits,
        }
    }
}

/// `_id`: unique ids kept in file order, with the rows in byte order of their ids. A
/// dictionary would add each row's code and each code's row list, and building one would
/// hash every id.
#[derive(Debug, Default)]
pub(crate) struct IdColumn {
    /// Row `r`'s id is `ids.get(r)`.
    pub(in crate::engine::memory) ids: Ids,
    /// The rows in byte order of their ids.
    pub(in crate::engine::memory) sorted: RowList,
}

impl IdColumn {
    /// The column of `ids`, one per row in file order; `None` when two rows share one (an
    /// import never publishes that).
    pub(crate) fn new(mut ids: Ids) -> Option<Self> {
        ids.shrink_to_fit();
        let mut sorted: Vec<u32> = (0..ids.len() as u32).collect();
        match &ids {
            Ids::Numbers(numbers) => {
                sorted.sort_unstable_by_key(|&r| byte_order_key(numbers[r as usize]))
            }
            Ids::Texts(texts) => sorted.sort_unstable_by(|&a, &b| texts.get(a).cmp(texts.get(b))),
        }
        if sorted
            .windows(2)
            .any(|w| ids.compare(w[0], w[1]) == Ordering::Equal)
        {
            return None;
        }
        Some(IdColumn {
            ids,
            sorted: RowList::new(sorted),
        })
    }

    /// The id of `row`.
    pub(crate) fn get(&self, row: u32) -> IdText<'_> {
        self.ids.get(row)
    }

    /// How rows `a` and `b`'s ids compare, byte by byte.
    pub(crate) fn compare(&self, a: u32, b: u32) -> Ordering {
        self.ids.compare(a, b)
    }

    /// The row whose id is `id`.
    ///
    /// Numbered ids are first looked for where a row number puts them (id `n` at row `n - 1`
    /// or `n`): ids are unique, so a row holding it there is the answer, without the binary
    /// search of the byte order, whose steps each look up a row of `sorted`.
    pub(crate) fn find(&self, id: &str) -> Option<u32> {
        let i = match &self.ids {
            Ids::Numbers(numbers) => {
                let n = plain_number(id)?;
                let guesses = [n.checked_sub(1), Some(n)];
                if let Some(row) = guesses
                    .into_iter()
                    .flatten()
                    .find(|&row| numbers.get(row as usize) == Some(&n))
                {
                    return Some(row);
                }
                let key = byte_order_key(n);
                self.sorted
                    .partition_point(|r| byte_order_key(numbers[r as usize]) < key)
            }
            Ids::Texts(texts) => self.sorted.partition_point(|r| texts.get(r) < id),
        };
        let row = (i < self.sorted.len()).then(|| self.sorted.get(i))?;
        (*self.get(row) == *id).then_some(row)
    }

    /// The rows in byte order of their ids.
    pub(crate) fn sorted(&self) -> &RowList {
        &self.sorted
    }

    /// Heap bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.ids.bytes() + self.sorted.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_numbers_are_digits_without_a_leading_zero() {
        for (text, n) in [
            ("0", Some(0)),
            ("7", Some(7)),
            ("4294967295", Some(u32::MAX)),
        ] {
            assert_eq!(plain_number(text), n, "{text}");
        }
        for text in [
            "",
            "01",
            "00",
            "-1",
            "+1",
            "1.0",
            " 1",
            "4294967296",
            "12345678901",
            "١",
        ] {
            assert_eq!(plain_number(text), None, "{text}");
        }
    }

    #[test]
    fn the_key_orders_numbers_as_their_texts() {
        let mut numbers: Vec<u32> = vec![0, 1, 2, 9, 10, 11, 19, 100, 101, 20, 99, 1000];
        numbers.extend([u32::MAX, 4_000_000_000, 429_496_729, 42, 4, 3_999_999_999]);
        let mut by_key = numbers.clone();
        by_key.sort_by_key(|&n| byte_order_key(n));
        let mut by_text = numbers.clone();
        by_text.sort_by_key(|n| n.to_string());
        assert_eq!(by_key, by_text);
        for n in numbers {
            assert_eq!(&*Digits::of(n), n.to_string());
        }
    }

    #[test]
    fn numbers_turn_into_texts_at_the_first_other_id() {
        let mut ids = Ids::default();
        ids.push("3");
        ids.push("10");
        assert!(matches!(ids, Ids::Numbers(_)));
        let mut more = Ids::default();
        more.push("2");
        ids.append(&more);
        assert!(matches!(ids, Ids::Numbers(_)));
        ids.push("x7");
        assert!(matches!(ids, Ids::Texts(_)));
        ids.append(&more);
        let texts: Vec<String> = (0..ids.len() as u32)
            .map(|r| ids.get(r).to_string())
            .collect();
        assert_eq!(texts, ["3", "10", "2", "x7", "2"]);
    }

    #[test]
    fn numbered_ids_answer_as_texts_do() {
        let values = ["5", "10", "0", "1", "100", "9", "19"];
        let mut numbers = Ids::default();
        let mut texts = Ids::Texts(Dict::default());
        for v in values {
            numbers.push(v);
            texts.push(v);
        }
        assert!(matches!(numbers, Ids::Numbers(_)));
        let (numbers, texts) = (
            IdColumn::new(numbers).unwrap(),
            IdColumn::new(texts).unwrap(),
        );
        assert_eq!(
            numbers.sorted().all().to_vec(),
            texts.sorted().all().to_vec()
        );
        assert_eq!(numbers.sorted().all().to_vec(), [2, 3, 1, 4, 6, 0, 5]);
        for probe in ["5", "10", "0", "100", "2", "05", "", "x", "4294967295"] {
            assert_eq!(numbers.find(probe), texts.find(probe), "{probe}");
        }
        for a in 0..7 {
            for b in 0..7 {
                assert_eq!(numbers.compare(a, b), texts.compare(a, b));
            }
        }
        // Ids that count rows from 1 or 0 are found where they stand, the others by search.
        let counted = ["1", "2", "3", "7", "0", "5"];
        let column = |ids: &mut Ids| {
            counted.iter().for_each(|v| ids.push(v));
            IdColumn::new(std::mem::take(ids)).unwrap()
        };
        let numbers = column(&mut Ids::default());
        let texts = column(&mut Ids::Texts(Dict::default()));
        for (probe, row) in [
            ("1", Some(0)),
            ("3", Some(2)),
            ("7", Some(3)),
            ("0", Some(4)),
        ]
        .into_iter()
        .chain([("5", Some(5)), ("4", None), ("6", None), ("01", None)])
        {
            assert_eq!(numbers.find(probe), row, "{probe}");
            assert_eq!(texts.find(probe), row, "{probe}");
        }
        let mut twice = Ids::default();
        for v in ["4", "5", "4"] {
            twice.push(v);
        }
        assert!(IdColumn::new(twice).is_none());
    }
}
