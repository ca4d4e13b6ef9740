//! Dataset versions as clients see them (contract §13.1): each published version gets its
//! number within its dataset, the moment it was published and its content hash; the dataset
//! row carries its current number. Versions published before get their numbers in the order
//! they were created, and no hash (it is computed when first asked for).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column a statement: SQLite adds one at a time.
        let columns = [
            ColumnDef::new(DatasetVersions::Number)
                .big_integer()
                .null()
                .to_owned(),
            ColumnDef::new(DatasetVersions::ContentHash)
                .string()
                .null()
                .to_owned(),
            ColumnDef::new(DatasetVersions::PublishedAt)
                .timestamp_with_time_zone()
                .null()
                .to_owned(),
        ];
        for mut column in columns {
            manager
                .alter_table(
                    Table::alter()
                        .table(DatasetVersions::Table)
                        .add_column(&mut column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(Datasets::Table)
                    .add_column(
                        ColumnDef::new(Datasets::Version)
                            .big_integer()
                            .not_null()
                            .default(0),
                    )
                    .to_owned(),
            )
            .await?;
        let db = manager.get_connection();
        // Both stores take these statements as written.
        db.execute_unprepared(
            "UPDATE dataset_versions SET number = (SELECT COUNT(*) FROM dataset_versions v \
             WHERE v.slug = dataset_versions.slug AND v.id <= dataset_versions.id \
             AND v.state <> 'loading'), published_at = created_at WHERE state <> 'loading'",
        )
        .await?;
        db.execute_unprepared(
            "UPDATE datasets SET version = (SELECT number FROM dataset_versions v \
             WHERE v.id = datasets.version_id)",
        )
        .await?;
        manager
            .create_index(
                Index::create()
                    .name("dataset_versions_slug_number")
                    .table(DatasetVersions::Table)
                    .col(DatasetVersions::Slug)
                    .col(DatasetVersions::Number)
                    .unique()
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("dataset_versions_slug_number")
                    .table(DatasetVersions::Table)
                    .to_owned(),
            )
            .await?;
        for column in [
            DatasetVersions::Number,
            DatasetVersions::ContentHash,
            DatasetVersions::PublishedAt,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(DatasetVersions::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(Datasets::Table)
                    .drop_column(Datasets::Version)
                    .to_owned(),
            )
            .await?;
        Ok(())
    }
}

#[derive(DeriveIden)]
enum DatasetVersions {
    Table,
    Slug,
    Number,
    ContentHash,
    PublishedAt,
}

#[derive(DeriveIden)]
enum Datasets {
    Table,
    Version,
}
