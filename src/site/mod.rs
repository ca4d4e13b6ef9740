//! The site at `{site_url}` (contract §9): accounts, the token page, the device approval
//! page, and the handlers that serve the Markdown guides. Server-rendered HTML (minijinja
//! templates), readable on a phone, usable without JavaScript (except `/explore`, which is a
//! JavaScript GraphQL client by design).
//!
//! - `visitor`: cookies, sessions, CSRF checks (`visitor::Posted`) and the client address.
//! - `pages`: `/signup`, `/login`, `/logout`.
//! - `account_page`: `/account`, its tokens with their scopes and lifetimes.
//! - `device_page`: `/device`.
//! - `ide`: `/graphql`, the GraphiQL IDE, with a short-lived token for a signed-in person.
//! - `explore`: `/explore`, the dataset explorer, a GraphQL client with a short-lived token.
//! - `guides`: `/`, and the handlers of `/catalog.md` and `/datasets/{slug}/skill.md` (the text
//!   is the guides service's, [`crate::guides`]) and of their HTML pages `/catalog` and
//!   `/datasets/{slug}/skill`, drawn by `markdown`.

pub mod account_page;
pub mod device_page;
pub mod explore;
pub mod guides;
pub mod ide;
pub mod markdown;
pub mod pages;
pub mod publish_page;
pub mod visitor;

use axum::Router;
use axum::routing::{get, post};

use crate::state::AppState;

/// The site's routes, merged into the application router.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(guides::home))
        .route("/catalog.md", get(guides::catalog_md))
        .route("/catalog", get(guides::catalog_page))
        .route("/datasets/{slug}/skill.md", get(guides::skill_md))
        .route("/datasets/{slug}/skill", get(guides::skill_page))
        .route("/assets/site.js", get(guides::site_js))
        .route("/assets/explore/{name}", get(explore::module))
        .route("/explore", get(explore::show))
        .route("/graphql", get(ide::show).post(ide::moved))
        .route("/explore/token", post(explore::renew))
        .route("/signup", get(pages::signup_form).post(pages::signup))
        .route("/login", get(pages::login_form).post(pages::login))
        .route("/logout", get(pages::logout_form).post(pages::logout))
        .route("/account", get(account_page::account))
        .route(
            "/account/tokens",
            get(account_page::tokens_page).post(account_page::create_token),
        )
        .route(
            "/account/tokens/{id}/revoke",
            get(account_page::confirm_revoke).post(account_page::revoke_token),
        )
        .route("/device", get(device_page::show).post(device_page::decide))
        .route("/publish", get(publish_page::home))
        .route("/publish/{slug}", get(publish_page::dataset))
        .route(
            "/publish/{slug}/remove",
            get(publish_page::confirm_remove).post(publish_page::remove),
        )
        .route("/publish/{slug}/token", post(publish_page::upload_token))
        .route("/assets/publish.js", get(publish_page::script))
}
