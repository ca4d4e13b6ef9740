//! Cursors (contract §13.2): the page after one page of records, pinned to what that page read.
//!
//! A cursor holds the dataset version, a digest of the dataset's slug and the normalized
//! request (conditions, sort, projection, facets and `per_page`; not the page), the number of
//! records before the page it leads to, and the last row of the page that gave it. The store
//! path reads on from that row by its sort keys and `pos` (a keyset, not an offset); the index
//! and the kept orders of relevance and distance go straight to the offset. Versions never
//! change, so both say the same page.
//!
//! It is signed (HMAC-SHA256, truncated to 128 bits) with a key kept in the store's `secrets`
//! table, made by the first instance that needs it: every instance accepts every other's
//! cursors, and a restart keeps them valid. An altered cursor, or one used with other
//! conditions, is 400 `invalid_cursor`.

use sha2::{Digest, Sha256};

use super::{Prepared, Resolver};
use crate::dataset::Dataset;
use crate::engine::store::secrets;
use crate::error::ApiError;
use crate::request::RecordQuery;
use crate::request::params::RecordParams;

/// The layout of a cursor's payload, first byte.
const FORMAT: u8 = 1;
/// Bytes of the request digest and of the signature.
const DIGEST: usize = 16;
/// Bytes of a payload: format, version, offset, last row, digest.
const PAYLOAD: usize = 1 + 8 + 8 + 4 + DIGEST;
/// The name of the signing key in `secrets`.
const KEY_NAME: &str = "cursor_key";

/// What a cursor says, once its signature is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    /// The dataset version the pages read.
    pub version: u64,
    /// Records before the page the cursor leads to.
    pub offset: u64,
    /// The last row (0-based position) of the page that gave the cursor.
    pub after: u32,
    digest: [u8; DIGEST],
}

impl Resolver {
    /// The key cursors are signed with: read from the store once, made there the first time.
    pub(crate) async fn cursor_key(&self) -> Result<&[u8; 32], ApiError> {
        self.cursor_key
            .get_or_try_init(|| async {
                if let Some(key) = self.read_cursor_key().await? {
                    return Ok(key);
                }
                let made: [u8; 32] = rand::random();
                secrets::insert_if_absent(&self.db, KEY_NAME, super::hex(&made)).await?;
                // Another instance may have made one first: the store's is the key.
                self.read_cursor_key().await?.ok_or(ApiError::Internal)
            })
            .await
    }

    async fn read_cursor_key(&self) -> Result<Option<[u8; 32]>, ApiError> {
        let Some(text) = secrets::read(&self.db, KEY_NAME).await? else {
            return Ok(None);
        };
        let bytes = unhex(&text).ok_or(ApiError::Internal)?;
        Ok(Some(bytes.try_into().map_err(|_| ApiError::Internal)?))
    }

    /// The cursor of the page after one of `query` on `dataset` that ended at row `after`,
    /// `offset` records in. The key must have been read ([`Self::cursor_key`]).
    pub(crate) fn cursor_after(
        &self,
        dataset: &Dataset,
        query: &RecordQuery,
        offset: u64,
        after: u32,
    ) -> Option<String> {
        let key = self.cursor_key.get()?;
        let mut payload = Vec::with_capacity(PAYLOAD + DIGEST);
        payload.push(FORMAT);
        payload.extend_from_slice(&dataset.version().to_be_bytes());
        payload.extend_from_slice(&offset.to_be_bytes());
        payload.extend_from_slice(&after.to_be_bytes());
        payload.extend_from_slice(&request_digest(dataset, query));
        let signature = hmac(key, &payload);
        payload.extend_from_slice(&signature[..DIGEST]);
        Some(super::hex(&payload))
    }

