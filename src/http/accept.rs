//! What a request's `Accept` header says about who sent it: a browser's navigation names
//! `text/html`; a GraphQL or REST client does not. The IDE's page and the GraphQL endpoint
//! both send a browser to the other, so both ask here.

use axum::http::{HeaderMap, header};

/// Whether any `Accept` header names HTML.
pub fn names_html(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/html"))
}
