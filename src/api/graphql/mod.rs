//! `GET` and `POST /api/v1/graphql` (contract §10, §12.5), as the GraphQL-over-HTTP
//! specification says:
//!
//! - `POST` with a JSON body (`query`, `variables`, `operationName`, or a batch of at most
//!   [`MAX_BATCH`] of them), and `GET` with the same as query parameters; `async-graphql-axum`
//!   extracts both. A `POST` whose `Content-Type` is not JSON is 415.
//! - The answer is `application/graphql-response+json` when the client's `Accept` asks for it:
//!   a request error (the document does not parse or validate, a limit refuses it: no `data`)
//!   is 400, anything that ran is 200. Otherwise (`application/json`, `*/*`, no `Accept`) it is
//!   `application/json` and 200 for every well-formed request, as older clients expect. An
//!   `Accept` that allows neither is 406.
//! - A browser (`GET` whose `Accept` prefers `text/html`) is sent to the GraphiQL IDE, a page
//!   of the site (`{site_url}/graphql`).
//! - A body that is not a GraphQL request is 400 with a GraphQL-shaped `errors` list; a body
//!   over the API's limit is 413 in the contract's shape. Tokens and the rate limit are the
//!   REST API's (the gate runs before this handler), so a missing or bad token is 401 and a
//!   spent budget 429, in the contract's shape, because no GraphQL ran.
//!
//! What `async-graphql-axum` does not do here, and why, is in ARCHITECTURE.md: its response
//! type always answers `application/graphql-response+json` with 200 and no negotiation.

use std::sync::Arc;

use async_graphql::{BatchRequest, BatchResponse, ParseRequestError, ServerError};
use async_graphql_axum::GraphQLBatchRequest;
use axum::body::Body;
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::auth::token::Principal;
use crate::http::accept::names_html;
use crate::http::error::{ApiError, HttpError, code_status};
use crate::http::limits::MAX_BODY_BYTES;
use crate::state::AppState;
use query::cost::CostGate;
use query::error::Code;

use crate::auth::cost_gate::TokenGate;

/// The most operations one batch (a JSON array body) may carry; each counts its own fetches.
pub const MAX_BATCH: usize = 10;

/// The GraphQL-over-HTTP media type.
pub const GRAPHQL_RESPONSE: &str = "application/graphql-response+json";

/// The answer's media type, from the client's `Accept`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Media {
    /// `application/graphql-response+json`: statuses follow the kind of error.
    GraphqlResponse,
    /// `application/json`: 200 for every well-formed request.
    Json,
    /// The GraphiQL page.
    Html,
}

/// The media type the client prefers among those we answer (`q` values honoured, ties going
/// to the GraphQL media type); `None` when `Accept` allows none of them.
fn negotiate(headers: &HeaderMap) -> Option<Media> {
    let accept: Vec<&str> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    if accept.is_empty() {
        return Some(Media::Json);
    }
    let mut best: Option<(f32, u8, Media)> = None;
    for range in accept.iter().flat_map(|v| v.split(',')) {
        let mut parts = range.split(';');
        let name = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        // Among equal q, the more specific choice wins (GraphQL media type first).
        let (rank, media) = match name.as_str() {
            GRAPHQL_RESPONSE => (3, Media::GraphqlResponse),
            "application/json" => (2, Media::Json),
            "text/html" => (1, Media::Html),
            "application/*" | "*/*" => (0, Media::Json),
            _ => continue,
        };
        if q <= 0.0 {
            continue;
        }
        if best.is_none_or(|(bq, br, _)| q > bq || (q == bq && rank > br)) {
            best = Some((q, rank, media));
        }
    }
    best.map(|(_, _, media)| media)
}

