//! Making a loaded version live: one transaction retires the old version, writes the dataset
//! row, numbers the new version and marks it live, and expires the versions the store no
//! longer keeps. Readers resolve the live version through the dataset row, so they see the old
//! version or the new one, never a mix.
//!
//! Before that, the new version's content hash is computed (contract §13.1): an import whose
//! records, schema and metadata equal the live version's publishes nothing.

use entity::{dataset, dataset_field, dataset_version};
use query::{CatalogEpoch, DatasetSchema, Resolver};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set, TransactionTrait,
};
use time::OffsetDateTime;

use super::schema::ID;
use super::schema::geo::geo_pair;
use super::schema::plan::{IdSource, Plan};
use super::{ImportError, ImportRequest};
use crate::store::catalog;

/// What publishing did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Published {
    /// The version went live as this number.
    New(i64),
    /// The live version, of this number, already held the same records, schema and metadata:
    /// nothing was published.
    Unchanged(i64),
}

pub async fn activate(
    store: &crate::store::Store,
    request: &ImportRequest,
    plan: &Plan,
    version_id: i64,
    records: u64,
) -> Result<Published, ImportError> {
    // The fields first: the hash reads the version through its schema, and nobody sees a
    // loading version's rows.
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
    .exec(&store.db)
    .await?;
    let hasher = Resolver::new(store.db.clone(), "", CatalogEpoch::default());
    let new_fields = fields_of(store, version_id).await?;
    let hash = hasher
        .keep_content_hash(&DatasetSchema::new(version_id, new_fields.clone()))
        .await
        .map_err(hash_failed)?;

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
    let (geo_lat, geo_lon) = match geo {
        Some(pair) => (Some(pair.lat), Some(pair.lon)),
        None => (None, None),
    };
    let existing = dataset::Entity::find()
        .filter(dataset::Column::Slug.eq(&request.slug))
        .one(&store.db)
        .await?;
    if let Some(old) = &existing {
        let old_fields = fields_of(store, old.version_id).await?;
        let old_hash = match dataset_version::Entity::find_by_id(old.version_id)
            .one(&store.db)
            .await?
            .and_then(|v| v.content_hash)
        {
            Some(hash) => hash,
            None => hasher
                .keep_content_hash(&DatasetSchema::new(old.version_id, old_fields.clone()))
                .await
                .map_err(hash_failed)?,
        };
        let same_fields = old_fields.len() == new_fields.len()
            && old_fields.iter().zip(&new_fields).all(|(a, b)| {
                a.name == b.name && a.field_type == b.field_type && a.description == b.description
            });
        let same_meta = old.title == title
            && old.description == description
            && old.license == schema.license
            && old.source_url == schema.source_url
            && old.id_field == id_field
            && old.geo_lat == geo_lat
            && old.geo_lon == geo_lon;
        if old_hash == hash && same_fields && same_meta {
            return Ok(Published::Unchanged(old.version));
        }
    }

    let now = OffsetDateTime::now_utc();
    // Numbers go on from the slug's last version, also one published before a removal. Read
    // before the transaction, whose first statement must be a write (on SQLite, a transaction
    // that read first cannot take the write lock once another connection wrote); two imports
    // of one slug at once cannot both take a number: `(slug, number)` is unique.
    let last = dataset_version::Entity::find()
        .filter(dataset_version::Column::Slug.eq(&request.slug))
        .filter(dataset_version::Column::Number.is_not_null())
        .order_by_desc(dataset_version::Column::Number)
        .one(&store.db)
        .await?
        .and_then(|v| v.number)
        .unwrap_or(0);
    let number = last + 1;
    let txn = store.db.begin().await?;
    dataset_version::ActiveModel {
        id: Set(version_id),
        state: Set(dataset_version::STATE_LIVE.into()),
        record_count: Set(records as i64),
        number: Set(Some(number)),
        published_at: Set(Some(now)),
        ..Default::default()
    }
    .update(&txn)
    .await?;
    let mut row = dataset::ActiveModel {
        slug: Set(request.slug.clone()),
        title: Set(title),
        description: Set(description),
        license: Set(schema.license.clone()),
        source_url: Set(schema.source_url.clone()),
        id_field: Set(id_field),
        geo_lat: Set(geo_lat),
        geo_lon: Set(geo_lon),
        record_count: Set(records as i64),
        version_id: Set(version_id),
        version: Set(number),
        updated_at: Set(now),
        ..Default::default()
    };
    match existing {
        Some(old) => {
            catalog::set_state(&txn, old.version_id, dataset_version::STATE_RETIRED).await?;
            row.id = Set(old.id);
            row.update(&txn).await?;
        }
        None => {
            row.created_at = Set(now);
            row.insert(&txn).await?;
        }
    }
    catalog::expire_beyond(&txn, &request.slug, number, store.keep_versions).await?;
    txn.commit().await?;
    store.catalog.changed();
    Ok(Published::New(number))
}

/// A version's fields, in order.
async fn fields_of(
    store: &crate::store::Store,
    version_id: i64,
) -> Result<Vec<dataset_field::Model>, ImportError> {
    Ok(dataset_field::Entity::find()
        .filter(dataset_field::Column::VersionId.eq(version_id))
        .order_by_asc(dataset_field::Column::Position)
        .all(&store.db)
        .await?)
}

/// A hash that could not be computed: the store failed while reading the version back.
fn hash_failed(error: query::ApiError) -> ImportError {
    ImportError::Store(crate::store::StoreError::Db(sea_orm::DbErr::Custom(
        format!(
            "reading the version back for its content hash: {}",
            error.message()
        ),
    )))
}
