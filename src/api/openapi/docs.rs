//! `GET /docs`: the API reference, drawn in the browser by Redoc (vendored in `redoc/`, see its
//! `LICENSES.md`) from the same OpenAPI document clients read at `{base_url}/openapi.json`, so
//! the reference and the document cannot disagree. Scripts come from the site only.

use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};

use crate::http::vendored::Bundle;
use crate::state::AppState;

/// The Redoc version vendored in `redoc/`; it is part of the assets' path, so they can be cached
/// for good.
pub const REDOC_VERSION: &str = "2.5.4";

/// The page's Content-Security-Policy: scripts from this site only; Redoc sets its styles
/// inline (styled-components) and draws its logos from `data:` URLs; it reads the document
/// from this site.
const DOCS_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
    img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'none'; \
    frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// `GET /docs`: the page that Redoc fills.
pub async fn docs_page(state: AppState) -> Response {
    let context = minijinja::context! {
        spec => format!("{}/openapi.json", state.resolver.base_url()),
        assets => REDOC.path(),
    };
    let html = match crate::templates::render("openapi_docs.html", context) {
        Ok(html) => html,
        Err(status) => return status.into_response(),
    };
    let mut response = Html(html).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(DOCS_CSP),
    );
    response
}

/// The vendored files, by name: (name, media type, bytes).
const FILES: &[(&str, &str, &[u8])] = &[
    (
        "redoc.standalone.js",
        "text/javascript",
        include_bytes!("redoc/redoc.standalone.js"),
    ),
    (
        "init.js",
        "text/javascript",
        include_bytes!("redoc/init.js"),
    ),
    ("page.css", "text/css", include_bytes!("redoc/page.css")),
];

/// Redoc, vendored ([`crate::http::vendored`]).
pub const REDOC: Bundle = Bundle {
    name: "redoc",
    version: REDOC_VERSION,
    files: FILES,
};
