//! Rejections as GraphQL errors (contract §7, §10): the message of the REST answer, and its code
//! in `extensions.code` with the same extra members (`parameter`, `field`, `allowed`, …), so a
//! client handles both APIs' refusals alike. The codes are rows of the query layer's error
//! table, GraphQL's own (limits, parse and validation failures) too.

use async_graphql::{Error, ErrorExtensions, ServerError};

use query::ApiError;
use query::error::Code;

/// `extensions.code` of an error of `code`: the table's name, as REST's `error` member.
pub fn extension_code(code: Code) -> &'static str {
    code.name()
}

/// The GraphQL error for a query-layer rejection.
pub fn to_graphql(error: &ApiError) -> Error {
    Error::new(error.message()).extend_with(|_, ext| {
        ext.set("code", extension_code(error.error_code()));
        for (key, value) in error.extra() {
            if let Ok(value) = async_graphql::Value::from_json(value) {
                ext.set(key, value);
            }
        }
    })
}

/// An error of this crate's own (limits), in the same shape: a message and a code.
pub fn coded(code: Code, message: impl Into<String>) -> Error {
    Error::new(message).extend_with(|_, ext| ext.set("code", extension_code(code)))
}

/// `error` with `code` in its extensions unless it has one already.
pub fn with_default_code(mut error: ServerError, code: Code) -> ServerError {
    let extensions = error.extensions.get_or_insert_with(Default::default);
    if extensions.get("code").is_none() {
        extensions.set("code", extension_code(code));
    }
    error
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
