//! Running records requests (contract §5): resolve full-text terms to dictionary ids, count the
//! matches once per (version, condition), and read one page in a stable order.
//!
//! A sort is planned in two parts, because "records without the value come last" defeats an
//! index when written as `c IS NULL, c`: first the records that have the first key's value,
//! through the column's index, then those that don't, in file order.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use entity::record::{self, records_table};
use sea_orm::{ConnectionTrait, DatabaseBackend, FromQueryResult};
use serde_json::Value;

use super::{Prepared, Resolver, record_count};
use crate::answer::views::{RecordBody, RecordPage};
use crate::cost;
use crate::dataset::Dataset;
use crate::dataset::packed::Layout;
use crate::dataset::schema::{Column, DatasetSchema};
use crate::engine::store::sql::{
    Access, Part, ResolvedFilter, Sql, dictionary_lookup, from_where, order_by,
};
use crate::error::ApiError;
use crate::request::params::RecordParams;
use crate::request::{self, Filter, RecordQuery};

impl Resolver {
    /// `GET /datasets/{slug}/records`, prepared: the dataset resolved, the parameters
    /// validated against its schema, the tag and the weight (full text weighs like a scan).
    pub async fn prepare_records(
        &self,
        slug: &str,
        params: &RecordParams,
    ) -> Result<Prepared<RecordQuery>, ApiError> {
        let dataset = self.dataset(slug).await?;
        self.prepare_records_in(dataset, params)
    }

    /// [`Self::prepare_records`] on a dataset already resolved (GraphQL resolves each slug
    /// once a document).
    pub fn prepare_records_in(
        &self,
        dataset: Dataset,
        params: &RecordParams,
    ) -> Result<Prepared<RecordQuery>, ApiError> {
        let query = request::record_query(params, &dataset.schema)?;
        let searches = !query.filter.terms.is_empty() || !query.filter.field_terms.is_empty();
        let extra = searches.then(|| cost::scan_extra(record_count(&dataset)));
        let etag = self.etag(&dataset, "records", &query);
        Ok(Prepared {
            dataset,
            query,
            etag,
            extra,
        })
    }

