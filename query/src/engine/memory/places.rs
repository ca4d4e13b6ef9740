//! Places on an in-memory index: the exact test of `near`'s circle on the rows of its box, and
//! pages by distance (`sort=_distance>`): the matching rows first in the order of the sort's
//! other keys (then file order), then ordered by their distance from the circle's centre,
//! ties keeping that order.

use super::MemIndex;
use super::rows::Bits;
use super::walk::Key;
use crate::answer::relevance::order_stably;
use crate::dataset::schema::Column;
use crate::request::places::{Near, distance_m};

impl MemIndex {
    /// The rows of `candidates` (`None`: every row) whose point lies within `near`'s circle;
    /// the candidates are already the circle's box, found through the columns' value order.
    pub(super) fn within(&self, near: &Near, candidates: Option<Bits>) -> Bits {
        let (Some(Key::Num(lat)), Some(Key::Num(lon))) =
            (self.key(near.lat_column), self.key(near.lon_column))
        else {
            return Bits::new(self.rows as usize);
        };
        let candidates = candidates.unwrap_or_else(|| {
            let mut all = Bits::new(self.rows as usize);
            all.invert(self.rows as usize);
            all
        });
        let mut kept = Bits::new(self.rows as usize);
        for row in candidates.iter() {
            let (y, x) = (lat.values.get(row as usize), lon.values.get(row as usize));
            if !y.is_nan() && !x.is_nan() && near.holds(y, x) {
                kept.insert(row);
            }
        }
        kept
    }

    /// Every row of `matches` with its distance from `near`'s centre, nearest first unless
    /// `descending`, ties by `rest` and then file order.
    pub(crate) fn distance_order(
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
        order_stably(&mut rows, descending);
        rows
    }
}
