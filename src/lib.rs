//! odqs, the Open Dataset Query Service, as a library: `main.rs` and the integration tests call
//! the same functions.
//!
//! Module map (ARCHITECTURE.md draws the floors):
//! - [`config`]: the command line and its environment variables, validated into one struct.
//! - [`commands`]: one function per sub-command.
//! - [`app`]: the HTTP application: state, serving, maintenance.
//! - [`routes`]: the one route table: every path, its layers and fallbacks, and the operations
//!   of the OpenAPI document.
//! - [`http`]: HTTP plumbing under every front end: the server's accept loop, the request
//!   line, the client address, the access log, compression, caching headers, the contract's
//!   errors as HTTP answers.
//! - [`api`]: the front ends side by side: REST under `/api/v1`, the GraphQL endpoint, MCP,
//!   and the OpenAPI document.
//! - [`site`]: the HTML pages (sign-up, login, account, device approval, explorer) and the
//!   Markdown guides (`catalog.md`, `skill.md`).
//! - [`templates`]: every text the service writes from a template (pages, guides, IDE page).
//! - [`auth`]: API tokens, the API's bearer check, the device authorization grant, accounts,
//!   passwords, sessions and throttling.
//! - [`store`]: connecting to SQLite or PostgreSQL, migrations under a cross-instance lock, the
//!   catalog of datasets, and the garbage collection of retired dataset versions.
//! - [`import`]: reading CSV/JSON/NDJSON (gzip too), schema files and inference, and the bulk
//!   load that publishes a dataset version atomically.
//! - [`demo`]: the slices of real open data bundled into the binary for a first start.

pub mod api;
pub mod app;
pub mod auth;
pub mod commands;
pub mod config;
pub mod demo;
pub mod http;
pub mod import;
pub mod routes;
pub mod site;
pub mod store;
pub mod templates;
