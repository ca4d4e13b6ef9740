//! The catalog's rows in the store: datasets and the fields of a version, read from the
//! primary, where imports write them; and whether a version's column indexes were built, asked
//! where its records are.
//!
//! The catalog search's index ([`crate::resolver`]) reads the catalog with a constant number of
//! statements whatever its size: [`signature`] to learn whether anything changed, then
//! [`published_after`] and [`live_field_texts`] for the datasets published since, and [`ids`]
//! when some were removed.

use entity::{dataset, dataset_field};
use sea_orm::sea_query::Query;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseBackend, DatabaseConnection, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect, Statement,
};

use super::replicas::Reader;
use crate::error::ApiError;

/// The dataset published as `slug`.
pub(crate) async fn by_slug(
    db: &DatabaseConnection,
    slug: &str,
) -> Result<Option<dataset::Model>, ApiError> {
    Ok(dataset::Entity::find()
        .filter(dataset::Column::Slug.eq(slug))
        .one(db)
        .await?)
}

/// Every published dataset, by slug.
pub(crate) async fn all(db: &DatabaseConnection) -> Result<Vec<dataset::Model>, ApiError> {
    Ok(dataset::Entity::find()
        .order_by_asc(dataset::Column::Slug)
        .all(db)
        .await?)
}

/// How many datasets are published.
pub(crate) async fn count(db: &DatabaseConnection) -> Result<u64, ApiError> {
    Ok(dataset::Entity::find().count(db).await?)
}

/// `limit` datasets by slug, after the first `offset`.
pub(crate) async fn page(
    db: &DatabaseConnection,
    offset: u64,
    limit: u64,
) -> Result<Vec<dataset::Model>, ApiError> {
    Ok(dataset::Entity::find()
        .order_by_asc(dataset::Column::Slug)
        .offset(offset)
        .limit(limit)
        .all(db)
        .await?)
}

/// The fields of version `version_id`, in their order.
pub(crate) async fn fields(
    db: &DatabaseConnection,
    version_id: i64,
) -> Result<Vec<dataset_field::Model>, ApiError> {
    Ok(dataset_field::Entity::find()
        .filter(dataset_field::Column::VersionId.eq(version_id))
        .order_by_asc(dataset_field::Column::Position)
        .all(db)
        .await?)
}

/// Whether the store holds the index named `index`, asked where the version's records are.
pub(crate) async fn has_index(reader: &Reader, index: String) -> Result<bool, ApiError> {
    let backend = reader.backend();
    let sql = match backend {
        DatabaseBackend::Postgres => {
            "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1"
        }
        _ => "SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = ?",
    };
    let found = reader
        .query_one(Statement::from_sql_and_values(backend, sql, [index.into()]))
        .await?;
    Ok(found.is_some())
}

/// What the catalog holds, in three numbers that change with every publication and removal:
/// how many datasets, and the largest and the sum of their live version ids (a new version
/// always has a larger id than every version before it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Signature {
    pub(crate) count: i64,
    pub(crate) max_version: i64,
    pub(crate) sum_version: i64,
}

/// The catalog's [`Signature`], in one small statement.
pub(crate) async fn signature(db: &DatabaseConnection) -> Result<Signature, ApiError> {
    let backend = db.get_database_backend();
    let sql = "SELECT count(*) AS n, CAST(COALESCE(max(version_id), 0) AS BIGINT) AS top, \
               CAST(COALESCE(sum(version_id), 0) AS BIGINT) AS total FROM datasets";
    let row = db
        .query_one_raw(Statement::from_string(backend, sql))
        .await?;
    let Some(row) = row else {
        return Ok(Signature::default());
    };
    Ok(Signature {
        count: row.try_get("", "n")?,
        max_version: row.try_get("", "top")?,
        sum_version: row.try_get("", "total")?,
    })
}

/// The datasets whose live version is newer than `version_id` (every dataset with
/// `i64::MIN`): those published since a reader last saw version `version_id`.
pub(crate) async fn published_after(
    db: &DatabaseConnection,
    version_id: i64,
) -> Result<Vec<dataset::Model>, ApiError> {
    Ok(dataset::Entity::find()
        .filter(dataset::Column::VersionId.gt(version_id))
        .all(db)
        .await?)
}

/// A field's searchable text: its version, its name and its description.
pub(crate) type FieldText = (i64, String, Option<String>);

/// The names and descriptions of the fields of every live version newer than `version_id`,
/// by version and position, in one statement (the join of the datasets and their fields).
pub(crate) async fn live_field_texts(
    db: &DatabaseConnection,
    version_id: i64,
) -> Result<Vec<FieldText>, ApiError> {
    let live = Query::select()
        .column(dataset::Column::VersionId)
        .from(dataset::Entity)
        .and_where(dataset::Column::VersionId.gt(version_id))
        .to_owned();
    Ok(dataset_field::Entity::find()
        .select_only()
        .column(dataset_field::Column::VersionId)
        .column(dataset_field::Column::Name)
        .column(dataset_field::Column::Description)
        .filter(dataset_field::Column::VersionId.in_subquery(live))
        .order_by_asc(dataset_field::Column::VersionId)
        .order_by_asc(dataset_field::Column::Position)
        .into_tuple()
        .all(db)
        .await?)
}

/// Every published dataset's id and live version id, in one statement: what a reader that
/// holds the catalog needs to drop the datasets removed since.
pub(crate) async fn ids(db: &DatabaseConnection) -> Result<Vec<(i64, i64)>, ApiError> {
    Ok(dataset::Entity::find()
        .select_only()
        .column(dataset::Column::Id)
        .column(dataset::Column::VersionId)
        .into_tuple()
        .all(db)
        .await?)
}
