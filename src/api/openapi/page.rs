//! `GET /docs`: the API reference as one HTML page, no JavaScript, rendered from the OpenAPI
//! document (template `openapi_docs.html`): one section per operation with its parameters and
//! its answers, in the document's order.

use axum::http::StatusCode;
use axum::response::Html;
use serde::Serialize;
use serde_json::Value;

use super::document;
use crate::state::AppState;

/// `GET /docs`: the reference of the operations `paths`.
pub async fn docs_page(
    state: AppState,
    paths: utoipa::openapi::OpenApi,
) -> Result<Html<String>, StatusCode> {
    let doc = serde_json::to_value(document(
        paths,
        &state.public_url,
        &state.resolver.base_url(),
    ))
    .unwrap_or_default();
    render(&doc).map(Html)
}

/// What the page shows of the document, every text escaped for HTML. Lists, not maps: the
/// template keeps their order.
#[derive(Serialize)]
struct Page {
    title: String,
    description: String,
    base: String,
    operations: Vec<Operation>,
}

#[derive(Serialize)]
struct Operation {
    method: String,
    path: String,
    summary: String,
    /// `None` when the operation has no `parameters` member (no table at all).
    parameters: Option<Vec<Param>>,
    /// `None` when the operation has no `responses` member.
    responses: Option<Vec<Answer>>,
}

#[derive(Serialize)]
struct Param {
    name: String,
    location: String,
    required: bool,
    description: String,
}

#[derive(Serialize)]
struct Answer {
    status: String,
    description: String,
}

/// `value[key]` if it is a string, else empty; escaped for HTML (the template marks it safe).
fn text(value: &Value, key: &str) -> String {
    escape(value.get(key).and_then(Value::as_str).unwrap_or(""))
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Renders the reference page from the document.
fn render(doc: &Value) -> Result<String, StatusCode> {
    let mut operations = Vec::new();
    for (path, items) in doc["paths"].as_object().into_iter().flatten() {
        let Some(items) = items.as_object() else {
            continue;
        };
        for (method, op) in items {
            operations.push(Operation {
                method: escape(&method.to_uppercase()),
                path: escape(path),
                summary: text(op, "summary"),
                parameters: op["parameters"].as_array().map(|params| {
                    params
                        .iter()
                        .map(|p| Param {
                            name: text(p, "name"),
                            location: text(p, "in"),
                            required: p["required"].as_bool() == Some(true),
                            description: text(p, "description"),
                        })
                        .collect()
                }),
                responses: op["responses"].as_object().map(|responses| {
                    responses
                        .iter()
                        .map(|(status, r)| Answer {
                            status: escape(status),
                            description: text(r, "description"),
                        })
                        .collect()
                }),
            });
        }
    }
    let page = Page {
        title: text(&doc["info"], "title"),
        description: text(&doc["info"], "description"),
        base: escape(doc["servers"][0]["url"].as_str().unwrap_or("")),
        operations,
    };
    crate::templates::render(
        "openapi_docs.html",
        minijinja::Value::from(minijinja::value::Serde(&page)),
    )
}
