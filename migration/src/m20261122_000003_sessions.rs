//! Site sessions and the throttling counters of logins and user codes.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Sessions::Table)
                    .if_not_exists()
                    .col(big_pk_auto(Sessions::Id))
                    .col(string_uniq(Sessions::TokenHash))
                    .col(big_integer(Sessions::UserId))
                    .col(string_len(Sessions::CsrfToken, 64))
                    .col(timestamp_with_time_zone(Sessions::CreatedAt))
                    .col(timestamp_with_time_zone(Sessions::ExpiresAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_sessions_user")
                            .from(Sessions::Table, Sessions::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ThrottleCounters::Table)
                    .if_not_exists()
                    .col(string_len(ThrottleCounters::Key, 320).primary_key())
                    .col(big_integer(ThrottleCounters::WindowStart))
                    .col(integer(ThrottleCounters::Hits))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            ThrottleCounters::Table.into_iden(),
            Sessions::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).if_exists().to_owned())
                .await?;
        }
        Ok(())
    }
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Sessions {
    Table,
    Id,
    TokenHash,
    UserId,
    CsrfToken,
    CreatedAt,
    ExpiresAt,
}

#[derive(DeriveIden)]
enum ThrottleCounters {
    Table,
    Key,
    WindowStart,
    Hits,
}
