//! Places (contract §13.4): `near=<lat>,<lon>,<radius>` and `bbox=<min_lon>,<min_lat>,<max_lon>,
//! <max_lat>` on a dataset with a geo pair, and the great-circle distance both engines
//! measure with.
//!
//! A box is two ranges, on the latitude and the longitude fields, merged with any other
//! bounds on them, so the index and the store answer it as they answer ranges. A circle is
//! the box around it (the latitude band, and the longitude band unless the circle reaches a
//! pole or the antimeridian) plus the exact test, [`Near::holds`], applied to the box's rows:
//! by the index row by row, by the store as a list of positions resolved first, like a date
//! range's texts.

use serde::Serialize;

use crate::dataset::{Column, DatasetSchema};
use crate::error::ApiError;
use crate::operators::Op;

/// The WGS 84 mean radius, in metres.
pub const EARTH_RADIUS_M: f64 = 6_371_008.8;
/// The largest radius `near` takes.
pub const MAX_RADIUS_M: f64 = 20_000_000.0;

/// A validated `near`: the centre, the radius and the pair's columns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Near {
    pub lat: f64,
    pub lon: f64,
    pub radius_m: f64,
    pub lat_column: Column,
    pub lon_column: Column,
}

impl Near {
    /// Whether the point lies within the radius.
    pub fn holds(&self, lat: f64, lon: f64) -> bool {
        distance_m(self.lat, self.lon, lat, lon) <= self.radius_m
    }
}

/// The great-circle distance between two points in degrees, by the haversine formula on a
/// sphere of [`EARTH_RADIUS_M`].
pub fn distance_m(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = (lat2 - lat1).to_radians();
    let dl = (lon2 - lon1).to_radians();
    let h = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_M * h.sqrt().min(1.0).asin()
}

/// Reads `near=<lat>,<lon>,<radius>` (radius with `m` or `km`).
fn parse_near(value: &str) -> Result<(f64, f64, f64), ApiError> {
    let bad = |why: &str| {
        ApiError::invalid(
            "near",
            format!(
                "Cannot read near={value:?}: {why}. Write near=<lat>,<lon>,<radius> with the radius in m or km, such as near=25.0340,121.5645,2km."
            ),
        )
    };
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    let [lat, lon, radius] = parts.as_slice() else {
        return Err(bad("it takes three parts"));
    };
    let lat = number(lat).ok_or_else(|| bad("the latitude is not a number"))?;
    let lon = number(lon).ok_or_else(|| bad("the longitude is not a number"))?;
    if !(-90.0..=90.0).contains(&lat) {
        return Err(bad("a latitude lies between -90 and 90"));
    }
    if !(-180.0..=180.0).contains(&lon) {
        return Err(bad("a longitude lies between -180 and 180"));
    }
    let (amount, unit) = if let Some(km) = radius.strip_suffix("km") {
        (km, 1000.0)
    } else if let Some(m) = radius.strip_suffix('m') {
        (m, 1.0)
    } else {
        return Err(bad("the radius needs a unit, m or km"));
    };
    let radius_m = number(amount.trim()).ok_or_else(|| bad("the radius is not a number"))? * unit;
    if radius_m <= 0.0 || radius_m > MAX_RADIUS_M {
        return Err(bad("the radius is more than 0 and at most 20000km"));
    }
    Ok((lat, lon, radius_m))
}

/// Reads `bbox=<min_lon>,<min_lat>,<max_lon>,<max_lat>` (GeoJSON's order).
fn parse_bbox(value: &str) -> Result<[f64; 4], ApiError> {
    let bad = |why: &str| {
        ApiError::invalid(
            "bbox",
            format!(
                "Cannot read bbox={value:?}: {why}. Write bbox=<min_lon>,<min_lat>,<max_lon>,<max_lat>, such as bbox=121.50,25.02,121.58,25.06."
            ),
        )
    };
    let parts: Vec<f64> = value
        .split(',')
        .map(|p| number(p.trim()))
        .collect::<Option<_>>()
        .ok_or_else(|| bad("every part is a number"))?;
    let [min_lon, min_lat, max_lon, max_lat] = parts.as_slice() else {
        return Err(bad("it takes four numbers"));
    };
    if !(-180.0..=180.0).contains(min_lon) || !(-180.0..=180.0).contains(max_lon) {
        return Err(bad("a longitude lies between -180 and 180"));
    }
    if !(-90.0..=90.0).contains(min_lat) || !(-90.0..=90.0).contains(max_lat) {
        return Err(bad("a latitude lies between -90 and 90"));
    }
    if min_lon > max_lon || min_lat > max_lat {
        return Err(bad("each minimum is at most its maximum"));
    }
    Ok([*min_lon, *min_lat, *max_lon, *max_lat])
}