    /// Runs a prepared records request: one page.
    pub async fn run_records(
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
            let statement = crate::engine::store::sql::distinct_values(
                self.backend(),
                schema.version_id,
                schema.sql_column(*column),
            );
            let mut values = Vec::new();
            for row in self.db.query_all_raw(statement).await? {
                let text: String = row.try_get("", "v")?;
                if crate::dates::parse(&text).is_some_and(|t| range.holds_instant(t)) {
                    values.push(text);
                }
            }
            values.sort_unstable();
            date_values.push(values);
        }
        Ok(ResolvedFilter {
            filter,
            term_ids,
            field_ids,
            date_values,
        })
    }

    async fn dictionary_ids(&self, version_id: i64, term: &str) -> Result<Vec<i64>, ApiError> {
        let rows = self
            .db
            .query_all_raw(dictionary_lookup(self.backend(), version_id, term))
            .await?;
        let mut ids = rows
            .iter()
            .map(|row| row.try_get::<i64>("", "id"))
            .collect::<Result<Vec<_>, _>>()?;
        ids.sort_unstable();
        Ok(ids)
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
        let key = format!(
            "{}|{}|{:?}",
            schema.version_id,
            serde_json::to_string(resolved.filter).unwrap_or_default(),
            has_value
        );
        if let Some(n) = self.totals.get(&key) {
            return Ok(n);
        }
        let mut sql = Sql::new(self.backend());
        sql.push("SELECT COUNT(*) AS n");
        from_where(&mut sql, schema, resolved, Access::Planner);
        if let Some(column) = has_value {
            sql.push(" AND ")
                .ident(schema.sql_column(column))
                .push(" IS NOT NULL");
        }
        let row = self
            .db
            .query_one_raw(sql.build())
            .await?
            .ok_or(ApiError::Internal)?;
        let n = row.try_get::<i64>("", "n")?.max(0) as u64;
        self.totals.put(key, n);
        Ok(n)
    }

    /// `GET /datasets/{slug}/records`.
    pub async fn records(
        &self,
        dataset: &Dataset,
        query: &RecordQuery,
    ) -> Result<RecordPage, ApiError> {
        let schema = &dataset.schema;
        let offset = query.paging.offset();
        let limit = query.paging.per_page;
        if let Some(index) = self.memory_index(dataset).await {
            let (total, positions) =
                match index.text_page(&query.filter, &query.sort, offset, limit) {
                    Some(page) => page,
                    None => {
                        let matches = index.matches(&query.filter);
                        let total = index.total(matches.as_ref());
                        (
                            total,
                            index.page(matches.as_ref(), &query.sort, offset, limit),
                        )
                    }
                };
            let projection = query.fields.as_deref();
            let records = self
                .stored_at_positions(schema, &positions)
                .await?
                .into_iter()
                .map(|stored| stored.shaped(schema, projection))
                .collect::<Result<_, ApiError>>()?;
            return Ok(self.record_page(dataset, query, total, records));
        }
        let key = self.etag(dataset, "records", query);
        self.flights
            .records
            .run(key, self.records_from_store(dataset, query))
            .await
    }

    /// [`Self::records`] when no in-memory index answers.
    async fn records_from_store(
        &self,
        dataset: &Dataset,
        query: &RecordQuery,
    ) -> Result<RecordPage, ApiError> {
        let schema = &dataset.schema;
        let offset = query.paging.offset();
        let limit = query.paging.per_page;
        let resolved = self.resolve(schema, &query.filter).await?;
        let total = self.count(dataset, &resolved, None).await?;
        let mut rows = Vec::new();
        if offset < total {
            match query.sort.first() {
                Some(&(first, _)) if first != Column::Id => {
                    let with_value = self.count(dataset, &resolved, Some(first)).await?;
                    if offset < with_value {
                        // Through the sort index, a page costs about (offset + limit) / share
                        // rows, where share = with_value / records; through the conditions'
                        // indexes it costs sorting all with_value matches.
                        let records = dataset.meta.record_count.max(1) as u128;
                        let walk = u128::from(offset + limit) * records;
                        let walk_is_cheaper = walk < u128::from(with_value).pow(2);
                        let access = if schema.store_indexes && walk_is_cheaper {
                            Access::SortIndex(first)
                        } else {
                            Access::Planner
                        };
                        rows = self
                            .page(
                                schema,
                                &resolved,
                                query,
                                (Part::HasValue, access),
                                offset,
                                limit,
                            )
                            .await?;
                    }
                    let taken = rows.len() as u64;
                    if taken < limit && offset + taken >= with_value {
                        let skip = (offset + taken) - with_value;
                        rows.extend(
                            self.page(
                                schema,
                                &resolved,
                                query,
                                (Part::Missing, Access::Planner),
                                skip,
                                limit - taken,
                            )
                            .await?,
                        );
                    }
                }
                _ => {
                    rows = self
                        .page(
                            schema,
                            &resolved,
                            query,
                            (Part::All, Access::Planner),
                            offset,
                            limit,
                        )
                        .await?;
                }
            }
        }
        let projection = query.fields.as_deref();
        let records = rows
            .into_iter()
            .map(|r| RecordBody::Shaped(schema.shape(r.doc, projection)))
            .collect();
        Ok(self.record_page(dataset, query, total, records))
    }

    /// The answer's envelope around `records`, already shaped and projected.
    fn record_page(
        &self,
        dataset: &Dataset,
        query: &RecordQuery,
        total: u64,
        records: Vec<RecordBody>,
    ) -> RecordPage {
        RecordPage {
            total,
            page: query.paging.page,
            per_page: query.paging.per_page,
            records,
            schema: dataset.schema.entries.clone(),
        }
    }

    /// The bodies of the records at in-memory rows `rows` (positions `row + 1`), in that
    /// order: the store serves them by primary key. One statement text whatever the number of
    /// rows (an array bound as one value), so it is prepared once per connection; SQLite's text
    /// is parsed here rather than through `json()`, which would parse it twice.
    pub(crate) async fn at_positions(
        &self,
        schema: &DatasetSchema,
        rows: &[u32],
    ) -> Result<Vec<Value>, ApiError> {
        self.stored_at_positions(schema, rows)
            .await?
            .into_iter()
            .map(Stored::value)
            .collect()
    }

    /// [`Self::at_positions`] for an export's batch: on an SQLite file the direct read runs on
    /// the blocking pool, so a thousand bodies read for an export never hold a request
    /// thread (20 exports at once starved every other request of both); elsewhere, and when
    /// the direct read fails, as [`Self::at_positions`]. The body cache is left alone: an
    /// export's bodies are read once and would push out the pages people ask again.
    pub(crate) async fn export_batch(
        &self,
        schema: &DatasetSchema,
        rows: &[u32],
    ) -> Result<Vec<Value>, ApiError> {
        if let Some(direct) = self.direct.clone() {
            let positions: Vec<i64> = rows.iter().map(|&row| i64::from(row) + 1).collect();
            let version_id = schema.version_id;
            let read = tokio::task::spawn_blocking(move || {
                let found = direct.bodies(version_id, &positions).ok()?;
                let mut found: HashMap<i64, String> = found.into_iter().collect();
                positions
                    .iter()
                    .map(|pos| found.remove(pos))
                    .collect::<Option<Vec<String>>>()
            })
            .await;
            if let Ok(Some(texts)) = read {
                return texts
                    .into_iter()
                    .map(|text| Stored::text(schema, text)?.value())
                    .collect();
            }
        }
        self.at_positions(schema, rows).await
    }

    /// [`Self::at_positions`] as the body cache or the store gives the bodies: those not kept
    /// are read in one statement, shaped once, and kept.
    pub(super) async fn stored_at_positions(
        &self,
        schema: &DatasetSchema,
        rows: &[u32],
    ) -> Result<Vec<Stored>, ApiError> {
        let positions: Vec<i64> = rows.iter().map(|&row| i64::from(row) + 1).collect();
        // Boxed: the store read's future is large, and a page's future holds it (a debug
        // build's worker stack overflowed).
        if !self.bodies.is_on() {
            return Box::pin(self.read_at_positions(schema, &positions)).await;
        }
        let mut kept = self.bodies.get(schema.version_id, &positions);
        let missing: Vec<i64> = positions
            .iter()
            .zip(&kept)
            .filter(|(_, body)| body.is_none())
            .map(|(&pos, _)| pos)
            .collect();
        if !missing.is_empty() {
            let mut read = Box::pin(self.read_at_positions(schema, &missing))
                .await?
                .into_iter();
            let mut fresh = Vec::with_capacity(missing.len());
            for slot in kept.iter_mut().filter(|body| body.is_none()) {
                let body = read.next().ok_or(ApiError::Internal)?.shaped_text(schema)?;
                fresh.push(body.clone());
                *slot = Some(body);
            }
            self.bodies
                .put(schema.version_id, missing.into_iter().zip(fresh));
        }
        kept.into_iter()
            .map(|body| body.map(Stored::Shaped).ok_or(ApiError::Internal))
            .collect()
    }

    /// The bodies at `positions`, in that order, as the store gives them.
    async fn read_at_positions(
        &self,
        schema: &DatasetSchema,
        positions: &[i64],
    ) -> Result<Vec<Stored>, ApiError> {
        if positions.is_empty() {
            return Ok(Vec::new());
        }
        let backend = self.backend();
        // On an SQLite file the bodies come straight from the file; the statement below is only
        // for PostgreSQL and for a direct read that failed.
        if backend != DatabaseBackend::Postgres
            && let Some(read) = self
                .direct
                .as_ref()
                .and_then(|direct| direct.bodies(schema.version_id, positions).ok())
        {
            let mut found: HashMap<i64, String> = read.into_iter().collect();
            return positions
                .iter()
                .map(|pos| {
                    let text = found.remove(pos).ok_or(ApiError::Internal)?;
                    Stored::text(schema, text)
                })
                .collect();
        }
        let mut sql = Sql::new(backend);
        sql.push("SELECT \"pos\", \"doc\" FROM ")
            .ident(&records_table(schema.version_id));
        match backend {
            DatabaseBackend::Postgres => {
                sql.push(" WHERE \"pos\" = ANY(")
                    .bind(positions.to_vec())
                    .push(")");
            }
            _ => {
                let json = serde_json::to_string(positions).expect("positions serialize");
                sql.push(" WHERE \"pos\" IN (SELECT value FROM json_each(")
                    .bind(json)
                    .push("))");
            }
        }
        let mut found: HashMap<i64, Stored> = HashMap::with_capacity(positions.len());
        for row in self.db.query_all_raw(sql.build()).await? {
            let pos: i64 = row.try_get_by_index(0)?;
            let doc = match backend {
                DatabaseBackend::Postgres => Stored::Value(row.try_get_by_index::<Value>(1)?),
                _ => Stored::text(schema, row.try_get_by_index(1)?)?,
            };
            found.insert(pos, doc);
        }
        positions
            .iter()
            .map(|pos| found.remove(pos).ok_or(ApiError::Internal))
            .collect()
    }

    /// Reads `limit` records of one part of the order, from `offset` on.
    async fn page(
        &self,
        schema: &DatasetSchema,
        resolved: &ResolvedFilter<'_>,
        query: &RecordQuery,
        (part, access): (Part, Access),
        offset: u64,
        limit: u64,
    ) -> Result<Vec<record::Model>, ApiError> {
        let backend = self.backend();
        let mut sql = Sql::new(backend);
        sql.push("SELECT \"pos\", \"_id\" AS \"id\", ")
            .push(record::doc_select(backend));
        from_where(&mut sql, schema, resolved, access);
        order_by(&mut sql, schema, &query.sort, part);
        sql.push(" LIMIT ").bind(clamp(limit));
        sql.push(" OFFSET ").bind(clamp(offset));
        Ok(record::Model::find_by_statement(sql.build())
            .all(&self.db)
            .await?)
    }
}

