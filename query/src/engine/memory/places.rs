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
    /// Every row of `matches` with its distance from `near`'s centre, nearest first unless
    /// `descending`, ties by `rest` and then file order.
    pub fn distance_order(
        &self,
        matches: Option<&Bits>,
        near: &Near,
        descending: bool,
        rest: &[(Column, bool)],
    ) -> Vec<(u32, f64)> {
        let total = self.total(matches);
        let (Some(Key::Num(lat)), Some(Key::Num(lon))) =
            (self.key(near.lat_column), self.key(near.lon_column))
        else {
            return Vec::new();
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
        rows
    }
}
