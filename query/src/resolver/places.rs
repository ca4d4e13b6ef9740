//! Records by distance (`sort=_distance>` with `near`) from the store: the matches' points
//! read in the order of the sort's other keys (then file order), their distances measured by
//! the function the index uses, the page cut and its bodies read as the index path reads them.

use sea_orm::ConnectionTrait;

use super::Resolver;
use super::records::whole_metres;
use crate::answer::relevance::order_by_score;
use crate::answer::views::{RecordBody, RecordPage};
use crate::dataset::Dataset;
use crate::engine::store::sql::{Access, Part, Sql, from_where, order_by};
use crate::error::ApiError;
use crate::request::places::{Near, distance_m};
use crate::request::{DISTANCE_M, RecordQuery};

impl Resolver {
    /// [`Self::records`] by distance when no in-memory index answers.
    pub(super) async fn distance_from_store(
        &self,
        dataset: &Dataset,
        query: &RecordQuery,
        near: &Near,
        descending: bool,
    ) -> Result<RecordPage, ApiError> {
        let schema = &dataset.schema;
        let resolved = self.resolve(schema, &query.filter).await?;
        let total = self.count(dataset, &resolved, None).await?;
        let offset = query.paging.offset();
        if offset >= total {
            return Ok(self.record_page(dataset, query, total, Vec::new()));
        }
        let mut sql = Sql::new(self.backend());
        sql.push("SELECT \"pos\", ")
            .ident(schema.sql_column(near.lat_column))
            .push(" AS lat, ")
            .ident(schema.sql_column(near.lon_column))
            .push(" AS lon");
        from_where(&mut sql, schema, &resolved, Access::Planner);
        order_by(&mut sql, schema, &query.sort, Part::All);
        let mut rows: Vec<(i64, f64)> = Vec::new();
        for row in self.db.query_all_raw(sql.build()).await? {
            let lat: f64 = row.try_get("", "lat")?;
            let lon: f64 = row.try_get("", "lon")?;
            let pos: i64 = row.try_get("", "pos")?;
            rows.push((pos, distance_m(near.lat, near.lon, lat, lon)));
        }
        order_by_score(&mut rows, descending);
        let end = offset
            .saturating_add(query.paging.per_page)
            .min(rows.len() as u64);
        let page = &rows[offset as usize..end as usize];
        let positions: Vec<u32> = page.iter().map(|(pos, _)| (*pos - 1) as u32).collect();
        let projection = query.fields.as_deref();
        let records = Box::pin(self.stored_at_positions(schema, &positions))
            .await?
            .into_iter()
            .zip(page)
            .map(|(stored, (_, metres))| {
                Ok(stored
                    .shaped(schema, projection)?
                    .with_member(DISTANCE_M, whole_metres(*metres)))
            })
            .collect::<Result<Vec<RecordBody>, ApiError>>()?;
        Ok(self.record_page(dataset, query, total, records))
    }
}
