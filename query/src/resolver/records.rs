//! Running records requests (contract §5): resolve full-text terms to dictionary ids, count the
//! matches once per (version, condition), and read one page in a stable order.
//!
//! A sort is planned in two parts, because "records without the value come last" defeats an
//! index when written as `c IS NULL, c`: first the records that have the first key's value,
//! through the column's index, then those that don't, in file order.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use super::orders::Order;
use super::{Engine, Prepared, Resolver, record_count};
use crate::answer::views::{RecordBody, RecordPage};
use crate::cost;
use crate::dataset::Dataset;
use crate::dataset::schema::{Column, DatasetSchema};
use crate::engine::store;
use crate::engine::store::sql::ResolvedFilter;
use crate::error::ApiError;
use crate::request::params::RecordParams;
use crate::request::places::Near;
use crate::request::{self, Filter, RecordQuery};

impl Resolver {
    /// `GET /datasets/{slug}/records`, prepared: the dataset resolved, the parameters
    /// validated against its schema, the tag and the weight (full text weighs like a scan).
    pub(crate) async fn prepare_records(
        &self,
        slug: &str,
        params: &RecordParams,
    ) -> Result<Prepared<RecordQuery>, ApiError> {
        let Some(text) = &params.cursor else {
            let dataset = self.dataset_at(slug, params.version).await?;
            return self.prepare_records_in(dataset, params);
        };
        // Boxed: every records request's future holds this one.
        Box::pin(self.prepare_cursor_page(slug, params, text)).await
    }

    /// [`Self::prepare_records`] on a dataset already resolved (GraphQL resolves each slug
    /// once a document).
    pub(crate) fn prepare_records_in(
        &self,
        dataset: Dataset,
        params: &RecordParams,
    ) -> Result<Prepared<RecordQuery>, ApiError> {
        let query = request::record_query(params, &dataset.schema)?;
        // Full text and facets each weigh like a scan.
        let searches = !query.filter.terms.is_empty()
            || !query.filter.field_terms.is_empty()
            || query.facets.is_some();
        let extra = searches.then(|| cost::scan_extra(record_count(&dataset)));
        let etag = self.records_etag(&dataset, &query);
        Ok(Prepared {
            dataset,
            query,
            etag,
            extra,
        })
    }

    /// Runs a prepared records request: one page.
    pub(crate) async fn run_records(
        &self,
        prepared: &Prepared<RecordQuery>,
    ) -> Result<RecordPage, ApiError> {
        self.records(&prepared.dataset, &prepared.query).await
    }

