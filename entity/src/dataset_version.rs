//! One import of a dataset: the unit that is loaded, made live, and later dropped.

use sea_orm::entity::prelude::*;

/// Lifecycle of a version: `loading` while its import runs (no reader can see it), `live`
/// once the dataset points at it, `retired` when a newer one (or a removal) replaces it; its
/// tables are dropped once no reader can still be using it (see `odqs::store::gc`).
pub const STATE_LOADING: &str = "loading";
/// See [`STATE_LOADING`].
pub const STATE_LIVE: &str = "live";
/// See [`STATE_LIVE`].
pub const STATE_RETIRED: &str = "retired";

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "dataset_versions")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub slug: String,
    pub state: String,
    pub record_count: i64,
    pub created_at: TimeDateTimeWithTimeZone,
    pub retired_at: Option<TimeDateTimeWithTimeZone>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
