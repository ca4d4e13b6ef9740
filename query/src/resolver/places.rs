//! Records by distance (`sort=_distance>` with `near`) from the store: the matches' points
//! read in the order of the sort's other keys (then file order) and their distances measured
//! by the function the index uses; the resolver keeps the order and cuts the page. And the
//! circle of `near` resolved to the positions within it, as full-text terms are resolved to
//! dictionary ids.

use sea_orm::DatabaseBackend;

use super::Resolver;
use crate::answer::relevance::order_stably;
use crate::dataset::{Dataset, DatasetSchema};
use crate::engine::store::sql::{Access, Part, ResolvedFilter, Sql, from_where, order_by};
use crate::error::ApiError;
use crate::request::places::{Near, distance_m};
use crate::request::{Filter, RecordQuery};

impl Resolver {
    /// Every match of `query` by distance from `near`'s centre (rows, 0-based, with their
    /// distances) when no in-memory index answers.
    pub(super) async fn distance_order_from_store(
        &self,
        dataset: &Dataset,
        query: &RecordQuery,
        near: &Near,
        descending: bool,
    ) -> Result<Vec<(u32, f64)>, ApiError> {
        let schema = &dataset.schema;
        let resolved = self.resolve(schema, &query.filter).await?;
        if resolved.matches_nothing() {
            return Ok(Vec::new());
        }
        let mut sql = points(self.backend(), schema, near);
        from_where(&mut sql, schema, &resolved, Access::Planner);
        order_by(&mut sql, schema, &query.sort, Part::All);
        let mut rows: Vec<(u32, f64)> = Vec::new();
        for row in self
            .reader(schema.version_id)
            .await
            .query_all(sql.build())
            .await?
        {
            let lat: f64 = row.try_get("", "lat")?;
            let lon: f64 = row.try_get("", "lon")?;
            let pos: i64 = row.try_get("", "pos")?;
            rows.push(((pos - 1) as u32, distance_m(near.lat, near.lon, lat, lon)));
        }
        order_stably(&mut rows, descending);
        Ok(rows)
    }

    /// The positions of the records within `near`'s circle: the points of its box (the
    /// ranges `filter` holds on the pair's columns) read, and tested as the index tests them.
    pub(super) async fn within(
        &self,
        schema: &DatasetSchema,
        filter: &Filter,
        near: &Near,
    ) -> Result<Vec<i64>, ApiError> {
        let the_box = Filter {
            ranges: filter
                .ranges
                .iter()
                .filter(|(c, _)| *c == near.lat_column || *c == near.lon_column)
                .cloned()
                .collect(),
            ..Filter::default()
        };
        let resolved = ResolvedFilter {
            filter: &the_box,
            term_ids: Vec::new(),
            field_ids: Vec::new(),
            date_values: Vec::new(),
            near_positions: None,
        };
        let mut sql = points(self.backend(), schema, near);
        from_where(&mut sql, schema, &resolved, Access::Planner);
        let mut positions = Vec::new();
        for row in self
            .reader(schema.version_id)
            .await
            .query_all(sql.build())
            .await?
        {
            let lat: Option<f64> = row.try_get("", "lat")?;
            let lon: Option<f64> = row.try_get("", "lon")?;
            if let (Some(lat), Some(lon)) = (lat, lon)
                && near.holds(lat, lon)
            {
                positions.push(row.try_get::<i64>("", "pos")?);
            }
        }
        Ok(positions)
    }
}

/// `SELECT pos, <lat> AS lat, <lon> AS lon`: each record's point, for the conditions to follow.
fn points(backend: DatabaseBackend, schema: &DatasetSchema, near: &Near) -> Sql {
    let mut sql = Sql::new(backend);
    sql.push("SELECT \"pos\", ")
        .ident(schema.sql_column(near.lat_column))
        .push(" AS lat, ")
        .ident(schema.sql_column(near.lon_column))
        .push(" AS lon");
    sql
}
