//! The schema of a dataset version: one row per (dotted) field name.

use sea_orm::entity::prelude::*;

use crate::FieldType;

/// Fields belong to a version, not to the dataset, so a reader that resolved the live version
/// reads that version's schema even while a re-import with another schema commits.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "dataset_fields")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub version_id: i64,
    /// Order of the field in the schema (0-based); records are returned in this key order.
    pub position: i32,
    /// Dotted path of the field (`Position.PositionLat`).
    pub name: String,
    #[sea_orm(column_name = "type")]
    pub field_type: FieldType,
    #[sea_orm(column_type = "Text", nullable)]
    pub description: Option<String>,
    /// Column of `records_v{version}` that holds the typed value (`c{n}` for keyword, number,
    /// boolean and date; `t{n}` for the text-dictionary id of a text field); `None` for `json`.
    pub column_name: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
