//! Integer columns by counting: one pass over the matching rows in file order adds each value
//! to its group's histogram, where the general method walks the column's value order and reads
//! every row's group at random. Sums, extremes and percentiles read off the counts are those of
//! the sorted values bit for bit: the values are integers whose every partial sum is exact in
//! `f64`, and percentiles interpolate between the same two ranked values ([`percentile_at`]).

use crate::answer::groups::{numeric_stats_sorted, percentile_at};
use crate::answer::views::{NumericStats, Percentiles};
use crate::engine::memory::column::{Code, Codes, NumColumn, Numbers};
use crate::engine::memory::rows::Bits;

/// Widest range of values (`max - min + 1`) counted this way.
const MAX_SPAN: i64 = 1 << 16;
/// Most counters (groups × span) one request may allocate (16 MiB of `u32`).
const MAX_CELLS: usize = 1 << 22;

/// The statistics of `numbers` per group (`ids`: each row's group, [`MISSING`] for none;
/// `counts`: each group's matching rows) among `matches`, or `None` when the column is not
/// integers in a small enough range for counting.
///
/// [`MISSING`]: crate::engine::memory::column::MISSING
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
    let span = span as usize;
    let fill = Fill {
        values: &numbers.values,
        matches,
        low,
        span,
    };
    // Each group's counters start `width` after the one before. The small table has one
    // column a value and one more, and one row more: a missing group or value is counted in
    // the extra row or column, then dropped.
    let (cells, width) = match ids {
        Codes::U8(g) if (groups + 1) * (span + 1) <= SMALL_CELLS => {
            let cells = fill.shared(SMALL_CELLS, |cells, rows| {
                let cells = cells.try_into().expect("SMALL_CELLS counters");
                fill.small(g, groups, cells, rows);
            });
            (cells, span + 1)
        }
        _ => {
            let cells = fill.shared(groups * span, |cells, rows| match ids {
                Codes::U8(g) => fill.run(g, cells, rows),
                Codes::U16(g) => fill.run(g, cells, rows),
                Codes::U32(g) => fill.run(g, cells, rows),
            });
            (cells, span)
        }
    };
    Some(
        cells
            .chunks(width)
            .zip(counts)
            .map(|(row, &count)| (count > 0).then(|| stats(&row[..span], low, count, labels)))
            .collect(),
    )
}

/// Counters of [`Fill::small`]: as many as a `u16` indexes, so none is checked against the
/// table's end (256 KiB of `u32`, in the core's second-level cache).
const SMALL_CELLS: usize = 1 << 16;

/// Rows from which one request's counting is shared among the cores: below it, starting a
/// thread costs more than it saves.
const SHARED_FROM_ROWS: usize = 1 << 20;
/// Cores one request's counting uses at most.
const MAX_SHARES: usize = 4;

/// Counting matching rows into per-group histograms of `span` cells from value `low`.
struct Fill<'a> {
    values: &'a Numbers,
    matches: Option<&'a Bits>,
    low: i64,
    span: usize,
}

