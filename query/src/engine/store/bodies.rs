//! Record bodies by position as the store gives them ([`Stored`]): straight from an SQLite
//! file when it can be read directly, else by one statement.

use std::collections::HashMap;
use std::sync::Arc;

use entity::record::records_table;
use sea_orm::DatabaseBackend;
use serde_json::Value;

use super::direct::DirectSqlite;
use super::replicas::Reader;
use super::sql::{Sql, in_ids};
use crate::answer::views::RecordBody;
use crate::dataset::packed::Layout;
use crate::dataset::schema::DatasetSchema;
use crate::error::ApiError;

/// Records read from the store per statement and written per response chunk.
pub const BATCH_RECORDS: usize = 1000;

/// The bodies at `positions` of `schema`'s version, in that order: from the SQLite file when
/// `direct` reads it, on a PostgreSQL session kept out of the pool when one can be had, else one
/// statement through `reader` (PostgreSQL, or a direct read that failed).
pub(crate) async fn at_positions(
    direct: Option<&DirectSqlite>,
    reader: &Reader,
    schema: &DatasetSchema,
    positions: &[i64],
) -> Result<Vec<Stored>, ApiError> {
    let backend = reader.backend();
    if backend != DatabaseBackend::Postgres
        && let Some(read) =
            direct.and_then(|direct| direct.bodies(schema.version_id, positions).ok())
    {
        return in_order(positions, read, |text| Stored::text(schema, text));
    }
    let mut sql = Sql::new(backend);
    // PostgreSQL's JSONB as its text: a flat body is put in order as text, not as a value.
    let doc = match backend {
        DatabaseBackend::Postgres => "\"doc\"::text",
        _ => "\"doc\"",
    };
    sql.push("SELECT \"pos\", ")
        .push(doc)
        .push(" FROM ")
        .ident(&records_table(schema.version_id));
    sql.push(" WHERE ");
    in_ids(&mut sql, "pos", positions);
    let statement = sql.build();
    // On PostgreSQL the statement's one parameter is `positions`, as one array.
    if let Some(rows) = reader
        .bodies_on_kept_session(&statement.sql, positions)
        .await
    {
        return in_order(positions, rows, |text| Stored::jsonb_text(schema, text));
    }
    let mut rows = Vec::with_capacity(positions.len());
    for row in reader.query_all(statement).await? {
        rows.push((row.try_get_by_index(0)?, row.try_get_by_index(1)?));
    }
    in_order(positions, rows, |text| match backend {
        DatabaseBackend::Postgres => Stored::jsonb_text(schema, text),
        _ => Stored::text(schema, text),
    })
}

/// The texts of `rows` (position, text) at `positions`, in that order, each made a body by
/// `body`; a position without a row is an internal error.
fn in_order(
    positions: &[i64],
    rows: Vec<(i64, String)>,
    body: impl Fn(String) -> Result<Stored, ApiError>,
) -> Result<Vec<Stored>, ApiError> {
    let mut found: HashMap<i64, String> = rows.into_iter().collect();
    positions
        .iter()
        .map(|pos| body(found.remove(pos).ok_or(ApiError::Internal)?))
        .collect()
}

/// Whether a body read through `reader` is a round trip to a server (PostgreSQL), whose
/// fixed cost joining concurrent reads into one statement saves; an SQLite file is read in
/// this process.
pub(crate) fn read_by_round_trip(reader: &Reader) -> bool {
    reader.backend() == DatabaseBackend::Postgres
}

/// A record body as the store gives it (SQLite's text, PostgreSQL's JSONB text parsed), or
/// already shaped without a projection (the body cache's, or a flat JSONB text put in order).
#[derive(Clone)]
pub(crate) enum Stored {
    Text(String),
    Value(Value),
    Shaped(Arc<str>),
}

impl Stored {
    /// A body SQLite holds as text, unpacked ([`crate::dataset::packed`]).
    pub(crate) fn text(schema: &DatasetSchema, stored: String) -> Result<Stored, ApiError> {
        if !Layout::is_packed(&stored) {
            return Ok(Stored::Text(stored));
        }
        let doc = schema.layout.unpack(&stored).ok_or(ApiError::Internal)?;
        Ok(Stored::Text(doc))
    }

    /// A body PostgreSQL gives as JSONB's text (keys by length, `", "` between them): a flat
    /// one put in schema order as text ([`crate::dataset::flat`]), any other parsed.
    pub(crate) fn jsonb_text(schema: &DatasetSchema, text: String) -> Result<Stored, ApiError> {
        let mut shaped = Vec::with_capacity(text.len());
        if schema
            .flat_order()
            .shape(&text, &mut Vec::new(), &mut shaped)
        {
            let shaped = String::from_utf8(shaped).map_err(|_| ApiError::Internal)?;
            return Ok(Stored::Shaped(shaped.into()));
        }
        serde_json::from_str(&text)
            .map(Stored::Value)
            .map_err(|_| ApiError::Internal)
    }

    /// The body as a JSON value.
    pub(crate) fn value(self) -> Result<Value, ApiError> {
        match self {
            Stored::Value(value) => Ok(value),
            Stored::Text(text) => serde_json::from_str(&text).map_err(|_| ApiError::Internal),
            Stored::Shaped(text) => serde_json::from_str(&text).map_err(|_| ApiError::Internal),
        }
    }

    /// The text a page writes for this body without a projection: the stored text when it is
    /// already shaped, else the shaped value written out (the same bytes
    /// [`RecordBody::Shaped`] would write).
    pub(crate) fn shaped_text(self, schema: &DatasetSchema) -> Result<Arc<str>, ApiError> {
        match self.shaped(schema, None)? {
            RecordBody::Stored(text) => Ok(text),
            RecordBody::Shaped(value) => Ok(value.to_string().into()),
        }
    }

    /// The body as a page shows it: the stored text itself when shaping would not change it,
    /// else shaped and projected.
    pub(crate) fn shaped(
        self,
        schema: &DatasetSchema,
        projection: Option<&[String]>,
    ) -> Result<RecordBody, ApiError> {
        match self {
            Stored::Shaped(text) if projection.is_none() => Ok(RecordBody::Stored(text)),
            Stored::Text(text)
                if projection.is_none() && text.starts_with('{') && schema.is_shaped(&text) =>
            {
                Ok(RecordBody::Stored(text.into()))
            }
            stored => Ok(RecordBody::Shaped(
                schema.shape(stored.value()?, projection),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a page writes for a body, whichever way it came.
    fn written(schema: &DatasetSchema, stored: Stored) -> String {
        stored.shaped_text(schema).unwrap().to_string()
    }

    #[test]
    fn jsonb_text_is_shaped_as_the_value_would_be() {
        let schema = DatasetSchema::keywords(&["name", "year", "place.lat", "place.lon"]);
        for text in [
            r#"{"_id": "1", "name": "Ayr", "year": 100000000000000000000}"#,
            r#"{"_id": "2", "year": 1.50, "place": {"lat": 1, "lon": 2}}"#,
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            let stored = Stored::jsonb_text(&schema, text.to_string()).unwrap();
            let flat = matches!(stored, Stored::Shaped(_));
            assert_eq!(flat, !text.contains("place"), "{text}");
            assert_eq!(
                written(&schema, stored),
                written(&schema, Stored::Value(value)),
                "{text}"
            );
        }
    }
}
