//! `GET /api/v1/openapi.json` and the HTML reference at `/docs`: the OpenAPI 3 description is
//! generated from the handlers' annotations, the query layer's answer types and the limits in
//! the code (never copied numbers), so it cannot drift from the server; the reference page is
//! rendered from that same document.
//!
//! The document is written for client generators (contract §12.5): the filters on a dataset's
//! fields are one `style: form, explode: true` object parameter, so a generated client sends
//! `carrier=UA` as a plain query pair; every parameter has the bounds the server enforces;
//! every status an operation can answer is listed with the contract's error body and headers.
//! `tests/openapi_clients.rs` holds it to that: it validates the document, runs schemathesis
//! against a live server, and drives a client generated from it.

use axum::Json;
use axum::extract::State;
use axum::response::{Html, IntoResponse, Response};
use query::cost::RECORDS_PER_REQUEST;
use query::dates::DateBucket;
use query::export::BATCH_RECORDS;
use query::operators::{self, Op};
use query::params::{
    AGG_PARAMETERS, DEFAULT_PER_PAGE, EXPORT_PARAMETERS, MAX_GROUP_BY_FIELDS, MAX_GROUPS, MAX_IDS,
    MAX_PAGE, MAX_PER_PAGE, MAX_PERCENTILES, RECORD_PARAMETERS,
};
use query::{ApiError, ExportFormat};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::openapi::example::ExampleBuilder;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn, ParameterStyle};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{
    AdditionalProperties, ObjectBuilder, Schema, SchemaFormat, SchemaType, Type,
};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::server::Server;
use utoipa::openapi::{ContentBuilder, KnownFormat, RefOr, Required};
use utoipa::{IntoParams, Modify, OpenApi, ToResponse, ToSchema};

use crate::auth::grant::{GRANT_TYPE_URN, MAX_LABEL};
use crate::http::resilience::MAX_BODY_BYTES;
use crate::state::AppState;

/// The JSON body of every API error (contract §7): `error` and `message` always, and the
/// members [`ApiError::extra`] adds for some codes.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// A stable code: `invalid_parameter`, `missing_parameter`, `unknown_field`,
    /// `text_field_exact_match`, `invalid_group_by`, `invalid_field`, `invalid_operator`,
    /// `too_many_groups`, `missing_token`,
    /// `invalid_token`, `dataset_not_found`, `record_not_found`, `not_found`,
    /// `method_not_allowed`, `request_timeout`, `payload_too_large`, `rate_limited`,
    /// `unavailable`, `internal`.
    pub error: String,
    /// One sentence a person can act on.
    pub message: String,
    /// The parameter at fault (`invalid_parameter`, `missing_parameter`).
    #[schema(nullable = false)]
    pub parameter: Option<String>,
    /// The field at fault (`unknown_field`, `text_field_exact_match`, `invalid_group_by`,
    /// `invalid_field`, `invalid_operator`).
    #[schema(nullable = false)]
    pub field: Option<String>,
    /// The field's type (`invalid_group_by`, `invalid_field`, `invalid_operator`).
    #[serde(rename = "type")]
    #[schema(nullable = false)]
    pub field_type: Option<String>,
    /// The types the parameter takes (`invalid_group_by`, `invalid_field`), or the operators
    /// the field takes (`invalid_operator`).
    #[schema(nullable = false)]
    pub allowed: Option<Vec<String>>,
    /// The operator as sent (`invalid_operator`).
    #[schema(nullable = false)]
    pub operator: Option<String>,
    /// The groups the answer would hold (`too_many_groups`).
    #[schema(nullable = false)]
    pub groups: Option<u64>,
    /// The most groups an answer holds without `limit` (`too_many_groups`).
    #[schema(nullable = false)]
    pub max: Option<u64>,
    /// The largest body accepted, in bytes (`payload_too_large`).
    #[schema(nullable = false)]
    pub limit_bytes: Option<u64>,
    /// Seconds to wait before retrying (`rate_limited`), as in `Retry-After`.
    #[schema(nullable = false)]
    pub retry_after: Option<u64>,
}

