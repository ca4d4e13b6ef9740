//! A device authorization request (RFC 8628; spec §3 states).

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "device_grants")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Lower-case hex SHA-256 of the device code; the code itself is never stored.
    #[sea_orm(unique)]
    pub device_code_hash: String,
    /// Normalized user code (`BCDF-GHJK`).
    #[sea_orm(unique)]
    pub user_code: String,
    pub device_name: Option<String>,
    pub client: Option<String>,
    /// `pending`, `authorized`, `denied` or `used`.
    pub state: String,
    pub created_at: TimeDateTimeWithTimeZone,
    pub expires_at: TimeDateTimeWithTimeZone,
    /// Seconds a client must wait between polls; grows by 5 on `slow_down`.
    pub interval: i32,
    pub last_poll_at: Option<TimeDateTimeWithTimeZone>,
    /// The account that approved or refused.
    pub user_id: Option<i64>,
    /// The scope the client asked for (RFC 8628 §3.1), given to the token it receives.
    pub scope: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
