//! One import of a dataset: the unit that is loaded, made live, and later dropped.

use sea_orm::entity::prelude::*;

/// Lifecycle of a version: `loading` while its import runs (no reader can see it), `live`
/// once the dataset points at it, `retired` when a newer one replaces it while it is still
/// retained (`version=` reads it), `expired` once it is no longer retained (or its dataset was
/// removed), `dropped` once its tables are gone: they are dropped a grace period after it
/// expired, when no reader can still be using them (see `odqs::store::gc`). The row of a
/// published version stays, so `GET /datasets/{slug}/versions` lists every version ever
/// published (contract §13.1).
pub const STATE_LOADING: &str = "loading";
/// See [`STATE_LOADING`].
pub const STATE_LIVE: &str = "live";
/// See [`STATE_LOADING`].
pub const STATE_RETIRED: &str = "retired";
/// See [`STATE_LOADING`].
pub const STATE_EXPIRED: &str = "expired";
/// See [`STATE_LOADING`].
pub const STATE_DROPPED: &str = "dropped";

/// Whether a version in `state` can be read (`live` or `retired`).
pub fn retained(state: &str) -> bool {
    state == STATE_LIVE || state == STATE_RETIRED
}

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "dataset_versions")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub slug: String,
    pub state: String,
    pub record_count: i64,
    pub created_at: TimeDateTimeWithTimeZone,
    /// When it stopped being live; for an `expired` version, when it stopped being retained
    /// (the garbage collector's grace period counts from here).
    pub retired_at: Option<TimeDateTimeWithTimeZone>,
    /// Its number within its dataset, 1, 2, 3…; none while loading.
    pub number: Option<i64>,
    /// `sha256:<hex>` of its NDJSON export in `_id` order; none until computed.
    pub content_hash: Option<String>,
    /// When it went live.
    pub published_at: Option<TimeDateTimeWithTimeZone>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
