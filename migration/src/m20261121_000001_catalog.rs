//! Datasets, their versions and their fields; the trigram extension full-text search needs on
//! PostgreSQL.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() == sea_orm::DbBackend::Postgres {
            // Trusted extension since PostgreSQL 13: a database owner may create it.
            manager
                .get_connection()
                .execute_unprepared("CREATE EXTENSION IF NOT EXISTS pg_trgm")
                .await?;
        }
        manager
            .create_table(
                Table::create()
                    .table(Datasets::Table)
                    .if_not_exists()
                    .col(big_pk_auto(Datasets::Id))
                    .col(string_uniq(Datasets::Slug))
                    .col(string(Datasets::Title))
                    .col(text(Datasets::Description))
                    .col(string_null(Datasets::License))
                    .col(string_null(Datasets::SourceUrl))
                    .col(string_null(Datasets::IdField))
                    .col(big_integer(Datasets::RecordCount))
                    .col(big_integer(Datasets::VersionId))
                    .col(timestamp_with_time_zone(Datasets::CreatedAt))
                    .col(timestamp_with_time_zone(Datasets::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(DatasetVersions::Table)
                    .if_not_exists()
                    .col(big_pk_auto(DatasetVersions::Id))
                    .col(string(DatasetVersions::Slug))
                    .col(string_len(DatasetVersions::State, 16))
                    .col(big_integer(DatasetVersions::RecordCount))
                    .col(timestamp_with_time_zone(DatasetVersions::CreatedAt))
                    .col(timestamp_with_time_zone_null(DatasetVersions::RetiredAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_dataset_versions_state")
                    .table(DatasetVersions::Table)
                    .col(DatasetVersions::State)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(DatasetFields::Table)
                    .if_not_exists()
                    .col(big_pk_auto(DatasetFields::Id))
                    .col(big_integer(DatasetFields::VersionId))
                    .col(integer(DatasetFields::Position))
                    .col(string(DatasetFields::Name))
                    .col(string_len(DatasetFields::Type, 16))
                    .col(text_null(DatasetFields::Description))
                    .col(string_null(DatasetFields::ColumnName))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_dataset_fields_version_name")
                    .table(DatasetFields::Table)
                    .col(DatasetFields::VersionId)
                    .col(DatasetFields::Name)
                    .unique()
                    .if_not_exists()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            DatasetFields::Table.into_iden(),
            DatasetVersions::Table.into_iden(),
            Datasets::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).if_exists().to_owned())
                .await?;
        }
        Ok(())
    }
}

#[derive(DeriveIden)]
enum Datasets {
    Table,
    Id,
    Slug,
    Title,
    Description,
    License,
    SourceUrl,
    IdField,
    RecordCount,
    VersionId,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum DatasetVersions {
    Table,
    Id,
    Slug,
    State,
    RecordCount,
    CreatedAt,
    RetiredAt,
}

#[derive(DeriveIden)]
enum DatasetFields {
    Table,
    Id,
    VersionId,
    Position,
    Name,
    Type,
    Description,
    ColumnName,
}
