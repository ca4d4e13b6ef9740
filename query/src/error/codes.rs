//! The table of the contract's error codes (§7, §10): one row per code, with the kind of
//! failure it is and what it means. Every front end reads a code's name and kind from here and
//! maps the kind once: the HTTP status (`src/http/error/mod.rs`), GraphQL's `extensions.code`
//! (`graphql/src/errors.rs`), the OpenAPI error documentation (`src/api/rest/responses.rs`).
//! A new code is one row here; the compiler then asks each front end for what it needs.

/// What kind of failure a code is: the front ends map kinds, not codes, onto their protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The request's parameters: malformed, out of range, or naming what the dataset lacks.
    InvalidRequest,
    /// A GraphQL document refused before it runs: its limits, its syntax, its validation, or
    /// the choice of the operation to run.
    InvalidDocument,
    /// No bearer token, or not a valid one.
    Auth,
    /// A valid token whose scope does not cover the request.
    Forbidden,
    /// No such dataset, record or path.
    NotFound,
    /// It existed and is no longer kept.
    Gone,
    /// A method the read API does not answer.
    MethodNotAllowed,
    /// A request body over the size limit.
    PayloadTooLarge,
    /// A request body that arrived too slowly.
    RequestTimeout,
    /// Over the request budget: retry later.
    RateLimited,
    /// The store cannot be reached now; a retry later can succeed.
    Unavailable,
    /// A bug or an unexpected store error.
    Internal,
}

/// Writes [`Code`] and its `name`, `kind` and `doc` from the rows of the table, in the manner
/// of meilisearch's `make_error_codes!`.
macro_rules! make_error_codes {
    ($($code:ident, $name:literal, $kind:ident, $doc:literal;)*) => {
        /// One of the contract's error codes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code {
            $(#[doc = $doc] $code,)*
        }

        impl Code {
            /// Every code, in the table's order.
            pub const ALL: &'static [Code] = &[$(Code::$code,)*];

            /// The code as clients see it: REST's `error`, GraphQL's `extensions.code`, MCP's
            /// tool errors.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Code::$code => $name,)*
                }
            }

            /// What kind of failure it is.
            pub const fn kind(self) -> ErrorKind {
                match self {
                    $(Code::$code => ErrorKind::$kind,)*
                }
            }

            /// What the code means, in a sentence.
            pub const fn doc(self) -> &'static str {
                match self {
                    $(Code::$code => $doc,)*
                }
            }
        }
    };
}

// Every error code odqs answers, in the order the documentation lists them.
make_error_codes! {
    InvalidParameter,       "invalid_parameter",         InvalidRequest,  "A malformed or out-of-range parameter (page, per_page, sort syntax, a value of the wrong type, …).";
    MissingParameter,       "missing_parameter",         InvalidRequest,  "A required parameter is absent (`group_by`).";
    UnknownField,           "unknown_field",             InvalidRequest,  "A filter, sort, fields or group_by name the dataset does not have.";
    TextFieldExactMatch,    "text_field_exact_match",    InvalidRequest,  "`<text field>=value`: text is searched with `q[<field>]`, never matched exactly.";
    InvalidGroupBy,         "invalid_group_by",          InvalidRequest,  "`group_by` on a field that is not `keyword` (or a date or number field without a bucket).";
    InvalidField,           "invalid_field",             InvalidRequest,  "`field` (agg) on a field that is not `number`.";
    InvalidFacet,           "invalid_facet",             InvalidRequest,  "`facet` on a field that is not `keyword`.";
    NoGeoFields,            "no_geo_fields",             InvalidRequest,  "`near`, `bbox` or `_distance` on a dataset without a geo pair (a latitude and a longitude field).";
    InvalidOperator,        "invalid_operator",          InvalidRequest,  "`name[op]=value` with an operator the field's type does not take, or no such operator.";
    InvalidScope,           "invalid_scope",             InvalidRequest,  "A scope asked for at minting with an unknown word, a dataset that does not exist, no `read` or `export`, or more than 1,024 bytes.";
    InvalidCursor,          "invalid_cursor",            InvalidRequest,  "A cursor altered, or used with other conditions, sort, fields, facets or `per_page` than the request that gave it.";
    TooManyGroups,          "too_many_groups",           InvalidRequest,  "An agg answer of more groups than the most without `limit`.";
    MissingToken,           "missing_token",             Auth,            "No bearer token.";
    InvalidToken,           "invalid_token",             Auth,            "An unknown, revoked or expired token.";
    InsufficientScope,      "insufficient_scope",        Forbidden,       "Outside the token's scope; `scope` (and `WWW-Authenticate`, RFC 6750 §3.1) names the scope that would do.";
    DatasetNotFound,        "dataset_not_found",         NotFound,        "No dataset of that slug.";
    RecordNotFound,         "record_not_found",          NotFound,        "No record of that `_id` in the dataset.";
    NotFound,               "not_found",                 NotFound,        "A path nothing answers.";
    VersionNotFound,        "version_not_found",         NotFound,        "`version=` (or `from`, `to`) names a version of the dataset never published.";
    VersionGone,            "version_gone",              Gone,            "`version=` (or `from`, `to`) names a version no longer retained; `retained` lists those that are.";
    MethodNotAllowed,       "method_not_allowed",        MethodNotAllowed, "A write method on the read API.";
    RequestTimeout,         "request_timeout",           RequestTimeout,  "A request body that arrived slower than the server's floor (the connection closes).";
    PayloadTooLarge,        "payload_too_large",         PayloadTooLarge, "A request body over the limit.";
    RateLimited,            "rate_limited",              RateLimited,     "Too many requests, or an export the whole budget cannot cover; retry after the seconds given.";
    Unavailable,            "unavailable",               Unavailable,     "The store cannot be reached; the process keeps running and recovers when it returns.";
    Internal,               "internal",                  Internal,        "A bug or an unexpected store error, logged where it happened.";
    QueryTooLarge,          "query_too_large",           InvalidDocument, "A GraphQL document longer than the most bytes one query may be.";
    QueryTooDeep,           "query_too_deep",            InvalidDocument, "A GraphQL document nested deeper than the limits allow.";
    QueryTooComplex,        "query_too_complex",         InvalidDocument, "A GraphQL document of more complexity points than the limit.";
    TooManyFragmentSpreads, "too_many_fragment_spreads", InvalidDocument, "A GraphQL document spreading fragments more often than the limit, once expanded.";
    TooManyAliases,         "too_many_aliases",          InvalidDocument, "A GraphQL document of more aliases than the limit, once expanded.";
    TooManyFetches,         "too_many_fetches",          InvalidDocument, "A GraphQL document reading datasets more often than the limit.";
    GraphqlParseFailed,     "graphql_parse_failed",      InvalidDocument, "A GraphQL document that does not parse.";
    GraphqlValidationFailed, "graphql_validation_failed", InvalidDocument, "A GraphQL document that is not valid against the schema (a fragment spreading itself too).";
    UnknownOperation,       "unknown_operation",         InvalidDocument, "A request naming an operation the document does not hold.";
    OperationNameRequired,  "operation_name_required",   InvalidDocument, "A document of several operations, and a request naming none.";
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name is one code: no two rows share it.
    #[test]
    fn names_are_distinct() {
        let mut names: Vec<&str> = Code::ALL.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
    }
}
