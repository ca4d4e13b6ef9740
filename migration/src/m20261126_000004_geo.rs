//! A dataset's geo pair (contract §13.4): the latitude and longitude fields its places are
//! read from, declared by the schema file or found by the import; both empty without one.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column a statement: SQLite adds one at a time.
        for column in [Datasets::GeoLat, Datasets::GeoLon] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Datasets::Table)
                        .add_column(ColumnDef::new(column).string().null())
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [Datasets::GeoLat, Datasets::GeoLon] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Datasets::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}

#[derive(DeriveIden)]
enum Datasets {
    Table,
    GeoLat,
    GeoLon,
}
