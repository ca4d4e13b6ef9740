//! The query parameters of the REST operations in the OpenAPI document, with the bounds and
//! syntax the server enforces, from the query layer's constants: paging, search, the filters on
//! a dataset's fields (one `style: form, explode: true` object), sort, fields, export's format,
//! agg's grouping.

use query::ExportFormat;
use query::dates::DateBucket;
use query::operators::Op;
use query::params::{
    AGG_PARAMETERS, DEFAULT_FACET_SIZE, DEFAULT_PER_PAGE, EXPORT_PARAMETERS,
    MAX_CATALOG_QUERY_CHARS, MAX_CURSOR_CHARS, MAX_FACET_SIZE, MAX_FACETS, MAX_GROUP_BY_FIELDS,
    MAX_GROUPS, MAX_IDS, MAX_PAGE, MAX_PER_PAGE, MAX_PERCENTILES, RECORD_PARAMETERS,
};
use query::{EARTH_RADIUS_M, MAX_RADIUS_M};
use query::{MAX_SEARCH_CHARS, MAX_SEARCH_TERMS};
use serde_json::json;
use utoipa::IntoParams;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn, ParameterStyle};
use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::{KnownFormat, RefOr, Required};

fn query_parameter(
    name: &str,
    description: impl Into<String>,
    schema: impl Into<RefOr<Schema>>,
) -> Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Query)
        .required(Required::False)
        .description(Some(description))
        .schema(Some(schema))
        .build()
}

fn string() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String)
}

/// A condition value: any text without a NUL character (no record holds one; the query layer
/// refuses it with 400 `invalid_parameter`).
const VALUE_PATTERN: &str = r"^[^\u0000]*$";

fn value() -> ObjectBuilder {
    string().pattern(Some(VALUE_PATTERN))
}

fn page_parameter() -> Parameter {
    query_parameter(
        "page",
        format!("Page number, 1..={MAX_PAGE}; a page past the end is empty, with the true `total`"),
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(1))
            .maximum(Some(MAX_PAGE))
            .default(Some(json!(1))),
    )
}

fn per_page_parameter(what: &str) -> Parameter {
    query_parameter(
        "per_page",
        format!("{what} per page, 1..={MAX_PER_PAGE}"),
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)))
            .minimum(Some(1))
            .maximum(Some(MAX_PER_PAGE))
            .default(Some(json!(DEFAULT_PER_PAGE))),
    )
}

/// A comma-separated list with at least one item (`fields`): items are trimmed, empty ones
/// dropped.
const LIST_PATTERN: &str = r"[^,\s]";

/// One sort key: a field name (no comma, `<` or `>`, no surrounding spaces) and an optional
/// direction.
const SORT_KEY: &str = r"[^,<>\s](?:[^,<>]*[^,<>\s])?[<>]?";

fn sort_pattern() -> String {
    // A lookahead refuses a field named twice (`a<,a>`), which the server refuses.
    format!(
        r"^(?![\s\S]*?(?:^|,)([^,<>]+)[<>]?,(?:[^,]*,)*?\1[<>]?(?:,|$)){SORT_KEY}(?:,{SORT_KEY})*$"
    )
}

fn ids_pattern() -> String {
    format!(
        r"^(?=[\s\S]*[^,\s])[^,\u0000]*(?:,[^,\u0000]*){{0,{}}}$",
        MAX_IDS - 1
    )
}

fn q_parameter() -> Parameter {
    query_parameter(
        "q",
        format!(
            "Full-text search across the dataset's text fields: every whitespace-separated term must occur in some text field of the record, case-insensitively; terms in scripts without spaces (Chinese, Japanese) match as substrings. At most {MAX_SEARCH_CHARS} characters and {MAX_SEARCH_TERMS} terms, with every `q[field]`"
        ),
        value().max_length(Some(MAX_SEARCH_CHARS)),
    )
}