/// An error of the device flow, in OAuth's shape (RFC 6749 §5.2, RFC 8628 §3.5; contract §8).
#[derive(Serialize, ToSchema)]
pub struct OAuthErrorBody {
    /// `authorization_pending`, `slow_down`, `access_denied`, `expired_token`,
    /// `invalid_grant`, `unsupported_grant_type`, `invalid_request`; `rate_limited` (429) and
    /// `temporarily_unavailable` (503).
    pub error: String,
    /// One sentence a person can act on.
    pub error_description: String,
}

/// `POST /auth/device` (RFC 8628 §3.1): every parameter optional, unknown ones ignored.
/// Documentation only; the handler reads the body itself (`crate::auth::device`).
pub struct DeviceAuthorizationRequest;

impl utoipa::PartialSchema for DeviceAuthorizationRequest {
    fn schema() -> RefOr<Schema> {
        // JSON `null` is taken as absent.
        let label = |description: &str| {
            ObjectBuilder::new()
                .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
                .max_length(Some(MAX_LABEL))
                .pattern(Some(VALUE_PATTERN))
                .description(Some(format!(
                    "{description}; at most {MAX_LABEL} characters, no NUL"
                )))
        };
        ObjectBuilder::new()
            .description(Some(
                "Every parameter is optional (a standard OAuth client sends only `client_id`); unknown ones are ignored.",
            ))
            .property("device_name", label("What the approval page shows as the device asking"))
            .property("client", label("The client program asking, shown on the approval page"))
            .property(
                "client_id",
                label("A standard OAuth client's identifier; taken as `client` when `client` is absent"),
            )
            .into()
    }
}

impl ToSchema for DeviceAuthorizationRequest {}

/// The answer of `POST /auth/device` (RFC 8628 §3.2).
#[derive(Serialize, ToSchema)]
pub struct DeviceAuthorization {
    /// Secret; poll `POST /auth/token` with it. Starts `odqs_dc_`.
    pub device_code: String,
    /// What the person types on the approval page: two groups of four letters, `XXXX-XXXX`.
    pub user_code: String,
    /// `{site_url}/device`.
    pub verification_uri: String,
    /// `{site_url}/device?code=XXXX-XXXX`.
    pub verification_uri_complete: String,
    /// Seconds the codes live.
    pub expires_in: i64,
    /// Seconds to wait between polls.
    pub interval: i32,
}

/// `POST /auth/token` (RFC 8628 §3.4). Documentation only, as [`DeviceAuthorizationRequest`].
pub struct TokenRequest;

impl utoipa::PartialSchema for TokenRequest {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .description(Some("Unknown parameters are ignored."))
            .property(
                "grant_type",
                string()
                    .enum_values(Some([GRANT_TYPE_URN, "device_code"]))
                    .description(Some(format!(
                        "`{GRANT_TYPE_URN}`, or the short `device_code`"
                    ))),
            )
            .required("grant_type")
            .property(
                "device_code",
                string()
                    .min_length(Some(1))
                    .description(Some("The `device_code` of `POST /auth/device`")),
            )
            .required("device_code")
            .into()
    }
}

impl ToSchema for TokenRequest {}

/// A token granted by the device flow (RFC 6749 §5.1).
#[derive(Serialize, ToSchema)]
pub struct TokenAnswer {
    /// The API token: send it as `Authorization: Bearer <access_token>`.
    pub access_token: String,
    /// `Bearer`.
    pub token_type: String,
    /// Seconds the token lives.
    pub expires_in: i64,
}

