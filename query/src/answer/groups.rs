//! Groups of an agg answer before and after ordering (contract §6, §12.2). Both engines (the
//! in-memory index and the store's fold) produce [`Tally`] rows, one per group, and [`finish`]
//! orders, cuts and shapes them, so the rules of order, `limit`, `keys` and
//! `ungrouped_records` are written once; [`date_part`] and [`bin`] make key parts the same way
//! on both.
//!
//! The statistics of one group's values (sum, average, extremes, missing, percentiles) are
//! computed the same way for both engines too ([`numeric_stats`]): values summed in ascending
//! order, so a sum does not depend on the order a store returned rows in; percentiles
//! interpolated like SQL's `percentile_cont`.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

use serde_json::Value;

use super::views::{AggResult, Group, NumericStats, Percentiles, Stats, json_number};
use crate::dates;
use crate::error::ApiError;
use crate::request::params::MAX_GROUPS;
use crate::request::{AggQuery, GroupOrder};

/// A part of a group's key, compared by type: strings in byte order, bins as numbers.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum KeyPart {
    Str(String),
    Num(f64),
}

impl Eq for KeyPart {}

impl Hash for KeyPart {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            KeyPart::Str(s) => s.hash(state),
            KeyPart::Num(n) => n.to_bits().hash(state),
        }
    }
}

impl KeyPart {
    /// The order of keys: strings in byte order, numbers as numbers.
    pub(crate) fn compare(&self, other: &KeyPart) -> Ordering {
        match (self, other) {
            (KeyPart::Str(a), KeyPart::Str(b)) => a.cmp(b),
            (KeyPart::Num(a), KeyPart::Num(b)) => a.total_cmp(b),
            (KeyPart::Str(_), KeyPart::Num(_)) => Ordering::Greater,
            (KeyPart::Num(_), KeyPart::Str(_)) => Ordering::Less,
        }
    }

    fn json(&self) -> Value {
        match self {
            KeyPart::Str(s) => Value::String(s.clone()),
            KeyPart::Num(n) => json_number(*n),
        }
    }

    fn text(&self) -> String {
        match self {
            KeyPart::Str(s) => s.clone(),
            KeyPart::Num(n) => json_number(*n).to_string(),
        }
    }
}

/// The key part of a date value under `bucket`: `None` when the text is not a date.
pub(crate) fn date_part(text: &str, bucket: dates::DateBucket) -> Option<KeyPart> {
    bucket.key(dates::parse(text)?).map(KeyPart::Str)
}

/// The lower bound of the bin of `value` of `width` (`-0` written as `0`).
pub(crate) fn bin(value: f64, width: f64) -> f64 {
    let low = (value / width).floor() * width;
    if low == 0.0 { 0.0 } else { low }
}

/// Numbers in the order the answer shows them: `-0` and `0` are one number (both are written
/// `0`; a group without values has the sum of no values, `-0`), so groups tied on them follow
/// the key. The values are never NaN.
fn compare_numbers(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b).unwrap_or_else(|| a.total_cmp(&b))
}

/// One group before ordering: its key (whatever the path identifies groups by), its records
/// and the statistics of `field`.
pub(crate) struct Tally<K> {
    pub key: K,
    pub count: u64,
    pub numeric: Option<NumericStats>,
}

/// Refuses an answer of more than [`MAX_GROUPS`] groups without `limit` (contract §12.2).
pub(crate) fn check_group_count(groups: u64, query: &AggQuery) -> Result<(), ApiError> {
    if groups > MAX_GROUPS && query.limit.is_none() {
        return Err(ApiError::TooManyGroups {
            groups,
            max: MAX_GROUPS,
        });
    }
    Ok(())
}