/// `near` and `bbox`, on a dataset with a geo pair.
fn place_parameters() -> [Parameter; 2] {
    let near = ParameterBuilder::from(query_parameter(
        "near",
        format!(
            "Only records within a circle, on a dataset with a geo pair (its metadata's `geo`): `<lat>,<lon>,<radius>`, the radius in `m` or `km`, more than 0 and at most {} km; great-circle distance on a sphere of {EARTH_RADIUS_M} m. Without a geo pair: 400 `no_geo_fields`",
            MAX_RADIUS_M / 1000.0
        ),
        string().pattern(Some(NEAR_PATTERN)),
    ))
    .example(Some(json!("25.0340,121.5645,2km")))
    .build();
    let bbox = ParameterBuilder::from(query_parameter(
        "bbox",
        "Only records within a box, on a dataset with a geo pair: `<min_lon>,<min_lat>,<max_lon>,<max_lat>` (GeoJSON's order), each minimum at most its maximum, bounds included",
        string().pattern(Some(BBOX_PATTERN)),
    ))
    .example(Some(json!("121.50,25.02,121.58,25.06")))
    .build();
    [near, bbox]
}

const NEAR_PATTERN: &str = r"^-?\d+(?:\.\d+)?,-?\d+(?:\.\d+)?,\d+(?:\.\d+)?k?m$";
const BBOX_PATTERN: &str = r"^-?\d+(?:\.\d+)?,-?\d+(?:\.\d+)?,-?\d+(?:\.\d+)?,-?\d+(?:\.\d+)?$";

fn ids_parameter() -> Parameter {
    query_parameter(
        "_ids",
        format!(
            "Only these records: comma-separated `_id` values, at most {MAX_IDS}; unknown ones are skipped; the other conditions still apply"
        ),
        string().pattern(Some(ids_pattern())),
    )
}

/// Which operators each field type takes, from the query layer's table.
fn operator_table() -> String {
    use entity::FieldType;
    [
        FieldType::Keyword,
        FieldType::Number,
        FieldType::Date,
        FieldType::Boolean,
        FieldType::Text,
    ]
    .iter()
    .map(|t| {
        let ops: Vec<String> = Op::allowed(*t)
            .iter()
            .map(|op| format!("`{}`", op.as_str()))
            .collect();
        format!("{t} fields take {}", ops.join(", "))
    })
    .collect::<Vec<_>>()
    .join("; ")
}

/// The one parameter for the conditions on a dataset's fields: an object whose members are
/// sent as plain query pairs (`style: form, explode: true`), since their names are the
/// dataset's own. `reserved` are the operation's other parameters, which no filter can be
/// named.
fn filters_parameter(reserved: &[&str]) -> Parameter {
    let names = reserved.join("|");
    let pattern = format!(r"^(?:q\[[\s\S]+\]|(?!q\[)(?!(?:{names})$)[\s\S]+)$");
    ParameterBuilder::new()
        .name("filters")
        .parameter_in(ParameterIn::Query)
        .required(Required::False)
        .style(Some(ParameterStyle::Form))
        .explode(Some(true))
        .description(Some(format!(
            "Conditions on the dataset's fields, each member sent as its own query pair (`carrier=UA&origin=JFK`). \
             `<field>=value`: exact match on a keyword, number, boolean or date field (dotted names reach nested fields; numbers compare as numbers, `5` matches `5.0`); on a text field 400 `text_field_exact_match`. \
             `q[<field>]=terms`: full-text search in one text field, as `q` does across all of them. \
             Different names are ANDed; the same name given twice in a raw query string (`carrier=UA&carrier=AA`) is OR. \
             The names are the dataset's own: `GET /datasets/{{slug}}` lists its fields and what each allows (`filter.exact`, `filter.fulltext`); any other name is 400 `unknown_field`, and a value of the wrong type (`dep_delay=soon`) 400 `invalid_parameter`. \
             No filter can be named {}. \
             Operators: `<field>[<op>]=value`, ANDed with the rest: {}. \
             `gt`, `gte`, `lt`, `lte`: a range (numbers as numbers, dates as instants — `2013-01-31`, `2013-01-31T05:00:00Z`, `…+08:00` — keywords in byte order); a range never matches a record without a value, and bounds on one field make one interval (`dep_delay[gte]=60&dep_delay[lt]=120`). \
             `ne`: not equal (repeated: none of them); records without a value match. `in`: comma-separated values, any of them. \
             `exists`: `true` the record has a value, `false` it has none. `prefix`: starts with, case-sensitive (repeated: any of them). \
             An operator the field's type does not take is 400 `invalid_operator` with the ones it does (`filter.operators` of its schema entry). \
             A field whose own name is `a[gt]` is matched exactly by that name.",
            reserved
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", "),
            operator_table(),
        )))
        .schema(Some(
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .additional_properties(Some(AdditionalProperties::RefOr(RefOr::T(
                    Schema::Object(value().build()),
                ))))
                .property_names(Some(string().min_length(Some(1)).pattern(Some(pattern)))),
        ))
        .example(Some(json!({"carrier": "UA"})))
        .build()
}

