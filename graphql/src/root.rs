//! The root `Query`: each field is a thin call into the query layer, in the order the REST
//! handlers call it (syntax of the arguments, then the dataset, then the checks against its
//! schema, then the fetch), so a request refused by one API is refused the same way by the
//! other.

use std::sync::Arc;

use async_graphql::{Context, Json, Object, Result};
use serde_json::Value;

use crate::batch::Batch;
use crate::errors::OrGraphql;
use crate::inputs::{self, Conditions, FieldFilter, FieldSearch, GroupSort, SortKey};
use crate::objects::{AggResult, Dataset, DatasetList, RecordPage};
use query::cost::CostGate;
use query::{self, Need, Paging, Resolver, Scope};

/// The read API as a GraphQL schema. Every field reads with the token's `read` scope; a field
/// on a dataset outside the scope fails alone with `insufficient_scope` (contract §13.3).
pub struct QueryRoot;

/// The calling token's scope. [`crate::execute`] always gives one; a request run without it
/// reads nothing (it fails closed).
fn scope<'a>(ctx: &Context<'a>) -> Result<&'a Scope> {
    ctx.data_opt::<Scope>()
        .ok_or_else(|| crate::errors::to_graphql(&query::ApiError::Internal))
}

/// The shared resolver and this request's memo (a private one when the caller gave none),
/// once the token's scope allows reading `slug` (any dataset: `None`).
fn parts<'a>(ctx: &Context<'a>, slug: Option<&str>) -> Result<(&'a Resolver, Arc<Batch>)> {
    scope(ctx)?.require(Need::Read, slug).gql()?;
    let resolver = ctx.data_unchecked::<Arc<Resolver>>().as_ref();
    let batch = ctx.data_opt::<Arc<Batch>>().cloned().unwrap_or_default();
    Ok((resolver, batch))
}

/// The dataset published under `slug`, looked up once per request.
async fn dataset(resolver: &Resolver, batch: &Batch, slug: &str) -> Result<query::Dataset> {
    batch.dataset(slug, resolver.dataset(slug)).await.gql()
}

/// The dataset under `slug` at `version` (the live one without), looked up once per request
/// and version.
async fn dataset_at(
    resolver: &Resolver,
    batch: &Batch,
    slug: &str,
    version: Option<i64>,
) -> Result<query::Dataset> {
    let Some(version) = inputs::version(version).gql()? else {
        return dataset(resolver, batch, slug).await;
    };
    // A slug holds no NUL (the resolver refuses one), so the key is one (slug, version).
    let key = format!("{slug}\0{version}");
    batch
        .dataset(&key, resolver.dataset_at(slug, Some(version)))
        .await
        .gql()
}

