//! Grouped statistics on an in-memory index (contract §6, §12.2). Each `group_by` item becomes
//! a per-row code whose order is the key's order (a keyword's dictionary code, a date bucket's
//! rank, a number bin's rank); several items are combined pairwise into dense group ids. Counts
//! come from those ids (or, for one keyword over every row, its row lists); with `field`, an
//! integer column is counted into per-group histograms ([`group_stats`]), any other is
//! walked in value order once with each match placed in its group's slice, so every group's
//! values arrive sorted. Either way the statistics are those of the store path, bit for bit.

use std::borrow::Cow;
use std::collections::HashMap;

mod counting;

use counting::group_stats;

use super::column::{Codes, MISSING, NumColumn, Postings, StrColumn};
use super::rows::Bits;
use super::{FieldIndex, MemIndex};
use crate::answer::groups::{
    KeyPart, Tally, bin, check_group_count, date_part, finish, numeric_stats_sorted,
};
use crate::answer::views::{AggResult, NumericStats};
use crate::error::ApiError;
use crate::request::{AggQuery, Grouping};

/// One `group_by` item as codes: per row, the rank of its key part ([`MISSING`] when the row
/// has none), and each rank's part. A keyword's codes are the column's own, borrowed, and its
/// row lists count its groups when every row is asked for.
struct Component<'a> {
    codes: Cow<'a, Codes>,
    parts: Vec<KeyPart>,
    rows: Option<&'a Postings>,
}

/// Codes up to this product are combined through a table instead of a hash map.
const DENSE_PAIRS: u64 = 1 << 22;

impl<'a> Component<'a> {
    /// A keyword column: its own codes (already in byte order).
    fn keyword(column: &'a StrColumn) -> Self {
        Component {
            codes: Cow::Borrowed(&column.codes),
            parts: (0..column.dict.len() as u32)
                .map(|c| KeyPart::Str(column.dict.get(c).to_string()))
                .collect(),
            rows: Some(&column.postings),
        }
    }

    /// A date column in buckets: each dictionary value's bucket, ranked in key order.
    fn dates(column: &StrColumn, bucket: crate::dates::DateBucket) -> Self {
        let keys: Vec<Option<KeyPart>> = (0..column.dict.len() as u32)
            .map(|c| date_part(column.dict.get(c), bucket))
            .collect();
        let mut parts: Vec<KeyPart> = keys.iter().flatten().cloned().collect();
        parts.sort_by(KeyPart::compare);
        parts.dedup();
        let rank: Vec<u32> = keys
            .iter()
            .map(|key| {
                key.as_ref()
                    .and_then(|part| parts.binary_search_by(|p| p.compare(part)).ok())
                    .map_or(MISSING, |i| i as u32)
            })
            .collect();
        let codes = (0..column.codes.len())
            .map(|row| match column.codes.get(row) {
                MISSING => MISSING,
                c => rank[c as usize],
            })
            .collect();
        Component {
            codes: Cow::Owned(Codes::U32(codes)),
            parts,
            rows: None,
        }
    }

    /// A number column in bins of `width`: walking the values in order gives the bins in order.
    fn bins(column: &NumColumn, width: f64) -> Self {
        let mut codes = vec![MISSING; column.values.len()];
        let mut parts: Vec<KeyPart> = Vec::new();
        let mut last = f64::NAN;
        for row in column.order.all().iter() {
            let low = bin(column.values.get(row as usize), width);
            if low != last {
                parts.push(KeyPart::Num(low));
                last = low;
            }
            codes[row as usize] = parts.len() as u32 - 1;
        }
        Component {
            codes: Cow::Owned(Codes::U32(codes)),
            parts,
            rows: None,
        }
    }
}

impl MemIndex {
    /// Each `group_by` item as codes; `None` when a field is not indexed in the shape its
    /// grouping needs.
    fn components(&self, query: &AggQuery) -> Option<Vec<Component<'_>>> {
        query
            .group_by
            .iter()
            .map(|item| match (&self.fields[item.field], item.grouping) {
                (FieldIndex::Str(c), Grouping::Value) => Some(Component::keyword(c)),
                (FieldIndex::Str(c), Grouping::Date(bucket)) => Some(Component::dates(c, bucket)),
                (FieldIndex::Num(c), Grouping::Bin(width)) => Some(Component::bins(c, width)),
                _ => None,
            })
            .collect()
    }

    /// The answer to `query` among `matches` (`None`: every row). `None` when a field is not
    /// indexed in the shape its type needs (the store answers).
    pub(crate) fn agg(
        &self,
        matches: Option<&Bits>,
        query: &AggQuery,
    ) -> Option<Result<AggResult, ApiError>> {
        let components = self.components(query)?;
        let numbers = match query.field {
            None => None,
            Some(field) => match &self.fields[field] {
                FieldIndex::Num(c) => Some(c),
                _ => return None,
            },
        };
        // Group ids per row, and per group its parts' codes (one row of `widths` each).
        let (ids, keys) = combine(
            &components
                .iter()
                .map(|c| (&*c.codes, c.parts.len()))
                .collect::<Vec<_>>(),
        );
        let width = components.len();
        let distinct = keys.len() / width;
        // Every row by one keyword: the groups' counts are its row lists' lengths.
        let rows_per_code = match &components[..] {
            [only] if matches.is_none() => only.rows,
            _ => None,
        };
        let counts = group_counts(&ids, distinct, matches, rows_per_code);
        let present = counts.iter().filter(|&&n| n > 0 && query.keeps(n)).count() as u64;
        if let Err(error) = check_group_count(present, query) {
            return Some(Err(error));
        }
        let total_records = self.total(matches);
        let stats: Vec<Option<_>> = match numbers {
            None => vec![None; distinct],
            Some(numbers) => group_stats(numbers, &ids, &counts, matches, &query.percentiles)
                .unwrap_or_else(|| {
                    by_value_order(numbers, &ids, &counts, matches, &query.percentiles)
                }),
        };
        let tallies = stats
            .into_iter()
            .enumerate()
            .filter(|&(g, _)| counts[g] > 0)
            .map(|(g, numeric)| Tally {
                key: g,
                count: counts[g],
                numeric,
            })
            .collect();
        let codes = |g: &usize| &keys[g * width..(g + 1) * width];
        Some(Ok(finish(
            query,
            total_records,
            tallies,
            |a, b| codes(a).cmp(codes(b)),
            |g| {
                codes(g)
                    .iter()
                    .zip(&components)
                    .map(|(&code, c)| c.parts[code as usize].clone())
                    .collect()
            },
        )))
    }
}

