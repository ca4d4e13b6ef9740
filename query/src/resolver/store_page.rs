//! Records pages from the store (contract §5), when no in-memory index answers: a page
//! counted from the top by `LIMIT`/`OFFSET`, or read on after a cursor's row by its sort keys
//! and `pos` (contract §13.2), and the two-part sort that keeps an index usable (records with
//! the first key's value, then those without).

use std::sync::Arc;

use entity::record;
use sea_orm::FromQueryResult;

use super::Resolver;
use super::orders::{Order, Orders};
use super::records::{clamp, lead};
use crate::answer::views::{RecordBody, RecordPage};
use crate::dataset::Dataset;
use crate::dataset::schema::{Column, DatasetSchema};
use crate::engine::store::sql::{
    Access, KeyValues, Part, ResolvedFilter, Sql, after_row, from_where, order_by,
};
use crate::error::ApiError;
use crate::request::RecordQuery;

impl Resolver {
    /// [`Self::records`] when no in-memory index answers.
    pub(super) async fn records_from_store(
        &self,
        dataset: &Dataset,
        query: &RecordQuery,
    ) -> Result<RecordPage, ApiError> {
        let ordered = match lead(query) {
            Some((member, descending, near)) => {
                let key = Orders::key(dataset, query);
                let (offset, limit) = (query.paging.offset(), query.paging.per_page);
                let order = match self.orders.get(&key, offset, limit) {
                    Some(order) => order,
                    None => {
                        let order = Arc::new(Order::whole(match near {
                            None => {
                                Box::pin(self.scored_order_from_store(dataset, query, descending))
                                    .await?
                            }
                            Some(near) => {
                                Box::pin(
                                    self.distance_order_from_store(
                                        dataset, query, near, descending,
                                    ),
                                )
                                .await?
                            }
                        }));
                        self.orders.put(key, &order);
                        order
                    }
                };
                Some(
                    self.page_of_order(dataset, query, &order, member, near.is_some())
                        .await?,
                )
            }
            None => None,
        };
        if let Some(mut page) = ordered {
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
        let last = rows.last().and_then(|r| u32::try_from(r.pos - 1).ok());
        let records = rows
            .into_iter()
            .map(|r| RecordBody::Shaped(schema.shape(r.doc, projection)))
            .collect();
        let mut page = self.record_page(dataset, query, total, records, last);
        page.facets = self.facets(dataset, query, None).await?;
        Ok(page)
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
        let values = self.key_values(schema, &query.sort, pos).await?;
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

    /// The values of `sort`'s keys in the row at `pos`.
    async fn key_values(
        &self,
        schema: &DatasetSchema,
        sort: &[(Column, bool)],
        pos: i64,
    ) -> Result<KeyValues, ApiError> {
        if sort.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = Sql::new(self.backend());
        sql.push("SELECT ");
        for (i, &(column, _)) in sort.iter().enumerate() {
            if i > 0 {
                sql.push(", ");
            }
            sql.ident(schema.sql_column(column));
        }
        sql.push(" FROM ")
            .ident(&record::records_table(schema.version_id))
            .push(" WHERE \"pos\" = ")
            .bind(pos);
        let row = self
            .reader(schema.version_id)
            .await
            .query_one(sql.build())
            .await?
            .ok_or(ApiError::InvalidCursor {
                reason: "it names a row this version does not have",
            })?;
        let mut values = Vec::with_capacity(sort.len());
        for (i, &(column, _)) in sort.iter().enumerate() {
            let number = match column {
                Column::Id => false,
                Column::Field(f) => schema.fields[f].field_type == entity::FieldType::Number,
            };
            values.push(if number {
                row.try_get_by_index::<Option<f64>>(i)?.map(Into::into)
            } else {
                row.try_get_by_index::<Option<String>>(i)?.map(Into::into)
            });
        }
        Ok(values)
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
        after: Option<(&[Option<sea_orm::Value>], i64)>,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<record::Model>, ApiError> {
        let backend = self.backend();
        let mut sql = Sql::new(backend);
        sql.push("SELECT \"pos\", \"_id\" AS \"id\", ")
            .push(record::doc_select(backend));
        from_where(&mut sql, schema, resolved, access);
        if let Some((values, pos)) = after {
            after_row(&mut sql, schema, &query.sort, values, pos, part);
        }
        order_by(&mut sql, schema, &query.sort, part);
        sql.push(" LIMIT ").bind(clamp(limit));
        sql.push(" OFFSET ").bind(clamp(offset));
        let statement = sql.build();
        let reader = self.reader(schema.version_id).await;
        Ok(reader
            .run(|db| {
                let statement = statement.clone();
                async move { record::Model::find_by_statement(statement).all(&db).await }
            })
            .await?)
    }
}
