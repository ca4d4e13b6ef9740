//! `GET /datasets/{slug}/agg` (contract §6, §12.2): from the in-memory index when it answers,
//! else a grouped statement on the store, folded by [`crate::engine::store::fold`] and finished
//! like the index's groups ([`crate::answer::groups::finish`]).

use std::cmp::Ordering;

use super::{Prepared, Resolver, record_count};
use crate::answer::groups::{KeyPart, Tally, check_group_count, finish, numeric_stats};
use crate::answer::views::AggResult;
use crate::cost;
use crate::dataset::{Column, Dataset};
use crate::engine::store::fold;
use crate::engine::store::sql::{Access, Sql, from_where};
use crate::error::ApiError;
use crate::request::params::AggParams;
use crate::request::params::MAX_GROUPS;
use crate::request::{self, AggQuery, Grouping};

impl Resolver {
    /// `GET /datasets/{slug}/agg`, prepared: the dataset resolved, the parameters validated
    /// against its schema, the tag and the weight (a scan of the dataset's columns).
    pub async fn prepare_agg(
        &self,
        slug: &str,
        params: &AggParams,
    ) -> Result<Prepared<AggQuery>, ApiError> {
        let dataset = self.dataset_at(slug, params.version).await?;
        self.prepare_agg_in(dataset, params)
    }

    /// [`Self::prepare_agg`] on a dataset already resolved.
    pub fn prepare_agg_in(
        &self,
        dataset: Dataset,
        params: &AggParams,
    ) -> Result<Prepared<AggQuery>, ApiError> {
        let query = request::agg_query(params, &dataset.schema)?;
        let extra = Some(cost::scan_extra(record_count(&dataset)));
        let etag = self.etag(&dataset, "agg", &query);
        Ok(Prepared {
            dataset,
            query,
            etag,
            extra,
        })
    }

    /// Runs a prepared agg request.
    pub async fn run_agg(&self, prepared: &Prepared<AggQuery>) -> Result<AggResult, ApiError> {
        self.agg(&prepared.dataset, &prepared.query).await
    }

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
        let mut groups = fold::Groups::new();
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
            // With `min_count`, groups are counted after those too small are left out, so all
            // are read.
            let cap = (exact_groups && query.limit.is_none() && query.min_count.is_none())
                .then_some(MAX_GROUPS + 1);
            // The store's groups (`GROUP BY`) for sqlx's stream and the group count; the
            // direct read takes the matching rows ungrouped and folds them itself, on both
            // cores when nothing filters them, as SQLite's `GROUP BY` on a column without an
            // index sorts every row first.
            let select = |grouped: bool| {
                let mut sql = Sql::new(self.backend());
                sql.push("SELECT ");
                for (i, column) in columns.iter().enumerate() {
                    sql.ident(column).push(&format!(" AS k{i}, "));
                }
                match query.field {
                    None if grouped => sql.push("COUNT(*) AS n"),
                    None => sql.push("1 AS n"),
                    Some(field) => sql
                        .ident(schema.sql_column(Column::Field(field)))
                        .push(" AS v"),
                };
                from_where(&mut sql, schema, &resolved, Access::Planner);
                for column in &columns {
                    sql.push(" AND ").ident(column).push(" IS NOT NULL");
                }
                if grouped && query.field.is_none() {
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
                sql.build()
            };
            let statement = select(true);
            let records = dataset.meta.record_count;
            let rows = select(false);
            let direct =
                fold::fold_direct(self.direct.clone(), &rows, query, schema, (records, cap));
            groups = match direct.await {
                Some(folded) => folded,
                None => {
                    let reader = self.reader(schema.version_id).await;
                    reader
                        .run(|db| {
                            let statement = statement.clone();
                            async move { fold::fold_stream(&db, statement, query, schema).await }
                        })
                        .await?
                }
            };
            // Capped groups are value groups, one per store group: as many as the cap means
            // the statement had more than `MAX_GROUPS`.
            if let Some(cap) = cap
                && groups.len() as u64 >= cap
            {
                let reader = self.reader(schema.version_id).await;
                let groups = reader
                    .run(|db| {
                        let statement = statement.clone();
                        async move { fold::count_store_groups(&db, statement).await }
                    })
                    .await?;
                check_group_count(groups, query)?;
            }
        }
        finish_store_groups(query, total_records, groups)
    }
}

/// An agg's answer from the groups a store path folded (or a guide's facts counted).
pub(super) fn finish_store_groups(
    query: &AggQuery,
    total_records: u64,
    groups: fold::Groups,
) -> Result<AggResult, ApiError> {
    let kept = groups.iter().filter(|(_, (n, _))| query.keeps(*n)).count();
    check_group_count(kept as u64, query)?;
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
