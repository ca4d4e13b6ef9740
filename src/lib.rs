//! odqs, the Open Dataset Query Service, as a library: `main.rs` and the integration tests call
//! the same functions.
//!
//! Module map:
//! - [`config`]: the command line and its environment variables, validated into one struct.
//! - [`store`]: connecting to SQLite or PostgreSQL, migrations under a cross-instance lock, the
//!   catalog of datasets, and the garbage collection of retired dataset versions.
//! - [`import`]: reading CSV/JSON/NDJSON (gzip too) as a stream, schema files and inference, and
//!   the bulk load that publishes a dataset version atomically.
//! - [`demo`]: the slices of real open data bundled into the binary for a first start.
//! - [`auth`]: API tokens (minting, hashing, the API's bearer check), the device authorization
//!   grant and its endpoints, accounts, passwords, sessions and throttling.
//! - [`site`]: the HTML pages (sign-up, login, account, device approval) and the Markdown
//!   guides (`catalog.md`, `skill.md`).
//! - [`rest`]: the REST API under `/api/v1`, thin handlers over `graphql::query`.
//! - [`mcp`]: the MCP endpoint under `/api/v1/mcp`, tools over the same resolver calls as REST.
//! - [`client_addr`]: who the client is (the TCP peer, or `X-Forwarded-For` from a trusted proxy).
//! - [`app`]: the HTTP application: state, router, layers, maintenance.
//! - [`access_log`]: the line logged for each answered request.
//! - [`compression`]: gzip, br and zstd answers, with weak ETags when encoded.
//! - [`server`]: accepting connections under timeouts and caps, and draining at shutdown.
//! - [`request_line`]: lets raw `<`, `>` and `"` in query strings through hyper (contract §5).
//! - [`error`]: the contract's JSON error shape.
//! - [`commands`]: one function per sub-command.

pub mod access_log;
pub mod app;
pub mod auth;
pub mod client_addr;
pub mod commands;
pub mod compression;
pub mod config;
pub mod demo;
pub mod error;
pub mod import;
pub mod log_writer;
pub mod mcp;
pub mod request_line;
pub mod rest;
pub mod server;
pub mod site;
pub mod store;
