//! `/explore`: a dataset explorer for signed-in people that is itself a client of the API.
//! The page carries a short-lived token minted for the signed-in account
//! ([`account::explorer_token`]), renewed in the background through `POST /explore/token`
//! while the page is open; its script (ES modules in `explore/`, served by the binary, no
//! build step) uses `POST /api/v1/graphql` with it, and the export endpoint for downloads.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use minijinja::context;
use serde_json::json;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::pages::{Empty, page, store_failed};
use super::visitor::{Posted, Visitor, see_other};
use crate::auth::account;
use crate::guides::when;
use crate::http::error::code_status;
use crate::http::vendored::Bundle;
use crate::state::AppState;
use graphql::MAX_FETCHES;
use query::error::Code;

/// The explorer's script modules, served at `/assets/explore/{name}`: one concept each
/// (`limits.js` holds every limit the page applies).
const MODULES: [(&str, &str); 9] = [
    ("main.js", include_str!("explore/main.js")),
    ("limits.js", include_str!("explore/limits.js")),
    ("view.js", include_str!("explore/view.js")),
    ("api.js", include_str!("explore/api.js")),
    ("format.js", include_str!("explore/format.js")),
    ("table.js", include_str!("explore/table.js")),
    ("filters.js", include_str!("explore/filters.js")),
    ("stats.js", include_str!("explore/stats.js")),
    ("map.js", include_str!("explore/map.js")),
];

/// The Leaflet version vendored in `leaflet/` (see its `LICENSES.md`), for the map of a
/// dataset with a geo pair; part of the assets' path, so they can be cached for good.
pub const LEAFLET_VERSION: &str = "1.9.4";

/// The explorer's Content-Security-Policy: the site's (`Visitor::finish`), with Leaflet's
/// stylesheet from the site and OpenStreetMap's tiles as images, on this page only.
const EXPLORE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
    img-src 'self' https://tile.openstreetmap.org; connect-src 'self'; form-action 'self'; \
    frame-ancestors 'none'; base-uri 'none'";

/// Leaflet's files, by name.
const LEAFLET_FILES: &[(&str, &str, &[u8])] = &[
    (
        "leaflet.js",
        "text/javascript",
        include_bytes!("leaflet/leaflet.js"),
    ),
    (
        "leaflet.css",
        "text/css",
        include_bytes!("leaflet/leaflet.css"),
    ),
    (
        "images/layers.png",
        "image/png",
        include_bytes!("leaflet/images/layers.png"),
    ),
    (
        "images/layers-2x.png",
        "image/png",
        include_bytes!("leaflet/images/layers-2x.png"),
    ),
    (
        "images/marker-icon.png",
        "image/png",
        include_bytes!("leaflet/images/marker-icon.png"),
    ),
    (
        "images/marker-icon-2x.png",
        "image/png",
        include_bytes!("leaflet/images/marker-icon-2x.png"),
    ),
    (
        "images/marker-shadow.png",
        "image/png",
        include_bytes!("leaflet/images/marker-shadow.png"),
    ),
];

/// Leaflet, vendored ([`crate::http::vendored`]).
pub const LEAFLET: Bundle = Bundle {
    name: "leaflet",
    version: LEAFLET_VERSION,
    files: LEAFLET_FILES,
};

/// `GET /explore`: signed-in people only (others go to log in and come back, to the same
/// view: the query string is kept).
pub async fn show(
    State(state): State<AppState>,
    visitor: Visitor,
    uri: axum::http::Uri,
) -> Response {
    let Some(signed_in) = &visitor.signed_in else {
        return match uri.query() {
            Some(q) => see_other(&format!(
                "/login?next={}",
                crate::http::url::encode(&format!("/explore?{q}"))
            )),
            None => see_other("/login?next=/explore"),
        };
    };
    match account::explorer_token(&state.store, signed_in.user.id).await {
        Ok((secret, model)) => {
            let expires_at = model.expires_at.unwrap_or_else(OffsetDateTime::now_utc);
            let mut response = page(
                &visitor,
                StatusCode::OK,
                "explore.html",
                // The script batches at most this many dataset fetches in one document.
                context! {
                    token => secret.expose(),
                    expires => when(expires_at),
                    expires_at => expires_at.unix_timestamp(),
                    base_url => state.resolver.base_url(),
                    max_fetches => MAX_FETCHES,
                    leaflet => LEAFLET.path(),
                    max_find => query::params::MAX_CATALOG_QUERY_CHARS,
                },
            );
            response.headers_mut().insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(EXPLORE_CSP),
            );
            response
        }
        Err(e) => store_failed(e),
    }
}

/// `POST /explore/token`: a fresh explorer token for the page that is open, with the session's
/// cookie and CSRF token (as every form); JSON `{token, expires_at, expires_text}`.
pub async fn renew(State(state): State<AppState>, posted: Posted<Empty>) -> Response {
    let visitor = posted.visitor;
    let Some(signed_in) = &visitor.signed_in else {
        let code = Code::NotSignedIn;
        return (
            code_status(code),
            Json(json!({"error": code.name(), "message": "Log in again to explore."})),
        )
            .into_response();
    };
    match account::explorer_token(&state.store, signed_in.user.id).await {
        Ok((secret, model)) => {
            let expires_at = model.expires_at.unwrap_or_else(OffsetDateTime::now_utc);
            let body = json!({
                "token": secret.expose(),
                "expires_at": expires_at.format(&Rfc3339).unwrap_or_default(),
                "expires_text": when(expires_at),
            });
            visitor.finish(Json(body).into_response())
        }
        Err(e) => store_failed(e),
    }
}

/// `GET /assets/explore/{name}`: one of the explorer's modules.
pub async fn module(Path(name): Path<String>) -> Response {
    match MODULES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s) {
        Some(source) => (
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/javascript; charset=utf-8"),
                ),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            ],
            source,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