    /// [`Self::prepare_records`] with a cursor: the version it pins, checked against the
    /// request it came from, and the page it leads to.
    pub(super) async fn prepare_cursor_page(
        &self,
        slug: &str,
        params: &RecordParams,
        text: &str,
    ) -> Result<Prepared<RecordQuery>, ApiError> {
        let cursor = self.open_cursor(text).await?;
        if params.page.is_some() {
            return Err(ApiError::invalid(
                "cursor",
                "cursor and page cannot go together: a cursor says which page comes next.",
            ));
        }
        if params.version.is_some_and(|v| v != cursor.version) {
            return Err(ApiError::InvalidCursor {
                reason: "it reads another version than the version parameter names",
            });
        }
        let dataset = self.dataset_at(slug, Some(cursor.version)).await?;
        let mut prepared = self.prepare_records_in(dataset, params)?;
        if !cursor.fits(&prepared.dataset, &prepared.query) {
            return Err(ApiError::InvalidCursor {
                reason: "it was made for other conditions, sort, fields, facets or per_page",
            });
        }
        let per_page = prepared.query.paging.per_page;
        if !cursor.offset.is_multiple_of(per_page) {
            return Err(ApiError::InvalidCursor {
                reason: "it was made for another per_page",
            });
        }
        prepared.query.paging.page = cursor.offset / per_page + 1;
        prepared.query.after = Some(cursor.after);
        prepared.etag = self.records_etag(&prepared.dataset, &prepared.query);
        Ok(prepared)
    }

    /// The cursor `text`, its signature checked: 400 `invalid_cursor` when it was altered or
    /// made with another key.
    pub async fn open_cursor(&self, text: &str) -> Result<Cursor, ApiError> {
        let key = self.cursor_key().await?;
        let invalid = || ApiError::InvalidCursor {
            reason: "it is not one this service gave, or it was altered",
        };
        let bytes = unhex(text).ok_or_else(invalid)?;
        if bytes.len() != PAYLOAD + DIGEST || bytes[0] != FORMAT {
            return Err(invalid());
        }
        let (payload, signature) = bytes.split_at(PAYLOAD);
        let expected = hmac(key, payload);
        // Compared in full whatever differs first, so the time says nothing of the signature.
        let differs = expected[..DIGEST]
            .iter()
            .zip(signature)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if differs != 0 {
            return Err(invalid());
        }
        let number = |range: std::ops::Range<usize>| {
            payload[range]
                .iter()
                .fold(0u64, |n, &b| (n << 8) | u64::from(b))
        };
        Ok(Cursor {
            version: number(1..9),
            offset: number(9..17),
            after: number(17..21) as u32,
            digest: payload[21..].try_into().map_err(|_| invalid())?,
        })
    }
}

impl Cursor {
    /// Whether the cursor was made for `query` on `dataset` (the same slug, conditions, sort,
    /// projection, facets and `per_page`).
    pub fn fits(&self, dataset: &Dataset, query: &RecordQuery) -> bool {
        self.digest == request_digest(dataset, query)
    }
}

/// The digest a cursor pins: the slug and the request without its page (the hash the
/// request carries, made once when it was validated).
fn request_digest(dataset: &Dataset, query: &RecordQuery) -> [u8; DIGEST] {
    let mut hasher = Sha256::new();
    hasher.update(dataset.meta.slug.as_bytes());
    hasher.update([0]);
    hasher.update(query.meaning);
    let digest = hasher.finalize();
    let mut out = [0u8; DIGEST];
    out.copy_from_slice(&digest[..DIGEST]);
    out
}

/// HMAC-SHA256 (RFC 2104) of `message` under a 32-byte `key`.
fn hmac(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut inner_pad = [0x36u8; BLOCK];
    let mut outer_pad = [0x5cu8; BLOCK];
    for (i, &k) in key.iter().enumerate() {
        inner_pad[i] ^= k;
        outer_pad[i] ^= k;
    }
    let inner = Sha256::new()
        .chain_update(inner_pad)
        .chain_update(message)
        .finalize();
    let outer = Sha256::new()
        .chain_update(outer_pad)
        .chain_update(inner)
        .finalize();
    let mut out = [0u8; 32];
    out.copy_from_slice(&outer);
    out
}

/// Lower-case (or upper-case) hexadecimal to bytes; `None` for anything else.
fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    text.as_bytes()
        .chunks(2)
        .map(|pair| Some((digit(pair[0])? << 4) | digit(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The digest Python's `hmac` module gives for the same key and message.
    #[test]
    fn hmac_matches_a_known_digest() {
        let key = [0x0bu8; 32];
        let digest = hmac(&key, b"Hi There");
        assert_eq!(
            super::super::hex(&digest),
            "198a607eb44bfbc69903a0f1cf2bbdc5ba0aa3f3d9ae3c1c7a3b1696a0b68cf7"
        );
    }

    #[test]
    fn hex_round_trips_and_refuses_other_text() {
        assert_eq!(unhex("00ff10"), Some(vec![0, 255, 16]));
        assert_eq!(unhex("0"), None);
        assert_eq!(unhex("zz"), None);
        assert_eq!(unhex("é1"), None);
    }
}
