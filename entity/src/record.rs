//! The per-version records tables (`records_v{N}`) and the columns they all share.
//!
//! Each import creates `records_v{N}` with `pos` (1-based position in the imported file, the
//! natural order and tie-breaker), `_id` (the record identifier), `doc` (the record as JSONB on
//! PostgreSQL, JSON text on SQLite), and one typed column per filterable field, plus
//! `text_v{N}`, the dictionary of distinct lower-cased text values that full-text search scans
//! through a trigram index. See the project's ARCHITECTURE.md for why.

use sea_orm::FromQueryResult;

/// The shared columns of a records table row (select `_id` as `id`).
#[derive(Clone, Debug, PartialEq, FromQueryResult)]
pub struct Model {
    pub pos: i64,
    pub id: String,
    pub doc: serde_json::Value,
}

/// The select-list item for `doc`, so that both stores hand back JSON (SQLite keeps it as text
/// and `json()` marks it as JSON).
pub fn doc_select(backend: sea_orm::DatabaseBackend) -> &'static str {
    match backend {
        sea_orm::DatabaseBackend::Postgres => "\"doc\"",
        _ => "json(\"doc\") AS \"doc\"",
    }
}

/// The record identifier's column; a keyword id field's column too, as it holds the same texts.
pub const ID_COLUMN: &str = "_id";

/// Name of the records table of a version.
pub fn records_table(version_id: i64) -> String {
    format!("records_v{version_id}")
}

/// The file that holds version `version_id`'s tables on an SQLite store whose file is
/// `store_file`: each version in a file of its own, in a folder beside the store's, so that the
/// store's own schema (which SQLite reads whole on every new connection and after every
/// schema change) holds the catalog only, however many versions there are. Versions imported
/// before keep their tables in the store's file, where no such file exists.
pub fn version_file(store_file: &std::path::Path, version_id: i64) -> std::path::PathBuf {
    versions_dir(store_file).join(format!("v{version_id}.sqlite"))
}

/// The folder of the version files of the SQLite store whose file is `store_file`.
pub fn versions_dir(store_file: &std::path::Path) -> std::path::PathBuf {
    let mut name = store_file.as_os_str().to_os_string();
    name.push("-versions");
    std::path::PathBuf::from(name)
}

/// Name of the btree index on one typed column of a version's records table.
pub fn column_index(version_id: i64, column: &str) -> String {
    format!("{}_{column}", records_table(version_id))
}

/// Name of the text dictionary of a version.
pub fn text_table(version_id: i64) -> String {
    format!("text_v{version_id}")
}

/// Column holding the typed value of the `n`-th filterable field.
pub fn value_column(n: usize) -> String {
    format!("c{n}")
}

/// Column holding the text-dictionary id of the `n`-th text field.
pub fn text_column(n: usize) -> String {
    format!("t{n}")
}