/// A GraphQL request (GraphQL over HTTP): the document, its variables and which operation
/// to run.
#[derive(Serialize, ToSchema)]
pub struct GraphqlRequest {
    /// The GraphQL document, e.g. `{ datasets { total } }`.
    pub query: String,
    /// Values of the document's variables.
    #[schema(value_type = Option<Object>)]
    pub variables: Option<Value>,
    /// Which operation of the document to run, when it has several.
    #[serde(rename = "operationName")]
    pub operation_name: Option<String>,
}

/// A GraphQL answer: `data`, and `errors` whose `extensions.code` is the REST error code.
#[derive(Serialize, ToSchema)]
pub struct GraphqlResponse {
    /// The result; absent or null when the request could not run.
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
    /// What went wrong, if anything.
    #[schema(nullable = false)]
    pub errors: Option<Vec<GraphqlError>>,
}

/// One GraphQL error.
#[derive(Serialize, ToSchema)]
pub struct GraphqlError {
    pub message: String,
    #[schema(value_type = Option<Vec<Object>>, nullable = false)]
    pub locations: Option<Value>,
    #[schema(value_type = Option<Vec<Object>>, nullable = false)]
    pub path: Option<Value>,
    /// `code`: the REST error code (contract §10).
    #[schema(value_type = Option<Object>, nullable = false)]
    pub extensions: Option<Value>,
}

/// `/healthz` and `/readyz`.
#[derive(Serialize, ToSchema)]
pub struct Health {
    /// `ok` (alive) or `ready` (the store answers).
    pub status: String,
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "odqs: Open Dataset Query Service",
        description = "A read-only API over published open datasets. Every endpoint under the base URL needs `Authorization: Bearer <token>` (the device flow and the health checks excepted); get a token on the account page or through the device flow. Errors are `{\"error\": code, \"message\": …}` with extra members where useful; every API answer announces the caller's rate limit in `RateLimit-Policy` and `RateLimit`."
    ),
    paths(
        crate::api::rest::datasets::list_datasets,
        crate::api::rest::datasets::get_dataset,
        crate::api::rest::records::list_records,
        crate::api::rest::records::get_record,
        crate::api::rest::export::export_records,
        crate::api::rest::agg::aggregate,
        graphql_get,
        graphql_post,
        crate::auth::http::device::start,
        crate::auth::http::device::token,
        crate::app::healthz,
        crate::app::readyz,
    ),
    components(
        schemas(ErrorBody, OAuthErrorBody, query::views::Record),
        responses(ExportAnswer, NotModified, BadRequest, Unauthorized, NotFound, RequestTimeout, PayloadTooLarge, TooManyRequests, Unavailable),
    ),
    modifiers(&BearerAuth),
    tags(
        (name = "datasets", description = "The catalog"),
        (name = "records", description = "Search, filter, sort and page through records"),
        (name = "agg", description = "Grouped statistics"),
        (name = "graphql", description = "The same queries in GraphQL"),
        (name = "auth", description = "Device authorization (RFC 8628): get a token from a program"),
        (name = "operations", description = "Health checks, at the site's root"),
    )
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The OpenAPI document: `base_url` (`{site_url}/api/v1`) is its server, and the health checks,
/// which live at the site's root, name `site_url` as theirs.
pub fn document(site_url: &str, base_url: &str) -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_string();
    doc.servers = Some(vec![Server::new(base_url)]);
    for (path, item) in doc.paths.paths.iter_mut() {
        if ROOT_PATHS.contains(&path.as_str()) {
            item.servers = Some(vec![Server::new(site_url)]);
        }
        // Every answer under the base URL passed the gate, which announces the budget.
        if !UNGATED_PATHS.contains(&path.as_str()) {
            for operation in operations(item) {
                for response in operation.responses.responses.values_mut() {
                    if let RefOr::T(response) = response {
                        add_rate_limit_headers(response);
                    }
                }
            }
        }
    }
    // Every parameter of a device authorization is optional, so is its body.
    if let Some(body) = doc
        .paths
        .paths
        .get_mut("/auth/device")
        .and_then(|item| item.post.as_mut())
        .and_then(|op| op.request_body.as_mut())
    {
        body.required = Some(Required::False);
    }
    if let Some(components) = doc.components.as_mut() {
        for response in components.responses.values_mut() {
            if let RefOr::T(response) = response {
                add_rate_limit_headers(response);
            }
        }
    }
    doc
}

