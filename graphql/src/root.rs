//! The root `Query`: each field is a thin call into the query layer, in the order the REST
//! handlers call it (syntax of the arguments, then the dataset, then the checks against its
//! schema, then the fetch), so a request refused by one API is refused the same way by the
//! other.

use std::sync::Arc;

use async_graphql::{Context, Json, Object, Result};
use serde_json::Value;

use crate::errors::OrGraphql;
use crate::inputs::{self, Conditions, FieldFilter, FieldSearch, GroupSort, SortKey};
use crate::objects::{AggResult, Dataset, DatasetList, RecordPage};
use query::cost::{CostGate, Unmetered};
use query::{self, Caller, Memo, Need, Paging, Resolver, Scope};

/// The read API as a GraphQL schema. Every field reads with the token's `read` scope; a field
/// on a dataset outside the scope fails alone with `insufficient_scope` (contract §13.3).
pub struct QueryRoot;

/// The calling token's scope. [`crate::execute`] always gives one; a request run without it
/// reads nothing (it fails closed).
fn scope<'a>(ctx: &Context<'a>) -> Result<&'a Scope> {
    ctx.data_opt::<Scope>()
        .ok_or_else(|| crate::errors::to_graphql(&query::ApiError::Internal))
}

/// What a field calls the query layer with: the shared resolver, and the caller as this request
/// made it (the token's scope, the gate its heavy fields are weighed at, the document's memo).
struct Parts<'a> {
    resolver: &'a Resolver,
    scope: &'a Scope,
    memo: Arc<Memo>,
    gate: Arc<dyn CostGate>,
}

impl Parts<'_> {
    fn caller(&self) -> Caller<'_> {
        Caller {
            scope: self.scope,
            gate: self.gate.as_ref(),
            memo: Some(&self.memo),
        }
    }
}

/// This request's [`Parts`]: a private memo when the request came without one, and no charge
/// when it came without a gate.
fn parts<'a>(ctx: &Context<'a>) -> Result<Parts<'a>> {
    Ok(Parts {
        resolver: ctx.data_unchecked::<Arc<Resolver>>().as_ref(),
        scope: scope(ctx)?,
        memo: ctx.data_opt::<Arc<Memo>>().cloned().unwrap_or_default(),
        gate: match ctx.data_opt::<Arc<dyn CostGate>>() {
            Some(gate) => gate.clone(),
            None => Arc::new(Unmetered),
        },
    })
}

#[Object]
impl QueryRoot {
    /// The published datasets the token may read, by slug, or best match first with `q` (REST
    /// `GET /datasets`): a token limited to some datasets sees only those, in the list and in
    /// `total`.
    async fn datasets(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "Page number, from 1")] page: Option<i64>,
        #[graphql(desc = "Datasets per page, 1..=100, default 20")] per_page: Option<i64>,
        #[graphql(
            desc = "Words that must each occur in a dataset's title, description, field names or field descriptions (case-insensitive substrings); the matches come best first (BM25), ties by slug"
        )]
        q: Option<String>,
    ) -> Result<DatasetList> {
        let resolver = parts(ctx)?.resolver;
        scope(ctx)?.require(Need::Read, None).gql()?;
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
        let parts = parts(ctx)?;
        let found = parts
            .resolver
            .call_dataset(&parts.caller(), &slug)
            .await
            .gql()?;
        Ok(parts.resolver.detail(&found).into())
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
        let parts = parts(ctx)?;
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
        params.version = inputs::version(version).gql()?;
        // A cursor pins its own version: the resolver reads it from the cursor.
        params.cursor = after;
        let ready = parts
            .resolver
            .call_records(&parts.caller(), &slug, &params)
            .await
            .gql()?;
        let page = ready.run().await.gql()?;
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
        let parts = parts(ctx)?;
        let version = inputs::version(version).gql()?;
        let record = (id.as_str(), fields.as_deref());
        let ready = parts
            .resolver
            .call_record(&parts.caller(), &slug, record, version)
            .await
            .gql()?;
        let record = ready.run().await.gql()?;
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
        let parts = parts(ctx)?;
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
        let mut params = inputs::agg_params(conditions, grouping).gql()?;
        params.version = inputs::version(version).gql()?;
        let ready = parts
            .resolver
            .call_agg(&parts.caller(), &slug, &params)
            .await
            .gql()?;
        let result = ready.run().await.gql()?;
        Ok(AggResult::from(result.as_ref()))
    }
}
