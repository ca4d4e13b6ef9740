//! An agg's groups read from the store (contract §6, §12.2): one statement of the matches'
//! group keys (and values), folded by [`super::fold`] straight from an SQLite file or through
//! sqlx's stream.

use std::sync::Arc;

use sea_orm::Statement;

use super::direct::DirectSqlite;
use super::fold::{self, Groups};
use super::replicas::Reader;
use super::sql::{Access, ResolvedFilter, Sql, from_where};
use crate::answer::groups::check_group_count;
use crate::dataset::{Column, DatasetSchema};
use crate::error::ApiError;
use crate::request::params::MAX_GROUPS;
use crate::request::{AggQuery, Grouping};

/// The groups of the matches of `resolved` in `schema`'s version of `records` rows, as
/// `query` groups them; more than [`MAX_GROUPS`] value groups without a limit are refused
/// without reading them all.
pub(crate) async fn groups(
    direct: Option<Arc<DirectSqlite>>,
    reader: &Reader,
    (schema, resolved): (&Arc<DatasetSchema>, &ResolvedFilter<'_>),
    query: &AggQuery,
    records: i64,
) -> Result<Groups, ApiError> {
    // Keyword groups are the store's own groups: more than MAX_GROUPS of them without limit
    // is refused without reading them all.
    let exact_groups =
        query.field.is_none() && query.group_by.iter().all(|g| g.grouping == Grouping::Value);
    // With `min_count`, groups are counted after those too small are left out, so all are read.
    let cap = (exact_groups && query.limit.is_none() && query.min_count.is_none())
        .then_some(MAX_GROUPS + 1);
    // The store's groups (`GROUP BY`) for sqlx's stream and the group count; the direct read
    // takes the matching rows ungrouped and folds them itself, on both cores when nothing
    // filters them, as SQLite's `GROUP BY` on a column without an index sorts every row first.
    let statement = select(reader, (schema, resolved), query, (true, cap));
    let rows = select(reader, (schema, resolved), query, (false, cap));
    let direct = fold::fold_direct(direct, &rows, query, schema, (records, cap));
    let groups = match direct.await {
        Some(folded) => folded,
        None => {
            reader
                .run(|db| {
                    let statement = statement.clone();
                    async move { fold::fold_stream(&db, statement, query, schema).await }
                })
                .await?
        }
    };
    // Capped groups are value groups, one per store group: as many as the cap means the
    // statement had more than `MAX_GROUPS`.
    if let Some(cap) = cap
        && groups.len() as u64 >= cap
    {
        let count = reader
            .run(|db| {
                let statement = statement.clone();
                async move { fold::count_store_groups(&db, statement).await }
            })
            .await?;
        check_group_count(count, query)?;
    }
    Ok(groups)
}

/// The matches' group keys as `k0, k1, …` and `query`'s field as `v` (or a count `n`): grouped
/// by the store (`GROUP BY`, at most `cap` groups) or a row a match.
fn select(
    reader: &Reader,
    (schema, resolved): (&DatasetSchema, &ResolvedFilter<'_>),
    query: &AggQuery,
    (grouped, cap): (bool, Option<u64>),
) -> Statement {
    let columns: Vec<&str> = query
        .group_by
        .iter()
        .map(|g| schema.sql_column(Column::Field(g.field)))
        .collect();
    let mut sql = Sql::new(reader.backend());
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
    from_where(&mut sql, schema, resolved, Access::Planner);
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
}
