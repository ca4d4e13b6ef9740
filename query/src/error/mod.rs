//! The API's one error type (contract §7). Each variant carries one of the contract's codes
//! ([`Code`], the table in `codes.rs`); REST answers, GraphQL `extensions.code` and MCP tool
//! errors all come from here, so a client sees the same code whichever interface it uses. The
//! table gives each code its HTTP status; how it is told in a protocol (a status line, a
//! GraphQL extension) is each front end's business. Store failures are logged in full and answered
//! generically (`store.rs`): nothing about SQL, files or the code reaches a client.

mod codes;
mod message;
mod store;

pub use codes::{Answered, Code};
pub use store::{fault_within, note_fault, sqlx_unreachable, unreachable};

use entity::FieldType;
use serde_json::{Value, json};

/// Every way a request can fail.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiError {
    /// A malformed or out-of-range parameter (page, per_page, sort syntax, a value of the wrong
    /// type, …).
    InvalidParameter {
        parameter: String,
        message: String,
    },
    /// A required parameter is absent (`group_by`).
    MissingParameter {
        parameter: &'static str,
    },
    /// A filter, sort, fields or group_by name the dataset does not have.
    UnknownField {
        field: String,
    },
    /// `<text field>=value`: text is searched with `q[<field>]`, never matched exactly.
    TextFieldExactMatch {
        field: String,
    },
    /// `group_by` on a field that is not `keyword`.
    InvalidGroupBy {
        field: String,
        field_type: FieldType,
    },
    /// `field` (agg) on a field that is not `number`.
    InvalidField {
        field: String,
        field_type: FieldType,
    },
    /// `facet` on a field that is not `keyword`.
    InvalidFacet {
        field: String,
        field_type: FieldType,
    },
    /// `near`, `bbox` or `_distance` on a dataset without a geo pair.
    NoGeoFields {
        parameter: &'static str,
    },
    /// `name[op]=value` with an operator the field's type does not take, or no such operator
    /// (contract §12.1).
    InvalidOperator {
        field: String,
        field_type: FieldType,
        operator: String,
        allowed: Vec<&'static str>,
    },
    /// A scope asked for at minting that cannot be granted (contract §13.3).
    InvalidScope {
        message: String,
    },
    /// Outside the token's scope; `scope` is the scope that would do (RFC 6750 §3.1).
    InsufficientScope {
        scope: String,
    },
    /// A write by a token whose account holds no grant naming the dataset (contract §14.1).
    NotGranted {
        slug: String,
    },
    /// A file sent to publish that the import refuses; `message` names the place and reason.
    InvalidFile {
        message: String,
    },
    /// A write whose body is none of the types the import reads.
    UnsupportedMediaType {
        content_type: String,
    },
    /// No asynchronous write of that id belongs to the token's account.
    JobNotFound {
        id: String,
    },
    /// Another write to the dataset is running.
    PublishInProgress {
        slug: String,
    },
    /// `If-Match` no longer names the current version; `current` is its tag, `None` when the
    /// dataset has none.
    PreconditionFailed {
        current: Option<String>,
    },
    /// A cursor altered, or used with another request than the one that gave it.
    InvalidCursor {
        reason: &'static str,
    },
    /// An agg answer of more groups than `MAX_GROUPS` without `limit` (contract §12.2).
    TooManyGroups {
        groups: u64,
        max: u64,
    },
    /// No bearer token.
    MissingToken,
    /// An unknown, revoked or expired token.
    InvalidToken,
    DatasetNotFound {
        slug: String,
    },
    RecordNotFound {
        id: String,
    },
    /// A path nothing answers.
    NotFound,
    /// `version=` names a version of the dataset never published.
    VersionNotFound {
        version: u64,
    },
    /// `version=` names a version no longer retained; `retained` are those that are, newest
    /// first.
    VersionGone {
        version: u64,
        retained: Vec<i64>,
    },
    /// A write method on the read API.
    MethodNotAllowed,
    /// A request body over the limit (bytes).
    PayloadTooLarge {
        limit_bytes: usize,
    },
    /// A request body that arrived slower than the server's floor (the connection closes).
    RequestTimeout,
    /// Too many requests; retry after this many seconds.
    RateLimited {
        retry_after: u64,
    },
    /// An export whose cost (contract §12.3: one request plus one per
    /// [`RECORDS_PER_REQUEST`](crate::cost::RECORDS_PER_REQUEST) records) is more than the
    /// whole budget of `limit` requests, so no wait can make it fit; `retry_after` is a full
    /// refill, as every 429 carries one.
    ExportOverBudget {
        records: u64,
        limit: u32,
        retry_after: u64,
    },
    /// The store cannot be reached; the process keeps running and recovers when it returns.
    Unavailable,
    /// A bug or an unexpected store error, logged where it happened.
    Internal,
}

impl ApiError {
    /// Shorthand for [`ApiError::InvalidParameter`].
    pub fn invalid(parameter: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::InvalidParameter {
            parameter: parameter.into(),
            message: message.into(),
        }
    }

