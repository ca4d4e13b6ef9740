//! SeaORM entities of the odqs store.
//!
//! The catalog (datasets, their versions and fields), accounts (users, API tokens, site sessions,
//! throttling counters) and the device authorization grants are ordinary tables created by the
//! `migration` crate. The records of a dataset live in one table per dataset *version*
//! (`records_v{N}`), created by the import because its typed columns follow that version's
//! schema; [`record`] describes the columns every such table shares and names the tables, so
//! nobody spells those names twice.

pub mod api_token;
pub mod dataset;
pub mod dataset_field;
pub mod dataset_version;
pub mod device_grant;
pub mod field_type;
pub mod grant;
pub mod pending_schema;
pub mod publish_job;
pub mod record;
pub mod session;
pub mod throttle_counter;
pub mod user;

pub use field_type::FieldType;
