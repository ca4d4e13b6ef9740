//! A page of records read from the store: the rows of one part of a sort's order (contract
//! §5), counted from the top by `LIMIT`/`OFFSET` or read on after a cursor's row by its sort
//! keys and `pos` (contract §13.2).

use entity::record;
use sea_orm::FromQueryResult;

use super::replicas::Reader;
use super::sql::{
    Access, KeyValue, KeyValues, Part, ResolvedFilter, Sql, after_row, from_where, order_by,
};
use crate::dataset::schema::{Column, DatasetSchema};
use crate::error::ApiError;

/// What a page reads: the matches of `resolved` in `schema`'s version, in `sort`'s order, of
/// one `part` of it, through `access`.
pub(crate) struct Read<'a> {
    pub(crate) schema: &'a DatasetSchema,
    pub(crate) resolved: &'a ResolvedFilter<'a>,
    pub(crate) sort: &'a [(Column, bool)],
    pub(crate) part: Part,
    pub(crate) access: Access,
}

/// `limit` rows of `read` from `offset` on, after the row at `pos` whose sort keys hold
/// `values` when `after` says so (a cursor's keyset).
pub(crate) async fn rows(
    reader: &Reader,
    read: &Read<'_>,
    after: Option<(&[KeyValue], i64)>,
    offset: i64,
    limit: i64,
) -> Result<Vec<record::Model>, ApiError> {
    let backend = reader.backend();
    let mut sql = Sql::new(backend);
    sql.push("SELECT \"pos\", \"_id\" AS \"id\", ")
        .push(record::doc_select(backend));
    from_where(&mut sql, read.schema, read.resolved, read.access);
    if let Some((values, pos)) = after {
        after_row(&mut sql, read.schema, read.sort, values, pos, read.part);
    }
    order_by(&mut sql, read.schema, read.sort, read.part);
    sql.push(" LIMIT ").bind(limit);
    sql.push(" OFFSET ").bind(offset);
    let statement = sql.build();
    Ok(reader
        .run(|db| {
            let statement = statement.clone();
            async move { record::Model::find_by_statement(statement).all(&db).await }
        })
        .await?)
}

/// The values of `sort`'s keys in the row at `pos`.
pub(crate) async fn key_values(
    reader: &Reader,
    schema: &DatasetSchema,
    sort: &[(Column, bool)],
    pos: i64,
) -> Result<KeyValues, ApiError> {
    if sort.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(reader.backend());
    sql.push("SELECT ");
    for (i, &(column, _)) in sort.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        sql.ident(schema.sql_column(column));
    }
    sql.push(" FROM ")
        .ident(&record::records_table(schema.version_id))
        .push(" WHERE \"pos\" = ")
        .bind(pos);
    let row = reader
        .query_one(sql.build())
        .await?
        .ok_or(ApiError::InvalidCursor {
            reason: "it names a row this version does not have",
        })?;
    let mut values = Vec::with_capacity(sort.len());
    for (i, &(column, _)) in sort.iter().enumerate() {
        let number = match column {
            Column::Id => false,
            Column::Field(f) => schema.fields[f].field_type == entity::FieldType::Number,
        };
        values.push(if number {
            row.try_get_by_index::<Option<f64>>(i)?.map(Into::into)
        } else {
            row.try_get_by_index::<Option<String>>(i)?.map(Into::into)
        });
    }
    Ok(values)
}

/// The rows (0-based) of `limit` matches of `read` from `offset` on, in its order: an export's
/// plan, read a statement at a time.
pub(crate) async fn positions(
    reader: &Reader,
    read: &Read<'_>,
    offset: u64,
    limit: u64,
) -> Result<Vec<u32>, ApiError> {
    let mut sql = Sql::new(reader.backend());
    sql.push("SELECT \"pos\"");
    from_where(&mut sql, read.schema, read.resolved, read.access);
    order_by(&mut sql, read.schema, read.sort, read.part);
    sql.push(" LIMIT ")
        .bind(limit as i64)
        .push(" OFFSET ")
        .bind(offset as i64);
    let mut rows = Vec::new();
    for row in reader.query_all(sql.build()).await? {
        let pos: i64 = row.try_get_by_index(0)?;
        rows.push(u32::try_from(pos - 1).map_err(|_| ApiError::Internal)?);
    }
    Ok(rows)
}
