//! The answers' shapes, below the engines that fill them: the views every front end serializes,
//! agg groups and how they are ordered, percentiles, and the export's encoders.

pub mod encode;
pub mod groups;
#[cfg(feature = "openapi")]
mod openapi;
pub mod percentiles;
pub mod views;
