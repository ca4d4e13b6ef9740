//! One record by its `_id`, read from the store by the records table's primary key: what
//! answers a record when no in-memory index holds its version.

use entity::record::{self, records_table};
use sea_orm::FromQueryResult;

use super::replicas::Reader;
use super::sql::Sql;
use crate::dataset::schema::DatasetSchema;
use crate::error::ApiError;

/// The stored record of `id` in `schema`'s version, through `reader`; `None` when it has none.
pub(crate) async fn by_id(
    reader: &Reader,
    schema: &DatasetSchema,
    id: &str,
) -> Result<Option<record::Model>, ApiError> {
    let backend = reader.backend();
    let mut sql = Sql::new(backend);
    sql.push("SELECT \"pos\", \"_id\" AS \"id\", ")
        .push(record::doc_select(backend))
        .push(" FROM ")
        .ident(&records_table(schema.version_id))
        .push(" WHERE \"_id\" = ")
        .bind(id.to_string());
    let statement = sql.build();
    let found = reader
        .run(|db| {
            let statement = statement.clone();
            async move { record::Model::find_by_statement(statement).one(&db).await }
        })
        .await?;
    Ok(found)
}
