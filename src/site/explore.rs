//! `/explore`: a dataset explorer for signed-in people that is itself a GraphQL
//! client. The page carries a short-lived token minted for the signed-in account
//! ([`account::explorer_token`]); its script (`explore.js`, served by the binary, no build
//! step) uses only `POST /api/v1/graphql` with it.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use minijinja::context;
use time::OffsetDateTime;

use super::pages::{page, store_failed};
use super::visitor::{Visitor, see_other};
use crate::auth::account;
use crate::guides::when;
use crate::state::AppState;
use graphql::MAX_FETCHES;

/// `GET /explore`: signed-in people only (others go to log in and come back).
pub async fn show(State(state): State<AppState>, visitor: Visitor) -> Response {
    let Some(signed_in) = &visitor.signed_in else {
        return see_other("/login?next=/explore");
    };
    match account::explorer_token(&state.store, signed_in.user.id).await {
        Ok((secret, model)) => {
            let expires = model
                .expires_at
                .map(when)
                .unwrap_or_else(|| when(OffsetDateTime::now_utc()));
            page(
                &visitor,
                StatusCode::OK,
                "explore.html",
                // The script batches at most this many dataset fetches in one document.
                context! { token => secret.expose(), expires, max_fetches => MAX_FETCHES },
            )
        }
        Err(e) => store_failed(e),
    }
}

/// `GET /assets/explore.js`.
pub async fn script() -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/javascript; charset=utf-8"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        include_str!("explore.js"),
    )
        .into_response()
}
