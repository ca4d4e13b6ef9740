//! Publishers (contract §14.1, §14.2): the operator's grants of the right to publish datasets
//! to an account, each naming the datasets by a pattern (a slug, a prefix ending in `*`, or
//! `*`); and the schema files sent for a dataset's next version, kept until it is published.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Grants::Table)
                    .if_not_exists()
                    .col(big_pk_auto(Grants::Id))
                    .col(big_integer(Grants::UserId))
                    .col(string_len(Grants::Right, 16))
                    .col(string(Grants::Pattern))
                    .col(string(Grants::GrantedBy))
                    .col(timestamp_with_time_zone(Grants::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_grants_user")
                            .from(Grants::Table, Grants::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_grants_user_right_pattern")
                    .table(Grants::Table)
                    .col(Grants::UserId)
                    .col(Grants::Right)
                    .col(Grants::Pattern)
                    .unique()
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(PendingSchemas::Table)
                    .if_not_exists()
                    .col(string(PendingSchemas::Slug).primary_key())
                    .col(text(PendingSchemas::Body))
                    .col(timestamp_with_time_zone(PendingSchemas::UpdatedAt))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(PendingSchemas::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(Grants::Table).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum Grants {
    Table,
    Id,
    UserId,
    Right,
    Pattern,
    GrantedBy,
    CreatedAt,
}

#[derive(DeriveIden)]
enum PendingSchemas {
    Table,
    Slug,
    Body,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}
