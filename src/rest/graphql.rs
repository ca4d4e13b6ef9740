//! `POST /api/v1/graphql` and `GET /api/v1/graphql` (contract §10). POST takes the usual JSON
//! body (`query`, `variables`, `operationName`) behind the same bearer-token extractor and rate
//! limit as REST, and runs it with a fresh per-request memo; GET serves the GraphiQL IDE.
//!
//! GraphQL answers are `200` with `data` and/or `errors`, as GraphQL-over-HTTP clients expect;
//! a missing or bad token, a rate limit or an unreadable body are refused like REST requests
//! (401/429/400 with the contract's error body), because no GraphQL ran.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};

use crate::app::AppState;
use crate::auth::bearer::Principal;
use crate::error::{ApiError, HttpError};

/// Runs one GraphQL request.
pub async fn execute(
    _: Principal,
    State(state): State<AppState>,
    body: Bytes,
) -> Result<Response, HttpError> {
    let parse = || -> Result<async_graphql::Request, ApiError> {
        serde_json::from_slice(&body).map_err(|e| {
            ApiError::invalid(
                "body",
                format!(
                    "The body must be a JSON GraphQL request such as {{\"query\": \"{{ datasets {{ total }} }}\"}} ({e})."
                ),
            )
        })
    };
    let mut response = graphql::schema::execute(&state.graphql, parse()?).await;
    // A store fault answers `unavailable` inside a 200; a read is safe to run once more, on a
    // fresh connection (as REST does in `resilience`).
    if response.errors.iter().any(is_unavailable) {
        tracing::info!("a store fault cut a GraphQL read; running it once more");
        response = graphql::schema::execute(&state.graphql, parse()?).await;
    }
    Ok(Json(response).into_response())
}

fn is_unavailable(error: &async_graphql::ServerError) -> bool {
    let code = ApiError::Unavailable.code();
    error
        .extensions
        .as_ref()
        .and_then(|e| e.get("code"))
        .is_some_and(|c| *c == async_graphql::Value::from(code))
}

/// The GraphiQL IDE. Its scripts and styles load from the unpkg CDN, so the IDE needs a
/// browser with internet access; the API itself does not. Paste a token into the Headers tab.
pub async fn ide(State(state): State<AppState>) -> Response {
    let endpoint = format!("{}/graphql", state.resolver.base_url());
    let endpoint = serde_json::to_string(&endpoint).unwrap_or_default();
    let html = IDE.replace("ENDPOINT_JSON", &endpoint.replace('<', "\\u003c"));
    let mut response = Html(html).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

const IDE: &str = r##"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>odqs GraphQL IDE</title>
<link rel="stylesheet" href="https://unpkg.com/graphiql@3.8.3/graphiql.min.css">
<style>body { margin: 0; height: 100vh; } #graphiql { height: 100vh; }</style>
</head>
<body>
<div id="graphiql"><p style="font: 16px system-ui; padding: 1rem">Loading GraphiQL from unpkg.com…
The API is <code>POST</code> to this address with <code>Authorization: Bearer &lt;token&gt;</code>.</p></div>
<script crossorigin src="https://unpkg.com/react@18.3.1/umd/react.production.min.js"></script>
<script crossorigin src="https://unpkg.com/react-dom@18.3.1/umd/react-dom.production.min.js"></script>
<script crossorigin src="https://unpkg.com/graphiql@3.8.3/graphiql.min.js"></script>
<script>
  const endpoint = ENDPOINT_JSON;
  const fetcher = GraphiQL.createFetcher({ url: endpoint });
  ReactDOM.createRoot(document.getElementById("graphiql")).render(
    React.createElement(GraphiQL, {
      fetcher,
      defaultEditorToolsVisibility: "headers",
      defaultHeaders: JSON.stringify({ Authorization: "Bearer <your odqs token>" }, null, 2),
      defaultQuery: "# Paste your API token into the Headers tab below, then run.\n{\n  datasets {\n    total\n    datasets { slug title recordCount }\n  }\n}\n",
    })
  );
</script>
</body>
</html>
"##;
