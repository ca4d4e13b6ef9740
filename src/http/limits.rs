//! The sizes of request bodies the service reads, written once: the body limits apply them,
//! the 413 answers and the OpenAPI document quote them.

/// The largest request body the API reads (a GraphQL request; REST takes none).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The largest body the device flow's endpoints read: a handful of short parameters.
pub const MAX_FORM_BODY_BYTES: usize = 16 * 1024;
