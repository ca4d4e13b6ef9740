//! Filters and page order on an in-memory index, with the store path's exact semantics:
//! exact matches compare typed values, full-text terms are substrings of the lower-cased
//! dictionary values, sorts put missing values last in both directions and break ties by file
//! order.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Deref;

use super::column::{MISSING, StrColumn};
use super::rows::Bits;
use super::walk::Key;
use super::{FieldIndex, MemIndex};
use crate::dataset::schema::Column;
use crate::dates;
use crate::request::{ExactValue, Filter, Range, RangeValue};

/// [`MemIndex::text_page`] merges row lists for pages ending at most this far into the
/// matches; deeper pages walk the bit set, whose cost does not grow with the page.
const MERGED_PAGES_UP_TO: u64 = 10_000;

impl MemIndex {
    /// The rows matching `filter`; `None` when it has no condition (every row).
    pub(crate) fn matches<'s>(&'s self, filter: &Filter) -> Option<Bits> {
        // A frequent value's kept set stays borrowed until a second condition meets it; the
        // two then make a new set in one pass (no copy of the first to intersect in place).
        let mut acc: Option<Cow<'s, Bits>> = None;
        let mut and = |bits: Cow<'s, Bits>| match &mut acc {
            None => acc = Some(bits),
            Some(Cow::Owned(a)) => a.intersect(&bits),
            Some(Cow::Borrowed(a)) => acc = Some(Cow::Owned(a.and(&bits))),
        };
        for (column, values) in &filter.exact {
            and(self.exact_rows(*column, values));
        }
        for (column, values) in &filter.not {
            let mut bits = self.exact_rows(*column, values).into_owned();
            bits.invert(self.rows as usize);
            and(Cow::Owned(bits));
        }
        for (column, range) in &filter.ranges {
            and(Cow::Owned(self.range_rows(*column, range)));
        }
        for (column, prefixes) in &filter.prefixes {
            and(Cow::Owned(self.prefix_rows(*column, prefixes)));
        }
        for &(column, has) in &filter.exists {
            let mut bits = self.present_rows(column);
            if !has {
                bits.invert(self.rows as usize);
            }
            and(Cow::Owned(bits));
        }
        if let Some(ids) = &filter.ids {
            let mut bits = Bits::new(self.rows as usize);
            for id in ids {
                if let Some(row) = self.id.find(id) {
                    bits.insert(row);
                }
            }
            and(Cow::Owned(bits));
        }
        // Only `q` needs the list of text fields; most requests have none.
        let text_fields: Vec<usize> = if filter.terms.is_empty() {
            Vec::new()
        } else {
            (0..self.fields.len())
                .filter(|&i| matches!(self.fields[i], FieldIndex::Text(_)))
                .collect()
        };
        for term in &filter.terms {
            let codes = self.texts.containing(term);
            and(Cow::Owned(self.text_rows(&text_fields, &codes)));
        }
        for (field, terms) in &filter.field_terms {
            let mut codes = self.texts.containing(&terms[0]);
            for term in &terms[1..] {
                codes.retain(|&c| self.texts.get(c).contains(term.as_str()));
            }
            and(Cow::Owned(self.text_rows(&[*field], &codes)));
        }
        let matched = acc.map(Cow::into_owned);
        match &filter.near {
            None => matched,
            Some(near) => Some(self.within(near, matched)),
        }
    }

    /// The kept sets whose rows all hold, when `filter` is only `name=value` conditions on
    /// keywords, each a frequent value with a set of its own (carrier and origin in flights):
    /// a sorted page can then test each row against them, and leave their intersection
    /// (a pass over a bit a row: a megabyte for each 8.4 million rows) unmade once its total is
    /// known. `None` for anything else.
    pub(crate) fn kept_sets<'s>(&'s self, filter: &Filter) -> Option<Vec<&'s Bits>> {
        if filter.exact.len() < 2 || !filter.terms.is_empty() || !filter.is_empty_but_exact() {
            return None;
        }
        filter
            .exact
            .iter()
            .map(
                |(column, values)| match (self.key(*column), values.as_slice()) {
                    (Some(Key::Str(c)), [ExactValue::Str(s)]) => {
                        c.dict.find(s).and_then(|code| c.dense(code))
                    }
                    _ => None,
                },
            )
            .collect()
    }

    /// Rows whose `column` holds one of `values`: a frequent value's kept set is borrowed.
    fn exact_rows(&self, column: Column, values: &[ExactValue]) -> Cow<'_, Bits> {
        let key = self.key(column);
        if let (Some(Key::Str(c)), [ExactValue::Str(s)]) = (key, values)
            && let Some(bits) = c.dict.find(s).and_then(|code| c.dense(code))
        {
            return Cow::Borrowed(bits);
        }
        let mut bits = Bits::new(self.rows as usize);
        for value in values {
            match (key, value) {
                (Some(Key::Str(c)), ExactValue::Str(s)) => {
                    if let Some(code) = c.dict.find(s) {
                        c.postings.add_to(code, &mut bits);
                    }
                }
                (Some(Key::Id(c)), ExactValue::Str(s)) => {
                    if let Some(row) = c.find(s) {
                        bits.insert(row);
                    }
                }
                (Some(Key::Num(c)), ExactValue::Num(n)) => {
                    c.equal(*n).insert_into(&mut bits);
                }
                _ => {}
            }
        }
        Cow::Owned(bits)
    }

    /// Rows whose `column` value lies in `range`: a binary search of a number column's value
    /// order, a run of a keyword dictionary (byte order), or the date values whose instants
    /// lie in it.
    fn range_rows(&self, column: Column, range: &Range) -> Bits {
        let mut bits = Bits::new(self.rows as usize);
        match self.key(column) {
            Some(Key::Num(c)) => {
                let value = |r: u32| c.values.get(r as usize);
                let low = match &range.lower {
                    Some((RangeValue::Num(b), true)) => c.order.partition_point(|r| value(r) < *b),
                    Some((RangeValue::Num(b), false)) => {
                        c.order.partition_point(|r| value(r) <= *b)
                    }
                    _ => 0,
                };
                let high = match &range.upper {
                    Some((RangeValue::Num(b), true)) => c.order.partition_point(|r| value(r) <= *b),
                    Some((RangeValue::Num(b), false)) => c.order.partition_point(|r| value(r) < *b),
                    _ => c.order.len(),
                };
                c.order.slice(low..high.max(low)).insert_into(&mut bits);
            }
            Some(Key::Str(c)) => {
                let dates = matches!(range.lower, Some((RangeValue::Time(_), _)))
                    || matches!(range.upper, Some((RangeValue::Time(_), _)));
                let codes: Vec<u32> = if dates {
                    (0..c.dict.len() as u32)
                        .filter(|&code| {
                            dates::parse(c.dict.get(code)).is_some_and(|t| range.holds_instant(t))
                        })
                        .collect()
                } else {
                    text_range(range, c.dict.len(), |code| c.dict.get(code)).collect()
                };
                self.code_rows(c, &codes, &mut bits);
            }
            Some(Key::Id(c)) => {
                let sorted = c.sorted();
                let part = text_range(range, sorted.len(), |i| c.get(sorted.get(i as usize)));
                let part = part.start as usize..part.end as usize;
                sorted.slice(part).insert_into(&mut bits);
            }
            None => {}
        }
        bits
    }

    /// Rows whose keyword `column` starts with one of `prefixes`: a run of the dictionary each.
    fn prefix_rows(&self, column: Column, prefixes: &[String]) -> Bits {
        let mut bits = Bits::new(self.rows as usize);
        for prefix in prefixes {
            match self.key(column) {
                Some(Key::Str(c)) => {
                    let codes = prefix_range(prefix, c.dict.len(), |code| c.dict.get(code));
                    self.code_rows(c, &codes.collect::<Vec<_>>(), &mut bits);
                }
                Some(Key::Id(c)) => {
                    let sorted = c.sorted();
                    let part =
                        prefix_range(prefix, sorted.len(), |i| c.get(sorted.get(i as usize)));
                    let part = part.start as usize..part.end as usize;
                    sorted.slice(part).insert_into(&mut bits);
                }
                _ => {}
            }
        }
        bits
    }

    /// Adds the rows of dictionary `codes` of `column` to `bits`.
    fn code_rows(&self, column: &StrColumn, codes: &[u32], bits: &mut Bits) {
        for &code in codes {
            column.postings.add_to(code, bits);
        }
    }

    /// Rows that have a value in `column`, from the lists that hold them (a number's value
    /// order, a keyword's rows by value) rather than row by row: a word at a time where every
    /// row has one.
    fn present_rows(&self, column: Column) -> Bits {
        let mut bits = Bits::new(self.rows as usize);
        let all = 0..self.rows;
        match column {
            Column::Id => bits.insert_range(all),
            Column::Field(i) => match &self.fields[i] {
                FieldIndex::Id => bits.insert_range(all),
                FieldIndex::Num(c) if c.order.len() == self.rows as usize => bits.insert_range(all),
                FieldIndex::Num(c) => c.order.all().insert_into(&mut bits),
                FieldIndex::Str(c) => {
                    let codes = 0..c.dict.len() as u32;
                    let held: u64 = codes
                        .clone()
                        .map(|code| u64::from(c.postings.len(code)))
                        .sum();
                    if held == u64::from(self.rows) {
                        bits.insert_range(all);
                    } else {
                        codes.for_each(|code| c.postings.add_to(code, &mut bits));
                    }
                }
                FieldIndex::Text(c) => {
                    for row in all {
                        if c.codes.get(row as usize) != MISSING {
                            bits.insert(row);
                        }
                    }
                }
                FieldIndex::None => {}
            },
        }
        bits
    }

    /// Rows whose value in one of `fields` has one of the dictionary `codes`.
    pub(super) fn text_rows(&self, fields: &[usize], codes: &[u32]) -> Bits {
        let mut bits = Bits::new(self.rows as usize);
        for &field in fields {
            if let FieldIndex::Text(column) = &self.fields[field] {
                for &code in codes {
                    column.postings.add_to(code, &mut bits);
                }
            }
        }
        bits
    }

    /// Total and rows `offset..offset + limit`, in file order (no `sort`), of a filter that
    /// is one `q` term alone whose dictionary matches lie in one text field; `None` for
    /// anything else (and for pages beyond [`MERGED_PAGES_UP_TO`]), which the bit set path
    /// answers. A row
    /// holds one code per field, so the total is the matched codes' row counts summed and the
    /// page a merge of their row lists: no bit set of every match (a common term would set
    /// a bit per matching row to show 20).
    pub(crate) fn text_page(
        &self,
        filter: &Filter,
        sort: &[(Column, bool)],
        offset: u64,
        limit: u64,
    ) -> Option<(u64, Vec<u32>)> {
        let [term] = filter.terms.as_slice() else {
            return None;
        };
        if !sort.is_empty() || !filter.is_empty_but_terms() || offset + limit > MERGED_PAGES_UP_TO {
            return None;
        }
        let codes = self.texts.containing(term);
        let mut holding = self.fields.iter().filter_map(|field| match field {
            FieldIndex::Text(c) if codes.iter().any(|&code| c.postings.len(code) > 0) => Some(c),
            _ => None,
        });
        let Some(column) = holding.next() else {
            return Some((0, Vec::new()));
        };
        if holding.next().is_some() {
            return None;
        }
        let postings = &column.postings;
        let total = codes
            .iter()
            .map(|&code| u64::from(postings.len(code)))
            .sum();
        let mut lists: Vec<Box<dyn Iterator<Item = u32> + '_>> = codes
            .iter()
            .filter(|&&code| postings.len(code) > 0)
            .map(|&code| match postings.dense(code) {
                Some(bits) => Box::new(bits.iter()) as Box<dyn Iterator<Item = u32>>,
                None => Box::new(postings.rows(code).iter()),
            })
            .collect();
        let mut heads: BinaryHeap<Reverse<(u32, usize)>> = lists
            .iter_mut()
            .enumerate()
            .filter_map(|(k, list)| Some(Reverse((list.next()?, k))))
            .collect();
        let mut page = Vec::with_capacity(limit as usize);
        let mut skipped = 0;
        while let Some(Reverse((row, k))) = heads.pop() {
            if skipped < offset {
                skipped += 1;
            } else {
                page.push(row);
                if page.len() as u64 == limit {
                    break;
                }
            }
            if let Some(next) = lists[k].next() {
                heads.push(Reverse((next, k)));
            }
        }
        Some((total, page))
    }
}