/// The answer: groups in the request's order (ties by key ascending), the first `limit` of
/// them, each with its key parts rendered by `parts`.
pub(crate) fn finish<K>(
    query: &AggQuery,
    total_records: u64,
    mut groups: Vec<Tally<K>>,
    compare_keys: impl Fn(&K, &K) -> Ordering,
    parts: impl Fn(&K) -> Vec<KeyPart>,
) -> AggResult {
    let grouped: u64 = groups.iter().map(|g| g.count).sum();
    // Groups too small for `min_count` are left out after `grouped` is summed: their records
    // have a group, so they are not `ungrouped_records`.
    groups.retain(|g| query.keeps(g.count));
    let stat = |g: &Tally<K>| -> Option<f64> {
        let n = g.numeric.as_ref()?;
        match query.order {
            GroupOrder::Sum => Some(n.sum),
            GroupOrder::Avg => n.avg,
            GroupOrder::Min => n.min,
            GroupOrder::Max => n.max,
            GroupOrder::Percentile(i) => n.percentiles.0.get(i).and_then(|(_, v)| *v),
            GroupOrder::Count | GroupOrder::Key => None,
        }
    };
    let direct = |o: Ordering| if query.descending { o.reverse() } else { o };
    groups.sort_by(|a, b| {
        let first = match query.order {
            GroupOrder::Count => direct(a.count.cmp(&b.count)),
            GroupOrder::Key => direct(compare_keys(&a.key, &b.key)),
            _ => match (stat(a), stat(b)) {
                (Some(x), Some(y)) => direct(compare_numbers(x, y)),
                (x, y) => x.is_none().cmp(&y.is_none()),
            },
        };
        first.then_with(|| compare_keys(&a.key, &b.key))
    });
    let total_groups = groups.len() as u64;
    if let Some(limit) = query.limit {
        groups.truncate(limit.min(total_groups) as usize);
    }
    let groups = groups
        .into_iter()
        .map(|g| {
            let parts = parts(&g.key);
            let key = parts
                .iter()
                .map(KeyPart::text)
                .collect::<Vec<_>>()
                .join(" | ");
            let keys = query
                .group_by
                .iter()
                .zip(&parts)
                .map(|(item, part)| (item.label.clone(), part.json()))
                .collect();
            Group {
                key,
                keys,
                stats: Stats {
                    count: g.count,
                    numeric: g.numeric,
                },
            }
        })
        .collect();
    AggResult {
        total_records,
        total_groups,
        ungrouped_records: total_records.saturating_sub(grouped),
        groups,
    }
}

// One group's statistics.

/// Sum, average, extremes, missing count and percentiles `labels` of one group's values
/// (`count` records).
pub(crate) fn numeric_stats(mut values: Vec<f64>, labels: &[f64], count: u64) -> NumericStats {
    values.sort_unstable_by(f64::total_cmp);
    numeric_stats_sorted(&values, labels, count)
}

/// [`numeric_stats`] of values already in ascending order (summed in that order).
pub(crate) fn numeric_stats_sorted(values: &[f64], labels: &[f64], count: u64) -> NumericStats {
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
pub(crate) fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    percentile_at(sorted.len(), p, |k| sorted[k])
}

/// [`percentile`] of `len` values known by rank (`ranked(k)`: the k-th smallest, from 0), for
/// values held as counts.
pub(crate) fn percentile_at(len: usize, p: f64, ranked: impl Fn(usize) -> f64) -> Option<f64> {
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
    fn groups_tied_on_zero_and_negative_zero_follow_the_key() {
        let query = AggQuery {
            filter: Default::default(),
            group_by: Vec::new(),
            field: Some(0),
            percentiles: vec![50.0],
            order: GroupOrder::Sum,
            descending: false,
            limit: None,
            min_count: None,
        };
        let tally = |key: &str, values: Vec<f64>| Tally {
            key: key.to_string(),
            count: values.len().max(1) as u64,
            numeric: Some(numeric_stats(values, &query.percentiles, 1)),
        };
        // "a" has no values (a sum of nothing, -0); "b" sums to 0; "c" holds -0.0 itself.
        let groups = vec![
            tally("c", vec![-0.0]),
            tally("b", vec![0.0]),
            tally("a", vec![]),
            tally("d", vec![-1.0]),
        ];
        let answer = finish(
            &query,
            4,
            groups,
            |a, b| a.cmp(b),
            |k| vec![KeyPart::Str(k.clone())],
        );
        let keys: Vec<&str> = answer.groups.iter().map(|g| g.key.as_str()).collect();
        assert_eq!(keys, ["d", "a", "b", "c"]);
    }

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
