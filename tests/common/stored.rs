//! Records as the store holds them, read directly: what an import wrote, checked without going
//! through the resolver layer the service reads with.

#![allow(dead_code)]

use entity::record::{self, records_table};
use sea_orm::{ConnectionTrait, DatabaseBackend, DbErr, FromQueryResult, Statement};

/// Number of records in a version.
pub async fn count(store: &odqs::store::Store, version_id: i64) -> Result<i64, DbErr> {
    let table = records_table(version_id);
    let row = store
        .db
        .query_one_raw(Statement::from_string(
            store.backend(),
            format!("SELECT COUNT(*) AS n FROM \"{table}\""),
        ))
        .await?
        .expect("COUNT returns a row");
    row.try_get::<i64>("", "n")
}

/// The record with identifier `id`, if any.
pub async fn by_id(
    store: &odqs::store::Store,
    version_id: i64,
    id: &str,
) -> Result<Option<record::Model>, DbErr> {
    let backend = store.backend();
    let table = records_table(version_id);
    let placeholder = if backend == DatabaseBackend::Postgres {
        "$1"
    } else {
        "?"
    };
    let sql = format!(
        "SELECT \"pos\", \"_id\" AS \"id\", {} FROM \"{table}\" WHERE \"_id\" = {placeholder}",
        record::doc_select(backend)
    );
    record::Model::find_by_statement(Statement::from_sql_and_values(backend, sql, [id.into()]))
        .one(&store.db)
        .await
}

/// `limit` records from position `offset` on, in file order.
pub async fn in_order(
    store: &odqs::store::Store,
    version_id: i64,
    offset: u64,
    limit: u64,
) -> Result<Vec<record::Model>, DbErr> {
    let backend = store.backend();
    let table = records_table(version_id);
    let sql = format!(
        "SELECT \"pos\", \"_id\" AS \"id\", {} FROM \"{table}\" ORDER BY \"pos\" LIMIT {limit} OFFSET {offset}",
        record::doc_select(backend)
    );
    record::Model::find_by_statement(Statement::from_string(backend, sql))
        .all(&store.db)
        .await
}
