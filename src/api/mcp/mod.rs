//! `{base_url}/mcp` (contract §12.4): the Model Context Protocol over streamable HTTP, the
//! third front end of the resolver layer beside REST and GraphQL.
//!
//! The endpoint is nested in the API router, so the API gate (bearer tokens, rate limits) and
//! the request log apply as they do to every other API request; [`require_token`] refuses a
//! request without a valid token before the protocol is spoken. The server is stateless (no
//! `Mcp-Session-Id`): any instance behind a load balancer answers any request, and each
//! request is answered with one JSON body. The tools themselves live in [`tools`].
//!
//! rmcp logs what a client sent (a request's id and error at warn, a notification whole at
//! info, the initialize version at warn) without bounds; [`log_filter`] keeps its lines to
//! errors unless `ODQS_LOG` names `rmcp`, and the tools name a client's text clipped
//! (`query::log_text`).

mod args;
pub mod tools;

use std::sync::Arc;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::auth::http::gate::Authenticated;
use crate::http::error::{ApiError, HttpError};
use crate::http::limits::MAX_BODY_BYTES;
use crate::state::AppState;

/// The directive added to the log filter for rmcp's target: its warn and info lines carry a
/// client's text unclipped (a request id or method of a megabyte), so only its errors are
/// written, unless the configured filter names rmcp itself.
pub const RMCP_LOG_DIRECTIVE: &str = "rmcp=error";

/// The log filter: `configured` (`ODQS_LOG`) or `default_level`, with [`RMCP_LOG_DIRECTIVE`]
/// unless `configured` names `rmcp` (an operator who asks for rmcp's lines gets them whole).
pub fn log_filter(configured: Option<&str>, default_level: &str) -> tracing_subscriber::EnvFilter {
    use tracing_subscriber::EnvFilter;
    let filter = configured
        .and_then(|c| EnvFilter::try_new(c).ok())
        .unwrap_or_else(|| EnvFilter::new(default_level));
    if configured.is_some_and(|c| c.contains("rmcp")) {
        return filter;
    }
    match RMCP_LOG_DIRECTIVE.parse() {
        Ok(directive) => filter.add_directive(directive),
        Err(_) => filter,
    }
}

/// The MCP service for `state`, to be nested at `/mcp` inside the API router.
pub fn service(state: AppState) -> StreamableHttpService<tools::Tools, NeverSessionManager> {
    // Host and Origin checks guard servers that trust whoever reaches them (a local tool a
    // web page could rebind to); every request here carries a bearer token instead, and the
    // service answers under whatever host name the deployment gives it.
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .disable_allowed_hosts();
    StreamableHttpService::new(
        move || Ok(tools::Tools::new(state.clone())),
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

/// Refuses an MCP request the gate found no valid token for, with the API's 401 answer
/// (`WWW-Authenticate: Bearer`), before the protocol is spoken.
pub async fn require_token(request: Request, next: Next) -> Response {
    match request.extensions().get::<Authenticated>() {
        Some(Authenticated(Ok(Some(_)))) => next.run(request).await,
        Some(Authenticated(Err(error))) => HttpError(error.clone()).into_response(),
        Some(Authenticated(Ok(None))) => HttpError(ApiError::MissingToken).into_response(),
        None => {
            tracing::error!("the MCP endpoint is not behind the API gate");
            HttpError(ApiError::Internal).into_response()
        }
    }
}
