//! The versions of a dataset in the store (contract §13.1): their rows in
//! `dataset_versions`, and a version's rows in `_id` order.

use entity::dataset_version;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, Set,
};

use super::replicas::Reader;
use super::sql::Sql;
use crate::dataset::DatasetSchema;
use crate::error::ApiError;

/// Rows read a statement when a version is read whole in `_id` order.
const ID_BATCH: i64 = 50_000;

/// The published version `number` of `slug`, retained or not.
pub(crate) async fn row(
    db: &DatabaseConnection,
    slug: &str,
    number: i64,
) -> Result<Option<dataset_version::Model>, ApiError> {
    Ok(dataset_version::Entity::find()
        .filter(dataset_version::Column::Slug.eq(slug))
        .filter(dataset_version::Column::Number.eq(number))
        .one(db)
        .await?)
}

/// Every published version of `slug`, newest first.
pub(crate) async fn rows(
    db: &DatabaseConnection,
    slug: &str,
) -> Result<Vec<dataset_version::Model>, ApiError> {
    Ok(dataset_version::Entity::find()
        .filter(dataset_version::Column::Slug.eq(slug))
        .filter(dataset_version::Column::Number.is_not_null())
        .order_by_desc(dataset_version::Column::Number)
        .all(db)
        .await?)
}

/// Writes `hash` as the content hash of version `version_id`.
pub(crate) async fn keep_hash(
    db: &DatabaseConnection,
    version_id: i64,
    hash: String,
) -> Result<(), ApiError> {
    dataset_version::ActiveModel {
        id: Set(version_id),
        content_hash: Set(Some(hash)),
        ..Default::default()
    }
    .update(db)
    .await?;
    Ok(())
}

/// Every row of the version `schema` belongs to, in `_id` byte order: read by the unique
/// `_id` index a batch at a time, each batch after the last `_id` of the one before (a
/// keyset, so the whole read costs one pass, however large the version).
pub(crate) async fn rows_by_id(
    reader: &Reader,
    schema: &DatasetSchema,
) -> Result<Vec<u32>, ApiError> {
    let table = entity::record::records_table(schema.version_id);
    let mut rows = Vec::new();
    let mut last: Option<String> = None;
    loop {
        let mut sql = Sql::new(reader.backend());
        sql.push("SELECT \"pos\", \"_id\" FROM ").ident(&table);
        if let Some(last) = &last {
            sql.push(" WHERE \"_id\" > ").bind(last.clone());
        }
        sql.push(" ORDER BY \"_id\" LIMIT ").bind(ID_BATCH);
        let found = reader.query_all(sql.build()).await?;
        let n = found.len();
        for row in &found {
            let pos: i64 = row.try_get_by_index(0)?;
            rows.push(u32::try_from(pos - 1).map_err(|_| ApiError::Internal)?);
        }
        match found.last() {
            Some(row) if n as i64 == ID_BATCH => last = Some(row.try_get_by_index(1)?),
            _ => return Ok(rows),
        }
    }
}
