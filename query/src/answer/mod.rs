//! The answers' shapes, below the engines that fill them: the views every front end serializes,
//! agg groups, how they are ordered and their statistics, relevance scores, and the export's
//! encoders.

pub(crate) mod encode;
pub(crate) mod groups;
#[cfg(feature = "openapi")]
mod openapi;
pub(crate) mod relevance;
pub mod views;
