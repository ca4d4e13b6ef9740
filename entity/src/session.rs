//! A signed-in browser session on the site.

use sea_orm::entity::prelude::*;

/// One row per signed-in browser. The cookie holds a random secret; only its SHA-256 is
/// stored, so a copy of the database cannot be used to take over a session. Logging out deletes
/// the row, which ends the session on every instance at once.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "sessions")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Lower-case hex SHA-256 of the cookie's secret.
    #[sea_orm(unique)]
    pub token_hash: String,
    pub user_id: i64,
    /// The per-session token every form of the signed-in site must send back (CSRF).
    pub csrf_token: String,
    pub created_at: TimeDateTimeWithTimeZone,
    pub expires_at: TimeDateTimeWithTimeZone,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
