//! Requests before and after they meet a dataset: typed parameters with their syntax rules
//! ([`params`]; reading them from a query string is REST's), then validated against one
//! version's schema and normalized ([`filter`], [`records`], [`agg`], [`export`]), so that
//! two requests that mean the same thing are equal (their cache key and `ETag` too). Every rule of contract §5 and §6 is
//! checked here, once, whichever front end the parameters came from.

pub mod agg;
pub mod export;
pub mod filter;
pub mod params;
pub mod places;
pub mod records;
pub mod reserved;
#[cfg(test)]
mod tests;

pub use agg::{AggQuery, GroupBy, GroupOrder, Grouping, agg_query};
pub use export::{ExportQuery, export_query};
pub use filter::{ExactValue, Filter, Range, RangeValue, filter, terms};
pub use records::{DISTANCE, DISTANCE_M, Facets, RecordQuery, SCORE, projection, record_query};