/// Paths served at `{site_url}` rather than under the base URL.
const ROOT_PATHS: &[&str] = &["/healthz", "/readyz"];
/// Paths outside the API gate: no bearer token, no `RateLimit` headers.
const UNGATED_PATHS: &[&str] = &["/healthz", "/readyz", "/auth/device", "/auth/token"];

fn operations(
    item: &mut utoipa::openapi::PathItem,
) -> impl Iterator<Item = &mut utoipa::openapi::path::Operation> {
    [
        item.get.as_mut(),
        item.post.as_mut(),
        item.put.as_mut(),
        item.delete.as_mut(),
        item.patch.as_mut(),
    ]
    .into_iter()
    .flatten()
}

/// The headers the gate sets (`crate::auth::gate::RATELIMIT_POLICY` and `RATELIMIT`, which
/// HTTP reads case-insensitively), in their registered spelling.
fn add_rate_limit_headers(response: &mut utoipa::openapi::Response) {
    let text = || ObjectBuilder::new().schema_type(Type::String);
    response.headers.insert(
        "RateLimit-Policy".to_string(),
        HeaderBuilder::new()
            .schema(text())
            .description(Some(
                "The budget charged (IETF draft RateLimit headers): `\"token\";q=<requests>;w=<seconds>`, or `\"address\";…` for requests without a known token. Absent when the server runs without a limit.",
            ))
            .build(),
    );
    response.headers.insert(
        "RateLimit".to_string(),
        HeaderBuilder::new()
            .schema(text())
            .description(Some(
                "What is left of the budget: `\"token\";r=<remaining>;t=<seconds until full>`.",
            ))
            .build(),
    );
}

/// `GET /api/v1/openapi.json`.
pub async fn openapi_json(State(state): State<AppState>) -> Response {
    Json(document(&state.public_url, &state.resolver.base_url())).into_response()
}

// ---- parameters ----------------------------------------------------------------------------

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
        "Full-text search across the dataset's text fields: every whitespace-separated term must occur in some text field of the record, case-insensitively; terms in scripts without spaces (Chinese, Japanese) match as substrings",
        value(),
    )
}

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
             Operators (contract §12.1): `<field>[<op>]=value`, ANDed with the rest: {}. \
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

/// The query parameters of `GET /datasets`.
pub struct DatasetsQuery;

impl IntoParams for DatasetsQuery {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![page_parameter(), per_page_parameter("Datasets")]
    }
}

/// The query parameters of `GET /datasets/{slug}/records` (contract §5).
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
    }
}

fn sort_parameter() -> Parameter {
    ParameterBuilder::from(query_parameter(
        "sort",
        "Sort keys, comma-separated, each field at most once: `name<` descending, `name>` or `name` ascending (raw or percent-encoded); records without the value come last; ties, and requests without `sort`, follow the order of the imported file. Keyword, number, boolean and date fields sort; text fields do not",
        string().pattern(Some(sort_pattern())),
    ))
    .example(Some(json!("dep_delay<")))
    .build()
}

/// The query parameters of `GET /datasets/{slug}/export` (contract §12.3): those of records
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
    }
}

/// The query parameters of `GET /datasets/{slug}/records/{id}`.
pub struct RecordQuery;

impl IntoParams for RecordQuery {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![fields_parameter()]
    }
}

/// The query parameters of `GET /datasets/{slug}/agg` (contract §6).
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
            q_parameter(),
            filters_parameter(AGG_PARAMETERS),
            ids_parameter(),
        ]
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

// ---- responses -----------------------------------------------------------------------------

