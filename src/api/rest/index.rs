//! `GET /api/v1`: where everything is, for a client or a person who starts at the base URL. No
//! token is needed, as for the OpenAPI document it points to.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::state::AppState;

/// The API's entry points, as absolute URLs.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiIndex {
    /// This API's OpenAPI 3.1 description (no token needed).
    pub openapi: String,
    /// The API reference for people, drawn from it.
    pub docs: String,
    /// The datasets (`q` searches them).
    pub datasets: String,
    /// The GraphQL endpoint.
    pub graphql: String,
    /// The MCP endpoint (streamable HTTP).
    pub mcp: String,
    /// The calling token described.
    pub token: String,
    /// Every dataset with its guide, in Markdown, for agents.
    pub catalog: String,
    /// Where a person gets a token.
    pub account: String,
}

/// Where everything is: the OpenAPI document, the reference, the datasets, GraphQL, MCP, the
/// catalog and the account page.
#[utoipa::path(get, path = "/", tag = "operations", operation_id = "api_index",
    responses((status = 200, description = "The API's entry points", body = ApiIndex))
)]
pub async fn index(State(state): State<AppState>) -> Response {
    let site = state.public_url.trim_end_matches('/');
    let base = format!("{site}/api/v1");
    Json(ApiIndex {
        openapi: format!("{base}/openapi.json"),
        docs: format!("{site}/docs"),
        datasets: format!("{base}/datasets"),
        graphql: format!("{base}/graphql"),
        mcp: format!("{base}/mcp"),
        token: format!("{base}/token"),
        catalog: format!("{site}/catalog.md"),
        account: format!("{site}/account"),
    })
    .into_response()
}