/// Runs one GraphQL-over-HTTP request, or serves the IDE to a browser.
pub async fn endpoint(
    State(state): State<AppState>,
    principal: Result<Principal, HttpError>,
    request: Request,
) -> Result<Response, HttpError> {
    let media = negotiate(request.headers());
    let is_get = request.method() == Method::GET;
    if is_get && (media == Some(Media::Html) || (media.is_none() && names_html(request.headers())))
    {
        // The IDE is a page of the site, which knows who is signed in.
        let ide = format!("{}/graphql", state.public_url.trim_end_matches('/'));
        return Ok(axum::response::Redirect::to(&ide).into_response());
    }
    let principal = principal?;
    let Some(media) = media.filter(|m| *m != Media::Html) else {
        return Ok(request_error(
            Code::NotAcceptable,
            Media::Json,
            format!("This endpoint answers {GRAPHQL_RESPONSE} or application/json."),
        ));
    };
    if let Some(refusal) = no_graphql_request(&request, is_get, media) {
        return Ok(refusal);
    }
    // The body under the API's limit, then handed to async-graphql-axum's extractor (which
    // reads the body stream itself, past axum's body limit).
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| ApiError::PayloadTooLarge {
            limit_bytes: MAX_BODY_BYTES,
        })?;
    let batch = match parse_batch(Request::from_parts(parts, Body::from(body)), is_get).await {
        Ok(batch) => batch,
        Err(Unreadable(error)) => {
            return Ok(request_error(
                Code::InvalidRequest,
                media,
                format!(
                    "The request is not a GraphQL request: send {{\"query\": \"{{ datasets {{ total }} }}\"}} \
                     as JSON, or ?query=… with GET ({error})."
                ),
            ));
        }
    };
    if let BatchRequest::Batch(list) = &batch
        && (list.is_empty() || list.len() > MAX_BATCH)
    {
        return Ok(request_error(
            Code::InvalidRequest,
            media,
            format!(
                "A batch holds 1 to {MAX_BATCH} operations; this one holds {}.",
                list.len()
            ),
        ));
    }
    // Heavy fields (grouped statistics, full text) are weighed before each runs; the HTTP gate
    // announces the last charge.
    let gate = TokenGate::new(state.rate_limits.clone(), principal.token_id);
    let answer = run(&state, batch, &gate, &principal.scope).await;
    let mut response = respond(media, answer);
    if let Some(charge) = gate.last_charge() {
        response.extensions_mut().insert(charge);
    }
    Ok(response)
}

/// The refusal of a request that cannot hold a GraphQL request: a GET without a query, a POST
/// whose body is not JSON.
fn no_graphql_request(request: &Request, is_get: bool, media: Media) -> Option<Response> {
    if is_get && !has_query(request) {
        return Some(request_error(
            Code::InvalidRequest,
            media,
            "A GraphQL GET needs ?query=… (a browser asking for text/html gets the IDE).".into(),
        ));
    }
    if !is_get && !is_json(request.headers()) {
        return Some(request_error(
            Code::UnsupportedMediaType,
            media,
            "A GraphQL POST needs Content-Type: application/json.".into(),
        ));
    }
    None
}

/// The request or batch, by async-graphql-axum's extractor. GraphQL over HTTP names it
/// `operationName` in a GET's query string too; async-graphql reads `operation_name` there,
/// so it is taken here.
async fn parse_batch(request: Request, is_get: bool) -> Result<BatchRequest, Unreadable> {
    let get_operation = is_get
        .then(|| {
            form_urlencoded::parse(request.uri().query().unwrap_or_default().as_bytes())
                .find(|(name, _)| name == "operationName")
                .map(|(_, value)| value.into_owned())
        })
        .flatten();
    let batch = GraphQLBatchRequest::<Unreadable>::from_request(request, &()).await?;
    Ok(match (batch.into_inner(), get_operation) {
        (BatchRequest::Single(one), Some(name)) if one.operation_name.is_none() => {
            BatchRequest::Single(one.operation_name(name))
        }
        (batch, _) => batch,
    })
}

/// Runs a single request or a batch. A store fault answers `unavailable` inside the result; a
/// read is safe to run once more, on a fresh connection (as REST does in `resilience`).
async fn run(
    state: &AppState,
    batch: BatchRequest,
    gate: &Arc<TokenGate>,
    scope: &query::Scope,
) -> BatchResponse {
    match batch {
        BatchRequest::Single(request) => {
            BatchResponse::Single(run_one(state, request, gate, scope).await)
        }
        BatchRequest::Batch(requests) => {
            let mut answers = Vec::with_capacity(requests.len());
            for request in requests {
                answers.push(run_one(state, request, gate, scope).await);
            }
            BatchResponse::Batch(answers)
        }
    }
}