#[Object]
impl QueryRoot {
    /// The published datasets the token may read, by slug (REST `GET /datasets`): a token
    /// limited to some datasets sees only those, in the list and in `total`.
    async fn datasets(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "Page number, from 1")] page: Option<i64>,
        #[graphql(desc = "Datasets per page, 1..=100, default 20")] per_page: Option<i64>,
        #[graphql(
            desc = "Words that must each occur in a dataset's title, description, field names or field descriptions (case-insensitive substrings)"
        )]
        q: Option<String>,
    ) -> Result<DatasetList> {
        let (resolver, _) = parts(ctx, None)?;
        let paging = Paging::new(
            inputs::count("page", page).gql()?,
            inputs::count("per_page", per_page).gql()?,
        )
        .gql()?;
        let words = query::params::catalog_words(q.as_deref()).gql()?;
        Ok(resolver
            .list_datasets(paging, &words, scope(ctx)?)
            .await
            .gql()?
            .into())
    }

    /// One dataset's metadata with its schema entries (REST `GET /datasets/{slug}`). This and
    /// every field below read with the token's `read` scope: on a dataset outside it the field
    /// fails alone, with `insufficient_scope`.
    async fn dataset(&self, ctx: &Context<'_>, slug: String) -> Result<Dataset> {
        let (resolver, batch) = parts(ctx, Some(&slug))?;
        let found = dataset(resolver, &batch, &slug).await?;
        Ok(resolver.detail(&found).into())
    }

    /// Search, filter, sort and page through a dataset's records (REST
    /// `GET /datasets/{slug}/records`). Costs its page size in complexity. To
    /// download every matching record in one streamed answer, use the REST export
    /// (`GET /api/v1/datasets/{slug}/export?format=ndjson|csv`) with the same
    /// conditions; GraphQL answers pages only.
    #[graphql(complexity = "child_complexity + per_page.map_or(20, |n| n.clamp(1, 100)) as usize")]
    #[allow(clippy::too_many_arguments)]
    async fn records(
        &self,
        ctx: &Context<'_>,
        slug: String,
        #[graphql(desc = "Full text: every term must occur in some text field")] q: Option<String>,
        #[graphql(desc = "Full text in one text field each (REST q[field])")] search: Option<
            Vec<FieldSearch>,
        >,
        #[graphql(desc = "Exact matches (REST field=value)")] filters: Option<Vec<FieldFilter>>,
        #[graphql(desc = "Only these record identifiers (REST _ids)")] ids: Option<Vec<String>>,
        #[graphql(
            desc = "Within a circle: `<lat>,<lon>,<radius>` with the radius in m or km (REST near)"
        )]
        near: Option<String>,
        #[graphql(desc = "Within a box: `<min_lon>,<min_lat>,<max_lon>,<max_lat>` (REST bbox)")]
        bbox: Option<String>,
        #[graphql(desc = "Page number, from 1")] page: Option<i64>,
        #[graphql(desc = "Records per page, 1..=100, default 20")] per_page: Option<i64>,
        #[graphql(
            desc = "Sort keys, first one first; with q or search, `_score` first orders by relevance (BM25) and each record carries its `_score`; with near, `_distance` (ASC: nearest first) adds `_distance_m`"
        )]
        sort: Option<Vec<SortKey>>,
        #[graphql(desc = "Fields to return; _id always comes back")] fields: Option<Vec<String>>,
        #[graphql(desc = "Keyword fields to count over every match beside the page (REST facet)")]
        facet: Option<Vec<String>>,
        #[graphql(desc = "Values per facet, 1..=100, default 10")] facet_size: Option<i64>,
        #[graphql(desc = "The dataset version to read (REST version); default: the live one")]
        version: Option<i64>,
        #[graphql(
            desc = "The page after the one whose `nextCursor` this is (REST cursor), instead of `page`; the other arguments must be the same"
        )]
        after: Option<String>,
    ) -> Result<RecordPage> {
        let (resolver, batch) = parts(ctx, Some(&slug))?;
        let conditions = Conditions {
            q,
            search,
            filters,
            ids,
            near,
            bbox,
        };
        let args = inputs::RecordArgs {
            page,
            per_page,
            sort,
            fields,
            facet,
            facet_size,
        };
        let mut params = inputs::record_params(conditions, args).gql()?;
        let prepared = match after {
            None => {
                let found = dataset_at(resolver, &batch, &slug, version).await?;
                resolver.prepare_records_in(found, &params).gql()?
            }
            Some(cursor) => {
                // A cursor pins its own version: the resolver reads it from the cursor.
                params.version = inputs::version(version).gql()?;
                params.cursor = Some(cursor);
                resolver.prepare_records(&slug, &params).await.gql()?
            }
        };
        weigh(ctx, prepared.extra)?;
        let page = batch
            .page(
                prepared.etag.clone(),
                Box::pin(resolver.run_records(&prepared)),
            )
            .await
            .gql()?;
        Ok(RecordPage::from(page.as_ref()))
    }

    /// One record by its `_id` (REST `GET /datasets/{slug}/records/{id}`).
    async fn record(
        &self,
        ctx: &Context<'_>,
        slug: String,
        id: String,
        #[graphql(desc = "Fields to return; _id always comes back")] fields: Option<Vec<String>>,
        #[graphql(desc = "The dataset version to read (REST version); default: the live one")]
        version: Option<i64>,
    ) -> Result<Json<Value>> {
        let (resolver, batch) = parts(ctx, Some(&slug))?;
        let found = dataset_at(resolver, &batch, &slug, version).await?;
        let prepared = resolver
            .prepare_record_in(found, &id, fields.as_deref())
            .gql()?;
        let record = batch
            .record(
                prepared.etag.clone(),
                Box::pin(resolver.run_record(&prepared)),
            )
            .await
            .gql()?;
        Ok(Json(record.as_ref().clone()))
    }

    /// Grouped statistics (REST `GET /datasets/{slug}/agg`): groups by
    /// count descending then key unless `sort` says otherwise; with `field`, sum, avg, min,
    /// max, missing and percentiles. More than 10,000 groups need `limit`.
    #[allow(clippy::too_many_arguments)]
    async fn agg(
        &self,
        ctx: &Context<'_>,
        slug: String,
        #[graphql(
            desc = "Keyword fields (dotted paths allowed); a date field in buckets (`time_hour[month]`: year, month, day, hour, UTC) or a number field in bins (`distance[500]`)"
        )]
        group_by: Vec<String>,
        #[graphql(desc = "A number field to compute statistics of")] field: Option<String>,
        #[graphql(desc = "Percentile labels, 0 to 100, at most 10 (default 25, 50, 75)")]
        percentiles: Option<Vec<f64>>,
        #[graphql(desc = "The groups' order (default: count descending, then key)")] sort: Option<
            GroupSort,
        >,
        #[graphql(desc = "Keep the first N groups (1 to 10,000)")] limit: Option<i64>,
        #[graphql(
            desc = "Keep only groups of at least this many records (SQL's HAVING count(*) >= n), before sort and limit; totalGroups counts the groups kept"
        )]
        min_count: Option<i64>,
        #[graphql(desc = "Full text: every term must occur in some text field")] q: Option<String>,
        #[graphql(desc = "Full text in one text field each (REST q[field])")] search: Option<
            Vec<FieldSearch>,
        >,
        #[graphql(desc = "Exact matches (REST field=value)")] filters: Option<Vec<FieldFilter>>,
        #[graphql(desc = "Only these record identifiers (REST _ids)")] ids: Option<Vec<String>>,
        #[graphql(
            desc = "Within a circle: `<lat>,<lon>,<radius>` with the radius in m or km (REST near)"
        )]
        near: Option<String>,
        #[graphql(desc = "Within a box: `<min_lon>,<min_lat>,<max_lon>,<max_lat>` (REST bbox)")]
        bbox: Option<String>,
        #[graphql(desc = "The dataset version to read (REST version); default: the live one")]
        version: Option<i64>,
    ) -> Result<AggResult> {
        let (resolver, batch) = parts(ctx, Some(&slug))?;
        let conditions = Conditions {
            q,
            search,
            filters,
            ids,
            near,
            bbox,
        };
        let grouping = inputs::Grouping {
            group_by,
            field,
            percentiles,
            sort,
            limit,
            min_count,
        };
        let params = inputs::agg_params(conditions, grouping).gql()?;
        let found = dataset_at(resolver, &batch, &slug, version).await?;
        let prepared = resolver.prepare_agg_in(found, &params).gql()?;
        weigh(ctx, prepared.extra)?;
        let result = batch
            .agg(prepared.etag.clone(), Box::pin(resolver.run_agg(&prepared)))
            .await
            .gql()?;
        Ok(AggResult::from(result.as_ref()))
    }
}

/// Weighs a prepared request's extra cost (a scan of a dataset's columns: grouped statistics,
/// full text) at the request's [`CostGate`] before it runs: refused, the field answers
/// `rate_limited` and reads nothing.
fn weigh(ctx: &Context<'_>, extra: Option<u64>) -> Result<()> {
    match (ctx.data_opt::<std::sync::Arc<dyn CostGate>>(), extra) {
        (Some(gate), Some(extra)) if extra > 0 => gate.weigh(extra).gql(),
        _ => Ok(()),
    }
}
