//! The statistics of one group's values (sum, average, extremes, missing, percentiles),
//! computed the same way for both engines: values summed in ascending order, so a sum does not
//! depend on the order a store returned rows in; percentiles interpolated like SQL's
//! `percentile_cont`.

use super::views::{NumericStats, Percentiles};

/// Sum, average, extremes, missing count and percentiles `labels` of one group's values
/// (`count` records).
pub fn numeric_stats(mut values: Vec<f64>, labels: &[f64], count: u64) -> NumericStats {
    values.sort_unstable_by(f64::total_cmp);
    numeric_stats_sorted(&values, labels, count)
}

/// [`numeric_stats`] of values already in ascending order (summed in that order).
pub fn numeric_stats_sorted(values: &[f64], labels: &[f64], count: u64) -> NumericStats {
    let sum: f64 = values.iter().sum();
    let n = values.len();
    NumericStats {
        sum,
        avg: (n > 0).then(|| sum / n as f64),
        min: values.first().copied(),
        max: values.last().copied(),
        missing: count.saturating_sub(n as u64),
        percentiles: Percentiles(labels.iter().map(|&p| (p, percentile(values, p))).collect()),
    }
}

/// Linear interpolation between closest ranks of sorted values (SQL `percentile_cont`, numpy's
/// default).
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    percentile_at(sorted.len(), p, |k| sorted[k])
}

/// [`percentile`] of `len` values known by rank (`ranked(k)`: the k-th smallest, from 0), for
/// values held as counts.
pub fn percentile_at(len: usize, p: f64, ranked: impl Fn(usize) -> f64) -> Option<f64> {
    let last = len.checked_sub(1)?;
    let rank = p / 100.0 * last as f64;
    let low = rank.floor() as usize;
    let high = rank.ceil() as usize;
    let fraction = rank - low as f64;
    let (at_low, at_high) = (ranked(low), ranked(high));
    Some(at_low + (at_high - at_low) * fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 25.0), Some(1.75));
        assert_eq!(percentile(&v, 50.0), Some(2.5));
        assert_eq!(percentile(&v, 75.0), Some(3.25));
        assert_eq!(percentile(&[7.0], 50.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn empty_groups_have_zero_sum_and_null_statistics() {
        let s = numeric_stats(Vec::new(), &[25.0, 50.0, 75.0], 3);
        assert_eq!(s.sum, 0.0);
        assert_eq!(s.avg, None);
        assert_eq!(s.missing, 3);
        assert_eq!(s.percentiles.get(50.0), Some(None));
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["sum"], serde_json::json!(0));
        assert!(json["min"].is_null());
    }
}
