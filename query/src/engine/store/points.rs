//! The points of a version's matches read from the store, for places (`near`, `sort=_distance`)
//! when no in-memory index answers: each match's position with its latitude and longitude.

use super::replicas::Reader;
use super::sql::{Access, Part, ResolvedFilter, Sql, from_where, order_by};
use crate::dataset::schema::{Column, DatasetSchema};
use crate::error::ApiError;
use crate::request::places::Near;

/// One match's position (1-based) and point; a missing coordinate is `None`.
pub(crate) type Point = (i64, Option<f64>, Option<f64>);

/// The points of `resolved`'s matches in `schema`'s version, of `near`'s pair of fields, in the
/// order of `sort` (then file order) when given.
pub(crate) async fn of_matches(
    reader: &Reader,
    schema: &DatasetSchema,
    near: &Near,
    resolved: &ResolvedFilter<'_>,
    sort: Option<&[(Column, bool)]>,
) -> Result<Vec<Point>, ApiError> {
    let mut sql = Sql::new(reader.backend());
    sql.push("SELECT \"pos\", ")
        .ident(schema.sql_column(near.lat_column))
        .push(" AS lat, ")
        .ident(schema.sql_column(near.lon_column))
        .push(" AS lon");
    from_where(&mut sql, schema, resolved, Access::Planner);
    if let Some(sort) = sort {
        order_by(&mut sql, schema, sort, Part::All);
    }
    let mut points = Vec::new();
    for row in reader.query_all(sql.build()).await? {
        points.push((
            row.try_get("", "pos")?,
            row.try_get("", "lat")?,
            row.try_get("", "lon")?,
        ));
    }
    Ok(points)
}
