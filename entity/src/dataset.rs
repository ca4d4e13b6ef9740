//! A published dataset: what the catalog lists, pointing at its live version.

use sea_orm::entity::prelude::*;

/// One row per published slug. Replaced in place by a re-import, in the same transaction that
/// makes the new version live, so readers see one version's metadata or the other's.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "datasets")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique)]
    pub slug: String,
    pub title: String,
    #[sea_orm(column_type = "Text")]
    pub description: String,
    pub license: Option<String>,
    pub source_url: Option<String>,
    /// The source column whose values became `_id`; `None` when `_id` is the row number.
    pub id_field: Option<String>,
    pub record_count: i64,
    /// The live [`super::dataset_version`]; its records table is `records_v{version_id}`.
    pub version_id: i64,
    pub created_at: TimeDateTimeWithTimeZone,
    pub updated_at: TimeDateTimeWithTimeZone,
    /// The number field of latitudes of the geo pair (contract §13.4); `None` without one.
    pub geo_lat: Option<String>,
    /// The number field of longitudes of the geo pair.
    pub geo_lon: Option<String>,
    /// The number of the live version within this dataset (`dataset_versions.number`).
    pub version: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
