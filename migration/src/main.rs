//! A small binary for working on migrations by hand: `migration [up|down|status]` against
//! `DATABASE_URL`. Operators use `odqs migrate`, which also takes the cross-instance lock.

use sea_orm_migration::prelude::*;

#[tokio::main]
async fn main() -> Result<(), DbErr> {
    let url = std::env::var("DATABASE_URL")
        .map_err(|_| DbErr::Custom("set DATABASE_URL (sqlite://PATH or postgres://…)".into()))?;
    let db = sea_orm::Database::connect(&url).await?;
    match std::env::args().nth(1).as_deref().unwrap_or("up") {
        "up" => migration::Migrator::up(&db, None).await,
        "down" => migration::Migrator::down(&db, Some(1)).await,
        "status" => migration::Migrator::status(&db).await,
        other => Err(DbErr::Custom(format!(
            "unknown command {other:?}: use up, down or status"
        ))),
    }
}
