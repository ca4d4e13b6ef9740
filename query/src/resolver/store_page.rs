//! Records pages from the store (contract §5), when no in-memory index answers: a page
//! counted from the top by `LIMIT`/`OFFSET`, or read on after a cursor's row by its sort keys
//! and `pos` (contract §13.2), and the two-part sort that keeps an index usable (records with
//! the first key's value, then those without).

use std::sync::Arc;

use entity::record;

use super::Resolver;
use super::orders::{Order, Orders};
use super::records::{clamp, lead};
use crate::answer::views::{RecordBody, RecordPage};
use crate::dataset::Dataset;
use crate::dataset::schema::{Column, DatasetSchema};
use crate::engine::store::page;
use crate::engine::store::sql::{Access, KeyValue, Part, ResolvedFilter};
use crate::error::ApiError;
use crate::request::RecordQuery;
use crate::request::places::Near;

impl Resolver {
    /// [`Self::records`] when no in-memory index answers.
    pub(super) async fn records_from_store(
        &self,
        dataset: &Dataset,
        query: &RecordQuery,
    ) -> Result<RecordPage, ApiError> {
        if let Some(lead) = lead(query) {
            let mut page = self.ordered_from_store(dataset, query, lead).await?;
            page.facets = self.facets(dataset, query, None).await?;
            return Ok(page);
        }
        let schema = &dataset.schema;
        let offset = query.paging.offset();
        let limit = query.paging.per_page;
        let resolved = self.resolve(schema, &query.filter).await?;
        // A page sorted by a field counts the matches with its value in the same read.
        if let Some(&(first, _)) = query.sort.first()
            && first != Column::Id
            && query.after.is_none()
        {
            self.count(dataset, &resolved, Some(first)).await?;
        }
        let total = self.count(dataset, &resolved, None).await?;
        let mut rows = Vec::new();
        if let (Some(after), true) = (query.after, offset < total) {
            rows = Box::pin(self.page_after(schema, &resolved, query, after, limit)).await?;
        } else if offset < total {
            rows = self.sorted_rows(dataset, &resolved, query).await?;
        }
        let projection = query.fields.as_deref();
        let last = rows.last().and_then(|r| u32::try_from(r.pos - 1).ok());
        let records = rows
            .into_iter()
            .map(|r| RecordBody::Shaped(schema.shape(r.doc, projection)))
            .collect();
        let mut page = self.record_page(dataset, query, total, records, last);
        page.facets = self.facets(dataset, query, None).await?;
        Ok(page)
    }

    /// A page counted from the top in the sort's order: with a first key, the records with its
    /// value (through its index when walking it is cheaper), then those without.
    async fn sorted_rows(
        &self,
        dataset: &Dataset,
        resolved: &ResolvedFilter<'_>,
        query: &RecordQuery,
    ) -> Result<Vec<record::Model>, ApiError> {
        let schema = &dataset.schema;
        let (offset, limit) = (query.paging.offset(), query.paging.per_page);
        let mut rows = Vec::new();
        match query.sort.first() {
            Some(&(first, _)) if first != Column::Id => {
                let with_value = self.count(dataset, resolved, Some(first)).await?;
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
                            resolved,
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
                            resolved,
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
                return self
                    .page(
                        schema,
                        resolved,
                        query,
                        (Part::All, Access::Planner),
                        offset,
                        limit,
                    )
                    .await;
            }
        }
        Ok(rows)
    }

    /// A page of the whole order by relevance or distance, kept for the pages after it.
    async fn ordered_from_store(
        &self,
        dataset: &Dataset,
        query: &RecordQuery,
        (member, descending, near): (&'static str, bool, Option<&Near>),
    ) -> Result<RecordPage, ApiError> {
        let key = Orders::key(dataset, query);
        let (offset, limit) = (query.paging.offset(), query.paging.per_page);
        let order = match self.orders.get(&key, offset, limit) {
            Some(order) => order,
            None => {
                let order = Arc::new(Order::whole(match near {
                    None => {
                        Box::pin(self.scored_order_from_store(dataset, query, descending)).await?
                    }
                    Some(near) => {
                        let read = self.distance_order_from_store(dataset, query, near, descending);
                        Box::pin(read).await?
                    }
                }));
                self.orders.put(key, &order);
                order
            }
        };
        self.page_of_order(dataset, query, &order, member, near.is_some())
            .await
    }

    /// The page after row `after` (a cursor's), read on by the sort keys and `pos` from that
    /// row rather than counted from the top: a deep page costs what the first one does.
    async fn page_after(
        &self,
        schema: &DatasetSchema,
        resolved: &ResolvedFilter<'_>,
        query: &RecordQuery,
        after: u32,
        limit: u64,
    ) -> Result<Vec<record::Model>, ApiError> {
        let pos = i64::from(after) + 1;
        let reader = self.reader(schema.version_id).await;
        let values = page::key_values(&reader, schema, &query.sort, pos).await?;
        let keyset = Some((values.as_slice(), pos));
        let planner = Access::Planner;
        let first = match query.sort.first() {
            Some(&(first, _)) if first != Column::Id => first,
            _ => {
                return self
                    .page_from(
                        schema,
                        resolved,
                        query,
                        (Part::All, planner),
                        keyset,
                        0,
                        limit,
                    )
                    .await;
            }
        };
        if values.first().is_some_and(Option::is_none) {
            // The row lacks the first key: the rest of its part follows it.
            return self
                .page_from(
                    schema,
                    resolved,
                    query,
                    (Part::Missing, planner),
                    keyset,
                    0,
                    limit,
                )
                .await;
        }
        let access = if schema.store_indexes {
            Access::SortIndex(first)
        } else {
            planner
        };
        let mut rows = self
            .page_from(
                schema,
                resolved,
                query,
                (Part::HasValue, access),
                keyset,
                0,
                limit,
            )
            .await?;
        let taken = rows.len() as u64;
        if taken < limit {
            rows.extend(
                self.page(
                    schema,
                    resolved,
                    query,
                    (Part::Missing, planner),
                    0,
                    limit - taken,
                )
                .await?,
            );
        }
        Ok(rows)
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
        self.page_from(schema, resolved, query, (part, access), None, offset, limit)
            .await
    }

    /// [`Self::page`], after the row at `pos` whose sort keys hold `values` when `after` says
    /// so (a cursor's keyset).
    #[allow(clippy::too_many_arguments)]
    async fn page_from(
        &self,
        schema: &DatasetSchema,
        resolved: &ResolvedFilter<'_>,
        query: &RecordQuery,
        (part, access): (Part, Access),
        after: Option<(&[KeyValue], i64)>,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<record::Model>, ApiError> {
        let reader = self.reader(schema.version_id).await;
        let read = page::Read {
            schema,
            resolved,
            sort: &query.sort,
            part,
            access,
        };
        page::rows(&reader, &read, after, clamp(offset), clamp(limit)).await
    }
}
