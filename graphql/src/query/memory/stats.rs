//! Grouped statistics on an in-memory index (contract §6). Counts come from the group
//! column's codes; with `field`, the number column is walked in value order once and each
//! match is placed in its group's slice, so every group's values arrive sorted and the
//! statistics are those of the store path, bit for bit (same sorted order, same sums).

use super::bits::Bits;
use super::column::MISSING;
use super::{FieldIndex, MemIndex};
use crate::query::agg::numeric_stats_sorted;
use crate::query::views::{Group, Stats};

impl MemIndex {
    /// The groups of keyword field `group_by` among `matches` (`None`: every row), with
    /// statistics of number field `field`; unordered. `None` if the fields are not indexed
    /// as a keyword and a number.
    pub fn groups(
        &self,
        matches: Option<&Bits>,
        group_by: usize,
        field: Option<usize>,
    ) -> Option<Vec<Group>> {
        let FieldIndex::Str(groups) = &self.fields[group_by] else {
            return None;
        };
        let distinct = groups.dict.len();
        let counts: Vec<u64> = match matches {
            None => (0..distinct as u32)
                .map(|c| u64::from(groups.postings.len(c)))
                .collect(),
            Some(m) => {
                let mut counts = vec![0u64; distinct];
                for row in m.iter() {
                    let code = groups.codes[row as usize];
                    if code != MISSING {
                        counts[code as usize] += 1;
                    }
                }
                counts
            }
        };
        let group = |code: usize, numeric| Group {
            key: groups.dict.get(code as u32).to_string(),
            stats: Stats {
                count: counts[code],
                numeric,
            },
        };
        let Some(field) = field else {
            return Some(
                (0..distinct)
                    .filter(|&c| counts[c] > 0)
                    .map(|c| group(c, None))
                    .collect(),
            );
        };
        let FieldIndex::Num(numbers) = &self.fields[field] else {
            return None;
        };
        // Values per group, counted, then placed in value order.
        let matching = |row: u32| matches.is_none_or(|m| m.contains(row));
        let mut starts = vec![0usize; distinct + 1];
        for &row in &numbers.order {
            let code = groups.codes[row as usize];
            if code != MISSING && matching(row) {
                starts[code as usize + 1] += 1;
            }
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut values = vec![0f64; starts[distinct]];
        for &row in &numbers.order {
            let code = groups.codes[row as usize];
            if code != MISSING && matching(row) {
                let slot = &mut next[code as usize];
                values[*slot] = numbers.values[row as usize];
                *slot += 1;
            }
        }
        Some(
            (0..distinct)
                .filter(|&c| counts[c] > 0)
                .map(|c| {
                    let sorted = &values[starts[c]..starts[c + 1]];
                    group(c, Some(numeric_stats_sorted(sorted)))
                })
                .collect(),
        )
    }
}
