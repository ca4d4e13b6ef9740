//! The table of every error code a client of odqs can receive (contract §7, §10): one row per
//! code, with its HTTP status, where it is answered and what it means. The front ends read a
//! code's name and status from here: REST's and MCP's bodies, GraphQL's `extensions.code`, the
//! GraphQL transport's refusals, the device flow's OAuth answers, the site's JSON; the OpenAPI
//! document lists the API's codes and their statuses from it, and a test holds the docs' table
//! to it. A new code is one row here (and, for a code of the API, a variant of `ApiError` with
//! its message and an example in the OpenAPI document, which the compiler asks for).

/// Where a code is answered, and so in which shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Answered {
    /// In the contract's body (`error`, `message`, extra members): REST and MCP, and GraphQL
    /// fields in `extensions` (the body the OpenAPI document calls `ErrorBody`).
    Api,
    /// In a GraphQL `errors` list, for a document refused before it runs.
    GraphqlDocument,
    /// In a GraphQL `errors` list, for an HTTP request that is no GraphQL request; and, for
    /// `invalid_request`, in the device flow's OAuth shape too.
    Transport,
    /// By the device flow's endpoints, in OAuth's shape (`error`, `error_description`).
    OAuth,
    /// By the site's JSON endpoints (the explorer's token).
    Site,
}