/// A finite decimal number.
fn number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// What `near` and `bbox` add to a filter: range conditions on the pair's fields (name,
/// column, operator, value) and the exact test of a circle.
pub(crate) type PlaceConditions<'a> = (Vec<(&'a str, Column, Op, Vec<String>)>, Option<Near>);

/// `near` and `bbox` against the dataset's geo pair (`geo`: its latitude and longitude fields).
pub(crate) fn place_conditions<'a>(
    near: Option<&str>,
    bbox: Option<&str>,
    geo: Option<(&'a str, &'a str)>,
    schema: &DatasetSchema,
) -> Result<PlaceConditions<'a>, ApiError> {
    if near.is_none() && bbox.is_none() {
        return Ok((Vec::new(), None));
    }
    let near = near.map(parse_near).transpose()?;
    let bbox = bbox.map(parse_bbox).transpose()?;
    let (lat_name, lon_name) = geo.ok_or(ApiError::NoGeoFields {
        parameter: if near.is_some() { "near" } else { "bbox" },
    })?;
    let column = |name: &str| schema.column(name).ok_or(ApiError::Internal);
    let (lat_column, lon_column) = (column(lat_name)?, column(lon_name)?);
    let mut conditions = Vec::new();
    let mut bound = |name: &'a str, column: Column, op: Op, value: f64| {
        conditions.push((name, column, op, vec![value.to_string()]));
    };
    if let Some([min_lon, min_lat, max_lon, max_lat]) = bbox {
        bound(lat_name, lat_column, Op::Gte, min_lat);
        bound(lat_name, lat_column, Op::Lte, max_lat);
        bound(lon_name, lon_column, Op::Gte, min_lon);
        bound(lon_name, lon_column, Op::Lte, max_lon);
    }
    let near = near.map(|(lat, lon, radius_m)| {
        // The box around the circle, a little wider than exact: the exact test decides.
        let angle = radius_m / EARTH_RADIUS_M;
        let margin = 1e-9;
        let dlat = angle.to_degrees() + margin;
        bound(lat_name, lat_column, Op::Gte, lat - dlat);
        bound(lat_name, lat_column, Op::Lte, lat + dlat);
        let reaches_pole = lat + dlat >= 90.0 || lat - dlat <= -90.0;
        if !reaches_pole && angle < std::f64::consts::FRAC_PI_2 {
            let dlon = (angle.sin() / lat.to_radians().cos())
                .min(1.0)
                .asin()
                .to_degrees()
                + margin;
            if lon - dlon >= -180.0 && lon + dlon <= 180.0 {
                bound(lon_name, lon_column, Op::Gte, lon - dlon);
                bound(lon_name, lon_column, Op::Lte, lon + dlon);
            }
        }
        Near {
            lat,
            lon,
            radius_m,
            lat_column,
            lon_column,
        }
    });
    Ok((conditions, near))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_are_great_circle() {
        // Taipei 101 to Taipei Main Station, about 5.0 km.
        let d = distance_m(25.0340, 121.5645, 25.0478, 121.5170);
        assert!((d - 5_025.32).abs() < 0.01, "{d}");
        assert_eq!(distance_m(10.0, 20.0, 10.0, 20.0), 0.0);
        // A quarter of the meridian.
        let quarter = distance_m(0.0, 0.0, 90.0, 0.0);
        assert!((quarter - EARTH_RADIUS_M * std::f64::consts::FRAC_PI_2).abs() < 1e-6);
    }

    #[test]
    fn bad_places_are_refused() {
        for bad in [
            "91,0,1km",
            "0,181,1km",
            "0,0,0km",
            "0,0,-1m",
            "0,0,5",
            "0,0,20001km",
            "0,0",
            "a,0,1m",
        ] {
            assert!(parse_near(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_near("25,121,2km").unwrap(), (25.0, 121.0, 2000.0));
        assert_eq!(parse_near("25,121,20000km").unwrap().2, MAX_RADIUS_M);
        for bad in ["1,2,3", "2,0,1,1", "0,2,1,1", "0,0,181,1", "a,b,c,d"] {
            assert!(parse_bbox(bad).is_err(), "{bad}");
        }
        assert!(parse_bbox("121.5,25,121.6,25.1").is_ok());
    }
}