fn etag_header() -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(string())
        .description(Some(
            "The answer's tag, from the dataset's version and the normalized request: send it back in `If-None-Match` to get 304 while the dataset is unchanged",
        ))
        .build()
}

/// An error answer with the contract's body, an example per code from the errors themselves.
fn error_response(summary: &str, samples: &[ApiError]) -> RefOr<utoipa::openapi::Response> {
    let codes: Vec<String> = samples.iter().map(|e| format!("`{}`", e.code())).collect();
    let mut content = ContentBuilder::new().schema(Some(RefOr::Ref(
        utoipa::openapi::Ref::from_schema_name("ErrorBody"),
    )));
    let mut examples = Vec::new();
    for error in samples {
        examples.push((
            error.code().to_string(),
            ExampleBuilder::new().value(Some(error.body())).build(),
        ));
    }
    examples.dedup_by(|a, b| a.0 == b.0);
    content = content.examples_from_iter(examples);
    ResponseBuilder::new()
        .description(format!("{summary}: {}", codes.join(", ")))
        .content("application/json", content.build())
        .build()
        .into()
}

/// 200 of an export: the records as NDJSON or CSV, streamed.
pub struct ExportAnswer;

impl<'r> ToResponse<'r> for ExportAnswer {
    fn response() -> (&'r str, RefOr<utoipa::openapi::Response>) {
        let text = || {
            ContentBuilder::new()
                .schema(Some(
                    string().format(Some(SchemaFormat::Custom("binary".into()))),
                ))
                .build()
        };
        let mut builder = ResponseBuilder::new().description(format!(
            "Every matching record, streamed in chunks of {BATCH_RECORDS}. The export counts as one request for the rate limit plus one per started {RECORDS_PER_REQUEST} records (charged up front from the total; `RateLimit` shows what is left after it; an export the budget cannot cover now is 429). `Accept-Encoding: gzip` (or `br`, `zstd`) compresses it. A store failure after the first byte cuts the body short (no final chunk), which clients report as an incomplete answer."
        ));
        for format in ExportFormat::ALL {
            builder = builder.content(crate::api::rest::export::media_type(format), text());
        }
        let response = builder
            .header(
                "X-Total-Count",
                HeaderBuilder::new()
                    .schema(
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                            .minimum(Some(0)),
                    )
                    .description(Some("The number of records the export sends"))
                    .build(),
            )
            .header(
                "Content-Disposition",
                HeaderBuilder::new()
                    .schema(string())
                    .description(Some("`attachment; filename=\"<slug>.<ndjson|csv>\"`"))
                    .build(),
            )
            .build();
        ("ExportAnswer", response.into())
    }
}

/// 304 Not Modified.
pub struct NotModified;

impl<'r> ToResponse<'r> for NotModified {
    fn response() -> (&'r str, RefOr<utoipa::openapi::Response>) {
        (
            "NotModified",
            ResponseBuilder::new()
                .description("Not modified: the `If-None-Match` tag is the answer's current one")
                .header("ETag", etag_header())
                .build()
                .into(),
        )
    }
}

/// 400: the request's parameters.
pub struct BadRequest;

impl<'r> ToResponse<'r> for BadRequest {
    fn response() -> (&'r str, RefOr<utoipa::openapi::Response>) {
        use entity::FieldType;
        (
            "BadRequest",
            error_response(
                "A parameter is malformed, out of range or names what the dataset does not have",
                &[
                    ApiError::invalid(
                        "per_page",
                        format!("per_page must be between 1 and {MAX_PER_PAGE}."),
                    ),
                    ApiError::MissingParameter {
                        parameter: "group_by",
                    },
                    ApiError::UnknownField {
                        field: "carier".into(),
                    },
                    ApiError::TextFieldExactMatch {
                        field: "description".into(),
                    },
                    ApiError::InvalidGroupBy {
                        field: "dep_delay".into(),
                        field_type: FieldType::Number,
                    },
                    ApiError::InvalidField {
                        field: "carrier".into(),
                        field_type: FieldType::Keyword,
                    },
                    ApiError::InvalidOperator {
                        field: "dep_delay".into(),
                        field_type: FieldType::Number,
                        operator: "prefix".into(),
                        allowed: operators::names(Op::allowed(FieldType::Number)),
                    },
                    ApiError::TooManyGroups {
                        groups: 336_776,
                        max: MAX_GROUPS,
                    },
                ],
            ),
        )
    }
}

