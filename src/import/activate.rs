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

/// Publishes the loaded version `version_id`, unless the live version already holds the same
/// records, fields and metadata.
pub async fn activate(
    store: &crate::store::Store,
    request: &ImportRequest,
    plan: &Plan,
    version_id: i64,
    records: u64,
) -> Result<Published, ImportError> {
    // The hash reads the version through its schema; the fields are written as it goes live.
    let new_fields = planned_fields(plan, version_id);
    let hasher = Resolver::new(store.db.clone(), "", CatalogEpoch::default());
    // Written with the version's going live: a version found unchanged is dropped anyway.
    let hash = hasher
        .content_hash(&DatasetSchema::new(version_id, new_fields.clone()))
        .await
        .map_err(hash_failed)?;
    let meta = Meta::new(request, plan)?;
    let existing = dataset::Entity::find()
        .filter(dataset::Column::Slug.eq(&request.slug))
        .one(&store.db)
        .await?;
    if let Some(old) = &existing
        && unchanged(store, &hasher, old, &new_fields, &hash, &meta).await?
    {
        return Ok(Published::Unchanged(old.version));
    }
    let now = OffsetDateTime::now_utc();
    let number = last_number(store, &request.slug).await? + 1;
    let live = Live {
        version_id,
        number,
        records: records as i64,
        hash,
        now,
    };
    go_live(store, &request.slug, meta, &live, &new_fields, existing).await?;
    store.catalog.changed();
    Ok(Published::New(number))
}

/// The version's fields in the plan's order, as they will be stored (ids are the store's to
/// give).
fn planned_fields(plan: &Plan, version_id: i64) -> Vec<dataset_field::Model> {
    plan.fields
        .iter()
        .enumerate()
        .map(|(position, f)| dataset_field::Model {
            id: 0,
            version_id,
            position: position as i32,
            name: f.name.clone(),
            field_type: f.field_type,
            description: f.description.clone(),
            column_name: f.column.clone(),
        })
        .collect()
}

/// Writes `fields` in `txn`.
async fn insert_fields(
    txn: &sea_orm::DatabaseTransaction,
    fields: &[dataset_field::Model],
) -> Result<(), ImportError> {
    if fields.is_empty() {
        return Ok(());
    }
    dataset_field::Entity::insert_many(fields.iter().map(|f| dataset_field::ActiveModel {
        version_id: Set(f.version_id),
        position: Set(f.position),
        name: Set(f.name.clone()),
        field_type: Set(f.field_type),
        description: Set(f.description.clone()),
        column_name: Set(f.column_name.clone()),
        ..Default::default()
    }))
    .exec(txn)
    .await?;
    Ok(())
}

/// What the dataset row says of the version beside its records: from the request, else from
/// its schema file. A re-import that changes none of it, nor the fields nor the records,
/// publishes nothing.
struct Meta {
    title: String,
    description: String,
    license: Option<String>,
    source_url: Option<String>,
    id_field: Option<String>,
    geo_lat: Option<String>,
    geo_lon: Option<String>,
}

impl Meta {
    fn new(request: &ImportRequest, plan: &Plan) -> Result<Self, ImportError> {
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
        Ok(Meta {
            title,
            description,
            license: schema.license.clone(),
            source_url: schema.source_url.clone(),
            id_field,
            geo_lat,
            geo_lon,
        })
    }

    fn same_as(&self, old: &dataset::Model) -> bool {
        old.title == self.title
            && old.description == self.description
            && old.license == self.license
            && old.source_url == self.source_url
            && old.id_field == self.id_field
            && old.geo_lat == self.geo_lat
            && old.geo_lon == self.geo_lon
    }
}

/// Whether the live version `old` already holds what the import would publish: the same
/// records (by content hash), fields and metadata. The old version's hash is computed, and
/// kept, when it has none yet.
async fn unchanged(
    store: &crate::store::Store,
    hasher: &Resolver,
    old: &dataset::Model,
    new_fields: &[dataset_field::Model],
    new_hash: &str,
    meta: &Meta,
) -> Result<bool, ImportError> {
    let old_fields = fields_of(store, old.version_id).await?;
    let kept = dataset_version::Entity::find_by_id(old.version_id)
        .one(&store.db)
        .await?
        .and_then(|v| v.content_hash);
    let old_hash = match kept {
        Some(hash) => hash,
        None => hasher
            .keep_content_hash(&DatasetSchema::new(old.version_id, old_fields.clone()))
            .await
            .map_err(hash_failed)?,
    };
    Ok(old_hash == new_hash && same_fields(&old_fields, new_fields) && meta.same_as(old))
}

/// The same fields in the same order, as a reader sees them: names, types and descriptions.
fn same_fields(old: &[dataset_field::Model], new: &[dataset_field::Model]) -> bool {
    old.len() == new.len()
        && old.iter().zip(new).all(|(a, b)| {
            a.name == b.name && a.field_type == b.field_type && a.description == b.description
        })
}

/// The number of the slug's last version, 0 before the first. Numbers go on from it, also
/// after a version published before a removal. Read before the transaction, whose first
/// statement must be a write (on SQLite, a transaction that read first cannot take the write
/// lock once another connection wrote); two imports of one slug at once cannot both take a
/// number: `(slug, number)` is unique.
async fn last_number(store: &crate::store::Store, slug: &str) -> Result<i64, ImportError> {
    Ok(dataset_version::Entity::find()
        .filter(dataset_version::Column::Slug.eq(slug))
        .filter(dataset_version::Column::Number.is_not_null())
        .order_by_desc(dataset_version::Column::Number)
        .one(&store.db)
        .await?
        .and_then(|v| v.number)
        .unwrap_or(0))
}

/// The version going live: its id, its number within the dataset, its record count, its
/// content hash and the time it is published.
struct Live {
    version_id: i64,
    number: i64,
    records: i64,
    hash: String,
    now: OffsetDateTime,
}

/// One transaction: the version live with its fields, the dataset row pointing at it (the old
/// version retired), the versions beyond those kept expired.
async fn go_live(
    store: &crate::store::Store,
    slug: &str,
    meta: Meta,
    live: &Live,
    fields: &[dataset_field::Model],
    existing: Option<dataset::Model>,
) -> Result<(), ImportError> {
    let txn = store.db.begin().await?;
    dataset_version::ActiveModel {
        id: Set(live.version_id),
        state: Set(dataset_version::STATE_LIVE.into()),
        record_count: Set(live.records),
        number: Set(Some(live.number)),
        content_hash: Set(Some(live.hash.clone())),
        published_at: Set(Some(live.now)),
        ..Default::default()
    }
    .update(&txn)
    .await?;
    insert_fields(&txn, fields).await?;
    let mut row = dataset::ActiveModel {
        slug: Set(slug.to_string()),
        title: Set(meta.title),
        description: Set(meta.description),
        license: Set(meta.license),
        source_url: Set(meta.source_url),
        id_field: Set(meta.id_field),
        geo_lat: Set(meta.geo_lat),
        geo_lon: Set(meta.geo_lon),
        record_count: Set(live.records),
        version_id: Set(live.version_id),
        version: Set(live.number),
        updated_at: Set(live.now),
        ..Default::default()
    };
    match existing {
        Some(old) => {
            catalog::set_state(&txn, old.version_id, dataset_version::STATE_RETIRED).await?;
            row.id = Set(old.id);
            row.update(&txn).await?;
        }
        None => {
            row.created_at = Set(live.now);
            row.insert(&txn).await?;
        }
    }
    catalog::expire_beyond(&txn, slug, live.number, store.keep_versions).await?;
    txn.commit().await?;
    Ok(())
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
