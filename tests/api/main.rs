//! The integration tests: one binary, a module per area, all driving the real application on
//! a fresh SQLite file and a fresh PostgreSQL database (`both_stores!`), in-process through the
//! router or on a socket, through the `odqs` binary, or with third-party clients. What they
//! share (store fixtures, the one test client, the parity cases, the tools they drive) is in
//! `helpers`.

// A test is one scenario read top to bottom, its steps and their checks side by side.
#![allow(clippy::too_many_lines)]

#[macro_use]
mod helpers;

mod accessibility;
mod account_page;
mod browser;
mod catalog_search;
mod cli;
mod cluster_run;
mod compose;
mod compose_stack;
mod compression;
mod cursors;
mod device_flow;
mod docs_page;
mod docs_paths;
mod error_docs;
mod explore;
mod explore_map;
mod explore_views;
mod export;
mod graphql;
mod graphql_clients;
mod graphql_http_audit;
mod graphql_parity;
mod graphql_rules;
mod graphql_schema_file;
mod guide_pages;
mod guides;
mod ide_page;
mod import;
mod index_files;
mod indexes;
mod layering;
mod mcp;
mod memory_index;
mod metrics;
mod openapi_clients;
mod operations;
mod parity;
mod places;
mod property;
mod publish_page;
mod publishing;
mod query_power;
mod raw_query;
mod readme_examples;
mod real_data;
mod relevance;
mod replicas;
mod rest_api;
mod scopes;
mod security_auth;
mod security_graphql;
mod security_http;
mod site;
mod store_layout;
mod tls;
mod versions;