async fn run_one(
    state: &AppState,
    request: async_graphql::Request,
    gate: &Arc<TokenGate>,
    scope: &query::Scope,
) -> async_graphql::Response {
    let weighs: Arc<dyn CostGate> = gate.clone();
    let request = request.data(weighs.clone());
    let again = async_graphql::Request::new(request.query.clone())
        .variables(request.variables.clone())
        .operation_name_opt(request.operation_name.clone())
        .data(weighs);
    let response = graphql::execute(&state.graphql, request, scope.clone()).await;
    if response.errors.iter().any(is_unavailable) {
        tracing::info!("a store fault cut a GraphQL read; running it once more");
        gate.run_again();
        return graphql::execute(&state.graphql, again, scope.clone()).await;
    }
    response
}

/// `operation_name` taking an `Option`, for copying a request.
trait OperationNameOpt {
    fn operation_name_opt(self, name: Option<String>) -> Self;
}

impl OperationNameOpt for async_graphql::Request {
    fn operation_name_opt(self, name: Option<String>) -> Self {
        match name {
            Some(name) => self.operation_name(name),
            None => self,
        }
    }
}

/// A request error: no operation ran (nothing executed, so no field has a path).
fn is_request_error(response: &async_graphql::Response) -> bool {
    response.data == async_graphql::Value::Null
        && !response.errors.is_empty()
        && response.errors.iter().all(|e| e.path.is_empty())
}

/// One answer as JSON: a request error carries no `data` member (GraphQL-over-HTTP §6.4).
fn answer_json(response: &async_graphql::Response) -> serde_json::Value {
    let mut value = serde_json::to_value(response).unwrap_or_else(|_| json!({}));
    if is_request_error(response)
        && let Some(map) = value.as_object_mut()
    {
        map.remove("data");
    }
    value
}

fn respond(media: Media, answer: BatchResponse) -> Response {
    let (body, request_error) = match &answer {
        BatchResponse::Single(one) => (answer_json(one), is_request_error(one)),
        BatchResponse::Batch(all) => (
            serde_json::Value::Array(all.iter().map(answer_json).collect()),
            false,
        ),
    };
    let status = if media == Media::GraphqlResponse && request_error {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    with_media(status, media, body)
}

/// A request refused before GraphQL ran, as a GraphQL error list with `code`'s status.
fn request_error(code: Code, media: Media, message: String) -> Response {
    let body = json!({"errors": [{"message": message, "extensions": {"code": code.name()}}]});
    with_media(code_status(code), media, body)
}

fn with_media(status: StatusCode, media: Media, body: serde_json::Value) -> Response {
    let content_type = match media {
        Media::GraphqlResponse => GRAPHQL_RESPONSE,
        _ => "application/json",
    };
    let mut response = (status, body.to_string()).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// async-graphql-axum's refusal of a body or query string, kept for our own answer.
struct Unreadable(ParseRequestError);

impl From<ParseRequestError> for Unreadable {
    fn from(error: ParseRequestError) -> Self {
        Unreadable(error)
    }
}

impl IntoResponse for Unreadable {
    fn into_response(self) -> Response {
        request_error(Code::InvalidRequest, Media::Json, self.0.to_string())
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .is_some_and(|v| v == "application/json" || v == GRAPHQL_RESPONSE)
}

/// Whether a GET carries a non-empty `query` parameter.
fn has_query(request: &Request) -> bool {
    form_urlencoded::parse(request.uri().query().unwrap_or_default().as_bytes())
        .any(|(name, value)| name == "query" && !value.trim().is_empty())
}

fn is_unavailable(error: &ServerError) -> bool {
    let code = ApiError::Unavailable.code();
    error
        .extensions
        .as_ref()
        .and_then(|e| e.get("code"))
        .is_some_and(|c| *c == async_graphql::Value::from(code))
}
