//! The resolver of odqs: one layer behind REST, GraphQL and MCP that validates a request
//! against a dataset's schema and answers it from the in-memory index or the store.
//!
//! Its modules stand on floors, lowest first; a module imports only its own floor and the
//! floors below it, never one above:
//!
//! 1. The contract's vocabulary: [`error`] (the error codes), [`cost`] (the weight of a
//!    request), [`log_text`] (text clipped for logs), [`operators`] (the filter operators of
//!    §12.1 and the types that take them), [`dates`] (date text as instants and UTC buckets).
//! 2. [`dataset`]: one version's schema (fields, types, store columns, schema entries, record
//!    key order), packed bodies, and a dataset resolved to its live version.
//! 3. [`request`]: typed parameters with their syntax rules, validated against a schema into
//!    [`RecordQuery`], [`AggQuery`] and [`ExportQuery`]. No query-string reading: that is
//!    REST's.
//! 4. [`answer`]: the answers' shapes: views, agg groups and their order, percentiles, the
//!    export's encoders.
//! 5. [`engine`]: what answers: the in-memory index ([`engine::memory`]) and the store
//!    ([`engine::store`]: SQL for both stores, direct SQLite reads, the agg fold).
//! 6. [`resolver`]: the facade, [`Resolver`]: one call per request kind below every front end
//!    ([`Caller`], [`Ready`]), the caches, the single flight, the catalog, the guides' facts and
//!    the export plan.
//!
//! The floors' vocabulary (error codes, costs, operators, dates, scopes, log text) is public;
//! the rest is the crate's own, and the front ends reach what they use by the short paths
//! re-exported below (`query::params`, `query::memory`, `query::views`…): one list, the whole
//! public surface.

#![warn(unreachable_pub)]

mod answer;
pub mod cost;
mod dataset;
pub mod dates;
mod engine;
pub mod error;
pub mod log_text;
pub mod operators;
mod request;
mod resolver;
pub mod scope;

// The public surface: what the front ends, the import and the tests use, and nothing else.
pub use answer::views;
pub use dataset::schema::{Dataset, DatasetSchema, MAX_FIELDS};
pub use error::ApiError;
pub use request::agg::AggQuery;
pub use request::export::ExportQuery;
pub use request::filter::{MAX_SEARCH_CHARS, MAX_SEARCH_TERMS};
pub use request::params::{
    self, AggParams, ExportFormat, ExportParams, FilterParams, Paging, RecordParams, SortParam,
};
pub use request::places::{EARTH_RADIUS_M, MAX_RADIUS_M, distance_m};
pub use request::records::RecordQuery;
pub use resolver::call::{Caller, Ready};
pub use resolver::catalog::{CatalogEpoch, DATASET_FRESH_FOR};
pub use resolver::memo::Memo;
pub use resolver::{Prepared, RecordById, Resolver, hex};
pub use scope::{Need, Scope};

/// The in-memory indexes as the service configures and reports them.
pub mod memory {
    pub use crate::engine::memory::policy::{DEFAULT_BUDGET_BYTES, IndexPolicy};
    pub use crate::engine::memory::{BeyondBudget, Held};
}

/// The read replicas' health, as `/readyz` and the metrics tell it.
pub mod replicas {
    pub use crate::engine::store::replicas::{Health, STALE_AFTER};
}

/// Instants written as the catalog writes them.
pub mod catalog {
    pub use crate::resolver::catalog::rfc3339;
}

/// The export's plan and stream.
pub mod export {
    pub use crate::resolver::export::{BATCH_RECORDS, Export, POSITION_BATCH};
}

/// A dataset's facts for its guide.
pub mod facts {
    pub use crate::resolver::facts::{DatasetFacts, FieldFacts, Range};
}

/// Versions and their changes.
pub mod versions {
    pub use crate::resolver::versions::Changes;
}

/// Record bodies packed without their keys (the import writes them so).
pub mod packed {
    pub use crate::dataset::packed::Layout;
}

/// A version's schema as the store and the import read it.
pub mod schema {
    pub use crate::dataset::schema::{FilterInfo, SchemaEntry};
}
