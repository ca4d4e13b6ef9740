//! One dataset version as the resolver sees it: its schema (names, types, store columns,
//! schema entries, record key order), how its bodies are packed, and the dataset resolved to
//! that version for one request. Everything above reads a dataset through here.

pub mod packed;
pub mod scan;
pub mod schema;

use std::sync::Arc;

pub use schema::{Column, DatasetSchema, Field};

/// A published dataset resolved to its live version, for the length of one request: the
/// metadata row and that version's schema always belong together.
#[derive(Clone, Debug)]
pub struct Dataset {
    pub meta: entity::dataset::Model,
    pub schema: Arc<DatasetSchema>,
}
