//! Records as the store holds them, read directly: what an import wrote, checked without going
//! through the resolver layer the service reads with.

#![allow(dead_code)]

use entity::record::{self, records_table};
use entity::{dataset, dataset_field};
use query::packed::Layout;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseBackend, DbErr, EntityTrait, FromQueryResult,
    QueryFilter, QueryOrder, Statement,
};

/// Where version `version_id`'s records are: its own file on SQLite
/// ([`entity::record::version_file`]), the store on PostgreSQL.
pub async fn records_db(
    store: &odqs::store::Store,
    version_id: i64,
) -> Result<sea_orm::DatabaseConnection, DbErr> {
    match store.version_file(version_id).filter(|path| path.is_file()) {
        Some(path) => {
            sea_orm::Database::connect(format!("sqlite://{}?mode=ro", path.display())).await
        }
        None => Ok(store.db.clone()),
    }
}

/// The names of the store's records tables (`records_v{N}`), sorted: those in the store and,
/// on SQLite, those in version files.
pub async fn records_tables(store: &odqs::store::Store) -> Vec<String> {
    let sql = match store.backend() {
        DatabaseBackend::Postgres => {
            "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() \
             AND tablename LIKE 'records_v%'"
        }
        _ => "SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'records_v%'",
    };
    let rows = store
        .db
        .query_all_raw(Statement::from_string(store.backend(), sql))
        .await
        .expect("the store lists its tables");
    let mut names: Vec<String> = rows
        .iter()
        .map(|row| row.try_get::<String>("", "name").expect("a name"))
        .collect();
    if let Some(dir) = store
        .version_file(0)
        .and_then(|f| f.parent().map(|d| d.to_path_buf()))
    {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            let id = file
                .strip_prefix('v')
                .and_then(|f| f.strip_suffix(".sqlite"));
            if let Some(id) = id.and_then(|id| id.parse::<i64>().ok()) {
                names.push(records_table(id));
            }
        }
    }
    names.sort();
    names
}

/// Number of records in a version.
pub async fn count(store: &odqs::store::Store, version_id: i64) -> Result<i64, DbErr> {
    let table = records_table(version_id);
    let row = records_db(store, version_id)
        .await?
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
    let found =
        record::Model::find_by_statement(Statement::from_sql_and_values(backend, sql, [id.into()]))
            .one(&records_db(store, version_id).await?)
            .await?;
    let layout = layout(store, version_id).await?;
    Ok(found.map(|r| unpacked(&layout, r)))
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
    let found = record::Model::find_by_statement(Statement::from_string(backend, sql))
        .all(&records_db(store, version_id).await?)
        .await?;
    let layout = layout(store, version_id).await?;
    Ok(found.into_iter().map(|r| unpacked(&layout, r)).collect())
}

/// How the version's bodies are packed on SQLite.
async fn layout(store: &odqs::store::Store, version_id: i64) -> Result<Layout, DbErr> {
    let fields = fields(store, version_id).await?;
    Ok(Layout::new(fields.iter().map(|f| f.name.as_str())))
}

/// A record with its body as an object, as the import was given it (SQLite stores most bodies
/// packed, without their keys).
fn unpacked(layout: &Layout, mut record: record::Model) -> record::Model {
    if let serde_json::Value::Array(values) = record.doc {
        let object = layout
            .unpack_value(values)
            .expect("a packed body fits its layout");
        record.doc = serde_json::Value::Object(object);
    }
    record
}

/// Every published dataset, by slug.
pub async fn datasets(store: &odqs::store::Store) -> Result<Vec<dataset::Model>, DbErr> {
    dataset::Entity::find()
        .order_by_asc(dataset::Column::Slug)
        .all(&store.db)
        .await
}

/// The dataset published under `slug`, if any.
pub async fn find_dataset(
    store: &odqs::store::Store,
    slug: &str,
) -> Result<Option<dataset::Model>, DbErr> {
    dataset::Entity::find()
        .filter(dataset::Column::Slug.eq(slug))
        .one(&store.db)
        .await
}

/// The schema of a version, in field order.
pub async fn fields(
    store: &odqs::store::Store,
    version_id: i64,
) -> Result<Vec<dataset_field::Model>, DbErr> {
    dataset_field::Entity::find()
        .filter(dataset_field::Column::VersionId.eq(version_id))
        .order_by_asc(dataset_field::Column::Position)
        .all(&store.db)
        .await
}
