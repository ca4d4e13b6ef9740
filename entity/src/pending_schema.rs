//! A schema file sent with `PUT /datasets/{slug}/schema.json` (contract §14.2): it applies to
//! the dataset's next version, published by `PUT /datasets/{slug}`, and is removed once that
//! version is published.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "pending_schemas")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub slug: String,
    /// The schema file as `odqs import --schema` reads it, checked and re-serialized.
    #[sea_orm(column_type = "Text")]
    pub body: String,
    pub updated_at: TimeDateTimeWithTimeZone,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
