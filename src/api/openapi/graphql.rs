//! The GraphQL endpoint in the OpenAPI document: its two operations, described here rather than
//! on its handler (which negotiates between the IDE and GraphQL over HTTP), and the shapes of a
//! GraphQL request and answer.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::error::openapi::{
    PayloadTooLarge, RequestTimeout, TooManyRequests, Unauthorized, Unavailable,
};

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
    /// `code`: the REST error code.
    #[schema(value_type = Option<Object>, nullable = false)]
    pub extensions: Option<Value>,
}

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
pub(crate) async fn graphql_get() {}

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
pub(crate) async fn graphql_post() {}