    /// Resolves the full-text terms of `filter` to dictionary ids.
    pub(crate) async fn resolve<'a>(
        &self,
        schema: &DatasetSchema,
        filter: &'a Filter,
    ) -> Result<ResolvedFilter<'a>, ApiError> {
        let mut term_ids = Vec::with_capacity(filter.terms.len());
        for term in &filter.terms {
            term_ids.push(self.dictionary_ids(schema.version_id, term).await?);
        }
        let mut field_ids = Vec::with_capacity(filter.field_terms.len());
        for (_, terms) in &filter.field_terms {
            let mut common: Option<HashSet<i64>> = None;
            for term in terms {
                let ids: HashSet<i64> = self
                    .dictionary_ids(schema.version_id, term)
                    .await?
                    .into_iter()
                    .collect();
                common = Some(match common {
                    None => ids,
                    Some(c) => c.intersection(&ids).copied().collect(),
                });
            }
            let mut ids: Vec<i64> = common.unwrap_or_default().into_iter().collect();
            ids.sort_unstable();
            field_ids.push(ids);
        }
        let mut date_values = Vec::new();
        for (column, range) in &filter.ranges {
            if !crate::engine::store::sql::is_date_range(range) {
                continue;
            }
            let reader = self.reader(schema.version_id).await;
            let column = schema.sql_column(*column);
            let mut values =
                store::count::distinct_texts(&reader, schema.version_id, column).await?;
            values.retain(|text| crate::dates::parse(text).is_some_and(|t| range.holds_instant(t)));
            values.sort_unstable();
            date_values.push(values);
        }
        let near_positions = match &filter.near {
            None => None,
            Some(near) => Some(self.within(schema, filter, near).await?),
        };
        Ok(ResolvedFilter {
            filter,
            term_ids,
            field_ids,
            date_values,
            near_positions,
        })
    }

    async fn dictionary_ids(&self, version_id: i64, term: &str) -> Result<Vec<i64>, ApiError> {
        let reader = self.reader(version_id).await;
        store::count::dictionary_ids(&reader, version_id, term).await
    }

    /// Number of records matching `resolved` (and, with `has_value`, having that column's
    /// value), from the cache when this version was asked before.
    pub(crate) async fn count(
        &self,
        dataset: &Dataset,
        resolved: &ResolvedFilter<'_>,
        has_value: Option<Column>,
    ) -> Result<u64, ApiError> {
        let schema = &dataset.schema;
        if resolved.matches_nothing() {
            return Ok(0);
        }
        if resolved.filter.is_empty() && has_value.is_none() {
            return Ok(dataset.meta.record_count.max(0) as u64);
        }
        let filter = serde_json::to_string(resolved.filter).unwrap_or_default();
        let key = |has_value: Option<Column>| total_key(schema.version_id, &filter, has_value);
        if let Some(n) = self.totals.get(&key(has_value)) {
            return Ok(n);
        }
        // With `has_value`, the matches with the value and all of them in one read, each kept
        // for the next request that asks.
        let reader = self.reader(schema.version_id).await;
        let records = dataset.meta.record_count;
        let direct = self.direct(schema.version_id);
        let counts =
            store::count::matches(direct, &reader, schema, resolved, has_value, records).await?;
        let (&all, with_value) = counts.split_first().ok_or(ApiError::Internal)?;
        self.totals.put(key(None), all);
        if has_value.is_none() {
            return Ok(all);
        }
        let &n = with_value.first().ok_or(ApiError::Internal)?;
        self.totals.put(key(has_value), n);
        Ok(n)
    }

    /// `GET /datasets/{slug}/records`.
    pub(crate) async fn records(
        &self,
        dataset: &Dataset,
        query: &RecordQuery,
    ) -> Result<RecordPage, ApiError> {
        // Each page carries the cursor of the next, signed with the store's key.
        self.cursor_key().await?;
        match self.engine(dataset).await {
            Engine::Memory(index) => self.records_from_index(&index, dataset, query).await,
            Engine::Store => {
                let key = self.records_etag(dataset, query);
                let read = self.records_from_store(dataset, query);
                self.flights.records.run(key, read).await
            }
        }
    }

    /// The page of a whole order, each record with its score or distance as `member`.
    pub(super) async fn page_of_order(
        &self,
        dataset: &Dataset,
        query: &RecordQuery,
        order: &Order,
        member: &str,
        metres: bool,
    ) -> Result<RecordPage, ApiError> {
        let schema = &dataset.schema;
        let page = order
            .page(query.paging.offset(), query.paging.per_page)
            .ok_or(ApiError::Internal)?;
        let rows: Vec<u32> = page.iter().map(|&(row, _)| row).collect();
        let projection = query.fields.as_deref();
        let records = Box::pin(self.stored_at_positions(schema, &rows))
            .await?
            .into_iter()
            .zip(page)
            .map(|(stored, &(_, value))| {
                let value = if metres {
                    whole_metres(value)
                } else {
                    serde_json::Value::from(value)
                };
                Ok(stored
                    .shaped(schema, projection)?
                    .with_member(member, value))
            })
            .collect::<Result<Vec<RecordBody>, ApiError>>()?;
        let last = rows.last().copied();
        Ok(self.record_page(dataset, query, order.total(), records, last))
    }

    /// The answer's envelope around `records`, already shaped and projected.
    /// A page of `records` of `total`, the last of them at row `last` (its cursor leads on
    /// from there).
    pub(super) fn record_page(
        &self,
        dataset: &Dataset,
        query: &RecordQuery,
        total: u64,
        records: Vec<RecordBody>,
        last: Option<u32>,
    ) -> RecordPage {
        let next = query.paging.offset() + records.len() as u64;
        let next_cursor = match last {
            Some(last) if next < total => self.cursor_after(dataset, query, next, last),
            _ => None,
        };
        RecordPage {
            total,
            page: query.paging.page,
            per_page: query.paging.per_page,
            records,
            next_cursor,
            facets: None,
            schema: dataset.schema.entries.clone(),
        }
    }
}

/// What leads the order of `query`'s page, if not its sort keys: the member each record
/// then carries, the direction, and `near` for a distance.
pub(super) fn lead(query: &RecordQuery) -> Option<(&'static str, bool, Option<&Near>)> {
    match (query.by_score, query.by_distance, &query.filter.near) {
        (Some(descending), _, _) => Some((request::SCORE, descending, None)),
        (None, Some(descending), Some(near)) => Some((request::DISTANCE_M, descending, Some(near))),
        _ => None,
    }
}

/// A distance as records carry it: whole metres.
pub(super) fn whole_metres(metres: f64) -> serde_json::Value {
    serde_json::Value::from(metres.round() as u64)
}

/// Where [`Totals`] keeps the number of records of version `version_id` that match `filter`
/// (its JSON) and, with `has_value`, have that column's value. The index and the store count
/// alike, so either may keep a total the other reads.
pub(super) fn total_key(version_id: i64, filter: &str, has_value: Option<Column>) -> String {
    format!("{version_id}|{filter}|{has_value:?}")
}

/// SQL's LIMIT and OFFSET are signed 64-bit.
pub(super) fn clamp(n: u64) -> i64 {
    n.min(i64::MAX as u64) as i64
}

/// Totals that don't cost a scan. A `COUNT(*)` of a large match is a scan, and paging
/// through one query asks for the same total on every page; datasets change only by import, so
/// a total is a pure function of (version, normalized condition) and can be kept. The map is
/// bounded: when full it starts over, which costs at most one recount per entry.
/// Entries kept before the cache starts over (a few MB at most).
const CAPACITY: usize = 50_000;

/// Counts by key; keys start with the version id, so a new version never sees an old count.
#[derive(Debug, Default)]
pub(super) struct Totals {
    map: Mutex<HashMap<String, u64>>,
}

impl Totals {
    /// The count kept for `key`, if any.
    pub(super) fn get(&self, key: &str) -> Option<u64> {
        self.map.lock().expect("totals lock").get(key).copied()
    }

    /// Keeps `count` for `key`.
    pub(super) fn put(&self, key: String, count: u64) {
        let mut map = self.map.lock().expect("totals lock");
        if map.len() >= CAPACITY {
            map.clear();
        }
        map.insert(key, count);
    }
}