/// The positions in `0..n` of a list in byte order (`text` of a position) whose values lie in
/// `range`.
fn text_range<T: Deref<Target = str>>(
    range: &Range,
    n: usize,
    text: impl Fn(u32) -> T,
) -> std::ops::Range<u32> {
    let first = |pred: &dyn Fn(&str) -> bool| partition(n, |i| pred(&text(i)));
    let low = match &range.lower {
        Some((RangeValue::Str(b), true)) => first(&|v| v < b.as_str()),
        Some((RangeValue::Str(b), false)) => first(&|v| v <= b.as_str()),
        _ => 0,
    };
    let high = match &range.upper {
        Some((RangeValue::Str(b), true)) => first(&|v| v <= b.as_str()),
        Some((RangeValue::Str(b), false)) => first(&|v| v < b.as_str()),
        _ => n as u32,
    };
    low..high.max(low)
}

/// The positions in `0..n` of a list in byte order whose values start with `prefix`.
fn prefix_range<T: Deref<Target = str>>(
    prefix: &str,
    n: usize,
    text: impl Fn(u32) -> T,
) -> std::ops::Range<u32> {
    let low = partition(n, |i| &*text(i) < prefix);
    let high = partition(n, |i| {
        let v = text(i);
        &*v < prefix || v.starts_with(prefix)
    });
    low..high.max(low)
}

/// The first code in `0..n` for which `before` is false (`before` holds for a prefix of codes).
pub(super) fn partition(n: usize, before: impl Fn(u32) -> bool) -> u32 {
    let (mut low, mut high) = (0u32, n as u32);
    while low < high {
        let mid = low + (high - low) / 2;
        if before(mid) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    low
}
