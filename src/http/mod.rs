//! HTTP plumbing under every front end: how connections are served, how a request line is
//! read, who the client is, what is logged, how answers are compressed and cached, and how the
//! contract's errors become HTTP answers; what an operator watches (`/metrics`, request ids).

pub mod accept;
pub mod access_log;
pub mod caching;
pub mod client_addr;
pub mod compression;
pub mod error;
pub mod limits;
pub mod log_writer;
pub mod metrics;
pub mod request_id;
pub mod request_line;
pub mod resilience;
pub mod server;
pub mod url;
pub mod vendored;
