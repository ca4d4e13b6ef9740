//! `/graphql` on the site: the GraphiQL IDE, vendored in `graphiql/` (see its `LICENSES.md`) so
//! it works without internet access. It is a page of the site, not of the API, because it
//! knows who is signed in: a signed-in person's IDE starts with a short-lived token (the
//! explorer's, [`account::explorer_token`]) and reads the schema; anyone else pastes a token,
//! and nothing is sent before. A GraphQL client's request to `/graphql` is sent on to the API.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use minijinja::context;

use super::pages::{page, store_failed};
use super::visitor::Visitor;
use crate::auth::account;
use crate::http::accept::names_html;
use crate::http::vendored::Bundle;
use crate::state::AppState;

/// The GraphiQL version vendored in `graphiql/`; it is part of the assets' path, so they can be
/// cached for good.
pub const GRAPHIQL_VERSION: &str = "3.8.3";

/// The IDE page's Content-Security-Policy: scripts and styles from this site only (the page
/// holds tokens); GraphiQL sets some styles inline and draws icons from `data:` URLs.
const IDE_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
    img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; \
    base-uri 'none'; form-action 'none'";

/// The API's GraphQL endpoint, where a client's request goes.
const ENDPOINT: &str = "/api/v1/graphql";

/// `GET /graphql`: the IDE for a browser; a client asking for JSON is sent to the API.
pub async fn show(State(state): State<AppState>, visitor: Visitor, headers: HeaderMap) -> Response {
    if !names_html(&headers) {
        return Redirect::permanent(ENDPOINT).into_response();
    }
    let token = match &visitor.signed_in {
        Some(signed_in) => match account::explorer_token(&state.store, signed_in.user.id).await {
            Ok((secret, _)) => Some(secret.expose().to_string()),
            Err(e) => return store_failed(e),
        },
        None => None,
    };
    let context = context! {
        endpoint => format!("{}/graphql", state.resolver.base_url()),
        assets => GRAPHIQL.path(),
        token,
    };
    let mut response = page(&visitor, StatusCode::OK, "graphiql.html", context);
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(IDE_CSP),
    );
    response
}

/// `POST /graphql`: a client's request, sent to the API with its method kept.
pub async fn moved() -> Redirect {
    Redirect::permanent(ENDPOINT)
}

/// The vendored files, by name.
const FILES: &[(&str, &str, &[u8])] = &[
    (
        "graphiql.min.js",
        "text/javascript",
        include_bytes!("graphiql/graphiql.min.js"),
    ),
    (
        "graphiql.min.css",
        "text/css",
        include_bytes!("graphiql/graphiql.min.css"),
    ),
    (
        "react.production.min.js",
        "text/javascript",
        include_bytes!("graphiql/react.production.min.js"),
    ),
    (
        "react-dom.production.min.js",
        "text/javascript",
        include_bytes!("graphiql/react-dom.production.min.js"),
    ),
    (
        "init.js",
        "text/javascript",
        include_bytes!("graphiql/init.js"),
    ),
    ("page.css", "text/css", include_bytes!("graphiql/page.css")),
];

/// GraphiQL and React, vendored ([`crate::http::vendored`]).
pub const GRAPHIQL: Bundle = Bundle {
    name: "graphiql",
    version: GRAPHIQL_VERSION,
    files: FILES,
};
