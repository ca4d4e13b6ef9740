//! A records request (contract §5) validated: conditions, paging, sort keys and projection;
//! the sort and projection rules are the export's too.

use entity::FieldType;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::filter::{Filter, filter, sorted_unique};
use super::params::{DEFAULT_FACET_SIZE, Paging, ProjectionParams, RecordParams, SortParam, check};
use crate::dataset::{Column, DatasetSchema};
use crate::error::ApiError;

/// A validated records request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RecordQuery {
    pub filter: Filter,
    pub paging: Paging,
    /// Sort keys (column, descending); ties and unsorted requests follow file order.
    pub sort: Vec<(Column, bool)>,
    pub fields: Option<Vec<String>>,
    /// `sort=_score<` (or `>`) as the first key: records by relevance to the query's terms
    /// (`Some(descending)`), then by `sort`'s other keys; `None` without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_score: Option<bool>,
    /// `sort=_distance>` (or `<`) as the first key, with `near`: records by distance from its
    /// centre (`Some(descending)`: `>` is nearest first), then by `sort`'s other keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_distance: Option<bool>,
    /// The facets asked beside the page; `None` without `facet` (so a request without one keeps
    /// its cache key and `ETag`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facets: Option<Facets>,
    /// From a cursor (contract §13.2): the last row of the page before, which the store path
    /// reads on from by the sort keys and `pos`. Not part of what the request means (`paging`
    /// says which page), so not serialized: a page's tag is the same however it was reached.
    #[serde(skip)]
    pub after: Option<u32>,
    /// SHA-256 of the request without its page, made once when the
    /// request is validated: the answer's tag, the store path's shared-flight key and a
    /// cursor's pin all derive from it, so a page serializes its request once.
    #[serde(skip)]
    pub meaning: [u8; 32],
}

impl RecordQuery {
    /// SHA-256 of what the request means whatever its page: its JSON with page 1.
    fn hash_meaning(&mut self) -> [u8; 32] {
        let page = std::mem::replace(&mut self.paging.page, 1);
        let digest = Sha256::digest(serde_json::to_vec(self).unwrap_or_default());
        self.paging.page = page;
        digest.into()
    }
}

/// Facets with records: keyword fields whose values are counted over every matching record.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Facets {
    /// The fields' indexes in the schema, in the order asked.
    pub fields: Vec<usize>,
    /// Values per field, the most frequent first.
    pub size: u64,
}

/// Validates a records request (contract §5).
pub(crate) fn record_query(
    params: &RecordParams,
    schema: &DatasetSchema,
) -> Result<RecordQuery, ApiError> {
    check(params)?;
    let filter = filter(&params.filter, schema)?;
    let paging = Paging::new(params.page, params.per_page)?;
    let (lead, keys) = match params.sort.split_first() {
        Some((first, rest)) if first.name == SCORE || first.name == DISTANCE => {
            (Some((first.name.as_str(), first.descending)), rest)
        }
        _ => (None, params.sort.as_slice()),
    };
    let by_score = lead.filter(|(name, _)| *name == SCORE).map(|(_, d)| d);
    let by_distance = lead.filter(|(name, _)| *name == DISTANCE).map(|(_, d)| d);
    if by_score.is_some() && filter.terms.is_empty() && filter.field_terms.is_empty() {
        return Err(ApiError::invalid(
            "sort",
            "_score orders records by relevance to a search: add q=… (or q[field]=…).",
        ));
    }
    if by_distance.is_some() && schema.geo.is_none() {
        return Err(ApiError::NoGeoFields { parameter: "sort" });
    }
    if by_distance.is_some() && filter.near.is_none() {
        return Err(ApiError::invalid(
            "sort",
            "_distance orders records by their distance from near's centre: add near=<lat>,<lon>,<radius>.",
        ));
    }
    let sort = sort_keys(keys, schema)?;
    let fields = projection(params.fields.as_deref(), schema)?;
    let facets = facets(params, schema)?;
    let mut query = RecordQuery {
        filter,
        paging,
        sort,
        fields,
        by_score,
        by_distance,
        facets,
        after: None,
        meaning: [0; 32],
    };
    query.meaning = query.hash_meaning();
    Ok(query)
}

/// The sort key of relevance, and the member that carries each record's score.
pub(crate) const SCORE: &str = "_score";
/// The sort key of distance from `near`'s centre.
pub(crate) const DISTANCE: &str = "_distance";
/// The member that carries each record's distance, in whole metres.
pub(crate) const DISTANCE_M: &str = "_distance_m";

/// Checks `facet` against the schema: keyword fields, each once.
fn facets(params: &RecordParams, schema: &DatasetSchema) -> Result<Option<Facets>, ApiError> {
    let Some(names) = &params.facet else {
        return Ok(None);
    };
    let mut fields = Vec::with_capacity(names.len());
    for name in names {
        let column = schema.column(name).ok_or_else(|| ApiError::UnknownField {
            field: name.clone(),
        })?;
        let field_type = schema.field_type(column);
        let index = match column {
            Column::Field(i) if field_type == FieldType::Keyword => i,
            _ => {
                return Err(ApiError::InvalidFacet {
                    field: name.clone(),
                    field_type,
                });
            }
        };
        if fields.contains(&index) {
            return Err(ApiError::invalid(
                "facet",
                format!("facet lists {name} twice."),
            ));
        }
        fields.push(index);
    }
    Ok(Some(Facets {
        fields,
        size: params.facet_size.unwrap_or(DEFAULT_FACET_SIZE),
    }))
}

/// Checks sort keys against the schema: known names of sortable (non-text) fields, each once.
/// A key written with a trailing `<` or `>` names the field before the mark if there is one,
/// else the whole text ([`SortParam::resolve`]).
pub(super) fn sort_keys(
    keys: &[SortParam],
    schema: &DatasetSchema,
) -> Result<Vec<(Column, bool)>, ApiError> {
    let mut sort: Vec<(Column, bool)> = Vec::with_capacity(keys.len());
    for key in keys {
        if key.name == SCORE || key.name == DISTANCE {
            return Err(ApiError::invalid(
                "sort",
                format!(
                    "{} can only be the first sort key of records (_score with q, _distance with near).",
                    key.name
                ),
            ));
        }
        let (name, descending) = key
            .resolve(|name| schema.column(name).is_some())
            .ok_or_else(|| ApiError::UnknownField {
                field: key.name.clone(),
            })?;
        let column = schema.column(&name).ok_or_else(|| ApiError::UnknownField {
            field: name.clone(),
        })?;
        let field_type = schema.field_type(column);
        if !field_type.is_exact() {
            return Err(ApiError::invalid(
                "sort",
                format!(
                    "{name} is a {field_type} field and cannot be sorted; sort by a keyword, number, boolean or date field."
                ),
            ));
        }
        if sort.iter().any(|(c, _)| *c == column) {
            return Err(ApiError::invalid(
                "sort",
                format!("The sort key {name} is given twice."),
            ));
        }
        sort.push((column, descending));
    }
    Ok(sort)
}

/// Checks a `fields` projection (of records, a single record or an export).
pub(crate) fn projection(
    fields: Option<&[String]>,
    schema: &DatasetSchema,
) -> Result<Option<Vec<String>>, ApiError> {
    check(&ProjectionParams {
        fields: fields.map(<[String]>::to_vec),
    })?;
    match fields {
        None => Ok(None),
        Some(list) => {
            if let Some(bad) = list.iter().find(|name| !schema.projectable(name)) {
                return Err(ApiError::UnknownField { field: bad.clone() });
            }
            Ok(Some(sorted_unique(list.to_vec())))
        }
    }
}
