//! The layer both APIs share. [`query`] turns request parameters into one validated, typed
//! request checked against the dataset's schema, plans it and runs it on the store; the REST
//! routes in the `odqs` crate and the GraphQL [`schema`] are thin calls into it, so no
//! validation rule is written twice.

pub mod log_text;
pub mod query;
pub mod schema;
