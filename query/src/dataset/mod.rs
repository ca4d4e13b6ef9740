//! One dataset version as the resolver sees it: its schema (names, types, store columns,
//! schema entries, record key order), how its bodies are packed, and the dataset resolved to
//! that version for one request. Everything above reads a dataset through here.

pub(crate) mod flat;
pub(crate) mod packed;
pub(crate) mod schema;

pub(crate) use schema::{Column, Dataset, DatasetSchema};
