//! Filters and page order on an in-memory index, with the store path's exact semantics:
//! exact matches compare typed values, full-text terms are substrings of the lower-cased
//! dictionary values, sorts put missing values last in both directions and break ties by file
//! order.

use std::borrow::Cow;
use std::cmp::Ordering;

use super::bits::Bits;
use super::column::{MISSING, NumColumn, StrColumn};
use super::{FieldIndex, MemIndex};
use crate::query::request::{ExactValue, Filter};
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
            Key::Num(c) => !c.values[row as usize].is_nan(),
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
                let (x, y) = (c.values[a as usize], c.values[b as usize]);
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
        self.column.values[self.order[i] as usize]
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
