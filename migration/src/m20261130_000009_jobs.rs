//! Asynchronous writes (contract §14.2, `Prefer: respond-async`): each is a job row that any
//! instance of a cluster can answer `GET /jobs/{id}` from, updated as the import goes on.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(PublishJobs::Table)
                    .if_not_exists()
                    .col(string_len(PublishJobs::Id, 64).primary_key())
                    .col(big_integer(PublishJobs::UserId))
                    .col(string(PublishJobs::Slug))
                    .col(string_len(PublishJobs::State, 16))
                    .col(string(PublishJobs::Phase))
                    .col(big_integer(PublishJobs::RecordsRead))
                    .col(big_integer(PublishJobs::BytesRead))
                    .col(text_null(PublishJobs::Result))
                    .col(text_null(PublishJobs::Error))
                    .col(timestamp_with_time_zone(PublishJobs::CreatedAt))
                    .col(timestamp_with_time_zone(PublishJobs::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_publish_jobs_user")
                            .from(PublishJobs::Table, PublishJobs::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(PublishJobs::Table).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum PublishJobs {
    Table,
    Id,
    UserId,
    Slug,
    State,
    Phase,
    RecordsRead,
    BytesRead,
    Result,
    Error,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}
