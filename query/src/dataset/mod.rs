//! One dataset version as the resolver sees it: its schema (names, types, store columns,
//! schema entries, record key order), how its bodies are packed, and the dataset resolved to
//! that version for one request. Everything above reads a dataset through here.

pub mod flat;
pub mod packed;
pub mod schema;

pub use schema::{Column, Dataset, DatasetSchema, Field};
