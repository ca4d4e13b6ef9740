//! What the integration tests share: the store fixtures ([`store`]: a fresh SQLite file or
//! PostgreSQL database, `both_stores!`; [`pg`]: the scratch PostgreSQL clusters they live in), the one test client ([`client`]), the store read
//! directly ([`stored`]), the parity cases ([`cases`]), and the third-party tools some tests
//! drive (headless Chromium in [`webdriver`], Python in [`py`], Node.js in [`node`]), and the
//! repository's own files for the tests that read them ([`sources`]).

#[macro_use]
pub mod store;
pub mod cases;
pub mod client;
pub mod explorer;
pub mod node;
pub mod pg;
pub mod py;
pub mod sources;
pub mod stored;
pub mod webdriver;

pub use client::{Answer, get_json, get_ok_json, get_with, post_graphql};
pub use store::*;
