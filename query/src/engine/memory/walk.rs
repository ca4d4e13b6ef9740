//! The sorted walk of a page on the in-memory index: the sort keys' columns, and the runs of
//! equal first-key values walked in order (each run in file order, sorted by the other keys
//! when it has more than one row) until the page is full. A page starts either an offset into
//! the matches or, for a cursor (contract §13.2), right after a given row, whose run is found
//! by a binary search.

use std::cmp::Ordering;

use super::column::{IdColumn, MISSING, NumColumn, StrColumn};
use super::rows::{Bits, Rows};
use super::select::partition;
use super::{FieldIndex, MemIndex};
use crate::dataset::schema::Column;

/// Where a page starts.
#[derive(Clone, Copy)]
enum Start {
    /// After this many matches.
    Offset(u64),
    /// After this row.
    After(u32),
}

/// A sort key's column.
#[derive(Clone, Copy)]
pub(super) enum Key<'a> {
    Id(&'a IdColumn),
    Str(&'a StrColumn),
    Num(&'a NumColumn),
}

impl Key<'_> {
    pub(super) fn has_value(self, row: u32) -> bool {
        match self {
            Key::Id(_) => true,
            Key::Str(c) => c.codes.get(row as usize) != MISSING,
            Key::Num(c) => !c.values.get(row as usize).is_nan(),
        }
    }

    /// SQL's `(c IS NULL), c [DESC]`.
    pub(super) fn compare(self, a: u32, b: u32, descending: bool) -> Ordering {
        let ordered = |x: Ordering| if descending { x.reverse() } else { x };
        match self {
            Key::Id(c) => ordered(c.compare(a, b)),
            Key::Str(c) => {
                let (x, y) = (c.codes.get(a as usize), c.codes.get(b as usize));
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
    pub(super) fn key(&self, column: Column) -> Option<Key<'_>> {
        match column {
            Column::Id => Some(Key::Id(&self.id)),
            Column::Field(i) => match &self.fields[i] {
                FieldIndex::Str(c) => Some(Key::Str(c)),
                FieldIndex::Num(c) => Some(Key::Num(c)),
                FieldIndex::Id => Some(Key::Id(&self.id)),
                _ => None,
            },
        }
    }

    /// Rows `offset..offset + limit` of the matches in `sort` order (then file order).
    pub(crate) fn page(
        &self,
        matches: Option<&Bits>,
        sort: &[(Column, bool)],
        offset: u64,
        limit: u64,
    ) -> Vec<u32> {
        self.walk_page(matches.as_slice(), sort, Start::Offset(offset), limit)
    }

    /// [`page`](Self::page) of the rows in every one of `sets` (none: every row), their
    /// intersection never made: each row the sorted walk meets is looked up in each set.
    pub(crate) fn page_within(
        &self,
        sets: &[&Bits],
        sort: &[(Column, bool)],
        offset: u64,
        limit: u64,
    ) -> Vec<u32> {
        self.walk_page(sets, sort, Start::Offset(offset), limit)
    }

    /// The `limit` matches that come after row `after` in `sort` order (then file order): a
    /// cursor's page (contract §13.2). The walk starts at `after`'s own run of equal first-key
    /// values, found by a binary search, so a deep page costs what the first one does.
    pub(crate) fn page_after(
        &self,
        matches: Option<&Bits>,
        sort: &[(Column, bool)],
        after: u32,
        limit: u64,
    ) -> Vec<u32> {
        self.walk_page(matches.as_slice(), sort, Start::After(after), limit)
    }

    /// A page in `sort` order, walked run by run of equal first-key values.
    fn walk_page(
        &self,
        matches: &[&Bits],
        sort: &[(Column, bool)],
        start: Start,
        limit: u64,
    ) -> Vec<u32> {
        let limit = limit.min(u64::from(self.rows)) as usize;
        let Some((&(first, descending), rest)) = sort.split_first() else {
            return self.file_order_page(matches, start, limit);
        };
        let Some(key) = self.key(first) else {
            return Vec::new();
        };
        let rest: Vec<(Key<'_>, bool)> = rest
            .iter()
            .filter_map(|&(c, d)| Some((self.key(c)?, d)))
            .collect();
        let (skip, after) = match start {
            Start::Offset(offset) => (offset, None),
            Start::After(after) => (0, Some(after)),
        };
        let mut walk = Walk {
            matches,
            rest: &rest,
            skip,
            after,
            limit,
            out: Vec::with_capacity(limit),
        };
        // Where the walk starts: the first run, or `after`'s; past every run when `after`
        // lacks the first key (its run is the last, of the rows without it).
        let after_missing = after.is_some_and(|r| !key.has_value(r));
        let done = after_missing || walk.runs(key, after, descending);
        // Then the rows without the first key, the last run. A column known to have none
        // (ids; numbers whose order holds every row) skips it: the last page of a request is
        // never full, and looking for them would read every row.
        let none_missing = match key {
            Key::Id(_) => true,
            Key::Num(c) => c.order.len() == self.rows as usize,
            Key::Str(_) => false,
        };
        if (!done || after_missing) && !none_missing {
            self.walk_missing(&mut walk, key, after_missing);
        }
        walk.out
    }

    /// A page without a sort: the matches in file order, from an offset or after a row.
    fn file_order_page(&self, matches: &[&Bits], start: Start, limit: usize) -> Vec<u32> {
        match (start, matches) {
            (Start::Offset(offset), []) => {
                let start = offset.min(u64::from(self.rows)) as u32;
                let end = (u64::from(start) + limit as u64).min(u64::from(self.rows)) as u32;
                (start..end).collect()
            }
            (Start::Offset(offset), [m]) => m.iter_from(offset).take(limit).collect(),
            (Start::Offset(offset), [m, others @ ..]) => {
                let mut both = (*m).clone();
                others.iter().for_each(|o| both.intersect(o));
                both.iter_from(offset).take(limit).collect()
            }
            (Start::After(after), _) => (after.saturating_add(1)..self.rows)
                .filter(|&r| in_all(matches, r))
                .take(limit)
                .collect(),
        }
    }

    /// The last run, of the rows without the first key.
    fn walk_missing(&self, walk: &mut Walk<'_, '_>, key: Key<'_>, after_missing: bool) {
        if walk.rest.is_empty() {
            // In file order: read lazily, from the cursor's row when it is one of them.
            let from = match walk.after.take() {
                Some(row) if after_missing => row.saturating_add(1),
                _ => 0,
            };
            let missing = (from..self.rows).filter(|&r| !key.has_value(r));
            walk.run(0, missing);
        } else {
            let missing: Vec<u32> = (0..self.rows).filter(|&r| !key.has_value(r)).collect();
            walk.run(missing.len(), missing.into_iter());
        }
    }
}

/// Whether `row` is in every one of `sets`.
#[inline]
fn in_all(sets: &[&Bits], row: u32) -> bool {
    sets.iter().all(|s| s.contains(row))
}

/// Emits the matching rows of runs of equal first-key values until the page is full.
struct Walk<'a, 'k> {
    /// The rows a page may hold are in each of these (none: every row).
    matches: &'a [&'a Bits],
    rest: &'a [(Key<'k>, bool)],
    skip: u64,
    /// A cursor's row: the first run walked is its own, of which only the rows after it (by
    /// the other keys, then position) are taken.
    after: Option<u32>,
    limit: usize,
    out: Vec<u32>,
}

impl Walk<'_, '_> {
    /// Walks the runs of the rows holding the first key, from `after`'s run or the first;
    /// true when the page is full.
    fn runs(&mut self, key: Key<'_>, after: Option<u32>, descending: bool) -> bool {
        match key {
            Key::Id(c) => self.id_runs(c, after, descending),
            Key::Str(c) => self.str_runs(c, after, descending),
            Key::Num(c) => self.num_runs(c, after, descending),
        }
    }

    /// Ids are unique: each is a run of one row, in the column's sorted order.
    fn id_runs(&mut self, c: &IdColumn, after: Option<u32>, descending: bool) -> bool {
        let sorted = c.sorted();
        let n = sorted.len();
        let at =
            after.map(|r| partition(n, |i| c.compare(sorted.get(i as usize), r).is_lt()) as usize);
        let mut go = |i: usize| self.run(1, std::iter::once(sorted.get(i)));
        if descending {
            (0..at.map_or(n, |i| i + 1)).rev().any(&mut go)
        } else {
            (at.unwrap_or(0)..n).any(&mut go)
        }
    }

    /// A keyword's runs are its values' postings, in the order of the dictionary's codes.
    fn str_runs(&mut self, c: &StrColumn, after: Option<u32>, descending: bool) -> bool {
        let at = after.map(|r| c.codes.get(r as usize));
        let mut go = |code: u32| match c.dense(code) {
            Some(bits) => self.run(c.postings.len(code) as usize, bits.iter()),
            None => {
                let rows = c.postings.rows(code);
                self.run(rows.len(), rows.iter())
            }
        };
        let n = c.dict.len() as u32;
        if descending {
            (0..at.map_or(n, |code| code + 1)).rev().any(&mut go)
        } else {
            (at.unwrap_or(0)..n).any(&mut go)
        }
    }

    /// A number's runs are its equal values along the column's order.
    fn num_runs(&mut self, c: &NumColumn, after: Option<u32>, descending: bool) -> bool {
        let runs = EqualRuns { column: c };
        let n = c.order.len();
        let v = after.map(|r| c.values.get(r as usize));
        if descending {
            let end = v.map_or(n, |v| {
                partition(n, |i| runs.value(i as usize) <= v) as usize
            });
            runs.rev_from(end)
                .any(|run| self.run(run.len(), run.iter()))
        } else {
            let start = v.map_or(0, |v| partition(n, |i| runs.value(i as usize) < v) as usize);
            runs.forward_from(start)
                .any(|run| self.run(run.len(), run.iter()))
        }
    }

    /// Takes what the page needs of `run` (`len` rows, ascending); true when the page is full.
    fn run(&mut self, len: usize, run: impl Iterator<Item = u32>) -> bool {
        let matching = |r: &u32| in_all(self.matches, *r);
        if let Some(after) = self.after.take() {
            let rest = self.rest;
            let order = |a: u32, b: u32| {
                rest.iter()
                    .map(|&(key, descending)| key.compare(a, b, descending))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
                    .then(a.cmp(&b))
            };
            let mut rows: Vec<u32> = run
                .filter(matching)
                .filter(|&r| order(r, after) == Ordering::Greater)
                .collect();
            rows.sort_by(|&a, &b| order(a, b));
            for row in rows {
                self.out.push(row);
                if self.out.len() >= self.limit {
                    return true;
                }
            }
            return false;
        }
        if self.rest.is_empty() || len < 2 {
            for row in run.filter(matching) {
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
        let mut rows: Vec<u32> = run.filter(matching).collect();
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

impl NumColumn {
    /// The value most rows hold and how many hold it (the smallest such value on a tie), run
    /// by run of equal values, each run's end found by a galloping search: a column of few
    /// distinct values costs a few searches, not a pass over its rows.
    pub(crate) fn mode(&self) -> Option<(f64, u64)> {
        let mut best: Option<(f64, u64)> = None;
        for run in (EqualRuns { column: self }).forward_from(0) {
            let count = run.len() as u64;
            if best.is_none_or(|(_, most)| count > most) {
                let row = run.first().expect("a run holds a row");
                best = Some((self.values.get(row as usize), count));
            }
        }
        best
    }
}

/// The runs of equal values in a number column's order; each run is in file order. A run's
/// far end is found by galloping, so long runs of small integers cost a few look-ups each.
struct EqualRuns<'a> {
    column: &'a NumColumn,
}

impl<'a> EqualRuns<'a> {
    fn value(&self, i: usize) -> f64 {
        self.column.values.get(self.column.order.get(i) as usize)
    }

    /// The first index in `from..to` whose value differs from `v`, searching outwards from
    /// `from` (values are ordered, so equal ones are contiguous).
    fn run_end(&self, from: usize, to: usize, v: f64) -> usize {
        let (mut low, mut step) = (from, 1);
        // Invariant: every index below `low` holds `v`.
        while low + step < to && self.value(low + step) == v {
            low += step;
            step *= 2;
        }
        let mut high = (low + step).min(to);
        low += 1;
        while low < high {
            let mid = low + (high - low) / 2;
            if self.value(mid) == v {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        low
    }

    /// The first index of the run ending at `end` (exclusive), holding `v`.
    fn run_start(&self, end: usize, v: f64) -> usize {
        let (mut high, mut step) = (end - 1, 1);
        // Invariant: every index from `high` to `end` holds `v`.
        while high >= step && self.value(high - step) == v {
            high -= step;
            step *= 2;
        }
        let mut low = high.saturating_sub(step);
        while low < high {
            let mid = low + (high - low) / 2;
            if self.value(mid) == v {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        high
    }

    /// The runs from the largest value below index `end` down, each still in file order.
    fn rev_from(self, end: usize) -> impl Iterator<Item = Rows<'a>> {
        let mut end = end;
        std::iter::from_fn(move || {
            if end == 0 {
                return None;
            }
            let start = self.run_start(end, self.value(end - 1));
            let run = self.column.order.slice(start..end);
            end = start;
            Some(run)
        })
    }

    /// The runs from index `start` up.
    fn forward_from(self, start: usize) -> impl Iterator<Item = Rows<'a>> {
        let mut start = start;
        let len = self.column.order.len();
        std::iter::from_fn(move || {
            if start >= len {
                return None;
            }
            let end = self.run_end(start, len, self.value(start));
            let run = self.column.order.slice(start..end);
            start = end;
            Some(run)
        })
    }
}
