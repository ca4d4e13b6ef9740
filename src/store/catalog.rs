//! The catalog: which datasets are published, their live version and its schema.

use entity::{dataset, dataset_field, dataset_version};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, Set,
    TransactionTrait,
};
use time::OffsetDateTime;

use super::{Store, StoreError};

/// Every published dataset, by slug.
pub async fn list(store: &Store) -> Result<Vec<dataset::Model>, StoreError> {
    Ok(dataset::Entity::find()
        .order_by_asc(dataset::Column::Slug)
        .all(&store.db)
        .await?)
}

/// The dataset published under `slug`, if any.
pub async fn find(store: &Store, slug: &str) -> Result<Option<dataset::Model>, StoreError> {
    Ok(dataset::Entity::find()
        .filter(dataset::Column::Slug.eq(slug))
        .one(&store.db)
        .await?)
}

/// The schema of a version, in field order.
pub async fn fields(
    store: &Store,
    version_id: i64,
) -> Result<Vec<dataset_field::Model>, StoreError> {
    Ok(dataset_field::Entity::find()
        .filter(dataset_field::Column::VersionId.eq(version_id))
        .order_by_asc(dataset_field::Column::Position)
        .all(&store.db)
        .await?)
}

/// Whether no dataset is published (a fresh store gets the demo data).
pub async fn is_empty(store: &Store) -> Result<bool, StoreError> {
    Ok(dataset::Entity::find().count(&store.db).await? == 0)
}

/// Unpublishes `slug`: the dataset row goes at once, its version is retired and its tables are
/// dropped by the garbage collector once no reader can still be using them.
pub async fn remove(store: &Store, slug: &str) -> Result<bool, StoreError> {
    let txn = store.db.begin().await?;
    let Some(found) = dataset::Entity::find()
        .filter(dataset::Column::Slug.eq(slug))
        .one(&txn)
        .await?
    else {
        return Ok(false);
    };
    retire_version(&txn, found.version_id).await?;
    dataset::Entity::delete_by_id(found.id).exec(&txn).await?;
    txn.commit().await?;
    Ok(true)
}

/// Marks a version retired now; the caller's transaction makes it so together with whatever
/// replaced it.
pub async fn retire_version(
    conn: &impl sea_orm::ConnectionTrait,
    version_id: i64,
) -> Result<(), StoreError> {
    dataset_version::ActiveModel {
        id: Set(version_id),
        state: Set(dataset_version::STATE_RETIRED.to_string()),
        retired_at: Set(Some(OffsetDateTime::now_utc())),
        ..Default::default()
    }
    .update(conn)
    .await?;
    Ok(())
}
