//! Publishers (contract §14.1): the operator's grant to an account of a right over the datasets a
//! pattern names (a slug, a prefix ending in `*`, or `*`). A token's `publish` scope works only
//! within its account's grants.

use sea_orm::entity::prelude::*;

/// The right to publish, replace, change and remove datasets over HTTP.
pub const RIGHT_PUBLISH: &str = "publish";

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "grants")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub user_id: i64,
    /// [`RIGHT_PUBLISH`], the one right there is.
    pub right: String,
    /// The datasets: a slug, a prefix ending in `*`, or `*`.
    pub pattern: String,
    /// Who granted it (the operator's name for themself, `cli` by default).
    pub granted_by: String,
    pub created_at: TimeDateTimeWithTimeZone,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
