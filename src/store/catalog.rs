//! Changes to the catalog: unpublishing a dataset and retiring a version. Reading it (which
//! datasets are published, their schema) is the resolver layer's (`query::catalog`).

use entity::{dataset, dataset_version};
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, Set, TransactionTrait};
use time::OffsetDateTime;

use super::{Store, StoreError};

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
    store.catalog.changed();
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
