//! Records by distance (`sort=_distance>` with `near`) from the store: the matches' points
//! read in the order of the sort's other keys (then file order) and their distances measured
//! by the function the index uses; the resolver keeps the order and cuts the page.

use sea_orm::ConnectionTrait;

use super::Resolver;
use crate::answer::relevance::order_stably;
use crate::dataset::Dataset;
use crate::engine::store::sql::{Access, Part, Sql, from_where, order_by};
use crate::error::ApiError;
use crate::request::RecordQuery;
use crate::request::places::{Near, distance_m};

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
        let mut sql = Sql::new(self.backend());
        sql.push("SELECT \"pos\", ")
            .ident(schema.sql_column(near.lat_column))
            .push(" AS lat, ")
            .ident(schema.sql_column(near.lon_column))
            .push(" AS lon");
        from_where(&mut sql, schema, &resolved, Access::Planner);
        order_by(&mut sql, schema, &query.sort, Part::All);
        let mut rows: Vec<(u32, f64)> = Vec::new();
        for row in self.db.query_all_raw(sql.build()).await? {
            let lat: f64 = row.try_get("", "lat")?;
            let lon: f64 = row.try_get("", "lon")?;
            let pos: i64 = row.try_get("", "pos")?;
            rows.push(((pos - 1) as u32, distance_m(near.lat, near.lon, lat, lon)));
        }
        order_stably(&mut rows, descending);
        Ok(rows)
    }
}