/// A record body as the store gives it (SQLite's text, PostgreSQL's JSONB read as a value), or
/// as the body cache keeps it: already shaped, without a projection.
pub(super) enum Stored {
    Text(String),
    Value(Value),
    Shaped(Arc<str>),
}

impl Stored {
    /// A body SQLite holds as text, unpacked ([`crate::dataset::packed`]).
    fn text(schema: &DatasetSchema, stored: String) -> Result<Stored, ApiError> {
        if !Layout::is_packed(&stored) {
            return Ok(Stored::Text(stored));
        }
        let doc = schema.layout.unpack(&stored).ok_or(ApiError::Internal)?;
        Ok(Stored::Text(doc))
    }

    /// The body as a JSON value.
    fn value(self) -> Result<Value, ApiError> {
        match self {
            Stored::Value(value) => Ok(value),
            Stored::Text(text) => serde_json::from_str(&text).map_err(|_| ApiError::Internal),
            Stored::Shaped(text) => serde_json::from_str(&text).map_err(|_| ApiError::Internal),
        }
    }

    /// The text a page writes for this body without a projection: the stored text when it is
    /// already shaped, else the shaped value written out (the same bytes
    /// [`RecordBody::Shaped`] would write).
    fn shaped_text(self, schema: &DatasetSchema) -> Result<Arc<str>, ApiError> {
        match self.shaped(schema, None)? {
            RecordBody::Stored(text) => Ok(text),
            RecordBody::Shaped(value) => Ok(value.to_string().into()),
        }
    }

    /// The body as a page shows it: the stored text itself when shaping would not change it,
    /// else shaped and projected.
    pub(super) fn shaped(
        self,
        schema: &DatasetSchema,
        projection: Option<&[String]>,
    ) -> Result<RecordBody, ApiError> {
        match self {
            Stored::Shaped(text) if projection.is_none() => Ok(RecordBody::Stored(text)),
            Stored::Text(text)
                if projection.is_none() && text.starts_with('{') && schema.is_shaped(&text) =>
            {
                Ok(RecordBody::Stored(text.into()))
            }
            stored => Ok(RecordBody::Shaped(
                schema.shape(stored.value()?, projection),
            )),
        }
    }
}

/// SQL's LIMIT and OFFSET are signed 64-bit.
fn clamp(n: u64) -> i64 {
    n.min(i64::MAX as u64) as i64
}