/// 401: no token, or not a valid one.
pub struct Unauthorized;

impl<'r> ToResponse<'r> for Unauthorized {
    fn response() -> (&'r str, RefOr<utoipa::openapi::Response>) {
        let RefOr::T(mut response) = error_response(
            "No bearer token, or an unknown, revoked or expired one",
            &[ApiError::MissingToken, ApiError::InvalidToken],
        ) else {
            unreachable!("error_response builds inline responses")
        };
        response.headers.insert(
            "WWW-Authenticate".into(),
            HeaderBuilder::new()
                .schema(string())
                .description(Some("`Bearer` (RFC 6750)"))
                .build(),
        );
        ("Unauthorized", response.into())
    }
}

/// 404: no such dataset or record.
pub struct NotFound;

impl<'r> ToResponse<'r> for NotFound {
    fn response() -> (&'r str, RefOr<utoipa::openapi::Response>) {
        (
            "NotFound",
            error_response(
                "No such dataset or record",
                &[
                    ApiError::DatasetNotFound {
                        slug: "flihgts".into(),
                    },
                    ApiError::RecordNotFound { id: "0".into() },
                    ApiError::NotFound,
                ],
            ),
        )
    }
}

/// 408: a body that arrived slower than the server's floor; the connection is then closed.
pub struct RequestTimeout;

impl<'r> ToResponse<'r> for RequestTimeout {
    fn response() -> (&'r str, RefOr<utoipa::openapi::Response>) {
        (
            "RequestTimeout",
            error_response(
                "The request body arrived slower than the server's floor (8 KiB per window); the connection is closed",
                &[ApiError::RequestTimeout],
            ),
        )
    }
}

/// 413: a body over [`MAX_BODY_BYTES`].
pub struct PayloadTooLarge;

impl<'r> ToResponse<'r> for PayloadTooLarge {
    fn response() -> (&'r str, RefOr<utoipa::openapi::Response>) {
        (
            "PayloadTooLarge",
            error_response(
                &format!("The request body is larger than {MAX_BODY_BYTES} bytes"),
                &[ApiError::PayloadTooLarge {
                    limit_bytes: MAX_BODY_BYTES,
                }],
            ),
        )
    }
}

/// 429: over the rate limit, with `Retry-After`.
pub struct TooManyRequests;

impl<'r> ToResponse<'r> for TooManyRequests {
    fn response() -> (&'r str, RefOr<utoipa::openapi::Response>) {
        let RefOr::T(mut response) = error_response(
            "Over the rate limit: wait `Retry-After` seconds",
            &[ApiError::RateLimited { retry_after: 1 }],
        ) else {
            unreachable!("error_response builds inline responses")
        };
        response
            .headers
            .insert("Retry-After".into(), retry_after_header());
        ("TooManyRequests", response.into())
    }
}

fn retry_after_header() -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(1)),
        )
        .description(Some(
            "Seconds to wait before the next request fits the budget",
        ))
        .build()
}

/// 503: the store cannot be reached right now.
pub struct Unavailable;

impl<'r> ToResponse<'r> for Unavailable {
    fn response() -> (&'r str, RefOr<utoipa::openapi::Response>) {
        (
            "Unavailable",
            error_response(
                "The data store cannot be reached right now; the service recovers when it returns",
                &[ApiError::Unavailable],
            ),
        )
    }
}

// ---- operations described here rather than on their handlers -------------------------------