    /// The row of the error table this error is.
    pub fn error_code(&self) -> Code {
        match self {
            ApiError::InvalidParameter { .. } => Code::InvalidParameter,
            ApiError::MissingParameter { .. } => Code::MissingParameter,
            ApiError::UnknownField { .. } => Code::UnknownField,
            ApiError::TextFieldExactMatch { .. } => Code::TextFieldExactMatch,
            ApiError::InvalidGroupBy { .. } => Code::InvalidGroupBy,
            ApiError::InvalidField { .. } => Code::InvalidField,
            ApiError::InvalidFacet { .. } => Code::InvalidFacet,
            ApiError::NoGeoFields { .. } => Code::NoGeoFields,
            ApiError::InvalidOperator { .. } => Code::InvalidOperator,
            ApiError::InvalidCursor { .. } => Code::InvalidCursor,
            ApiError::InvalidScope { .. } => Code::InvalidScope,
            ApiError::InsufficientScope { .. } | ApiError::NotGranted { .. } => {
                Code::InsufficientScope
            }
            ApiError::InvalidFile { .. } => Code::InvalidFile,
            ApiError::UnsupportedMediaType { .. } => Code::UnsupportedMediaType,
            ApiError::PublishInProgress { .. } => Code::PublishInProgress,
            ApiError::JobNotFound { .. } => Code::JobNotFound,
            ApiError::PreconditionFailed { .. } => Code::PreconditionFailed,
            ApiError::TooManyGroups { .. } => Code::TooManyGroups,
            ApiError::MissingToken => Code::MissingToken,
            ApiError::InvalidToken => Code::InvalidToken,
            ApiError::DatasetNotFound { .. } => Code::DatasetNotFound,
            ApiError::RecordNotFound { .. } => Code::RecordNotFound,
            ApiError::NotFound => Code::NotFound,
            ApiError::VersionNotFound { .. } => Code::VersionNotFound,
            ApiError::VersionGone { .. } => Code::VersionGone,
            ApiError::MethodNotAllowed => Code::MethodNotAllowed,
            ApiError::PayloadTooLarge { .. } => Code::PayloadTooLarge,
            ApiError::RequestTimeout => Code::RequestTimeout,
            ApiError::RateLimited { .. } | ApiError::ExportOverBudget { .. } => Code::RateLimited,
            ApiError::Unavailable => Code::Unavailable,
            ApiError::Internal => Code::Internal,
        }
    }

    /// The contract's code (`unknown_field`, …).
    pub fn code(&self) -> &'static str {
        self.error_code().name()
    }

    /// Seconds to wait before retrying, for the errors that carry them.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            ApiError::RateLimited { retry_after }
            | ApiError::ExportOverBudget { retry_after, .. } => Some(*retry_after),
            _ => None,
        }
    }

    /// Members added to the JSON body beside `error` and `message`.
    pub fn extra(&self) -> Vec<(&'static str, Value)> {
        match self {
            ApiError::InvalidParameter { parameter, .. } => vec![("parameter", json!(parameter))],
            ApiError::MissingParameter { parameter } | ApiError::NoGeoFields { parameter } => {
                vec![("parameter", json!(parameter))]
            }
            ApiError::UnknownField { field } | ApiError::TextFieldExactMatch { field } => {
                vec![("field", json!(field))]
            }
            ApiError::InvalidGroupBy { field, field_type } => vec![
                ("field", json!(field)),
                ("type", json!(field_type.as_str())),
                ("allowed", json!(["keyword"])),
            ],
            ApiError::InvalidField { field, field_type } => vec![
                ("field", json!(field)),
                ("type", json!(field_type.as_str())),
                ("allowed", json!(["number"])),
            ],
            ApiError::InvalidFacet { field, field_type } => vec![
                ("field", json!(field)),
                ("type", json!(field_type.as_str())),
                ("allowed", json!(["keyword"])),
            ],
            ApiError::InvalidOperator {
                field,
                field_type,
                operator,
                allowed,
            } => vec![
                ("field", json!(field)),
                ("type", json!(field_type.as_str())),
                ("operator", json!(operator)),
                ("allowed", json!(allowed)),
            ],
            ApiError::TooManyGroups { groups, max } => {
                vec![("groups", json!(groups)), ("max", json!(max))]
            }
            ApiError::InvalidCursor { .. } => vec![("parameter", json!("cursor"))],
            ApiError::InvalidScope { .. } => vec![("parameter", json!("scope"))],
            ApiError::InsufficientScope { scope } => vec![("scope", json!(scope))],
            ApiError::NotGranted { slug } => {
                vec![("scope", json!(format!("publish dataset:{slug}")))]
            }
            ApiError::UnsupportedMediaType { .. } => vec![(
                "allowed",
                json!(["text/csv", "application/x-ndjson", "application/json"]),
            )],
            ApiError::PreconditionFailed { current } => vec![("current", json!(current))],
            ApiError::PayloadTooLarge { limit_bytes } => vec![("limit_bytes", json!(limit_bytes))],
            ApiError::VersionNotFound { version } => vec![("version", json!(version))],
            ApiError::VersionGone { version, retained } => {
                vec![("version", json!(version)), ("retained", json!(retained))]
            }
            ApiError::RateLimited { retry_after }
            | ApiError::ExportOverBudget { retry_after, .. } => {
                vec![("retry_after", json!(retry_after))]
            }
            _ => Vec::new(),
        }
    }

    /// The JSON body of contract §7.
    pub fn body(&self) -> Value {
        let mut body = serde_json::Map::new();
        body.insert("error".into(), json!(self.code()));
        body.insert("message".into(), json!(self.message()));
        for (key, value) in self.extra() {
            body.insert(key.into(), value);
        }
        Value::Object(body)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code(), self.message())
    }
}

impl std::error::Error for ApiError {}
