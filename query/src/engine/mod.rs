//! What answers a validated request: the in-memory index of a version ([`memory`]) when it is
//! built and fits, else the store ([`store`]). Neither knows the front ends or the caches.

pub(crate) mod memory;
pub(crate) mod store;
