//! `GET /.well-known/oauth-authorization-server` (RFC 8414, contract §12.4): the authorization
//! server's metadata, so a standard OAuth client or an agent finds the device flow (RFC 8628)
//! from the site's address alone. The endpoints and the grant type are read from the routes'
//! own constants.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use query::Need;

use super::tokens::REVOKE_PATH;
use crate::auth::grant::{DEVICE_PATH, GRANT_TYPE_URN, TOKEN_PATH};
use crate::state::AppState;

/// The metadata document. The issuer is `{site_url}`; the only grant is the device code, so
/// there is no authorization endpoint and no response type; clients are public (`none`).
pub async fn metadata(State(state): State<AppState>) -> Response {
    let site = state.public_url.trim_end_matches('/');
    let mut response = Json(json!({
        "issuer": site,
        "device_authorization_endpoint": format!("{site}{DEVICE_PATH}"),
        "token_endpoint": format!("{site}{TOKEN_PATH}"),
        "grant_types_supported": [GRANT_TYPE_URN],
        "response_types_supported": [],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint": format!("{site}{REVOKE_PATH}"),
        "revocation_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": [Need::Read.word(), Need::Export.word(), Need::Publish.word()],
        "service_documentation": format!("{site}/catalog.md"),
    }))
    .into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    response.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}