impl Fill<'_> {
    /// `cells` counters filled by `fill(cells, rows)` over every row: on a large column, each
    /// core counts a contiguous share of the rows into counters of its own, and the counters
    /// are added (counts add up the same in any order, so the answer does not change).
    fn shared(
        &self,
        cells: usize,
        fill: impl Fn(&mut [u32], std::ops::Range<usize>) + Sync,
    ) -> Vec<u32> {
        let rows = self.values.len();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_SHARES));
        let mut total = vec![0u32; cells];
        if rows < SHARED_FROM_ROWS || cores < 2 {
            fill(&mut total, 0..rows);
            return total;
        }
        // Shares start on a multiple of 64, so each reads whole words of `matches`.
        let share = rows.div_ceil(cores).next_multiple_of(64);
        let parts: Vec<Vec<u32>> = std::thread::scope(|scope| {
            let fill = &fill;
            let others: Vec<_> = (1..cores)
                .map(|i| {
                    scope.spawn(move || {
                        let mut cells = vec![0u32; cells];
                        fill(
                            &mut cells,
                            (i * share).min(rows)..((i + 1) * share).min(rows),
                        );
                        cells
                    })
                })
                .collect();
            fill(&mut total, 0..share.min(rows));
            others
                .into_iter()
                .map(|t| t.join().expect("a counting thread"))
                .collect()
        });
        for part in parts {
            for (sum, n) in total.iter_mut().zip(part) {
                *sum += n;
            }
        }
        total
    }

    /// [`Self::run`] for at most 255 groups (`ids`) whose counters, `span + 1` a group and a
    /// row more, fit in [`SMALL_CELLS`]: each row's counter is its group's start (from a table
    /// of 256) plus its value's column, with neither branch nor bound check, so a row costs
    /// a few instructions.
    fn small(
        &self,
        ids: &[u8],
        groups: usize,
        cells: &mut [u32; SMALL_CELLS],
        rows: std::ops::Range<usize>,
    ) {
        let width = self.span + 1;
        // A group's first counter; `u8::NONE`'s is the extra row's.
        let mut start = [0u16; 256];
        for (g, first) in start.iter_mut().enumerate() {
            *first = u16::try_from(g.min(groups) * width).expect("within SMALL_CELLS");
        }
        match self.values {
            Numbers::I8(v) => self.count_small(ids, v, &start, cells, rows),
            Numbers::I16(v) => self.count_small(ids, v, &start, cells, rows),
            Numbers::I32(v) => self.count_small(ids, v, &start, cells, rows),
            Numbers::F32(_) | Numbers::F64(_) => unreachable!("floats were turned away above"),
        }
    }

    fn count_small<T: Copy + Into<i64>>(
        &self,
        ids: &[u8],
        values: &[T],
        start: &[u16; 256],
        cells: &mut [u32; SMALL_CELLS],
        rows: std::ops::Range<usize>,
    ) {
        let (low, last) = (self.low, self.span as u64);
        // A missing value (its type's least) lies below `low`: wrapped, it is past `last`.
        let cell = |g: u8, value: T| {
            let column = (value.into().wrapping_sub(low) as u64).min(last) as u16;
            usize::from(start[usize::from(g)] + column)
        };
        match self.matches {
            None => {
                for (&g, &value) in ids[rows.clone()].iter().zip(&values[rows]) {
                    cells[cell(g, value)] += 1;
                }
            }
            Some(m) => {
                for row in m.iter_within(rows.start, rows.end) {
                    let row = row as usize;
                    cells[cell(ids[row], values[row])] += 1;
                }
            }
        }
    }

    /// Counts each matching row of `rows` with a value and a group (`ids`, one code type: the
    /// loop is compiled once per value and code type, with no choice inside).
    fn run<G: Code>(&self, ids: &[G], cells: &mut [u32], rows: std::ops::Range<usize>) {
        let (low, span) = (self.low, self.span);
        let mut place = move |row: usize, value: i64| {
            let g = ids[row];
            if g != G::NONE {
                cells[g.wide() as usize * span + (value - low) as usize] += 1;
            }
        };
        match self.values {
            Numbers::I8(v) => count(v, i8::MIN, self.matches, rows, &mut place),
            Numbers::I16(v) => count(v, i16::MIN, self.matches, rows, &mut place),
            Numbers::I32(v) => count(v, i32::MIN, self.matches, rows, &mut place),
            Numbers::F32(_) | Numbers::F64(_) => unreachable!("floats were turned away above"),
        }
    }
}

/// Calls `add(row, value)` for each matching row of `rows` that has a value, in file order.
fn count<T: Copy + PartialEq + Into<i64>>(
    values: &[T],
    missing: T,
    matches: Option<&Bits>,
    rows: std::ops::Range<usize>,
    mut add: impl FnMut(usize, i64),
) {
    let mut visit = |row: usize| {
        let value = values[row];
        if value != missing {
            add(row, value.into());
        }
    };
    match matches {
        None => rows.for_each(visit),
        Some(m) => m
            .iter_within(rows.start, rows.end)
            .for_each(|row| visit(row as usize)),
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
            // Small tables of one-byte codes are counted by `Fill::small`, the others by `run`.
            let narrow = ids
                .iter()
                .map(|&g| g.min(u32::from(u8::MAX)) as u8)
                .collect();
            for codes in [Codes::U32(ids.clone()), Codes::U8(narrow)] {
                let got = group_stats(&column, &codes, &counts, None, &labels).expect("integers");
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
        }
        let floats = NumColumn::new(vec![0.5, 1.0]);
        assert!(group_stats(&floats, &Codes::U8(vec![0, 0]), &[2], None, &labels).is_none());
    }

    /// A column large enough to be counted by several cores gives the counters one core gives,
    /// over every row and over a set of rows whose shares do not fall on word boundaries.
    #[test]
    fn shared_counting_equals_one_core() {
        let rows = SHARED_FROM_ROWS + 1_000 + 37;
        let values = Numbers::I16((0..rows).map(|r| (r % 301) as i16 - 150).collect());
        let ids: Vec<u8> = (0..rows).map(|r| (r % 7) as u8).collect();
        let mut some = Bits::new(rows);
        for row in (0..rows as u32).filter(|r| r % 3 == 0 || r % 11 == 1) {
            some.insert(row);
        }
        for matches in [None, Some(&some)] {
            let fill = Fill {
                values: &values,
                matches,
                low: -150,
                span: 301,
            };
            let mut one = vec![0u32; 7 * 301];
            fill.run(&ids, &mut one, 0..rows);
            let shared = fill.shared(7 * 301, |cells, part| fill.run(&ids, cells, part));
            assert_eq!(shared, one);
            // The small table's counters, without its extra row and column, are the same.
            let small = fill.shared(SMALL_CELLS, |cells, part| {
                fill.small(&ids, 7, cells.try_into().expect("a small table"), part)
            });
            let small: Vec<u32> = small
                .chunks(302)
                .take(7)
                .flat_map(|row| row[..301].to_vec())
                .collect();
            assert_eq!(small, one);
            let counted: u64 = one.iter().map(|&n| u64::from(n)).sum();
            assert_eq!(counted, matches.map_or(rows as u64, Bits::count));
        }
    }
}
