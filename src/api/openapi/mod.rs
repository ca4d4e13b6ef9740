//! `GET /api/v1/openapi.json` and the HTML reference at `/docs`: the OpenAPI 3 description is
//! generated from the handlers' annotations, the query layer's answer types, its error table and
//! the limits in the code (never copied numbers), so it cannot drift from the server; the
//! reference page is drawn from that same document.
//!
//! The document is written for client generators (contract §12.5): the filters on a dataset's
//! fields are one `style: form, explode: true` object parameter, so a generated client sends
//! `carrier=UA` as a plain query pair; every parameter has the bounds the server enforces;
//! every status an operation can answer is listed with the contract's error body and headers.
//! `tests/api/openapi_clients.rs` holds it to that: it validates the document, runs schemathesis
//! against a live server, and drives a client generated from it.
//!
//! - this module: the document (info, components, tags, security) and its finishing touches;
//!   the operations come from the route table (`crate::routes`), in its order.
//! - REST documents its own operations beside its handlers (`crate::api::rest::parameters`,
//!   `crate::api::rest::responses`); the error answers are generated from the error table in
//!   [`crate::http::error::openapi`].
//! - [`graphql`]: the GraphQL endpoint's operations and shapes.
//! - [`docs`]: the `/docs` page, drawn by the vendored Redoc.

pub mod docs;
pub mod graphql;

use axum::Json;
use axum::response::{IntoResponse, Response};
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::server::Server;
use utoipa::openapi::{RefOr, Required};
use utoipa::{Modify, OpenApi};

use crate::auth::openapi::OAuthErrorBody;
use crate::http::error::ErrorBody;
use crate::state::AppState;

pub use crate::http::error::openapi::{
    BadRequest, Conflict, Forbidden, Gone, NotFound, PayloadTooLarge, PreconditionFailed,
    RequestTimeout, TooManyRequests, Unauthorized, Unavailable, UnsupportedMediaType,
};
pub use docs::docs_page;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "odqs: Open Dataset Query Service",
        description = "An API over published open datasets: reads for every token, and writes (tag `publishing`) for tokens with the `publish` scope whose account the operator granted the right. Every endpoint under the base URL needs `Authorization: Bearer <token>` (the device flow, token revocation and the health checks excepted); get a token on the account page or through the device flow. A token's scope (`read`, `export`, `publish`, `dataset:<slug>`) bounds what it may do: outside it, 403 `insufficient_scope`; `GET /token` shows it. Errors are `{\"error\": code, \"message\": …}` with extra members where useful; every API answer announces the caller's rate limit in `RateLimit-Policy` and `RateLimit`."
    ),
    components(
        schemas(ErrorBody, OAuthErrorBody, query::views::Record),
        responses(BadRequest, Unauthorized, Forbidden, NotFound, Conflict, Gone, RequestTimeout, PreconditionFailed, PayloadTooLarge, UnsupportedMediaType, TooManyRequests, Unavailable),
    ),
    modifiers(&BearerAuth),
    tags(
        (name = "datasets", description = "The catalog"),
        (name = "records", description = "Search, filter, sort and page through records"),
        (name = "agg", description = "Grouped statistics"),
        (name = "graphql", description = "The same queries in GraphQL"),
        (name = "publishing", description = "Writes, with the `publish` scope within the account's grants: a schema for the next version, a file published as a version (or as a job with `Prefer: respond-async`), removal"),
        (name = "auth", description = "Tokens: device authorization (RFC 8628) to get one from a program, the calling token described, revocation (RFC 7009)"),
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

/// The OpenAPI document of the operations `paths` (the route table's, in its order):
/// `base_url` (`{site_url}/api/v1`) is its server, and the health checks, which live at the
/// site's root, name `site_url` as theirs.
pub fn document(
    paths: utoipa::openapi::OpenApi,
    site_url: &str,
    base_url: &str,
) -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.merge(paths);
    doc.info.version = env!("CARGO_PKG_VERSION").to_string();
    doc.servers = Some(vec![Server::new(base_url)]);
    for (path, item) in doc.paths.paths.iter_mut() {
        if ROOT_PATHS.contains(&path.as_str()) {
            item.servers = Some(vec![Server::new(site_url)]);
        }
        operations(item).for_each(plain_summary);
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

/// An operation's `summary` is plain text that renderers show as a heading, and the handlers'
/// first doc line is a sentence with Markdown: the summary keeps its first clause without the
/// backticks, and the whole sentence leads the `description` (CommonMark).
fn plain_summary(operation: &mut utoipa::openapi::path::Operation) {
    let Some(sentence) = operation.summary.take() else {
        return;
    };
    let sentence = sentence.split_whitespace().collect::<Vec<_>>().join(" ");
    let clause = first_clause(&sentence);
    if clause.len() + 1 < sentence.len() {
        operation.description = Some(match operation.description.take() {
            Some(rest) => format!("{sentence}\n\n{rest}"),
            None => sentence.clone(),
        });
    }
    operation.summary = Some(clause.replace('`', ""));
}

/// `sentence` up to its first `. `, `; ` or `: ` outside parentheses (or its final `.`).
fn first_clause(sentence: &str) -> &str {
    let mut depth = 0i32;
    let bytes = sentence.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b'.' | b';' | b':' if depth == 0 && bytes.get(i + 1).is_none_or(|n| *n == b' ') => {
                return &sentence[..i];
            }
            _ => {}
        }
    }
    sentence
}

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

/// The headers the gate sets (`crate::auth::http::gate::RATELIMIT_POLICY` and `RATELIMIT`, which
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

/// `GET /api/v1/openapi.json`: the document of the operations `paths`.
pub async fn openapi_json(state: AppState, paths: utoipa::openapi::OpenApi) -> Response {
    Json(document(
        paths,
        &state.public_url,
        &state.resolver.base_url(),
    ))
    .into_response()
}

#[cfg(test)]
mod refs {
    use serde_json::Value;

    /// Every `$ref` of the document names a component it holds (validators and client
    /// generators refuse the document otherwise).
    #[test]
    fn every_reference_resolves() {
        use utoipa::OpenApi;
        let doc = super::document(
            crate::routes::ApiPaths::openapi(),
            "http://127.0.0.1",
            "http://127.0.0.1/api/v1",
        );
        let json = serde_json::to_value(&doc).unwrap();
        let mut refs = Vec::new();
        collect(&json, &mut refs);
        assert!(!refs.is_empty());
        for reference in refs {
            let pointer = reference.trim_start_matches('#');
            assert!(
                json.pointer(pointer).is_some(),
                "{reference} does not resolve"
            );
        }
    }

    /// What the document says speaks for itself: it cites no section of a document users do
    /// not have.
    #[test]
    fn no_text_cites_the_contract() {
        use utoipa::OpenApi;
        let doc = super::document(
            crate::routes::ApiPaths::openapi(),
            "http://127.0.0.1",
            "http://127.0.0.1/api/v1",
        );
        let text = serde_json::to_string(&doc).unwrap();
        let cited: Vec<&str> = text
            .match_indices("contract §")
            .map(|(at, _)| {
                text.get(at.saturating_sub(60)..at + 16)
                    .unwrap_or(&text[at..])
            })
            .collect();
        assert!(cited.is_empty(), "{cited:#?}");
    }

    fn collect(value: &Value, refs: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, item) in map {
                    match (key.as_str(), item) {
                        ("$ref", Value::String(reference)) => refs.push(reference.clone()),
                        _ => collect(item, refs),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| collect(item, refs)),
            _ => {}
        }
    }
}
