//! A fixed-window failure counter (wrong passwords, wrong user codes).

use sea_orm::entity::prelude::*;

/// One row per throttled key (`login:email:…`, `code:ip:…`); kept in the store so that every
/// instance behind a load balancer counts the same failures.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "throttle_counters")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub key: String,
    /// Unix seconds when the current window began.
    pub window_start: i64,
    /// Failures counted in the current window.
    pub hits: i32,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
