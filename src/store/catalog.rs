//! Changes to the catalog: unpublishing a dataset, and the versions a newer one leaves behind
//! (retired while retained, expired beyond `keep_versions`). Reading it (which datasets are
//! published, their schema, their versions) is the resolver layer's (`query::catalog`).

use entity::{dataset, dataset_version};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseBackend, EntityTrait, QueryFilter, Set,
    Statement, TransactionTrait,
};
use time::OffsetDateTime;

use super::{Store, StoreError};

/// Unpublishes `slug`: the dataset row goes at once, every version of it expires, and their
/// tables are dropped by the garbage collector once no reader can still be using them. The
/// versions' rows stay: a dataset published again under the slug numbers on from them.
pub async fn remove(store: &Store, slug: &str) -> Result<bool, StoreError> {
    let txn = store.db.begin().await?;
    // A write first: on SQLite a transaction that read first cannot take the write lock once
    // another connection wrote meanwhile (a token's last use, say).
    let removed = dataset::Entity::delete_many()
        .filter(dataset::Column::Slug.eq(slug))
        .exec(&txn)
        .await?
        .rows_affected;
    if removed == 0 {
        return Ok(false);
    }
    dataset_version::Entity::update_many()
        .col_expr(
            dataset_version::Column::State,
            Expr::value(dataset_version::STATE_EXPIRED),
        )
        .col_expr(
            dataset_version::Column::RetiredAt,
            Expr::value(OffsetDateTime::now_utc()),
        )
        .filter(dataset_version::Column::Slug.eq(slug))
        .filter(
            dataset_version::Column::State
                .is_in([dataset_version::STATE_LIVE, dataset_version::STATE_RETIRED]),
        )
        .exec(&txn)
        .await?;
    txn.commit().await?;
    store.catalog.changed();
    Ok(true)
}

/// Gives version `version_id` a new state from now: `retired` when a newer one replaced it,
/// `expired` when it leaves the retained window (the garbage collector's grace period starts).
pub async fn set_state(
    conn: &impl ConnectionTrait,
    version_id: i64,
    state: &str,
) -> Result<(), StoreError> {
    dataset_version::ActiveModel {
        id: Set(version_id),
        state: Set(state.to_string()),
        retired_at: Set(Some(OffsetDateTime::now_utc())),
        ..Default::default()
    }
    .update(conn)
    .await?;
    Ok(())
}

/// Expires, in one statement, the retired versions of every dataset that `keep` versions
/// counted back from its live one no longer reach, and those whose dataset was removed;
/// returns how many.
pub async fn expire_all_beyond(conn: &impl ConnectionTrait, keep: u64) -> Result<u64, StoreError> {
    let backend = conn.get_database_backend();
    let (now, keep_at, state, retired) = match backend {
        DatabaseBackend::Postgres => ("$1", "$2", "$3", "$4"),
        _ => ("?1", "?2", "?3", "?4"),
    };
    // `version - number >= keep`: no sum that could overflow, whatever the window.
    let sql = format!(
        "UPDATE dataset_versions SET state = {state}, retired_at = {now} \
         WHERE state = {retired} AND NOT EXISTS (SELECT 1 FROM datasets d \
         WHERE d.slug = dataset_versions.slug AND d.version - dataset_versions.number < {keep_at})"
    );
    let keep = i64::try_from(keep).unwrap_or(i64::MAX);
    let values: [sea_orm::Value; 4] = [
        OffsetDateTime::now_utc().into(),
        keep.into(),
        dataset_version::STATE_EXPIRED.into(),
        dataset_version::STATE_RETIRED.into(),
    ];
    let done = conn
        .execute_raw(Statement::from_sql_and_values(backend, sql, values))
        .await?;
    Ok(done.rows_affected())
}

/// Expires the retired versions of `slug` that `keep` versions counted back from `current`
/// (its live version's number) no longer reach; returns how many.
pub async fn expire_beyond(
    conn: &impl ConnectionTrait,
    slug: &str,
    current: i64,
    keep: u64,
) -> Result<usize, StoreError> {
    let oldest_kept = current - i64::try_from(keep).unwrap_or(i64::MAX).saturating_sub(1);
    let leaving = dataset_version::Entity::find()
        .filter(dataset_version::Column::Slug.eq(slug))
        .filter(dataset_version::Column::State.eq(dataset_version::STATE_RETIRED))
        .filter(dataset_version::Column::Number.lt(oldest_kept))
        .all(conn)
        .await?;
    for version in &leaving {
        set_state(conn, version.id, dataset_version::STATE_EXPIRED).await?;
    }
    Ok(leaving.len())
}
