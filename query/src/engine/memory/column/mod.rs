//! The column shapes of an in-memory index. Strings (keyword, date, boolean, `_id`, and the
//! text dictionary) are dictionary-encoded with the dictionary in byte order, so comparing codes
//! compares values the way both stores do (`COLLATE "C"`, SQLite's `BINARY`). Each string
//! column also lists its rows per value (postings), and each number column its rows in value
//! order: a filter reads postings, a sort walks either list in order.

use super::rows::Bits;
use super::rows::{RowList, Rows};

mod ids;
mod numbers;
mod strings;
#[cfg(test)]
mod tests;

pub(crate) use ids::{IdColumn, Ids};
pub(crate) use numbers::{NumBuilder, NumColumn, Numbers};
pub(crate) use strings::{
    Code, Codes, Dict, Postings, StrBuilder, StrColumn, TextColumn, code_counts,
};

/// The code of a row that has no value.
pub(crate) const MISSING: u32 = u32::MAX;
