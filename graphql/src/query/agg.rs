//! Grouped statistics (contract §6): every group in one answer, ordered by count then key.
//! Counts come from one `GROUP BY`; with `field`, the (group, value) pairs are read once and
//! the statistics are computed here, identically for both stores: values are summed in sorted
//! order so floating-point sums do not depend on the order a store returns rows in.

use std::collections::HashMap;

use sea_orm::ConnectionTrait;

use super::error::ApiError;
use super::request::AggQuery;
use super::schema::Column;
use super::sql::{Access, Sql, from_where};
use super::views::{AggResult, Group, NumericStats, Percentiles, Stats};
use super::{Dataset, Resolver};

impl Resolver {
    /// `GET /datasets/{slug}/agg`.
    pub async fn agg(&self, dataset: &Dataset, query: &AggQuery) -> Result<AggResult, ApiError> {
        if let Some(index) = self.memory_index(dataset).await {
            let matches = index.matches(&query.filter);
            if let Some(groups) = index.groups(matches.as_ref(), query.group_by, query.field) {
                let total_records = index.total(matches.as_ref());
                return Ok(agg_result(total_records, groups));
            }
        }
        let key = self.etag(dataset, "agg", query);
        self.flights
            .agg
            .run(key, self.agg_from_store(dataset, query))
            .await
    }

    /// [`Self::agg`] when no in-memory index answers.
    async fn agg_from_store(
        &self,
        dataset: &Dataset,
        query: &AggQuery,
    ) -> Result<AggResult, ApiError> {
        let schema = &dataset.schema;
        let resolved = self.resolve(schema, &query.filter).await?;
        let total_records = self.count(dataset, &resolved, None).await?;
        let group_column = schema.sql_column(Column::Field(query.group_by));
        let mut groups = Vec::new();
        if !resolved.matches_nothing() && total_records > 0 {
            let mut sql = Sql::new(self.db.get_database_backend());
            match query.field {
                None => {
                    sql.push("SELECT ")
                        .ident(group_column)
                        .push(" AS k, COUNT(*) AS n");
                }
                Some(field) => {
                    sql.push("SELECT ")
                        .ident(group_column)
                        .push(" AS k, ")
                        .ident(schema.sql_column(Column::Field(field)))
                        .push(" AS v");
                }
            }
            from_where(&mut sql, schema, &resolved, Access::Planner);
            sql.push(" AND ").ident(group_column).push(" IS NOT NULL");
            if query.field.is_none() {
                sql.push(" GROUP BY ").ident(group_column);
            }
            let rows = self.db.query_all_raw(sql.build()).await?;
            if query.field.is_none() {
                for row in rows {
                    let key: String = row.try_get("", "k")?;
                    let n: i64 = row.try_get("", "n")?;
                    groups.push(Group {
                        key,
                        stats: Stats {
                            count: n.max(0) as u64,
                            numeric: None,
                        },
                    });
                }
            } else {
                let mut values: HashMap<String, (u64, Vec<f64>)> = HashMap::new();
                for row in rows {
                    let key: String = row.try_get("", "k")?;
                    let value: Option<f64> = row.try_get("", "v")?;
                    let entry = values.entry(key).or_default();
                    entry.0 += 1;
                    if let Some(v) = value {
                        entry.1.push(v);
                    }
                }
                groups = values
                    .into_iter()
                    .map(|(key, (count, values))| Group {
                        key,
                        stats: Stats {
                            count,
                            numeric: Some(numeric_stats(values)),
                        },
                    })
                    .collect();
            }
        }
        Ok(agg_result(total_records, groups))
    }
}

/// The answer: groups ordered by count, then key.
fn agg_result(total_records: u64, mut groups: Vec<Group>) -> AggResult {
    groups.sort_by(|a, b| {
        b.stats
            .count
            .cmp(&a.stats.count)
            .then_with(|| a.key.cmp(&b.key))
    });
    AggResult {
        total_records,
        total_groups: groups.len() as u64,
        groups,
    }
}

/// Sum, average, extremes and quartiles of one group's values.
pub fn numeric_stats(mut values: Vec<f64>) -> NumericStats {
    values.sort_unstable_by(f64::total_cmp);
    numeric_stats_sorted(&values)
}

/// [`numeric_stats`] of values already in ascending order (summed in that order).
pub fn numeric_stats_sorted(values: &[f64]) -> NumericStats {
    let sum: f64 = values.iter().sum();
    let n = values.len();
    NumericStats {
        sum,
        avg: (n > 0).then(|| sum / n as f64),
        min: values.first().copied(),
        max: values.last().copied(),
        percentiles: Percentiles {
            p25: percentile(values, 25.0),
            p50: percentile(values, 50.0),
            p75: percentile(values, 75.0),
        },
    }
}

/// Linear interpolation between closest ranks of sorted values (SQL `percentile_cont`, numpy's
/// default).
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let rank = p / 100.0 * last as f64;
    let low = rank.floor() as usize;
    let high = rank.ceil() as usize;
    let fraction = rank - low as f64;
    Some(sorted[low] + (sorted[high] - sorted[low]) * fraction)
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
        let s = numeric_stats(Vec::new());
        assert_eq!(s.sum, 0.0);
        assert_eq!(s.avg, None);
        assert_eq!(s.percentiles.p50, None);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["sum"], serde_json::json!(0));
        assert!(json["min"].is_null());
    }
}
