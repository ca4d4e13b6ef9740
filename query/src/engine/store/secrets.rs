//! The `secrets` table: values an instance makes once and every instance shares (the key
//! cursors are signed with), read from the primary.

use sea_orm::{ConnectionTrait, DatabaseConnection};

use super::sql::Sql;
use crate::error::ApiError;

/// The secret named `name`, when one has been made.
pub(crate) async fn read(db: &DatabaseConnection, name: &str) -> Result<Option<String>, ApiError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT \"value\" FROM \"secrets\" WHERE \"name\" = ")
        .bind(name);
    let Some(row) = db.query_one_raw(sql.build()).await? else {
        return Ok(None);
    };
    Ok(Some(row.try_get_by_index(0)?))
}

/// Keeps `value` as the secret `name` unless another instance made one first: the stored one
/// is the secret, so read it again after this.
pub(crate) async fn insert_if_absent(
    db: &DatabaseConnection,
    name: &str,
    value: String,
) -> Result<(), ApiError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("INSERT INTO \"secrets\" (\"name\", \"value\") VALUES (")
        .bind(name)
        .push(", ")
        .bind(value)
        .push(") ON CONFLICT (\"name\") DO NOTHING");
    db.execute_raw(sql.build()).await?;
    Ok(())
}
