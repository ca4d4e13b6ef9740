//! Records by distance (`sort=_distance>` with `near`) from the store: the matches' points
//! read in the order of the sort's other keys (then file order) and their distances measured
//! by the function the index uses (the points read by `engine::store::points`); the resolver
//! keeps the order and cuts the page. And the
//! circle of `near` resolved to the positions within it, as full-text terms are resolved to
//! dictionary ids.

use super::Resolver;
use crate::answer::relevance::order_stably;
use crate::dataset::{Dataset, DatasetSchema};
use crate::engine::store;
use crate::engine::store::sql::ResolvedFilter;
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
        let reader = self.reader(schema.version_id).await;
        let sort = Some(query.sort.as_slice());
        let points = store::points::of_matches(&reader, schema, near, &resolved, sort).await?;
        let mut rows: Vec<(u32, f64)> = Vec::with_capacity(points.len());
        for (pos, lat, lon) in points {
            // The circle's box is among the conditions: every match has both coordinates.
            let (Some(lat), Some(lon)) = (lat, lon) else {
                return Err(ApiError::Internal);
            };
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
        let reader = self.reader(schema.version_id).await;
        let points = store::points::of_matches(&reader, schema, near, &resolved, None).await?;
        let held = points
            .into_iter()
            .filter_map(|(pos, lat, lon)| match (lat, lon) {
                (Some(lat), Some(lon)) if near.holds(lat, lon) => Some(pos),
                _ => None,
            });
        Ok(held.collect())
    }
}
