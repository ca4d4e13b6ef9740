//! What a request weighs against the rate limit. A page by primary key and a record by id cost
//! one request; work that reads a whole dataset's columns costs more, in proportion to the rows
//! it reads, so one token's grouped statistics cannot take the machine from everyone
//! else.
//!
//! - grouped statistics (`agg`) and full-text searches (`q`, `q[field]`): one request plus one
//!   per started [`ROWS_PER_REQUEST`] records of the dataset, at most [`MAX_EXTRA`] more;
//! - an export: one request plus one per started
//!   [`RECORDS_PER_REQUEST`] records it sends.
//!
//! Weights are known before any work is done (from the dataset's record count), so an answer
//! that does not fit the budget is refused up front, by every front end ([`CostGate`] for the
//! parts of a GraphQL document), and the `RateLimit` header of every answer shows what was
//! charged.

/// Where the parts of a request of several parts (a GraphQL document's fields) are weighed
/// before each runs: a part that scans asks for its extra requests, and a refusal is that
/// part's answer, so nothing is read that the budget does not cover. The front end that owns
/// the budget puts one in the request's data.
pub trait CostGate: Send + Sync {
    /// Takes `extra` requests from the caller's budget, or refuses with the error to answer
    /// (`rate_limited`).
    fn weigh(&self, extra: u64) -> Result<(), crate::ApiError>;
}

/// A gate that takes nothing: for a caller outside any budget (a GraphQL document run without
/// a token's gate).
pub struct Unmetered;

impl CostGate for Unmetered {
    fn weigh(&self, _extra: u64) -> Result<(), crate::ApiError> {
        Ok(())
    }
}

/// Records of a dataset per extra request a scan of its columns weighs.
pub const ROWS_PER_REQUEST: u64 = 10_000;

/// The most extra requests a scan weighs, so that a dataset of any size stays askable within
/// a budget.
pub const MAX_EXTRA: u64 = 100;

/// Extra requests (beyond the request itself) that a scan of a dataset of `records` records
/// weighs.
pub fn scan_extra(records: u64) -> u64 {
    records.div_ceil(ROWS_PER_REQUEST).min(MAX_EXTRA)
}

/// An export counts as one request for the rate limit plus one per this many records it
/// sends (contract §12.3), each started block counting whole.
pub const RECORDS_PER_REQUEST: u64 = 1000;

/// The rate-limit requests an export of `total` records costs beyond the request itself.
pub fn extra_requests(total: u64) -> u64 {
    total.div_ceil(RECORDS_PER_REQUEST)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_grow_with_the_rows_read_and_stop_at_the_cap() {
        assert_eq!(scan_extra(0), 0);
        assert_eq!(scan_extra(1), 1);
        assert_eq!(scan_extra(10_000), 1);
        assert_eq!(scan_extra(336_776), 34);
        assert_eq!(scan_extra(3_367_760), MAX_EXTRA);
        assert_eq!(scan_extra(u64::MAX), MAX_EXTRA);
    }

    #[test]
    fn an_export_weighs_one_request_per_started_thousand_records() {
        assert_eq!(extra_requests(0), 0);
        assert_eq!(extra_requests(1), 1);
        assert_eq!(extra_requests(1000), 1);
        assert_eq!(extra_requests(336_776), 337);
    }
}
