//! The schema file sent for a dataset's next version (`PUT /datasets/{slug}/schema.json`,
//! contract §14.2), kept in the store until that version is published, so any instance of a
//! cluster publishes the upload that follows with it.

use entity::pending_schema;
use sea_orm::sea_query::OnConflict;
use sea_orm::{EntityTrait, Set};
use time::OffsetDateTime;

use crate::store::{Store, StoreError};

/// Keeps `body` (a schema file already checked) for `slug`'s next version, replacing any kept.
pub async fn keep(store: &Store, slug: &str, body: &str) -> Result<(), StoreError> {
    pending_schema::Entity::insert(pending_schema::ActiveModel {
        slug: Set(slug.to_string()),
        body: Set(body.to_string()),
        updated_at: Set(OffsetDateTime::now_utc()),
    })
    .on_conflict(
        OnConflict::column(pending_schema::Column::Slug)
            .update_columns([
                pending_schema::Column::Body,
                pending_schema::Column::UpdatedAt,
            ])
            .to_owned(),
    )
    .exec(&store.db)
    .await?;
    Ok(())
}

/// The schema file kept for `slug`'s next version, if any.
pub async fn kept(store: &Store, slug: &str) -> Result<Option<String>, StoreError> {
    Ok(pending_schema::Entity::find_by_id(slug.to_string())
        .one(&store.db)
        .await?
        .map(|row| row.body))
}

/// Forgets the schema kept for `slug` once a version was published with it, unless another
/// write replaced it meanwhile (`body` is what was published).
pub async fn used(store: &Store, slug: &str, body: &str) -> Result<(), StoreError> {
    use sea_orm::{ColumnTrait, QueryFilter};
    pending_schema::Entity::delete_many()
        .filter(pending_schema::Column::Slug.eq(slug))
        .filter(pending_schema::Column::Body.eq(body))
        .exec(&store.db)
        .await?;
    Ok(())
}

/// Forgets any schema kept for `slug` (the dataset was removed).
pub async fn forget(store: &Store, slug: &str) -> Result<(), StoreError> {
    pending_schema::Entity::delete_by_id(slug.to_string())
        .exec(&store.db)
        .await?;
    Ok(())
}
