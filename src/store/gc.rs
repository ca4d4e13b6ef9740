//! Garbage collection of dataset versions nobody may read any more.
//!
//! A version stays readable while it is retained (the last `keep_versions` of its dataset,
//! contract §13.1). When it leaves that window (a newer import, a removal, a smaller window
//! after a restart) it expires; its tables are dropped a grace period later, because a request
//! that resolved it a moment earlier may still be reading them. Its row stays, `dropped`, so
//! the dataset's list of versions stays whole. Versions left `loading` by a crashed import are
//! deleted after a day (no import holds a version that long without progress). Every decision
//! is read from the store, so any instance (or `odqs import`) may run this.

use std::collections::HashSet;
use std::time::Duration;

use entity::{dataset, dataset_field, dataset_version, record};
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set};
use time::OffsetDateTime;

use super::{Store, StoreError, catalog};

/// How long an expired version's tables stay, for the readers that resolved it before.
pub const RETIRED_GRACE: Duration = Duration::from_secs(60);
/// How long a `loading` version may stay before it counts as abandoned.
pub const ABANDONED_AFTER: Duration = Duration::from_secs(24 * 3600);

/// Expires the versions beyond the store's window and drops the tables of those expired longer
/// than `grace` ago; returns how many versions' tables were dropped.
pub async fn collect(store: &Store, grace: Duration) -> Result<usize, StoreError> {
    let datasets = dataset::Entity::find().all(&store.db).await?;
    for row in &datasets {
        catalog::expire_beyond(&store.db, &row.slug, row.version, store.keep_versions).await?;
    }
    let published: HashSet<&str> = datasets.iter().map(|d| d.slug.as_str()).collect();
    let now = OffsetDateTime::now_utc();
    let candidates = dataset_version::Entity::find()
        .filter(dataset_version::Column::State.is_in([
            dataset_version::STATE_LOADING,
            dataset_version::STATE_EXPIRED,
            // Retired before versions were retained: only a removal left such a version
            // without its dataset.
            dataset_version::STATE_RETIRED,
        ]))
        .all(&store.db)
        .await?;
    let mut dropped = 0;
    for version in candidates {
        match version.state.as_str() {
            dataset_version::STATE_LOADING => {
                if now - version.created_at >= ABANDONED_AFTER {
                    drop_version(store, version.id).await?;
                    dropped += 1;
                }
            }
            dataset_version::STATE_EXPIRED => {
                if version.retired_at.is_none_or(|at| now - at >= grace) {
                    drop_tables(store, version.id).await?;
                    dataset_version::ActiveModel {
                        id: Set(version.id),
                        state: Set(dataset_version::STATE_DROPPED.into()),
                        ..Default::default()
                    }
                    .update(&store.db)
                    .await?;
                    dropped += 1;
                }
            }
            _ => {
                if !published.contains(version.slug.as_str()) {
                    catalog::set_state(&store.db, version.id, dataset_version::STATE_EXPIRED)
                        .await?;
                }
            }
        }
    }
    Ok(dropped)
}

/// Drops a version's tables and catalog rows: after a failed or abandoned import, which
/// published nothing, and for an import that found nothing changed.
pub async fn drop_version(store: &Store, version_id: i64) -> Result<(), StoreError> {
    drop_tables(store, version_id).await?;
    dataset_version::Entity::delete_by_id(version_id)
        .exec(&store.db)
        .await?;
    Ok(())
}

/// Drops a version's records and text tables and its fields.
async fn drop_tables(store: &Store, version_id: i64) -> Result<(), StoreError> {
    for table in [
        record::records_table(version_id),
        record::text_table(version_id),
    ] {
        store
            .db
            .execute_unprepared(&format!("DROP TABLE IF EXISTS \"{table}\""))
            .await?;
    }
    dataset_field::Entity::delete_many()
        .filter(dataset_field::Column::VersionId.eq(version_id))
        .exec(&store.db)
        .await?;
    Ok(())
}