/// `GET /api/v1/graphql`, described here: its handler (`crate::api::graphql`) negotiates between
/// the IDE and GraphQL over HTTP.
#[utoipa::path(get, path = "/graphql", tag = "graphql", operation_id = "graphql_get",
    summary = "A GraphQL query by GET (GraphQL over HTTP), or the in-browser IDE",
    description = "With `query` and `Accept: application/json` or `application/graphql-response+json`, runs the query (queries only, never mutations); a browser (`Accept: text/html`) gets the GraphiQL IDE.",
    params(
        ("query" = String, Query, description = "The GraphQL document (without it, a browser gets the IDE). `variables` (a JSON object, as text) and `operationName` may be added as in a POST body; invalid `variables` are 400", min_length = 1),
    ),
    responses(
        (status = 200, description = "The GraphQL answer, or the IDE's page", content(
            (GraphqlResponse = "application/json"),
            (GraphqlResponse = "application/graphql-response+json"),
            (String = "text/html"),
        )),
        (status = 400, description = "A request GraphQL cannot run (with `Accept: application/graphql-response+json`), or unreadable parameters: GraphQL errors with no `data`", content(
            (GraphqlResponse = "application/graphql-response+json"),
            (GraphqlResponse = "application/json"),
        )),
        (status = 406, description = "`Accept` allows none of `application/graphql-response+json`, `application/json`, `text/html`", content(
            (GraphqlResponse = "application/json"),
        )),
        (status = 401, response = Unauthorized),
        (status = 413, response = PayloadTooLarge),
        (status = 429, response = TooManyRequests),
        (status = 503, response = Unavailable),
    ),
    security((), ("bearer" = []))
)]
#[allow(dead_code)]
async fn graphql_get() {}

/// `POST /api/v1/graphql`, described here (see [`graphql_get`]).
#[utoipa::path(post, path = "/graphql", tag = "graphql", operation_id = "graphql_post",
    summary = "Runs a GraphQL request: the schema mirrors the REST API, with the same validation and error codes",
    request_body(content = GraphqlRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The answer: `data` and/or `errors` (each with the REST code in `extensions.code`)", content(
            (GraphqlResponse = "application/json"),
            (GraphqlResponse = "application/graphql-response+json"),
        )),
        (status = 400, description = "A body that is not a GraphQL request, a batch of more than 10, or (with `Accept: application/graphql-response+json`) a request GraphQL cannot run: GraphQL errors with no `data`", content(
            (GraphqlResponse = "application/graphql-response+json"),
            (GraphqlResponse = "application/json"),
        )),
        (status = 406, description = "`Accept` allows neither `application/graphql-response+json` nor `application/json`", content(
            (GraphqlResponse = "application/json"),
        )),
        (status = 415, description = "The body's `Content-Type` is not `application/json`", content(
            (GraphqlResponse = "application/graphql-response+json"),
            (GraphqlResponse = "application/json"),
        )),
        (status = 401, response = Unauthorized),
        (status = 408, response = RequestTimeout),
        (status = 413, response = PayloadTooLarge),
        (status = 429, response = TooManyRequests),
        (status = 503, response = Unavailable),
    ),
    security(("bearer" = []))
)]
#[allow(dead_code)]
async fn graphql_post() {}

