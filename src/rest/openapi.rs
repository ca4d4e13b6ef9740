//! `GET /api/v1/openapi.json` and the HTML reference at `/docs`: the OpenAPI 3 description is
//! generated from the handlers' annotations and the query layer's answer types, so it cannot
//! drift from the code; the reference page is rendered from that same document.

use axum::Json;
use axum::extract::State;
use axum::response::{Html, IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::server::Server;
use utoipa::{Modify, OpenApi, ToSchema};

use crate::app::AppState;

/// The JSON body of every API error (contract §7).
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// A stable code: `invalid_parameter`, `unknown_field`, `text_field_exact_match`, …
    pub error: String,
    /// One sentence a person can act on.
    pub message: String,
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "odqs: Open Dataset Query Service",
        description = "A read-only API over published open datasets. Every endpoint needs `Authorization: Bearer <token>`; get a token on the account page or through the device flow. Errors are `{\"error\": code, \"message\": …}`."
    ),
    paths(
        super::datasets::list_datasets,
        super::datasets::get_dataset,
        super::records::list_records,
        super::records::get_record,
        super::agg::aggregate,
    ),
    components(schemas(ErrorBody)),
    modifiers(&BearerAuth),
    tags(
        (name = "datasets", description = "The catalog"),
        (name = "records", description = "Search, filter, sort and page through records"),
        (name = "agg", description = "Grouped statistics"),
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

/// The OpenAPI document, with `{base_url}` as its server.
pub fn document(base_url: &str) -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_string();
    doc.servers = Some(vec![Server::new(base_url)]);
    doc
}

/// `GET /api/v1/openapi.json`.
pub async fn openapi_json(State(state): State<AppState>) -> Response {
    Json(document(&state.resolver.base_url())).into_response()
}

/// `GET /docs`: the API reference as one HTML page, no JavaScript.
pub async fn docs_page(State(state): State<AppState>) -> Html<String> {
    let doc = serde_json::to_value(document(&state.resolver.base_url())).unwrap_or_default();
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