fn fields_parameter() -> Parameter {
    ParameterBuilder::from(query_parameter(
        "fields",
        "Comma-separated field names to return (dotted names reach nested fields); `_id` is always returned; an unknown name is 400 `unknown_field`",
        string().pattern(Some(LIST_PATTERN)),
    ))
    .example(Some(json!("carrier,dep_delay")))
    .build()
}

fn facet_parameters() -> [Parameter; 2] {
    let facet = ParameterBuilder::from(query_parameter(
        "facet",
        format!(
            "Keyword fields to count beside the page, comma-separated, each once, at most {MAX_FACETS}: the answer gains `facets`, per field its most frequent values over every matching record (not only the page), as `{{\"value\", \"count\"}}`, ties by value. Another type is 400 `invalid_facet`"
        ),
        string().pattern(Some(LIST_PATTERN)),
    ))
    .example(Some(json!("carrier,origin")))
    .build();
    let size = query_parameter(
        "facet_size",
        format!("Values per facet, 1..={MAX_FACET_SIZE}"),
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)))
            .minimum(Some(1))
            .maximum(Some(MAX_FACET_SIZE))
            .default(Some(json!(DEFAULT_FACET_SIZE))),
    );
    [facet, size]
}

/// `cursor`: the page after the one that gave it (contract §13.2).
fn cursor_parameter() -> Parameter {
    query_parameter(
        "cursor",
        format!(
            "The page after the one whose `next_cursor` this is, instead of `page` (both: 400). Send it with the same conditions, `sort`, `fields`, `facet` and `per_page` (the `Link` header's `rel=\"next\"` URL does): it reads the dataset version that first page read, however deep and whatever was imported since (while that version is retained; after, 410 `version_gone`), at the cost of a first page. Altered, or sent with other conditions: 400 `invalid_cursor`. At most {MAX_CURSOR_CHARS} characters"
        ),
        string()
            .min_length(Some(1))
            .max_length(Some(MAX_CURSOR_CHARS as usize))
            .pattern(Some("^[0-9a-f]+$")),
    )
}

/// `version`: read an older version of the dataset while it is retained (contract §13.1).
fn version_parameter() -> Parameter {
    ParameterBuilder::from(query_parameter(
        "version",
        "The dataset version to read, from 1 (`GET /datasets/{slug}/versions` lists them); default: the live one. The answer's `Dataset-Version` header names the version read. A version no longer retained is 410 `version_gone` (listing those that are); one never published is 404 `version_not_found`",
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(1)),
    ))
    .example(Some(json!(1)))
    .build()
}

/// The query parameters of `GET /datasets`.
pub struct DatasetsQuery;

impl IntoParams for DatasetsQuery {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![
            query_parameter(
                "q",
                format!(
                    "Find datasets by words: each whitespace-separated word must occur in the title, the description, a field's name or a field's description, case-insensitively and as a substring (so words in scripts without spaces match inside text); at most {MAX_CATALOG_QUERY_CHARS} characters and {MAX_SEARCH_TERMS} different words. The matches come best first (BM25, a word in the title counting three times; ties by slug), and total counts them. Absent or blank: every dataset, by slug"
                ),
                string().max_length(Some(MAX_CATALOG_QUERY_CHARS)),
            ),
            page_parameter(),
            per_page_parameter("Datasets"),
        ]
    }
}

