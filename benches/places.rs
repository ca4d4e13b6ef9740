//! Which structure answers `near` without reading every point: measured on a million points
//! spread over Taiwan's extent (half of them in a few dense cities), for circles of 2, 20 and
//! 200 km, against a scan of every point.
//!
//! ```sh
//! cargo bench --bench places
//! ```
//!
//! - scan: the haversine of every point;
//! - bands (what odqs does): the rows of the latitude band and of the longitude band, each a
//!   binary search of its column's value order set as bits, intersected, then the haversine
//!   of the rows in both;
//! - grid: points bucketed in cells of 0.05°, the cells meeting the box read, then the
//!   haversine of their points.

use std::time::{Duration, Instant};

use query::{EARTH_RADIUS_M, distance_m};

const POINTS: usize = 1_000_000;
const CELL: f64 = 0.05;

/// A small deterministic generator (no dependency for a bench).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn points() -> (Vec<f64>, Vec<f64>) {
    let mut rng = Lcg(2026);
    let cities = [
        (25.04, 121.53),
        (22.63, 120.30),
        (24.15, 120.67),
        (23.0, 120.2),
    ];
    let (mut lat, mut lon) = (Vec::with_capacity(POINTS), Vec::with_capacity(POINTS));
    for i in 0..POINTS {
        if i % 2 == 0 {
            let (y, x) = cities[i % cities.len()];
            lat.push(y + (rng.next() - 0.5) * 0.2);
            lon.push(x + (rng.next() - 0.5) * 0.2);
        } else {
            lat.push(21.9 + rng.next() * 3.4);
            lon.push(120.0 + rng.next() * 2.0);
        }
    }
    (lat, lon)
}

/// Rows in the order of `values`.
fn order(values: &[f64]) -> Vec<u32> {
    let mut rows: Vec<u32> = (0..values.len() as u32).collect();
    rows.sort_by(|&a, &b| values[a as usize].total_cmp(&values[b as usize]));
    rows
}

fn band(values: &[f64], order: &[u32], low: f64, high: f64, bits: &mut [u64]) {
    let start = order.partition_point(|&r| values[r as usize] < low);
    let end = order.partition_point(|&r| values[r as usize] <= high);
    for &row in &order[start..end] {
        bits[row as usize / 64] |= 1 << (row % 64);
    }
}

fn main() {
    let (lat, lon) = points();
    let (lat_order, lon_order) = (order(&lat), order(&lon));
    let mut grid: std::collections::HashMap<(i32, i32), Vec<u32>> = Default::default();
    for row in 0..POINTS {
        let cell = (
            (lat[row] / CELL).floor() as i32,
            (lon[row] / CELL).floor() as i32,
        );
        grid.entry(cell).or_default().push(row as u32);
    }
    let words = POINTS.div_ceil(64);
    println!("| radius | matches | scan ms | bands ms | grid ms | bands ÷ scan | grid ÷ scan |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for radius in [2_000.0, 20_000.0, 200_000.0] {
        let (y, x): (f64, f64) = (25.0340, 121.5645);
        let angle = radius / EARTH_RADIUS_M;
        let dlat = angle.to_degrees();
        let dlon = (angle.sin() / y.to_radians().cos()).asin().to_degrees();
        let time = |f: &mut dyn FnMut() -> usize| {
            let mut runs: Vec<Duration> = Vec::new();
            let mut found = 0;
            for _ in 0..9 {
                let started = Instant::now();
                found = f();
                runs.push(started.elapsed());
            }
            runs.sort();
            (runs[4].as_secs_f64() * 1e3, found)
        };
        let (scan, n1) = time(&mut || {
            (0..POINTS)
                .filter(|&r| distance_m(y, x, lat[r], lon[r]) <= radius)
                .count()
        });
        let (bands, n2) = time(&mut || {
            let mut a = vec![0u64; words];
            let mut b = vec![0u64; words];
            band(&lat, &lat_order, y - dlat, y + dlat, &mut a);
            band(&lon, &lon_order, x - dlon, x + dlon, &mut b);
            let mut found = 0;
            for (w, (p, q)) in a.iter().zip(&b).enumerate() {
                let mut both = p & q;
                while both != 0 {
                    let row = w * 64 + both.trailing_zeros() as usize;
                    both &= both - 1;
                    found += usize::from(distance_m(y, x, lat[row], lon[row]) <= radius);
                }
            }
            found
        });
        let (cells, n3) = time(&mut || {
            let (y0, y1) = (
                ((y - dlat) / CELL).floor() as i32,
                ((y + dlat) / CELL).floor() as i32,
            );
            let (x0, x1) = (
                ((x - dlon) / CELL).floor() as i32,
                ((x + dlon) / CELL).floor() as i32,
            );
            let mut found = 0;
            for cy in y0..=y1 {
                for cx in x0..=x1 {
                    for &row in grid.get(&(cy, cx)).map(Vec::as_slice).unwrap_or(&[]) {
                        let row = row as usize;
                        found += usize::from(distance_m(y, x, lat[row], lon[row]) <= radius);
                    }
                }
            }
            found
        });
        assert!(n1 == n2 && n2 == n3, "{n1} {n2} {n3}");
        println!(
            "| {} km | {n1} | {scan:.2} | {bands:.2} | {cells:.2} | {:.2}× | {:.2}× |",
            radius / 1000.0,
            bands / scan,
            cells / scan
        );
    }
}
