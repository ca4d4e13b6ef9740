//! Filters and page order on an in-memory index, with the store path's exact semantics:
//! exact matches compare typed values, full-text terms are substrings of the lower-cased
//! dictionary values, sorts put missing values last in both directions and break ties by file
//! order.

use std::borrow::Cow;
use std::cmp::Ordering;

use super::bits::Bits;
use super::column::{MISSING, NumColumn, StrColumn};
use super::{FieldIndex, MemIndex};
use crate::query::dates;
use crate::query::request::{ExactValue, Filter, Range, RangeValue};
use crate::query::schema::Column;

/// A sort key's column.
#[derive(Clone, Copy)]
enum Key<'a> {
    Str(&'a StrColumn),
    Num(&'a NumColumn),
}

impl Key<'_> {
    fn has_value(self, row: u32) -> bool {
        match self {
            Key::Str(c) => c.codes[row as usize] != MISSING,
            Key::Num(c) => !c.values.get(row as usize).is_nan(),
        }
    }

    /// SQL's `(c IS NULL), c [DESC]`.
    fn compare(self, a: u32, b: u32, descending: bool) -> Ordering {
        let ordered = |x: Ordering| if descending { x.reverse() } else { x };
        match self {
            Key::Str(c) => {
                let (x, y) = (c.codes[a as usize], c.codes[b as usize]);
                match (x == MISSING, y == MISSING) {
                    (false, false) => ordered(x.cmp(&y)),
                    (a_missing, b_missing) => a_missing.cmp(&b_missing),
                }
            }
            Key::Num(c) => {
                let (x, y) = (c.values.get(a as usize), c.values.get(b as usize));
                match (x.is_nan(), y.is_nan()) {
                    (false, false) => ordered(x.total_cmp(&y)),
                    (a_missing, b_missing) => a_missing.cmp(&b_missing),
                }
            }
        }
    }
}

impl MemIndex {
    fn key(&self, column: Column) -> Option<Key<'_>> {
        match column {
            Column::Id => Some(Key::Str(&self.id)),
            Column::Field(i) => match &self.fields[i] {
                FieldIndex::Str(c) => Some(Key::Str(c)),
                FieldIndex::Num(c) => Some(Key::Num(c)),
                _ => None,
            },
        }
    }

    /// The rows matching `filter`; `None` when it has no condition (every row).
    pub fn matches(&self, filter: &Filter) -> Option<Bits> {
        let mut acc: Option<Bits> = None;
        let mut and = |bits: Cow<'_, Bits>| match &mut acc {
            None => acc = Some(bits.into_owned()),
            Some(a) => a.intersect(&bits),
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
                if let Some(code) = self.id.dict.find(id) {
                    self.id
                        .postings
                        .rows(code)
                        .iter()
                        .for_each(|&r| bits.insert(r));
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
        acc
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
                        match c.dense(code) {
                            Some(dense) => bits.union(dense),
                            None => c.postings.rows(code).iter().for_each(|&r| bits.insert(r)),
                        }
                    }
                }
                (Some(Key::Num(c)), ExactValue::Num(n)) => {
                    c.equal(*n).iter().for_each(|&r| bits.insert(r));
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
                let value = |r: &u32| c.values.get(*r as usize);
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
                c.order[low..high.max(low)]
                    .iter()
                    .for_each(|&r| bits.insert(r));
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
                    let text = |code: u32| c.dict.get(code);
                    let n = c.dict.len();
                    let first = |pred: &dyn Fn(&str) -> bool| partition(n, |code| pred(text(code)));
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
                    (low..high.max(low)).collect()
                };
                self.code_rows(c, &codes, &mut bits);
            }
            None => {}
        }
        bits
    }

    /// Rows whose keyword `column` starts with one of `prefixes`: a run of the dictionary each.
    fn prefix_rows(&self, column: Column, prefixes: &[String]) -> Bits {
        let mut bits = Bits::new(self.rows as usize);
        if let Some(Key::Str(c)) = self.key(column) {
            let n = c.dict.len();
            for prefix in prefixes {
                let p = prefix.as_str();
                let low = partition(n, |code| c.dict.get(code) < p);
                let high = partition(n, |code| {
                    let v = c.dict.get(code);
                    v < p || v.starts_with(p)
                });
                let codes: Vec<u32> = (low..high.max(low)).collect();
                self.code_rows(c, &codes, &mut bits);
            }
        }
        bits
    }

    /// Adds the rows of dictionary `codes` of `column` to `bits`.
    fn code_rows(&self, column: &StrColumn, codes: &[u32], bits: &mut Bits) {
        for &code in codes {
            match column.dense(code) {
                Some(dense) => bits.union(dense),
                None => column
                    .postings
                    .rows(code)
                    .iter()
                    .for_each(|&r| bits.insert(r)),
            }
        }
    }

    /// Rows that have a value in `column`.
    fn present_rows(&self, column: Column) -> Bits {
        let mut bits = Bits::new(self.rows as usize);
        let mut mark = |present: &dyn Fn(usize) -> bool| {
            for row in 0..self.rows as usize {
                if present(row) {
                    bits.insert(row as u32);
                }
            }
        };
        match column {
            Column::Id => mark(&|_| true),
            Column::Field(i) => match &self.fields[i] {
                FieldIndex::Str(c) => mark(&|r| c.codes[r] != MISSING),
                FieldIndex::Num(c) => mark(&|r| !c.values.get(r).is_nan()),
                FieldIndex::Text(c) => mark(&|r| c.codes[r] != MISSING),
                FieldIndex::None => {}
            },
        }
        bits
    }

    /// Rows whose value in one of `fields` has one of the dictionary `codes`.
    fn text_rows(&self, fields: &[usize], codes: &[u32]) -> Bits {
        let mut bits = Bits::new(self.rows as usize);
        for &field in fields {
            if let FieldIndex::Text(column) = &self.fields[field] {
                for &code in codes {
                    column
                        .postings
                        .rows(code)
                        .iter()
                        .for_each(|&r| bits.insert(r));
                }
            }
        }
        bits
    }

    /// Rows `offset..offset + limit` of the matches in `sort` order (then file order).
    pub fn page(
        &self,
        matches: Option<&Bits>,
        sort: &[(Column, bool)],
        offset: u64,
        limit: u64,
    ) -> Vec<u32> {
        let limit = limit.min(u64::from(self.rows)) as usize;
        let Some((&(first, descending), rest)) = sort.split_first() else {
            return match matches {
                Some(m) => m.iter_from(offset).take(limit).collect(),
                None => {
                    let start = offset.min(u64::from(self.rows)) as u32;
                    let end = (u64::from(start) + limit as u64).min(u64::from(self.rows)) as u32;
                    (start..end).collect()
                }
            };
        };
        let Some(key) = self.key(first) else {
            return Vec::new();
        };
        let rest: Vec<(Key<'_>, bool)> = rest
            .iter()
            .filter_map(|&(c, d)| Some((self.key(c)?, d)))
            .collect();
        let mut walk = Walk {
            matches,
            rest: &rest,
            skip: offset,
            limit,
            out: Vec::with_capacity(limit),
        };
        let done = match key {
            Key::Str(c) => {
                let codes = 0..c.dict.len() as u32;
                let mut go = |code: u32| walk.run(c.postings.rows(code));
                if descending {
                    codes.rev().any(&mut go)
                } else {
                    codes.into_iter().any(&mut go)
                }
            }
            Key::Num(c) => {
                let runs = EqualRuns {
                    column: c,
                    order: &c.order,
                };
                if descending {
                    runs.rev().any(|run| walk.run(run))
                } else {
                    runs.forward().any(|run| walk.run(run))
                }
            }
        };
        if !done {
            let missing: Vec<u32> = (0..self.rows).filter(|&r| !key.has_value(r)).collect();
            walk.run(&missing);
        }
        walk.out
    }
}

