//! Requests before and after they meet a dataset: typed parameters with their syntax rules
//! ([`params`]; reading them from a query string is REST's), then validated against one
//! version's schema and normalized ([`filter`], [`records`], [`agg`], [`export`]), so that
//! two requests that mean the same thing are equal (their cache key and `ETag` too). Every rule of contract §5 and §6 is
//! checked here, once, whichever front end the parameters came from.

pub(crate) mod agg;
pub(crate) mod catalog;
pub(crate) mod export;
pub(crate) mod filter;
pub mod params;
pub(crate) mod places;
pub(crate) mod records;
pub(crate) mod reserved;
#[cfg(test)]
mod tests;

pub(crate) use agg::{AggQuery, GroupBy, GroupOrder, Grouping, agg_query};
pub(crate) use export::{ExportQuery, export_query};
pub(crate) use filter::{ExactValue, Filter, Range, RangeValue};
pub(crate) use records::{DISTANCE_M, Facets, RecordQuery, SCORE, projection, record_query};
