//! Grouped statistics of an integer column by counting: one pass over the matching
//! rows in file order adds each value to its group's histogram, where the general method walks
//! the column's value order and reads every row's group at random. Sums, extremes and
//! percentiles read off the counts are those of the sorted values bit for bit: the values are
//! integers whose every partial sum is exact in `f64`, and percentiles interpolate between the
//! same two ranked values ([`percentile_at`]).

use super::bits::Bits;
use super::column::{Code, Codes, NumColumn, Numbers};
use crate::answer::percentiles::{numeric_stats_sorted, percentile_at};
use crate::answer::views::{NumericStats, Percentiles};

/// Widest range of values (`max - min + 1`) counted this way.
const MAX_SPAN: i64 = 1 << 16;
/// Most counters (groups × span) one request may allocate (16 MiB of `u32`).
const MAX_CELLS: usize = 1 << 22;

/// The statistics of `numbers` per group (`ids`: each row's group, [`MISSING`] for none;
/// `counts`: each group's matching rows) among `matches`, or `None` when the column is not
/// integers in a small enough range for counting.
pub(super) fn group_stats(
    numbers: &NumColumn,
    ids: &Codes,
    counts: &[u64],
    matches: Option<&Bits>,
    labels: &[f64],
) -> Option<Vec<Option<NumericStats>>> {
    if matches!(numbers.values, Numbers::F32(_) | Numbers::F64(_)) {
        return None;
    }
    let (first, last) = (numbers.order.first()?, numbers.order.last()?);
    let (low, high) = (
        numbers.values.get(first as usize) as i64,
        numbers.values.get(last as usize) as i64,
    );
    let span = high - low + 1;
    let groups = counts.len();
    let largest = low.unsigned_abs().max(high.unsigned_abs()) as f64;
    if span > MAX_SPAN
        || groups.saturating_mul(span as usize) > MAX_CELLS
        || largest * ids.len() as f64 >= 2f64.powi(53)
    {
        return None;
    }
    let mut cells = vec![0u32; groups * span as usize];
    let fill = Fill {
        values: &numbers.values,
        matches,
        low,
        span: span as usize,
    };
    match ids {
        Codes::U8(g) => fill.run(g, &mut cells),
        Codes::U16(g) => fill.run(g, &mut cells),
        Codes::U32(g) => fill.run(g, &mut cells),
    }
    Some(
        cells
            .chunks(span as usize)
            .zip(counts)
            .map(|(histogram, &count)| (count > 0).then(|| stats(histogram, low, count, labels)))
            .collect(),
    )
}

/// Counting matching rows into per-group histograms of `span` cells from value `low`.
struct Fill<'a> {
    values: &'a Numbers,
    matches: Option<&'a Bits>,
    low: i64,
    span: usize,
}

impl Fill<'_> {
    /// Counts each matching row with a value and a group (`ids`, one code type: the loop is
    /// compiled once per value and code type, with no choice inside).
    fn run<G: Code>(&self, ids: &[G], cells: &mut [u32]) {
        let (low, span) = (self.low, self.span);
        let mut place = move |row: usize, value: i64| {
            let g = ids[row];
            if g != G::NONE {
                cells[g.wide() as usize * span + (value - low) as usize] += 1;
            }
        };
        match self.values {
            Numbers::I8(v) => count(v, i8::MIN, self.matches, &mut place),
            Numbers::I16(v) => count(v, i16::MIN, self.matches, &mut place),
            Numbers::I32(v) => count(v, i32::MIN, self.matches, &mut place),
            Numbers::F32(_) | Numbers::F64(_) => unreachable!("floats were turned away above"),
        }
    }
}

/// Calls `add(row, value)` for each matching row that has a value, in file order.
fn count<T: Copy + PartialEq + Into<i64>>(
    values: &[T],
    missing: T,
    matches: Option<&Bits>,
    mut add: impl FnMut(usize, i64),
) {
    let mut visit = |row: usize| {
        let value = values[row];
        if value != missing {
            add(row, value.into());
        }
    };
    match matches {
        None => (0..values.len()).for_each(visit),
        Some(m) => m.iter().for_each(|row| visit(row as usize)),
    }
}

/// One group's statistics from its histogram (values `low`, `low + 1`, …).
fn stats(histogram: &[u32], low: i64, count: u64, labels: &[f64]) -> NumericStats {
    let n: u64 = histogram.iter().map(|&c| u64::from(c)).sum();
    if n == 0 {
        return numeric_stats_sorted(&[], labels, count);
    }
    let value = |i: usize| (low + i as i64) as f64;
    let sum: i128 = histogram
        .iter()
        .enumerate()
        .map(|(i, &c)| i128::from(low + i as i64) * i128::from(c))
        .sum();
    let sum = sum as f64;
    let first = histogram.iter().position(|&c| c > 0).expect("n > 0");
    let last = histogram.iter().rposition(|&c| c > 0).expect("n > 0");
    // The value of rank `k` (0-based) in sorted order.
    let ranked = |k: usize| {
        let mut seen = 0usize;
        for (i, &c) in histogram.iter().enumerate() {
            seen += c as usize;
            if seen > k {
                return value(i);
            }
        }
        value(last)
    };
    NumericStats {
        sum,
        avg: Some(sum / n as f64),
        min: Some(value(first)),
        max: Some(value(last)),
        missing: count.saturating_sub(n),
        percentiles: Percentiles(
            labels
                .iter()
                .map(|&p| (p, percentile_at(n as usize, p, ranked)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::memory::column::MISSING;

    /// Against the general method: each group's values sorted, then summed and ranked.
    #[test]
    fn counts_give_the_sorted_values_statistics() {
        let labels = [0.0, 12.5, 25.0, 50.0, 90.0, 99.9, 100.0];
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for (low, span) in [(-3i64, 7u64), (-130, 400), (2013, 10), (-40_000, 60_000)] {
            let rows = 2_000;
            let values: Vec<f64> = (0..rows)
                .map(|_| match next(10) {
                    0 => f64::NAN,
                    _ => (low + next(span) as i64) as f64,
                })
                .collect();
            let ids: Vec<u32> = (0..rows)
                .map(|_| match next(8) {
                    0 => MISSING,
                    g => g as u32 - 1,
                })
                .collect();
            let mut counts = vec![0u64; 7];
            ids.iter()
                .filter(|&&g| g != MISSING)
                .for_each(|&g| counts[g as usize] += 1);
            counts[6] = 0; // a group without rows
            let column = NumColumn::new(values.clone());
            let got = group_stats(&column, &Codes::U32(ids.clone()), &counts, None, &labels)
                .expect("integers");
            for (g, got) in got.iter().enumerate() {
                let mut sorted: Vec<f64> = (0..rows)
                    .filter(|&r| ids[r] == g as u32 && !values[r].is_nan())
                    .map(|r| values[r])
                    .collect();
                sorted.sort_by(f64::total_cmp);
                let want =
                    (counts[g] > 0).then(|| numeric_stats_sorted(&sorted, &labels, counts[g]));
                assert_eq!(got, &want, "group {g} of values from {low}");
            }
        }
        let floats = NumColumn::new(vec![0.5, 1.0]);
        assert!(group_stats(&floats, &Codes::U8(vec![0, 0]), &[2], None, &labels).is_none());
    }
}
