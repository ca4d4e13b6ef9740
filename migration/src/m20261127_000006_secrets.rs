//! Secrets every instance shares, kept in the store (contract §13.2): the key that signs
//! cursors, made once by the first instance that needs it, so every instance accepts every
//! other's cursors and a restart keeps them valid.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Secrets::Table)
                    .if_not_exists()
                    .col(
                        ColumnDef::new(Secrets::Name)
                            .string()
                            .not_null()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(Secrets::Value).string().not_null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(Secrets::Table).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum Secrets {
    Table,
    Name,
    Value,
}
