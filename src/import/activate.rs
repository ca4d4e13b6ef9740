//! Making a loaded version live: one transaction retires the old version, writes the dataset
//! row and the new schema, and marks the new version live. Readers resolve the live version
//! through the dataset row, so they see the old version or the new one, never a mix.

use entity::{dataset, dataset_field, dataset_version};
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, Set, TransactionTrait};
use time::OffsetDateTime;

use super::schema::ID;
use super::schema::geo::geo_pair;
use super::schema::plan::{IdSource, Plan};
use super::{ImportError, ImportRequest};
use crate::store::catalog;

pub async fn activate(
    store: &crate::store::Store,
    request: &ImportRequest,
    plan: &Plan,
    version_id: i64,
    records: u64,
) -> Result<(), ImportError> {
    let now = OffsetDateTime::now_utc();
    let txn = store.db.begin().await?;
    dataset_field::Entity::insert_many(plan.fields.iter().enumerate().map(|(position, f)| {
        dataset_field::ActiveModel {
            version_id: Set(version_id),
            position: Set(position as i32),
            name: Set(f.name.clone()),
            field_type: Set(f.field_type),
            description: Set(f.description.clone()),
            column_name: Set(f.column.clone()),
            ..Default::default()
        }
    }))
    .exec(&txn)
    .await?;
    dataset_version::ActiveModel {
        id: Set(version_id),
        state: Set(dataset_version::STATE_LIVE.into()),
        record_count: Set(records as i64),
        ..Default::default()
    }
    .update(&txn)
    .await?;

    let schema = &request.schema;
    let title = request
        .title
        .clone()
        .or_else(|| schema.title.clone())
        .unwrap_or_else(|| request.slug.clone());
    let description = request
        .description
        .clone()
        .or_else(|| schema.description.clone())
        .unwrap_or_default();
    let id_field = match plan.id {
        IdSource::Position => None,
        IdSource::Field(i) => Some(plan.fields[i].name.clone()),
        IdSource::Own => Some(ID.to_string()),
    };
    let geo = geo_pair(schema.geo.as_ref(), &plan.fields)?;
    let existing = dataset::Entity::find()
        .filter(dataset::Column::Slug.eq(&request.slug))
        .one(&txn)
        .await?;
    let mut row = dataset::ActiveModel {
        slug: Set(request.slug.clone()),
        title: Set(title),
        description: Set(description),
        license: Set(schema.license.clone()),
        source_url: Set(schema.source_url.clone()),
        id_field: Set(id_field),
        geo_lat: Set(geo.as_ref().map(|g| g.lat.clone())),
        geo_lon: Set(geo.map(|g| g.lon)),
        record_count: Set(records as i64),
        version_id: Set(version_id),
        updated_at: Set(now),
        ..Default::default()
    };
    match existing {
        Some(old) => {
            catalog::retire_version(&txn, old.version_id).await?;
            row.id = Set(old.id);
            row.update(&txn).await?;
        }
        None => {
            row.created_at = Set(now);
            row.insert(&txn).await?;
        }
    }
    txn.commit().await?;
    store.catalog.changed();
    Ok(())
}
