//! Garbage collection of dataset versions nobody may read any more.
//!
//! A version stays readable while it is retained (the last `keep_versions` of its dataset,
//! contract §13.1). When it leaves that window (a newer import, a removal, a smaller window
//! after a restart) it expires; its tables are dropped a grace period later, because a request
//! that resolved it a moment earlier may still be reading them. Its row stays, `dropped`, so
//! the dataset's list of versions stays whole. Versions left `loading` by a crashed import are
//! deleted as soon as their import's hold is gone ([`super::lease`]), or after a day when it
//! had none (no import holds a version that long without progress). Every decision is read
//! from the store, so any instance (or `odqs import`) may run this.

use std::time::Duration;

use entity::{dataset_field, dataset_version, record};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set, TransactionTrait,
};
use time::OffsetDateTime;

use super::lease::{self, Holder};
use super::{Store, StoreError, catalog};

/// How long an expired version's tables stay, for the readers that resolved it before.
pub const RETIRED_GRACE: Duration = Duration::from_secs(60);
/// How long a `loading` version may stay before it counts as abandoned.
pub const ABANDONED_AFTER: Duration = Duration::from_secs(24 * 3600);

/// Expires the versions beyond the store's window and drops the tables of those expired longer
/// than `grace` ago; returns how many versions' tables were dropped. Every dataset's retired
/// versions are looked at, in one statement: the periodic collection, which also applies a
/// window made smaller since they were retired.
pub async fn collect(store: &Store, grace: Duration) -> Result<usize, StoreError> {
    catalog::expire_all_beyond(&store.db, store.keep_versions).await?;
    collect_due(store, grace).await
}

/// Drops the tables of the versions expired longer than `grace` ago and of abandoned imports;
/// returns how many. Reads only those versions (by the state index), so its cost does not
/// grow with the catalog: an import runs it after publishing (its own dataset's window was
/// applied when it went live).
pub async fn collect_due(store: &Store, grace: Duration) -> Result<usize, StoreError> {
    let now = OffsetDateTime::now_utc();
    let candidates = dataset_version::Entity::find()
        .filter(dataset_version::Column::State.is_in([
            dataset_version::STATE_LOADING,
            dataset_version::STATE_EXPIRED,
        ]))
        .all(&store.db)
        .await?;
    let mut dropped = 0;
    for version in candidates {
        let due = match version.state.as_str() {
            dataset_version::STATE_LOADING => match lease::holder(store, version.id).await? {
                Holder::Dead => true,
                Holder::Alive => false,
                Holder::Unknown => now - version.created_at >= ABANDONED_AFTER,
            },
            _ => version.retired_at.is_none_or(|at| now - at >= grace),
        };
        if !due {
            continue;
        }
        if version.state == dataset_version::STATE_LOADING {
            drop_version(store, version.id).await?;
            lease::forget(store, version.id);
        } else {
            drop_tables(store, &store.db, version.id).await?;
            dataset_version::ActiveModel {
                id: Set(version.id),
                state: Set(dataset_version::STATE_DROPPED.into()),
                ..Default::default()
            }
            .update(&store.db)
            .await?;
        }
        dropped += 1;
    }
    Ok(dropped)
}

/// Drops a version's tables and catalog rows: after a failed or abandoned import, which
/// published nothing, and for an import that found nothing changed.
///
/// The row goes first, in the transaction that drops the tables: a killed import's server
/// session may still be creating them, holding the row as it does
/// (`import::postgres::in_version`), so this waits for it and then finds them, or
/// comes first and that creation fails. Either way no table outlives its row.
pub async fn drop_version(store: &Store, version_id: i64) -> Result<(), StoreError> {
    let txn = store.db.begin().await?;
    dataset_version::Entity::delete_by_id(version_id)
        .exec(&txn)
        .await?;
    drop_tables(store, &txn, version_id).await?;
    txn.commit().await?;
    Ok(())
}

/// Drops a version's records and text tables (its file, on SQLite) and its fields, through
/// `db` (the store, or a transaction on it).
async fn drop_tables(
    store: &Store,
    db: &impl ConnectionTrait,
    version_id: i64,
) -> Result<(), StoreError> {
    if let Some(path) = store.version_file(version_id) {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        }
    }
    // A version imported before version files has its tables in the store's file.
    for table in [
        record::records_table(version_id),
        record::text_table(version_id),
    ] {
        db.execute_unprepared(&format!("DROP TABLE IF EXISTS \"{table}\""))
            .await?;
    }
    dataset_field::Entity::delete_many()
        .filter(dataset_field::Column::VersionId.eq(version_id))
        .exec(db)
        .await?;
    Ok(())
}
