//! Grouped statistics (contract §6, §12.2). Both paths (the in-memory index and the store)
//! produce [`Tally`] rows, one per group, and [`finish`] orders, cuts and shapes them, so the
//! rules of order, `limit`, `keys` and `ungrouped_records` are written once. The store path
//! reads its groups by the raw values of the `group_by` columns and buckets them here, with the
//! same functions the index uses; with `field`, it reads the (group, value) pairs once and
//! computes the statistics here, identically for both stores: values are summed in sorted
//! order so floating-point sums do not depend on the order a store returns rows in.

use futures_util::StreamExt;
use rusqlite::types::ValueRef;
use sea_orm::StreamTrait;
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use entity::FieldType;
use sea_orm::ConnectionTrait;
use serde_json::Value;

use crate::dates;
use crate::error::ApiError;
use crate::params::MAX_GROUPS;
use crate::request::{AggQuery, GroupOrder, Grouping};
use crate::schema::{Column, DatasetSchema};
use crate::sql::{Access, Sql, from_where};
use crate::views::{AggResult, Group, NumericStats, Percentiles, Stats, json_number};
use crate::{Dataset, Resolver};

/// A part of a group's key, compared by type: strings in byte order, bins as numbers.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyPart {
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
    pub fn compare(&self, other: &KeyPart) -> Ordering {
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
pub fn date_part(text: &str, bucket: dates::DateBucket) -> Option<KeyPart> {
    bucket.key(dates::parse(text)?).map(KeyPart::Str)
}

/// The lower bound of the bin of `value` of `width` (`-0` written as `0`).
pub fn bin(value: f64, width: f64) -> f64 {
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
pub struct Tally<K> {
    pub key: K,
    pub count: u64,
    pub numeric: Option<NumericStats>,
}

/// Refuses an answer of more than [`MAX_GROUPS`] groups without `limit` (contract §12.2).
pub fn check_group_count(groups: u64, query: &AggQuery) -> Result<(), ApiError> {
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
pub fn finish<K>(
    query: &AggQuery,
    total_records: u64,
    mut groups: Vec<Tally<K>>,
    compare_keys: impl Fn(&K, &K) -> Ordering,
    parts: impl Fn(&K) -> Vec<KeyPart>,
) -> AggResult {
    let grouped: u64 = groups.iter().map(|g| g.count).sum();
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

impl Resolver {
    /// `GET /datasets/{slug}/agg`.
    pub async fn agg(&self, dataset: &Dataset, query: &AggQuery) -> Result<AggResult, ApiError> {
        if let Some(index) = self.memory_index(dataset).await {
            let matches = index.matches(&query.filter);
            if let Some(result) = index.agg(matches.as_ref(), query) {
                return result;
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
        let mut groups = Groups::new();
        if !resolved.matches_nothing() && total_records > 0 {
            let columns: Vec<&str> = query
                .group_by
                .iter()
                .map(|g| schema.sql_column(Column::Field(g.field)))
                .collect();
            // Keyword groups are the store's own groups: more than MAX_GROUPS of them without
            // limit is refused without reading them all.
            let exact_groups = query.field.is_none()
                && query.group_by.iter().all(|g| g.grouping == Grouping::Value);
            let cap = (exact_groups && query.limit.is_none()).then_some(MAX_GROUPS + 1);
            let mut sql = Sql::new(self.db.get_database_backend());
            sql.push("SELECT ");
            for (i, column) in columns.iter().enumerate() {
                sql.ident(column).push(&format!(" AS k{i}, "));
            }
            match query.field {
                None => sql.push("COUNT(*) AS n"),
                Some(field) => sql
                    .ident(schema.sql_column(Column::Field(field)))
                    .push(" AS v"),
            };
            from_where(&mut sql, schema, &resolved, Access::Planner);
            for column in &columns {
                sql.push(" AND ").ident(column).push(" IS NOT NULL");
            }
            if query.field.is_none() {
                sql.push(" GROUP BY ");
                for (i, column) in columns.iter().enumerate() {
                    if i > 0 {
                        sql.push(", ");
                    }
                    sql.ident(column);
                }
                if let Some(cap) = cap {
                    sql.push(" LIMIT ").bind(cap as i64);
                }
            }
            let statement = sql.build();
            let read;
            let records = dataset.meta.record_count;
            (groups, read) = match self.fold_direct(&statement, query, schema, records).await {
                Some(folded) => folded,
                None => self.fold_stream(statement.clone(), query, schema).await?,
            };
            if let Some(cap) = cap
                && read >= cap
            {
                let groups = self.count_store_groups(statement).await?;
                check_group_count(groups, query)?;
            }
        }
        check_group_count(groups.len() as u64, query)?;
        let tallies = groups
            .into_iter()
            .map(|(key, (count, values))| Tally {
                key,
                count,
                numeric: query
                    .field
                    .map(|_| numeric_stats(values, &query.percentiles, count)),
            })
            .collect();
        Ok(finish(
            query,
            total_records,
            tallies,
            |a: &Vec<KeyPart>, b: &Vec<KeyPart>| {
                a.iter()
                    .zip(b)
                    .map(|(x, y)| x.compare(y))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            },
            Clone::clone,
        ))
    }

    /// The number of groups a capped grouped statement has in all, for the message of
    /// `too_many_groups`: the statement without its cap, counted by the store.
    async fn count_store_groups(&self, capped: sea_orm::Statement) -> Result<u64, ApiError> {
        let text = capped
            .sql
            .rsplit_once(" LIMIT ")
            .map_or(capped.sql.as_str(), |(head, _)| head);
        let mut values = capped.values.map(|v| v.0).unwrap_or_default();
        values.pop();
        let count = sea_orm::Statement::from_sql_and_values(
            capped.db_backend,
            format!("SELECT COUNT(*) AS n FROM ({text}) AS g"),
            values,
        );
        let row = self
            .db
            .query_one_raw(count)
            .await?
            .ok_or(ApiError::Internal)?;
        Ok(row.try_get::<i64>("", "n")?.max(0) as u64)
    }
}

/// Each group's key, count and values of `field`, as a store path folds them.
type Groups = Vec<(Vec<KeyPart>, (u64, Vec<f64>))>;

/// [`Groups`] with each key's place in them, so a row or a part's group costs one look-up.
#[derive(Default)]
struct GroupTable {
    groups: Groups,
    places: HashMap<Vec<KeyPart>, usize>,
}

impl GroupTable {
    /// The count and values of the group `key`, a new empty one the first time (the key is
    /// copied only then).
    fn entry(&mut self, key: &[KeyPart]) -> &mut (u64, Vec<f64>) {
        let place = match self.places.get(key) {
            Some(&place) => place,
            None => {
                self.places.insert(key.to_vec(), self.groups.len());
                self.groups.push((key.to_vec(), Default::default()));
                self.groups.len() - 1
            }
        };
        &mut self.groups[place].1
    }
}

/// Folds store rows (`k0…` key columns, then `n` or `v`) into [`Groups`] as they arrive, so
/// memory holds the groups and their values (8 bytes each), never the rows; a key is written
/// into one reused buffer and copied only for a new group.
struct Fold<'q> {
    query: &'q AggQuery,
    schema: &'q DatasetSchema,
    groups: GroupTable,
    key: Vec<KeyPart>,
    read: u64,
}

impl<'q> Fold<'q> {
    fn new(query: &'q AggQuery, schema: &'q DatasetSchema) -> Self {
        Fold {
            query,
            schema,
            groups: GroupTable::default(),
            key: Vec::with_capacity(query.group_by.len()),
            read: 0,
        }
    }

    /// Adds one row, read through `text` and `number` (by column index); `tally` is the row's
    /// count (a count query) or its value of `field` (`None`: missing).
    fn add<'r>(
        &mut self,
        mut text: impl FnMut(usize) -> Result<Cow<'r, str>, ApiError>,
        mut number: impl FnMut(usize) -> Result<f64, ApiError>,
        tally: RowTally,
    ) -> Result<(), ApiError> {
        self.read += 1;
        // A value with no bucket (a date text that is not a date) leaves its record
        // ungrouped, as in memory.
        for (i, item) in self.query.group_by.iter().enumerate() {
            let part = match (self.schema.fields[item.field].field_type, item.grouping) {
                (FieldType::Number, Grouping::Bin(width)) => KeyPart::Num(bin(number(i)?, width)),
                (_, Grouping::Date(bucket)) => match date_part(&text(i)?, bucket) {
                    Some(part) => part,
                    None => return Ok(()),
                },
                _ => {
                    let value = text(i)?;
                    if let Some(KeyPart::Str(kept)) = self.key.get_mut(i) {
                        kept.clear();
                        kept.push_str(&value);
                        continue;
                    }
                    KeyPart::Str(value.into_owned())
                }
            };
            match self.key.get_mut(i) {
                Some(slot) => *slot = part,
                None => self.key.push(part),
            }
        }
        let entry = self.groups.entry(&self.key);
        match tally {
            RowTally::Count(n) => entry.0 += n,
            RowTally::Value(v) => {
                entry.0 += 1;
                entry.1.extend(v);
            }
        }
        Ok(())
    }

    fn finish(self) -> (Groups, u64) {
        (self.groups.groups, self.read)
    }
}

/// What one store row adds to its group.
enum RowTally {
    /// A count query's `n`.
    Count(u64),
    /// The row's value of `field`, if it has one.
    Value(Option<f64>),
}

impl Resolver {
    /// The grouped statement's rows folded through sqlx's stream (PostgreSQL, or SQLite when
    /// the direct read failed).
    async fn fold_stream(
        &self,
        statement: sea_orm::Statement,
        query: &AggQuery,
        schema: &DatasetSchema,
    ) -> Result<(Groups, u64), ApiError> {
        let names: Vec<String> = (0..query.group_by.len()).map(|i| format!("k{i}")).collect();
        let mut fold = Fold::new(query, schema);
        let mut rows = self.db.stream_raw(statement).await?;
        while let Some(row) = rows.next().await {
            let row = row?;
            let tally = match query.field {
                None => RowTally::Count(row.try_get::<i64>("", "n")?.max(0) as u64),
                Some(_) => RowTally::Value(row.try_get::<Option<f64>>("", "v")?),
            };
            fold.add(
                |i| Ok(Cow::Owned(row.try_get::<String>("", &names[i])?)),
                |i| Ok(row.try_get::<f64>("", &names[i])?),
                tally,
            )?;
        }
        Ok(fold.finish())
    }

    /// The grouped statement's rows folded on blocking threads straight from the SQLite file
    /// (issue 13: f at flights ×10 without the index, 3.4 M rows, took 5.8 s through sqlx's
    /// hand-off per row). A statement without conditions over many records is read in
    /// [`FOLD_PARTS`] ranges of positions side by side, their groups merged (values are
    /// sorted before any statistic, so the order they arrive in changes nothing). `None` when
    /// there is no direct reader or it failed, and the caller streams through sqlx.
    async fn fold_direct(
        &self,
        statement: &sea_orm::Statement,
        query: &AggQuery,
        schema: &Arc<DatasetSchema>,
        records: i64,
    ) -> Option<(Groups, u64)> {
        let direct = self.direct.clone()?;
        let values = statement
            .values
            .as_ref()
            .map_or(Some(Vec::new()), |v| crate::direct::bound(&v.0))?;
        let records = records.max(0) as u64;
        let split = query.field.is_some() && query.filter.is_empty() && records >= SPLIT_FROM;
        let ranges: Vec<Option<(u64, u64)>> = if split {
            let step = records.div_ceil(FOLD_PARTS);
            (0..FOLD_PARTS)
                .map(|k| Some((k * step + 1, ((k + 1) * step).min(records))))
                .collect()
        } else {
            vec![None]
        };
        let (query, schema) = (Arc::new(query.clone()), schema.clone());
        let parts: Vec<_> = ranges
            .into_iter()
            .map(|range| {
                let (direct, query, schema) = (direct.clone(), query.clone(), schema.clone());
                let (mut sql, mut values) = (statement.sql.clone(), values.clone());
                if let Some((first, last)) = range {
                    sql.push_str(" AND \"pos\" BETWEEN ? AND ?");
                    values.extend([first as i64, last as i64].map(rusqlite::types::Value::from));
                }
                tokio::task::spawn_blocking(move || {
                    fold_rows(&direct, &sql, &values, &query, &schema)
                })
            })
            .collect();
        let mut folded = Vec::with_capacity(parts.len());
        for part in parts {
            folded.push(part.await.ok()?.ok()?);
        }
        Some(merge(folded))
    }
}

/// Statements without conditions over at least this many records are folded in parts.
const SPLIT_FROM: u64 = 200_000;

/// The parts such a statement is read in, one blocking thread each (the machines odqs runs on
/// have two cores or more).
const FOLD_PARTS: u64 = 2;

/// One direct read's rows (`k0…` key columns, then `n` or `v`) folded into groups.
fn fold_rows(
    direct: &crate::direct::DirectSqlite,
    sql: &str,
    values: &[rusqlite::types::Value],
    query: &AggQuery,
    schema: &DatasetSchema,
) -> Result<(Groups, u64), ApiError> {
    let mut fold = Fold::new(query, schema);
    let keys = query.group_by.len();
    direct.each_row(sql, values, |row| {
        let tally = match (query.field, row.get_ref(keys)?) {
            (None, ValueRef::Integer(n)) => RowTally::Count(n.max(0) as u64),
            (Some(_), ValueRef::Real(v)) => RowTally::Value(Some(v)),
            (Some(_), ValueRef::Integer(v)) => RowTally::Value(Some(v as f64)),
            (Some(_), ValueRef::Null) => RowTally::Value(None),
            _ => return Err(ApiError::Internal),
        };
        fold.add(
            |i| match row.get_ref(i)? {
                ValueRef::Text(t) => std::str::from_utf8(t)
                    .map(Cow::Borrowed)
                    .map_err(|_| ApiError::Internal),
                _ => Err(ApiError::Internal),
            },
            |i| match row.get_ref(i)? {
                ValueRef::Real(v) => Ok(v),
                ValueRef::Integer(v) => Ok(v as f64),
                _ => Err(ApiError::Internal),
            },
            tally,
        )
    })?;
    Ok(fold.finish())
}

/// The groups of parts read separately, as one read would have folded them (counts added,
/// values gathered; their order is not kept, as statistics sort them first).
fn merge(parts: Vec<(Groups, u64)>) -> (Groups, u64) {
    let mut merged = GroupTable::default();
    let mut read = 0;
    for (groups, n) in parts {
        read += n;
        for (key, (count, values)) in groups {
            let group = merged.entry(&key);
            group.0 += count;
            group.1.extend(values);
        }
    }
    (merged.groups, read)
}

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
    fn groups_tied_on_zero_and_negative_zero_follow_the_key() {
        let query = AggQuery {
            filter: Default::default(),
            group_by: Vec::new(),
            field: Some(0),
            percentiles: vec![50.0],
            order: GroupOrder::Sum,
            descending: false,
            limit: None,
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