/// The query parameters of `GET /datasets/{slug}/records`.
pub struct RecordsQuery;

impl IntoParams for RecordsQuery {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![
            q_parameter(),
            filters_parameter(RECORD_PARAMETERS),
            ids_parameter(),
            page_parameter(),
            per_page_parameter("Records"),
            sort_parameter(),
            fields_parameter(),
        ]
        .into_iter()
        .chain(facet_parameters())
        .chain(place_parameters())
        .chain([version_parameter(), cursor_parameter()])
        .collect()
    }
}

fn sort_parameter() -> Parameter {
    ParameterBuilder::from(query_parameter(
        "sort",
        "Sort keys, comma-separated, each field at most once: `name<` descending, `name>` or `name` ascending (raw or percent-encoded); records without the value come last; ties, and requests without `sort`, follow the order of the imported file. Keyword, number, boolean and date fields sort; text fields do not. On records with `q` or `q[name]`, a first key `_score<` orders by relevance (BM25, best first; `_score>` the reverse), later keys break its ties, and each record carries its `_score`; without a search it is 400 `invalid_parameter`. With `near`, a first key `_distance>` orders by distance from its centre, nearest first (`_distance<` farthest first), and each record carries `_distance_m` (whole metres)",
        string().pattern(Some(sort_pattern())),
    ))
    .example(Some(json!("dep_delay<")))
    .build()
}

/// The query parameters of `GET /datasets/{slug}/export`: those of records
/// without paging, and the format.
pub struct ExportQuery;

impl IntoParams for ExportQuery {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let formats: Vec<&str> = ExportFormat::ALL.iter().map(|f| f.as_str()).collect();
        vec![
            ParameterBuilder::from(query_parameter(
                "format",
                "`ndjson`: one record a line, exactly as `records` shows it; `csv`: a header of `_id` and the selected fields in schema order (nested fields as dotted names), missing values as empty cells, RFC 4180 quoting. `page` and `per_page` are refused (400): an export is every match",
                string()
                    .enum_values(Some(formats))
                    .default(Some(json!(ExportFormat::default().as_str()))),
            ))
            .example(Some(json!("csv")))
            .build(),
            q_parameter(),
            filters_parameter(EXPORT_PARAMETERS),
            ids_parameter(),
            sort_parameter(),
            fields_parameter(),
        ]
        .into_iter()
        .chain(place_parameters())
        .chain([version_parameter()])
        .collect()
    }
}

/// The query parameters of `GET /datasets/{slug}/records/{id}`.
pub struct RecordQuery;

impl IntoParams for RecordQuery {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![fields_parameter(), version_parameter()]
    }
}

/// The query parameters of `GET /datasets/{slug}/agg`.
pub struct AggQuery;

