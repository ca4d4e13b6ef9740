//! Pages by distance on an in-memory index (`sort=_distance>` with `near`): the matching rows
//! first in the order of the sort's other keys (then file order), then ordered by their
//! distance from the circle's centre, ties keeping that order.

use super::MemIndex;
use super::rows::Bits;
use super::select::Key;
use crate::answer::relevance::order_by_score;
use crate::dataset::schema::Column;
use crate::request::places::{Near, distance_m};

impl MemIndex {
    /// Rows `offset..offset + limit` of `matches` by distance from `near`'s centre (nearest
    /// first unless `descending`), ties by `rest` and then file order; with their distances.
    pub fn distance_page(
        &self,
        matches: Option<&Bits>,
        near: &Near,
        descending: bool,
        rest: &[(Column, bool)],
        offset: u64,
        limit: u64,
    ) -> (u64, Vec<(u32, f64)>) {
        let total = self.total(matches);
        let (Some(Key::Num(lat)), Some(Key::Num(lon))) =
            (self.key(near.lat_column), self.key(near.lon_column))
        else {
            return (total, Vec::new());
        };
        let mut rows: Vec<(u32, f64)> = self
            .page(matches, rest, 0, total)
            .into_iter()
            .map(|row| {
                let (y, x) = (lat.values.get(row as usize), lon.values.get(row as usize));
                (row, distance_m(near.lat, near.lon, y, x))
            })
            .collect();
        order_by_score(&mut rows, descending);
        let start = offset.min(total) as usize;
        let end = offset.saturating_add(limit).min(total) as usize;
        (total, rows[start..end].to_vec())
    }
}
