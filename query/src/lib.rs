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
//! 6. [`resolver`]: the facade, [`Resolver`]: one prepare and one run per endpoint, the
//!    caches, the single flight, the catalog, the guides' facts and the export plan.
//!
//! The front ends reach the modules they use by the short paths re-exported below
//! (`query::params`, `query::memory`, `query::views`…).

pub mod answer;
pub mod cost;
pub mod dataset;
pub mod dates;
pub mod engine;
pub mod error;
pub mod log_text;
pub mod operators;
pub mod request;
pub mod resolver;
pub mod scope;

pub use answer::views;
pub use dataset::{Dataset, DatasetSchema, packed, schema};
pub use engine::memory;
pub use error::ApiError;
pub use request::params::{
    self, AggParams, ExportFormat, ExportParams, FilterParams, Paging, RecordParams, SortParam,
};
pub use request::{AggQuery, ExportQuery, RecordQuery};
pub use resolver::catalog::{CatalogEpoch, DATASET_FRESH_FOR};
pub use resolver::{Resolver, catalog, export, facts, hex, versions};
pub use scope::{Need, Scope};
