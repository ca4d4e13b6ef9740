//! Rejections as GraphQL errors (contract §7, §10): the message of the REST answer, and its code
//! in `extensions.code` with the same extra members (`parameter`, `field`, `allowed`, …), so a
//! client handles both APIs' refusals alike.

use async_graphql::{Error, ErrorExtensions};

use query::ApiError;

/// The GraphQL error for a query-layer rejection.
pub fn to_graphql(error: &ApiError) -> Error {
    Error::new(error.message()).extend_with(|_, ext| {
        ext.set("code", error.code());
        for (key, value) in error.extra() {
            if let Ok(value) = async_graphql::Value::from_json(value) {
                ext.set(key, value);
            }
        }
    })
}

/// An error of this module's own (limits), in the same shape: a message and a code.
pub fn coded(code: &'static str, message: impl Into<String>) -> Error {
    Error::new(message).extend_with(|_, ext| ext.set("code", code))
}

/// `?` on query-layer results inside resolvers.
pub trait OrGraphql<T> {
    /// The value, or the rejection as a GraphQL error.
    fn gql(self) -> async_graphql::Result<T>;
}

impl<T> OrGraphql<T> for Result<T, ApiError> {
    fn gql(self) -> async_graphql::Result<T> {
        self.map_err(|e| to_graphql(&e))
    }
}