/// The first code in `0..n` for which `before` is false (`before` holds for a prefix of codes).
fn partition(n: usize, before: impl Fn(u32) -> bool) -> u32 {
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

/// Emits the matching rows of runs of equal first-key values until the page is full.
struct Walk<'a, 'k> {
    matches: Option<&'a Bits>,
    rest: &'a [(Key<'k>, bool)],
    skip: u64,
    limit: usize,
    out: Vec<u32>,
}

impl Walk<'_, '_> {
    /// Takes what the page needs of `run` (rows ascending); true when the page is full.
    fn run(&mut self, run: &[u32]) -> bool {
        let matching = |r: &&u32| self.matches.is_none_or(|m| m.contains(**r));
        if self.rest.is_empty() || run.len() < 2 {
            for &row in run.iter().filter(matching) {
                if self.skip > 0 {
                    self.skip -= 1;
                } else {
                    self.out.push(row);
                    if self.out.len() >= self.limit {
                        return true;
                    }
                }
            }
            return self.out.len() >= self.limit;
        }
        let mut rows: Vec<u32> = run.iter().filter(matching).copied().collect();
        if (rows.len() as u64) <= self.skip {
            self.skip -= rows.len() as u64;
            return false;
        }
        rows.sort_by(|&a, &b| {
            self.rest
                .iter()
                .map(|&(key, descending)| key.compare(a, b, descending))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
                .then(a.cmp(&b))
        });
        for row in rows.into_iter().skip(self.skip as usize) {
            self.skip = 0;
            self.out.push(row);
            if self.out.len() >= self.limit {
                return true;
            }
        }
        self.skip = 0;
        false
    }
}

/// The runs of equal values in a number column's order; each run is in file order.
struct EqualRuns<'a> {
    column: &'a NumColumn,
    order: &'a [u32],
}

impl<'a> EqualRuns<'a> {
    fn value(&self, i: usize) -> f64 {
        self.column.values.get(self.order[i] as usize)
    }

    /// The runs from the largest value down, each still in file order.
    fn rev(self) -> impl Iterator<Item = &'a [u32]> {
        let mut end = self.order.len();
        std::iter::from_fn(move || {
            if end == 0 {
                return None;
            }
            let v = self.value(end - 1);
            let mut start = end - 1;
            while start > 0 && self.value(start - 1) == v {
                start -= 1;
            }
            let run = &self.order[start..end];
            end = start;
            Some(run)
        })
    }

    /// The runs from the smallest value up.
    fn forward(self) -> impl Iterator<Item = &'a [u32]> {
        let mut start = 0;
        std::iter::from_fn(move || {
            if start >= self.order.len() {
                return None;
            }
            let v = self.value(start);
            let mut end = start + 1;
            while end < self.order.len() && self.value(end) == v {
                end += 1;
            }
            let run = &self.order[start..end];
            start = end;
            Some(run)
        })
    }
}
