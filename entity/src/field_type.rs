//! The type of a dataset field, as the contract names it (§1 "Types", §4 schema entries).

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// Field types. `keyword`, `text` and `number` are the spec's; `boolean` and `date` filter and
/// sort like keywords (contract §1); `json` holds arrays and other values no filter can address,
/// so that an import never drops data it cannot index.
#[derive(
    Copy, Clone, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    #[sea_orm(string_value = "keyword")]
    Keyword,
    #[sea_orm(string_value = "text")]
    Text,
    #[sea_orm(string_value = "number")]
    Number,
    #[sea_orm(string_value = "boolean")]
    Boolean,
    #[sea_orm(string_value = "date")]
    Date,
    #[sea_orm(string_value = "json")]
    Json,
}

impl FieldType {
    /// The name used in schema files, API answers and error messages.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldType::Keyword => "keyword",
            FieldType::Text => "text",
            FieldType::Number => "number",
            FieldType::Boolean => "boolean",
            FieldType::Date => "date",
            FieldType::Json => "json",
        }
    }

    /// Parses a schema file's type name.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "keyword" => FieldType::Keyword,
            "text" => FieldType::Text,
            "number" => FieldType::Number,
            "boolean" => FieldType::Boolean,
            "date" => FieldType::Date,
            "json" => FieldType::Json,
            _ => return None,
        })
    }

    /// Usable as `<name>=value` (contract §4 `filter.exact`); also what gets a sortable column.
    pub fn is_exact(self) -> bool {
        matches!(
            self,
            FieldType::Keyword | FieldType::Number | FieldType::Boolean | FieldType::Date
        )
    }

    /// Usable with `q` / `q[name]` (contract §4 `filter.fulltext`).
    pub fn is_fulltext(self) -> bool {
        self == FieldType::Text
    }

    /// Usable as `group_by` (spec §4.5: keyword only).
    pub fn is_group_by(self) -> bool {
        self == FieldType::Keyword
    }
}

impl std::fmt::Display for FieldType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
