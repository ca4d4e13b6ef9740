//! Authentication: API tokens. (The device flow and the account pages build on this.)

pub mod bearer;
pub mod token;