/// Writes [`Code`] and its `name`, `status`, `answered` and `doc` from the rows of the table,
/// in the manner of meilisearch's `make_error_codes!`.
macro_rules! make_error_codes {
    ($($code:ident, $name:literal, $status:literal, $answered:ident, $doc:literal;)*) => {
        /// One of the codes of the table.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code {
            $(#[doc = $doc] $code,)*
        }

        impl Code {
            /// Every code, in the table's order.
            pub const ALL: &'static [Code] = &[$(Code::$code,)*];

            /// The code as clients see it: REST's `error`, GraphQL's `extensions.code`, MCP's
            /// tool errors, OAuth's `error`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Code::$code => $name,)*
                }
            }

            /// The HTTP status an answer of this code has.
            pub const fn status(self) -> u16 {
                match self {
                    $(Code::$code => $status,)*
                }
            }

            /// Where it is answered, and so in which shape.
            pub const fn answered(self) -> Answered {
                match self {
                    $(Code::$code => Answered::$answered,)*
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

// Every error code odqs answers: code, name, HTTP status, where it is answered, what it means.
make_error_codes! {
    InvalidParameter,       "invalid_parameter",         400, Api,             "A malformed or out-of-range parameter (page, per_page, sort syntax, a value of the wrong type, …).";
    MissingParameter,       "missing_parameter",         400, Api,             "A required parameter is absent (`group_by`).";
    UnknownField,           "unknown_field",             400, Api,             "A filter, sort, fields or group_by name the dataset does not have.";
    TextFieldExactMatch,    "text_field_exact_match",    400, Api,             "`<text field>=value`: text is searched with `q[<field>]`, never matched exactly.";
    InvalidGroupBy,         "invalid_group_by",          400, Api,             "`group_by` on a field that is not `keyword` (or a date or number field without a bucket).";
    InvalidField,           "invalid_field",             400, Api,             "`field` (agg) on a field that is not `number`.";
    InvalidFacet,           "invalid_facet",             400, Api,             "`facet` on a field that is not `keyword`.";
    NoGeoFields,            "no_geo_fields",             400, Api,             "`near`, `bbox` or `_distance` on a dataset without a geo pair (a latitude and a longitude field).";
    InvalidOperator,        "invalid_operator",          400, Api,             "`name[op]=value` with an operator the field's type does not take, or no such operator.";
    InvalidScope,           "invalid_scope",             400, Api,             "A scope asked for at minting with an unknown word, a dataset that does not exist, no `read` or `export`, or more than 1,024 bytes.";
    InvalidCursor,          "invalid_cursor",            400, Api,             "A cursor altered, or used with other conditions, sort, fields, facets or `per_page` than the request that gave it.";
    TooManyGroups,          "too_many_groups",           400, Api,             "An agg answer of more groups than the most without `limit`.";
    MissingToken,           "missing_token",             401, Api,             "No bearer token.";
    InvalidToken,           "invalid_token",             401, Api,             "An unknown, revoked or expired token.";
    InsufficientScope,      "insufficient_scope",        403, Api,             "Outside the token's scope; `scope` (and `WWW-Authenticate`, RFC 6750 §3.1) names the scope that would do.";
    DatasetNotFound,        "dataset_not_found",         404, Api,             "No dataset of that slug.";
    RecordNotFound,         "record_not_found",          404, Api,             "No record of that `_id` in the dataset.";
    NotFound,               "not_found",                 404, Api,             "A path nothing answers.";
    JobNotFound,            "job_not_found",             404, Api,             "No job of that id belongs to the token's account.";
    VersionNotFound,        "version_not_found",         404, Api,             "`version=` (or `from`, `to`) names a version of the dataset never published.";
    VersionGone,            "version_gone",              410, Api,             "`version=` (or `from`, `to`) names a version no longer retained; `retained` lists those that are.";
    MethodNotAllowed,       "method_not_allowed",        405, Api,             "A write method on the read API.";
    RequestTimeout,         "request_timeout",           408, Api,             "A request body that arrived slower than the server's floor (the connection closes).";
    PayloadTooLarge,        "payload_too_large",         413, Api,             "A request body over the limit.";
    InvalidFile,            "invalid_file",              400, Api,             "A file sent to publish that the import refuses: a malformed line or record, a duplicate `_id`, no records, a record over the size limit, or a schema file that does not fit; `message` names the place.";
    PublishInProgress,      "publish_in_progress",       409, Api,             "Another write to the dataset is running; nothing was published. Retry once it has ended.";
    PreconditionFailed,     "precondition_failed",       412, Api,             "`If-Match` no longer names the dataset's current version; nothing was published.";
    RateLimited,            "rate_limited",              429, Api,             "Too many requests, or an export the whole budget cannot cover; retry after the seconds given.";
    Unavailable,            "unavailable",               503, Api,             "The store cannot be reached; the process keeps running and recovers when it returns.";
    Internal,               "internal",                  500, Api,             "A bug or an unexpected store error, logged where it happened.";
    QueryTooLarge,          "query_too_large",           400, GraphqlDocument, "A GraphQL document longer than the most bytes one query may be.";
    QueryTooDeep,           "query_too_deep",            400, GraphqlDocument, "A GraphQL document nested deeper than the limits allow.";
    QueryTooComplex,        "query_too_complex",         400, GraphqlDocument, "A GraphQL document of more complexity points than the limit.";
    TooManyFragmentSpreads, "too_many_fragment_spreads", 400, GraphqlDocument, "A GraphQL document spreading fragments more often than the limit, once expanded.";
    TooManyAliases,         "too_many_aliases",          400, GraphqlDocument, "A GraphQL document of more aliases than the limit, once expanded.";
    TooManyFetches,         "too_many_fetches",          400, GraphqlDocument, "A GraphQL document reading datasets more often than the limit.";
    GraphqlParseFailed,     "graphql_parse_failed",      400, GraphqlDocument, "A GraphQL document that does not parse.";
    GraphqlValidationFailed, "graphql_validation_failed", 400, GraphqlDocument, "A GraphQL document that is not valid against the schema (a fragment spreading itself too).";
    UnknownOperation,       "unknown_operation",         400, GraphqlDocument, "A request naming an operation the document does not hold.";
    OperationNameRequired,  "operation_name_required",   400, GraphqlDocument, "A document of several operations, and a request naming none.";
    InvalidRequest,         "invalid_request",           400, Transport,       "A request the endpoint cannot read: to GraphQL, a body that is no GraphQL request, a batch of the wrong size or a GET without `query`; to the device flow, a parameter missing, repeated, malformed or too long.";
    NotAcceptable,          "not_acceptable",            406, Transport,       "An `Accept` that allows none of the media types GraphQL answers.";
    UnsupportedMediaType,   "unsupported_media_type",    415, Api,             "A GraphQL POST whose `Content-Type` is not JSON; a write whose body is none of CSV, NDJSON and JSON (in the API's body).";
    AuthorizationPending,   "authorization_pending",     400, OAuth,           "The device code is not approved yet; poll again after the interval (RFC 8628 §3.5).";
    SlowDown,               "slow_down",                 400, OAuth,           "Polled sooner than the interval; the interval grows by five seconds (RFC 8628 §3.5).";
    AccessDenied,           "access_denied",             400, OAuth,           "The account holder refused the device (RFC 8628 §3.5).";
    ExpiredToken,           "expired_token",             400, OAuth,           "The device code expired before it was approved; start again (RFC 8628 §3.5).";
    InvalidGrant,           "invalid_grant",             400, OAuth,           "An unknown device code, or one already used (RFC 6749 §5.2).";
    UnsupportedGrantType,   "unsupported_grant_type",    400, OAuth,           "A `grant_type` other than the device code's (RFC 6749 §5.2).";
    TemporarilyUnavailable, "temporarily_unavailable",   503, OAuth,           "The device flow cannot reach the store; try again shortly.";
    NotSignedIn,            "not_signed_in",             401, Site,            "The explorer asked for a fresh token without a signed-in session.";
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The statuses are those HTTP gives each code's meaning.
    #[test]
    fn statuses_are_errors() {
        assert!(Code::ALL.iter().all(|c| (400..600).contains(&c.status())));
        assert_eq!(Code::MissingToken.status(), 401);
        assert_eq!(Code::RateLimited.status(), 429);
    }

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
