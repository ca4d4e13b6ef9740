//! Bearer tokens: long-lived ones from the account page or the CLI, 24-hour ones from the
//! device flow. Only the SHA-256 of a token is stored (contract §8).

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "api_tokens")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub user_id: i64,
    pub name: String,
    /// Lower-case hex SHA-256 of the whole token.
    #[sea_orm(unique)]
    pub token_hash: String,
    /// The last four characters, so a person can tell tokens apart.
    pub last4: String,
    /// `account`, `cli`, `device` or `explore` (the site's short-lived explorer tokens): where
    /// the token was minted.
    pub source: String,
    pub created_at: TimeDateTimeWithTimeZone,
    pub last_used_at: Option<TimeDateTimeWithTimeZone>,
    /// `None` for tokens that never expire (spec §5).
    pub expires_at: Option<TimeDateTimeWithTimeZone>,
    pub revoked_at: Option<TimeDateTimeWithTimeZone>,
    /// What the token may do, OAuth style: `read`, `export`, `dataset:<slug>` (contract §13.3);
    /// `read export` for tokens minted before scopes existed.
    pub scope: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
