//! The answers' shapes, below the engines that fill them: the views every front end serializes,
//! agg groups, how they are ordered and their statistics, relevance scores, and the export's
//! encoders.

pub(crate) mod encode;
pub(crate) mod groups;
#[cfg(feature = "openapi")]
mod openapi;
pub(crate) mod relevance;
pub mod views;

/// `bytes` in lower-case hexadecimal: ETags and token hashes, on every request, so one table
/// look-up a digit rather than a formatted string a byte.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}
