//! Users, API tokens and device authorization grants.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Users::Table)
                    .if_not_exists()
                    .col(big_pk_auto(Users::Id))
                    .col(string_uniq(Users::Email))
                    .col(string_null(Users::PasswordHash))
                    .col(timestamp_with_time_zone(Users::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ApiTokens::Table)
                    .if_not_exists()
                    .col(big_pk_auto(ApiTokens::Id))
                    .col(big_integer(ApiTokens::UserId))
                    .col(string(ApiTokens::Name))
                    .col(string_uniq(ApiTokens::TokenHash))
                    .col(string_len(ApiTokens::Last4, 8))
                    .col(string_len(ApiTokens::Source, 16))
                    .col(timestamp_with_time_zone(ApiTokens::CreatedAt))
                    .col(timestamp_with_time_zone_null(ApiTokens::LastUsedAt))
                    .col(timestamp_with_time_zone_null(ApiTokens::ExpiresAt))
                    .col(timestamp_with_time_zone_null(ApiTokens::RevokedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_api_tokens_user")
                            .from(ApiTokens::Table, ApiTokens::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_api_tokens_user")
                    .table(ApiTokens::Table)
                    .col(ApiTokens::UserId)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(DeviceGrants::Table)
                    .if_not_exists()
                    .col(big_pk_auto(DeviceGrants::Id))
                    .col(string_uniq(DeviceGrants::DeviceCodeHash))
                    .col(string_len_uniq(DeviceGrants::UserCode, 16))
                    .col(string_null(DeviceGrants::DeviceName))
                    .col(string_null(DeviceGrants::Client))
                    .col(string_len(DeviceGrants::State, 16))
                    .col(timestamp_with_time_zone(DeviceGrants::CreatedAt))
                    .col(timestamp_with_time_zone(DeviceGrants::ExpiresAt))
                    .col(integer(DeviceGrants::Interval))
                    .col(timestamp_with_time_zone_null(DeviceGrants::LastPollAt))
                    .col(big_integer_null(DeviceGrants::UserId))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_device_grants_user")
                            .from(DeviceGrants::Table, DeviceGrants::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            DeviceGrants::Table.into_iden(),
            ApiTokens::Table.into_iden(),
            Users::Table.into_iden(),
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
    Email,
    PasswordHash,
    CreatedAt,
}

#[derive(DeriveIden)]
enum ApiTokens {
    Table,
    Id,
    UserId,
    Name,
    TokenHash,
    Last4,
    Source,
    CreatedAt,
    LastUsedAt,
    ExpiresAt,
    RevokedAt,
}

#[derive(DeriveIden)]
enum DeviceGrants {
    Table,
    Id,
    DeviceCodeHash,
    UserCode,
    DeviceName,
    Client,
    State,
    CreatedAt,
    ExpiresAt,
    Interval,
    LastPollAt,
    UserId,
}
