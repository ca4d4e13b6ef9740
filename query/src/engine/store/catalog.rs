//! The catalog's rows in the store: datasets and the fields of a version, read from the
//! primary, where imports write them; and whether a version's column indexes were built, asked
//! where its records are.

use entity::{dataset, dataset_field};
use sea_orm::{
    ColumnTrait, DatabaseBackend, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect, Statement,
};

use super::replicas::Reader;
use crate::error::ApiError;

/// The dataset published as `slug`.
pub(crate) async fn by_slug(
    db: &DatabaseConnection,
    slug: &str,
) -> Result<Option<dataset::Model>, ApiError> {
    Ok(dataset::Entity::find()
        .filter(dataset::Column::Slug.eq(slug))
        .one(db)
        .await?)
}

/// Every published dataset, by slug.
pub(crate) async fn all(db: &DatabaseConnection) -> Result<Vec<dataset::Model>, ApiError> {
    Ok(dataset::Entity::find()
        .order_by_asc(dataset::Column::Slug)
        .all(db)
        .await?)
}

/// How many datasets are published.
pub(crate) async fn count(db: &DatabaseConnection) -> Result<u64, ApiError> {
    Ok(dataset::Entity::find().count(db).await?)
}

/// `limit` datasets by slug, after the first `offset`.
pub(crate) async fn page(
    db: &DatabaseConnection,
    offset: u64,
    limit: u64,
) -> Result<Vec<dataset::Model>, ApiError> {
    Ok(dataset::Entity::find()
        .order_by_asc(dataset::Column::Slug)
        .offset(offset)
        .limit(limit)
        .all(db)
        .await?)
}

/// The fields of version `version_id`, in their order.
pub(crate) async fn fields(
    db: &DatabaseConnection,
    version_id: i64,
) -> Result<Vec<dataset_field::Model>, ApiError> {
    Ok(dataset_field::Entity::find()
        .filter(dataset_field::Column::VersionId.eq(version_id))
        .order_by_asc(dataset_field::Column::Position)
        .all(db)
        .await?)
}

/// Whether the store holds the index named `index`, asked where the version's records are.
pub(crate) async fn has_index(reader: &Reader, index: String) -> Result<bool, ApiError> {
    let backend = reader.backend();
    let sql = match backend {
        DatabaseBackend::Postgres => {
            "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1"
        }
        _ => "SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = ?",
    };
    let found = reader
        .query_one(Statement::from_sql_and_values(backend, sql, [index.into()]))
        .await?;
    Ok(found.is_some())
}
