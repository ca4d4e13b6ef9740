//! The front ends, side by side, each a thin layer over the `query` resolver: REST under
//! `/api/v1`, the GraphQL endpoint and its IDE, the MCP endpoint, and the OpenAPI document.

pub mod graphql;
pub mod mcp;
pub mod openapi;
pub mod rest;