/// `GET /docs`: the API reference as one HTML page, no JavaScript.
pub async fn docs_page(State(state): State<AppState>) -> Html<String> {
    let doc = serde_json::to_value(document(&state.public_url, &state.resolver.base_url()))
        .unwrap_or_default();
    Html(render(&doc))
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Renders the reference page from the document.
fn render(doc: &Value) -> String {
    let base = doc["servers"][0]["url"].as_str().unwrap_or("");
    let mut out = String::new();
    out.push_str(concat!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        "<title>odqs API reference</title><style>",
        "body{font-family:system-ui,sans-serif;max-width:60rem;margin:auto;padding:1rem;line-height:1.45}",
        "code,pre{background:#f3f3f3;padding:0 .2em;border-radius:3px}",
        "table{border-collapse:collapse;width:100%;margin:.5rem 0}",
        "td,th{border:1px solid #ddd;padding:.3rem;text-align:left;vertical-align:top}",
        "h2{border-top:1px solid #ccc;padding-top:1rem}.m{font-weight:bold;color:#075}",
        "</style></head><body>"
    ));
    out.push_str(&format!(
        "<h1>{}</h1><p>{}</p><p>Base URL: <code>{}</code> · machine-readable: <a href=\"{}/openapi.json\">openapi.json</a></p>",
        escape(text(&doc["info"], "title")),
        escape(text(&doc["info"], "description")),
        escape(base),
        escape(base),
    ));
    if let Some(paths) = doc["paths"].as_object() {
        for (path, operations) in paths {
            let Some(operations) = operations.as_object() else {
                continue;
            };
            for (method, op) in operations {
                out.push_str(&format!(
                    "<h2><span class=\"m\">{}</span> <code>{}</code></h2><p>{}</p>",
                    escape(&method.to_uppercase()),
                    escape(path),
                    escape(text(op, "summary")),
                ));
                if let Some(params) = op["parameters"].as_array() {
                    out.push_str("<table><tr><th>parameter</th><th>in</th><th>required</th><th>meaning</th></tr>");
                    for p in params {
                        out.push_str(&format!(
                            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                            escape(text(p, "name")),
                            escape(text(p, "in")),
                            if p["required"].as_bool() == Some(true) {
                                "yes"
                            } else {
                                "no"
                            },
                            escape(text(p, "description")),
                        ));
                    }
                    out.push_str("</table>");
                }
                if let Some(responses) = op["responses"].as_object() {
                    out.push_str("<table><tr><th>status</th><th>meaning</th></tr>");
                    for (status, r) in responses {
                        out.push_str(&format!(
                            "<tr><td>{}</td><td>{}</td></tr>",
                            escape(status),
                            escape(text(r, "description")),
                        ));
                    }
                    out.push_str("</table>");
                }
            }
        }
    }
    out.push_str("</body></html>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use entity::FieldType;

    /// Every member an error body can carry is a property of `ErrorBody`, so generated clients
    /// keep them.
    #[test]
    fn error_body_has_every_member() {
        let doc = serde_json::to_value(document("http://s", "http://s/api/v1")).unwrap();
        let properties = &doc["components"]["schemas"]["ErrorBody"]["properties"];
        let samples = [
            ApiError::invalid("page", "x"),
            ApiError::MissingParameter {
                parameter: "group_by",
            },
            ApiError::UnknownField { field: "a".into() },
            ApiError::TextFieldExactMatch { field: "a".into() },
            ApiError::InvalidGroupBy {
                field: "a".into(),
                field_type: FieldType::Number,
            },
            ApiError::InvalidField {
                field: "a".into(),
                field_type: FieldType::Text,
            },
            ApiError::MissingToken,
            ApiError::InvalidToken,
            ApiError::DatasetNotFound { slug: "a".into() },
            ApiError::RecordNotFound { id: "a".into() },
            ApiError::NotFound,
            ApiError::MethodNotAllowed,
            ApiError::RequestTimeout,
            ApiError::PayloadTooLarge { limit_bytes: 1 },
            ApiError::RateLimited { retry_after: 1 },
            ApiError::ExportOverBudget {
                records: 2_000_000,
                limit: 1200,
                retry_after: 60,
            },
            ApiError::Unavailable,
            ApiError::Internal,
        ];
        for error in samples {
            for key in error.body().as_object().unwrap().keys() {
                assert!(properties[key].is_object(), "{}: {key}", error.code());
            }
            let description = properties["error"]["description"].as_str().unwrap();
            assert!(description.contains(error.code()), "{}", error.code());
        }
    }

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
