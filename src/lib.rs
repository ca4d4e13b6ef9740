//! odqs, the Open Dataset Query Service, as a library: `main.rs` and the integration tests call
//! the same functions.
//!
//! Module map (ARCHITECTURE.md draws the floors):
//! - [`config`]: the command line and its environment variables, validated into one struct.
//! - [`commands`]: one function per sub-command.
//! - [`state`]: the application's state, a leaf every floor above takes.
//! - [`routes`]: the one route table: every path, its layers and fallbacks, and the operations
//!   of the OpenAPI document.
//! - [`app`]: serving, the graceful shutdown and the maintenance tick.
//! - [`http`]: HTTP plumbing under every front end: the server's accept loop, the request
//!   line, the client address, the access log, compression, caching headers, the contract's
//!   errors as HTTP answers, the percent-encoder of URLs.
//! - [`api`]: the front ends side by side: REST under `/api/v1`, the GraphQL endpoint, MCP,
//!   and the OpenAPI document.
//! - [`guides`]: the Markdown guides (`catalog.md`, `skill.md`), a service the site and MCP
//!   both call.
//! - [`site`]: the HTML pages (sign-up, login, account, device approval, explorer) and the
//!   handlers that serve the guides.
//! - [`templates`]: every text the service writes from a template (pages, guides, IDE page).
//! - [`auth`]: API tokens, the device authorization grant, accounts, passwords, sessions,
//!   throttles and budgets; its HTTP side (the API gate, the bearer extractor, the device-flow
//!   endpoints) in `auth::http`.
//! - [`store`]: connecting to SQLite or PostgreSQL, migrations under a cross-instance lock, the
//!   catalog of datasets, and the garbage collection of retired dataset versions.
//! - [`import`]: reading CSV/JSON/NDJSON (gzip too), schema files, inference and the row plan,
//!   and the bulk load that publishes a dataset version atomically.
//! - [`demo`]: the slices of real open data bundled into the binary for a first start.

pub mod api;
pub mod app;
pub mod auth;
pub mod commands;
pub mod config;
pub mod demo;
pub mod guides;
pub mod http;
pub mod import;
pub mod publish;
pub mod routes;
pub mod site;
pub mod state;
pub mod store;
pub mod templates;