/// The number of matches in each of `distinct` groups, from the group id of each row
/// ([`MISSING`]: in none); `rows_per_code`, when given, holds each group's rows, whose lengths
/// are the counts without reading a row.
fn group_counts(
    ids: &Codes,
    distinct: usize,
    matches: Option<&Bits>,
    rows_per_code: Option<&Postings>,
) -> Vec<u64> {
    let mut counts = vec![0u64; distinct];
    match matches {
        None if let Some(rows) = rows_per_code => counts
            .iter_mut()
            .enumerate()
            .for_each(|(code, n)| *n = u64::from(rows.len(code as u32))),
        None => (0..ids.len())
            .map(|row| ids.get(row))
            .filter(|&g| g != MISSING)
            .for_each(|g| counts[g as usize] += 1),
        Some(m) => {
            for row in m.iter() {
                let g = ids.get(row as usize);
                if g != MISSING {
                    counts[g as usize] += 1;
                }
            }
        }
    }
    counts
}

/// Combines per-row codes of several components (each with its number of codes) into one
/// dense group id per row ([`MISSING`] when any part is missing), and the parts' codes of each
/// group, `width` per group, so that comparing those slices compares keys. One component's
/// codes are its group ids as they are.
fn combine<'a>(columns: &[(&'a Codes, usize)]) -> (Cow<'a, Codes>, Vec<u32>) {
    let (first, distinct) = columns[0];
    if columns.len() == 1 {
        return (Cow::Borrowed(first), (0..distinct as u32).collect());
    }
    let mut ids = first.to_vec();
    let mut keys: Vec<Vec<u32>> = (0..distinct as u32).map(|c| vec![c]).collect();
    for &(column, cardinality) in &columns[1..] {
        let cardinality = cardinality as u64;
        let pairs = keys.len() as u64 * cardinality;
        let mut next_keys: Vec<Vec<u32>> = Vec::new();
        let mut dense = if pairs <= DENSE_PAIRS {
            vec![MISSING; pairs as usize]
        } else {
            Vec::new()
        };
        let mut sparse: HashMap<u64, u32> = HashMap::new();
        for (row, id) in ids.iter_mut().enumerate() {
            let code = column.get(row);
            if *id == MISSING || code == MISSING {
                *id = MISSING;
                continue;
            }
            let pair = u64::from(*id) * cardinality + u64::from(code);
            let slot = if dense.is_empty() {
                sparse.entry(pair).or_insert(MISSING)
            } else {
                &mut dense[pair as usize]
            };
            if *slot == MISSING {
                *slot = next_keys.len() as u32;
                let mut key = keys[*id as usize].clone();
                key.push(code);
                next_keys.push(key);
            }
            *id = *slot;
        }
        keys = next_keys;
    }
    (Cow::Owned(Codes::U32(ids)), keys.concat())
}

/// The statistics of `numbers` per group for any number column: the column is walked in value
/// order and each matching row's value placed in its group's slice (a counting sort), so every
/// group's values arrive sorted and are summed in the store path's order.
fn by_value_order(
    numbers: &NumColumn,
    ids: &Codes,
    counts: &[u64],
    matches: Option<&Bits>,
    labels: &[f64],
) -> Vec<Option<NumericStats>> {
    let matching = |row: u32| matches.is_none_or(|m| m.contains(row));
    let distinct = counts.len();
    let mut starts = vec![0usize; distinct + 1];
    for row in numbers.order.all().iter() {
        let g = ids.get(row as usize);
        if g != MISSING && matching(row) {
            starts[g as usize + 1] += 1;
        }
    }
    for i in 1..starts.len() {
        starts[i] += starts[i - 1];
    }
    let mut next = starts.clone();
    let mut values = vec![0f64; starts[distinct]];
    for row in numbers.order.all().iter() {
        let g = ids.get(row as usize);
        if g != MISSING && matching(row) {
            let slot = &mut next[g as usize];
            values[*slot] = numbers.values.get(row as usize);
            *slot += 1;
        }
    }
    (0..distinct)
        .map(|g| {
            (counts[g] > 0)
                .then(|| numeric_stats_sorted(&values[starts[g]..starts[g + 1]], labels, counts[g]))
        })
        .collect()
}