impl IntoParams for AggQuery {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let group_by = ParameterBuilder::from(query_parameter(
            "group_by",
            format!(
                "What to group by, comma-separated, at most {MAX_GROUP_BY_FIELDS} items, required: a keyword field (dotted names reach nested fields), a date field in UTC buckets `<field>[{}]` (keys `2013`, `2013-01`, `2013-01-31`, `2013-01-31T05`), or a number field in bins of a width `<field>[<width>]` (key: the bin's lower bound). Several items make one group per combination: `key` joins the values with ` | `, `keys` holds each. A date or number field without a bucket is 400 `invalid_group_by`",
                DateBucket::NAMES.join("|")
            ),
            string().min_length(Some(1)).pattern(Some(r"[^\s]")),
        ))
        .required(Required::True)
        .example(Some(json!("origin,dest")))
        .build();
        vec![
            group_by,
            ParameterBuilder::from(query_parameter(
                "field",
                "A number field: each group's `stats` gains `sum`, `avg`, `min`, `max`, `missing` (records of the group without a value) and `percentiles` (linear interpolation between closest ranks); another type is 400 `invalid_field`",
                string().min_length(Some(1)),
            ))
            .example(Some(json!("dep_delay")))
            .build(),
            ParameterBuilder::from(query_parameter(
                "percentiles",
                format!(
                    "With `field`: the percentile labels, comma-separated, each 0..=100, at most {MAX_PERCENTILES}; default `25,50,75`"
                ),
                string().pattern(Some(percentiles_pattern())),
            ))
            .example(Some(json!("5,50,95,99")))
            .build(),
            ParameterBuilder::from(query_parameter(
                "sort",
                "The order of the groups, one key: `count<` (the default, then `key>`), `count>`, `key>`, `key<`, and with `field` `sum`, `avg`, `min`, `max` or `p<label>` of a requested percentile, each with `<` (descending) or `>` (ascending); ties follow the key ascending; groups without the statistic come last",
                string().pattern(Some(GROUP_SORT_PATTERN)),
            ))
            .example(Some(json!("avg<")))
            .build(),
            query_parameter(
                "limit",
                format!(
                    "Keep the first N groups in sort order, 1..={MAX_GROUPS}; `total_groups` still counts them all. Without it, an answer of more than {MAX_GROUPS} groups is 400 `too_many_groups`"
                ),
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)))
                    .minimum(Some(1))
                    .maximum(Some(MAX_GROUPS)),
            ),
            query_parameter(
                "min_count",
                "Keep only the groups of at least this many records (SQL's `HAVING count(*) >= n`), from 1; `sort` and `limit` apply after it, `total_groups` counts the groups kept, and the bound of groups without `limit` counts them too",
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                    .minimum(Some(1)),
            ),
            q_parameter(),
            filters_parameter(AGG_PARAMETERS),
            ids_parameter(),
        ]
        .into_iter()
        .chain(place_parameters())
        .chain([version_parameter()])
        .collect()
    }
}

/// One group sort key as the server reads it.
const GROUP_SORT_PATTERN: &str =
    r"^(?:count|key|sum|avg|min|max|p(?:100|[0-9]{1,2})(?:\.[0-9]+)?)[<>]?$";

/// Percentile labels: numbers 0..=100 (digits, an optional fraction), comma-separated.
fn percentiles_pattern() -> String {
    let label = r"\s*(?:100(?:\.0+)?|[0-9]{1,2}(?:\.[0-9]+)?)\s*";
    format!("^{label}(?:,{label}){{0,{}}}$", MAX_PERCENTILES - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The reserved filter names and the bounds come from the query layer's constants.
    #[test]
    fn parameters_follow_the_constants() {
        let records = RecordsQuery::into_params(|| None);
        let page = records.iter().find(|p| p.name == "page").unwrap();
        let page = serde_json::to_value(page).unwrap();
        assert_eq!(page["schema"]["maximum"], MAX_PAGE);
        let filters = records.iter().find(|p| p.name == "filters").unwrap();
        let filters = serde_json::to_value(filters).unwrap();
        let pattern = filters["schema"]["propertyNames"]["pattern"]
            .as_str()
            .unwrap();
        for name in RECORD_PARAMETERS {
            assert!(pattern.contains(&format!("|{name}")) || pattern.contains(&format!("{name}|")));
        }
        assert!(ids_pattern().contains(&format!("{{0,{}}}", MAX_IDS - 1)));
        let export = ExportQuery::into_params(|| None);
        let filters = export.iter().find(|p| p.name == "filters").unwrap();
        let filters = serde_json::to_value(filters).unwrap();
        let pattern = filters["schema"]["propertyNames"]["pattern"]
            .as_str()
            .unwrap();
        for name in EXPORT_PARAMETERS {
            assert!(pattern.contains(&format!("|{name}")) || pattern.contains(&format!("{name}|")));
        }
        let format = export.iter().find(|p| p.name == "format").unwrap();
        let format = serde_json::to_value(format).unwrap();
        assert_eq!(format["schema"]["enum"], json!(["ndjson", "csv"]));
    }
}
