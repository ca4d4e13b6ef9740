//! Scoped tokens (contract §13.3): each API token and each device grant carries a scope,
//! OAuth style (`read`, `export`, `dataset:<slug>`). Tokens minted before scopes existed take
//! the default `read export`, so nothing a client did before changes.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The scope of every token minted before scopes existed, and the default of a new one.
const DEFAULT_SCOPE: &str = "read export";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ApiTokens::Table)
                    .add_column(
                        ColumnDef::new(ApiTokens::Scope)
                            .string()
                            .not_null()
                            .default(DEFAULT_SCOPE),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(DeviceGrants::Table)
                    .add_column(
                        ColumnDef::new(DeviceGrants::Scope)
                            .string()
                            .not_null()
                            .default(DEFAULT_SCOPE),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ApiTokens::Table)
                    .drop_column(ApiTokens::Scope)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(DeviceGrants::Table)
                    .drop_column(DeviceGrants::Scope)
                    .to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum ApiTokens {
    Table,
    Scope,
}

#[derive(DeriveIden)]
enum DeviceGrants {
    Table,
    Scope,
}
