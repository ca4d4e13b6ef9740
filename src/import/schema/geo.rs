//! A dataset's geo pair (contract §13.4): the number fields of latitudes and longitudes its
//! places are read from. Declared by the schema file (`"geo": {"lat": …, "lon": …}`), or
//! found by name: two number fields under the same parent whose last name segments,
//! case-insensitively, are or end with `lat`/`latitude` and `lon`/`lng`/`long`/`longitude`
//! (`Position.PositionLat` and `Position.PositionLon`); the first such pair in field order.

use entity::FieldType;
use serde::{Deserialize, Serialize};

use super::plan::PlannedField;
use crate::import::ImportError;

/// The two fields of a geo pair, by name.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GeoPair {
    pub lat: String,
    pub lon: String,
}

const LATITUDE: &[&str] = &["latitude", "lat"];
const LONGITUDE: &[&str] = &["longitude", "long", "lng", "lon"];

/// The parent of a dotted name and its last segment, lower-cased.
fn split(name: &str) -> (&str, String) {
    match name.rsplit_once('.') {
        Some((parent, last)) => (parent, last.to_lowercase()),
        None => ("", name.to_lowercase()),
    }
}

fn named(last: &str, endings: &[&str]) -> bool {
    endings.iter().any(|end| last.ends_with(end))
}

/// The dataset's geo pair: the declared one, checked against the fields, else the first
/// found by name; `None` when there is neither.
pub fn geo_pair(
    declared: Option<&GeoPair>,
    fields: &[PlannedField],
) -> Result<Option<GeoPair>, ImportError> {
    let number = |name: &str| {
        fields
            .iter()
            .any(|f| f.name == name && f.field_type == FieldType::Number)
    };
    if let Some(pair) = declared {
        for (what, name) in [("lat", &pair.lat), ("lon", &pair.lon)] {
            if !number(name) {
                return Err(ImportError::Schema(format!(
                    "the schema file's geo {what} names {name:?}, which is not a number field of the dataset"
                )));
            }
        }
        if pair.lat == pair.lon {
            return Err(ImportError::Schema(
                "the schema file's geo pair names one field twice".into(),
            ));
        }
        return Ok(Some(pair.clone()));
    }
    let numbers: Vec<&PlannedField> = fields
        .iter()
        .filter(|f| f.field_type == FieldType::Number)
        .collect();
    for lat in &numbers {
        let (parent, last) = split(&lat.name);
        if !named(&last, LATITUDE) {
            continue;
        }
        let lon = numbers.iter().find(|lon| {
            let (p, l) = split(&lon.name);
            p == parent && named(&l, LONGITUDE) && !named(&l, LATITUDE)
        });
        if let Some(lon) = lon {
            return Ok(Some(GeoPair {
                lat: lat.name.clone(),
                lon: lon.name.clone(),
            }));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, field_type: FieldType) -> PlannedField {
        PlannedField {
            name: name.into(),
            path: name.split('.').map(str::to_string).collect(),
            field_type,
            description: None,
            column: None,
        }
    }

    #[test]
    fn a_pair_is_found_by_name_under_one_parent() {
        let fields = [
            field("Name", FieldType::Text),
            field("Position.PositionLon", FieldType::Number),
            field("Other.lat", FieldType::Number),
            field("Position.PositionLat", FieldType::Number),
        ];
        let pair = geo_pair(None, &fields).unwrap().unwrap();
        assert_eq!(pair.lat, "Position.PositionLat");
        assert_eq!(pair.lon, "Position.PositionLon");
        let fields = [
            field("latitude", FieldType::Number),
            field("lng", FieldType::Number),
        ];
        assert!(geo_pair(None, &fields).unwrap().is_some());
        // Text, or under different parents: no pair.
        let fields = [
            field("a.lat", FieldType::Number),
            field("b.lon", FieldType::Number),
        ];
        assert!(geo_pair(None, &fields).unwrap().is_none());
        let fields = [
            field("lat", FieldType::Keyword),
            field("lon", FieldType::Number),
        ];
        assert!(geo_pair(None, &fields).unwrap().is_none());
    }

    #[test]
    fn a_declared_pair_must_name_number_fields() {
        let fields = [field("y", FieldType::Number), field("x", FieldType::Text)];
        let pair = GeoPair {
            lat: "y".into(),
            lon: "x".into(),
        };
        assert!(geo_pair(Some(&pair), &fields).is_err());
    }
}
