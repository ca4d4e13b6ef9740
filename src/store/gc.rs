//! Garbage collection of dataset versions nobody reads any more.
//!
//! A re-import or a removal retires the old version instead of dropping it, because a request
//! that resolved the old version a moment earlier may still be reading its tables. Retired
//! versions are dropped after a grace period; versions left `loading` by a crashed import are
//! dropped after a day (no import holds a version that long without progress).

use std::time::Duration;

use entity::{dataset_field, dataset_version, record};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use time::OffsetDateTime;

use super::{Store, StoreError};

/// How long a retired version stays readable.
pub const RETIRED_GRACE: Duration = Duration::from_secs(60);
/// How long a `loading` version may stay before it counts as abandoned.
pub const ABANDONED_AFTER: Duration = Duration::from_secs(24 * 3600);

/// Drops the versions that are past their grace period; returns how many.
pub async fn collect(store: &Store, grace: Duration) -> Result<usize, StoreError> {
    let now = OffsetDateTime::now_utc();
    let candidates = dataset_version::Entity::find()
        .filter(dataset_version::Column::State.ne(dataset_version::STATE_LIVE))
        .all(&store.db)
        .await?;
    let mut dropped = 0;
    for version in candidates {
        let due = match version.retired_at {
            Some(at) if version.state == dataset_version::STATE_RETIRED => now - at >= grace,
            _ => now - version.created_at >= ABANDONED_AFTER,
        };
        if due {
            drop_version(store, version.id).await?;
            dropped += 1;
        }
    }
    Ok(dropped)
}

/// Drops a version's tables and catalog rows. Also used to clean up after a failed import.
pub async fn drop_version(store: &Store, version_id: i64) -> Result<(), StoreError> {
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
    dataset_version::Entity::delete_by_id(version_id)
        .exec(&store.db)
        .await?;
    Ok(())
}
