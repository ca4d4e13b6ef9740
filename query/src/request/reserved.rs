//! The names that mean something of their own in each endpoint's query string: no filter can
//! be written on a field of one of these names (contract §5). REST reads them, MCP refuses them
//! as filter names, and the OpenAPI document leaves them out of the filters' object.

/// The query parameters of `GET /datasets/{slug}/records` that mean something of their own:
/// no filter can be written on a field of one of these names (contract §5).
pub const RECORD_PARAMETERS: &[&str] = &[
    "q",
    "cursor",
    "_ids",
    "page",
    "per_page",
    "sort",
    "fields",
    "facet",
    "facet_size",
    "near",
    "bbox",
    "version",
];
/// The same for `GET /datasets/{slug}/agg` (contract §6, §12.2); the paging and projection
/// names are refused there rather than read as filters.
pub const AGG_PARAMETERS: &[&str] = &[
    "q",
    "cursor",
    "_ids",
    "group_by",
    "field",
    "percentiles",
    "sort",
    "limit",
    "min_count",
    "page",
    "per_page",
    "fields",
    "facet",
    "facet_size",
    "near",
    "bbox",
    "version",
];

/// The same for `GET /datasets/{slug}/export` (contract §12.3); `page` and `per_page` are
/// refused there (an export is every match), not read as filters.
pub const EXPORT_PARAMETERS: &[&str] = &[
    "q",
    "cursor",
    "_ids",
    "format",
    "sort",
    "fields",
    "page",
    "per_page",
    "facet",
    "facet_size",
    "near",
    "bbox",
    "version",
];
