//! The GraphQL schema (contract §10, async-graphql): the REST API's questions as typed fields,
//! each a thin call into [`query`], so both APIs validate, answer and refuse alike.
//!
//! - [`root`]: the `Query` type (`datasets`, `dataset`, `records`, `record`, `agg`).
//! - [`inputs`]: typed arguments turned into the query layer's parameters.
//! - [`objects`]: the answers as typed objects; records are a `JSON` scalar.
//! - [`errors`]: rejections with the REST code in `extensions.code`.
//! - [`limits`]: size, nesting, depth, complexity, spread, alias and fetch-count limits.

pub mod errors;
pub mod inputs;
pub mod limits;
pub mod objects;
pub mod root;

use std::sync::Arc;

use async_graphql::{EmptyMutation, EmptySubscription, Request, Response, Schema};

pub use limits::{
    MAX_ALIASES, MAX_COMPLEXITY, MAX_DEPTH, MAX_DOCUMENT_BYTES, MAX_FETCHES, MAX_FRAGMENT_SPREADS,
    MAX_NESTING,
};
pub use root::QueryRoot;

use query::Resolver;

/// The schema type the server holds.
pub type OdqsSchema = Schema<QueryRoot, EmptyMutation, EmptySubscription>;

/// The schema with its limits and no data: the SDL is written from it, and the tests of the
/// limits run documents through it.
pub fn builder() -> async_graphql::SchemaBuilder<QueryRoot, EmptyMutation, EmptySubscription> {
    Schema::build(QueryRoot, EmptyMutation, EmptySubscription)
        .limit_depth(MAX_DEPTH)
        .limit_complexity(MAX_COMPLEXITY)
        .extension(limits::Limits)
}

/// The schema over `resolver`, with its limits. Build once; it is cheap to clone.
pub fn build(resolver: Arc<Resolver>) -> OdqsSchema {
    builder().data(resolver).finish()
}

/// The schema in SDL, as checked in at `graphql/schema.graphql`.
pub fn sdl() -> String {
    builder().finish().sdl()
}

/// Runs one request for a token of `scope`, with a fresh per-request memo.
pub async fn execute(schema: &OdqsSchema, request: Request, scope: query::Scope) -> Response {
    execute_with(schema, request, Arc::default(), scope).await
}

/// Runs one request for a token of `scope` with the given memo (tests read its counters
/// afterwards). Every field that reads a dataset asks the scope first; a field outside it fails
/// alone with `insufficient_scope` (contract §13.3).
pub async fn execute_with(
    schema: &OdqsSchema,
    request: Request,
    memo: Arc<query::Memo>,
    scope: query::Scope,
) -> Response {
    schema.execute(request.data(memo).data(scope)).await
}
