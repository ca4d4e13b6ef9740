//! The API's errors in the OpenAPI document, generated from the query layer's error table: the
//! shape of the body ([`ErrorBody`], whose `error` lists the table's codes of the API) and one
//! response per status a client can meet ([`BadRequest`], [`Unauthorized`], …), each listing
//! the codes of that status with an example body per code. Front ends and auth's endpoints reference them in their `#[utoipa::path]`s.

use entity::FieldType;
use query::ApiError;
use query::error::{Answered, Code};
use query::operators::{self, Op};
use query::params::{MAX_GROUPS, MAX_PER_PAGE};
use serde::Serialize;
use utoipa::openapi::example::ExampleBuilder;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, RefOr};
use utoipa::{ToResponse, ToSchema};

use crate::http::limits::MAX_BODY_BYTES;

/// The JSON body of every API error: `error` and `message` always, and the
/// members [`ApiError::extra`] adds for some codes.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// A stable code of the error table (listed in the document from the table).
    #[schema(schema_with = api_codes)]
    pub error: String,
    /// One sentence a person can act on.
    pub message: String,
    /// The parameter at fault (`invalid_parameter`, `missing_parameter`, `no_geo_fields`,
    /// `invalid_scope`, `invalid_cursor`).
    #[schema(nullable = false)]
    pub parameter: Option<String>,
    /// The field at fault (`unknown_field`, `text_field_exact_match`, `invalid_group_by`,
    /// `invalid_field`, `invalid_facet`, `invalid_operator`).
    #[schema(nullable = false)]
    pub field: Option<String>,
    /// The field's type (`invalid_group_by`, `invalid_field`, `invalid_facet`,
    /// `invalid_operator`).
    #[serde(rename = "type")]
    #[schema(nullable = false)]
    pub field_type: Option<String>,
    /// The types the parameter takes (`invalid_group_by`, `invalid_field`, `invalid_facet`), or
    /// the operators the field takes (`invalid_operator`).
    #[schema(nullable = false)]
    pub allowed: Option<Vec<String>>,
    /// The operator as sent (`invalid_operator`).
    #[schema(nullable = false)]
    pub operator: Option<String>,
    /// The groups the answer would hold (`too_many_groups`).
    #[schema(nullable = false)]
    pub groups: Option<u64>,
    /// The most groups an answer holds without `limit` (`too_many_groups`).
    #[schema(nullable = false)]
    pub max: Option<u64>,
    /// The largest body accepted, in bytes (`payload_too_large`).
    #[schema(nullable = false)]
    pub limit_bytes: Option<u64>,
    /// Seconds to wait before retrying (`rate_limited`), as in `Retry-After`.
    #[schema(nullable = false)]
    pub retry_after: Option<u64>,
    /// The version asked for (`version_not_found`, `version_gone`).
    #[schema(nullable = false)]
    pub version: Option<u64>,
    /// The versions still kept, newest first (`version_gone`).
    #[schema(nullable = false)]
    pub retained: Option<Vec<u64>>,
    /// The scope that would cover the request (`insufficient_scope`), as `WWW-Authenticate`
    /// names it.
    #[schema(nullable = false)]
    pub scope: Option<String>,
    /// The dataset's current version as `If-Match` names it, `"v<n>"` (`precondition_failed`);
    /// `null` when it has none.
    pub current: Option<String>,
}

/// The codes answered in [`ErrorBody`], in the table's order.
pub fn api_codes_iter() -> impl Iterator<Item = Code> {
    Code::ALL
        .iter()
        .copied()
        .filter(|code| code.answered() == Answered::Api)
}

/// `ErrorBody.error`: a string whose description lists the API's codes.
fn api_codes() -> ObjectBuilder {
    code_schema(api_codes_iter())
}

/// A string schema of an error code, its description listing `codes` and their statuses from
/// the table, so no list is written by hand.
pub fn code_schema(codes: impl IntoIterator<Item = Code>) -> ObjectBuilder {
    let listed: Vec<String> = codes
        .into_iter()
        .map(|code| format!("`{}` ({})", code.name(), code.status()))
        .collect();
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(format!("A stable code: {}.", listed.join(", "))))
}

/// The example body of each code of the API in the document; `None` for the codes answered
/// elsewhere than in [`ErrorBody`].
fn example(code: Code) -> Option<ApiError> {
    if code.answered() != Answered::Api {
        return None;
    }
    if let Some(error) = write_example(code) {
        return Some(error);
    }
    Some(match code {
        Code::InvalidParameter => ApiError::invalid(
            "per_page",
            format!("per_page must be between 1 and {MAX_PER_PAGE}."),
        ),
        Code::MissingParameter => ApiError::MissingParameter {
            parameter: "group_by",
        },
        Code::UnknownField => ApiError::UnknownField {
            field: "carier".into(),
        },
        Code::TextFieldExactMatch => ApiError::TextFieldExactMatch {
            field: "description".into(),
        },
        Code::InvalidGroupBy => ApiError::InvalidGroupBy {
            field: "dep_delay".into(),
            field_type: FieldType::Number,
        },
        Code::InvalidField => ApiError::InvalidField {
            field: "carrier".into(),
            field_type: FieldType::Keyword,
        },
        Code::NoGeoFields => ApiError::NoGeoFields { parameter: "near" },
        Code::InvalidFacet => ApiError::InvalidFacet {
            field: "dep_delay".into(),
            field_type: FieldType::Number,
        },
        Code::InvalidOperator => ApiError::InvalidOperator {
            field: "dep_delay".into(),
            field_type: FieldType::Number,
            operator: "prefix".into(),
            allowed: operators::names(Op::allowed(FieldType::Number)),
        },
        Code::InvalidCursor => ApiError::InvalidCursor {
            reason: "it was made for other conditions",
        },
        Code::TooManyGroups => ApiError::TooManyGroups {
            groups: 336_776,
            max: MAX_GROUPS,
        },
        Code::InvalidScope => ApiError::InvalidScope {
            message: "The scope word \"write\" is unknown; the words are read, export, publish and dataset:<slug>, separated by spaces.".into(),
        },
        Code::InsufficientScope => ApiError::InsufficientScope {
            scope: "read dataset:towns".into(),
        },
        Code::MissingToken => ApiError::MissingToken,
        Code::InvalidToken => ApiError::InvalidToken,
        Code::DatasetNotFound => ApiError::DatasetNotFound {
            slug: "flihgts".into(),
        },
        Code::RecordNotFound => ApiError::RecordNotFound { id: "0".into() },
        Code::NotFound => ApiError::NotFound,
        Code::VersionNotFound => ApiError::VersionNotFound { version: 9 },
        Code::VersionGone => ApiError::VersionGone {
            version: 1,
            retained: vec![4, 3, 2],
        },
        Code::MethodNotAllowed => ApiError::MethodNotAllowed,
        Code::RequestTimeout => ApiError::RequestTimeout,
        Code::PayloadTooLarge => ApiError::PayloadTooLarge {
            limit_bytes: MAX_BODY_BYTES,
        },
        Code::RateLimited => ApiError::RateLimited { retry_after: 1 },
        Code::Unavailable => ApiError::Unavailable,
        Code::Internal => ApiError::Internal,
        // Answered elsewhere than in this body (GraphQL, OAuth, the site): returned above.
        _ => return None,
    })
}

/// What an error answer of `status` means, before the list of its codes.
fn summary(status: u16) -> String {
    match status {
        400 => {
            "A parameter is malformed, out of range or names what the dataset does not have".into()
        }
        401 => "No bearer token, or an unknown, revoked or expired one".into(),
        403 => "The token is valid, but its scope does not cover this request".into(),
        404 => "No such dataset, record, version or job".into(),
        409 => "Another write to the dataset is running; nothing was published".into(),
        410 => "The version asked for is no longer kept".into(),
        412 => "`If-Match` no longer names the dataset's current version; nothing was published".into(),
        415 => "The body is none of CSV, NDJSON and JSON".into(),
        408 => "The request body arrived slower than the server's floor (8 KiB per window); the connection is closed".into(),
        413 => format!(
            "The request body is larger than {MAX_BODY_BYTES} bytes (an upload to publish: than ODQS_MAX_UPLOAD_MB)"
        ),
        429 => "Over the rate limit: wait `Retry-After` seconds".into(),
        503 => {
            "The data store cannot be reached right now; the service recovers when it returns"
                .into()
        }
        _ => String::new(),
    }
}

/// The error answer of `status`: the contract's body, the API's codes of that status from the
/// table, an example per code, and the headers those answers carry (as [`super::HttpError`]
/// sets them).
fn error_response(status: u16) -> RefOr<utoipa::openapi::Response> {
    let codes: Vec<Code> = api_codes_iter()
        .filter(|code| code.status() == status)
        .collect();
    let names: Vec<String> = codes.iter().map(|c| format!("`{}`", c.name())).collect();
    let examples = codes.iter().map(|&code| {
        (
            code.name().to_string(),
            ExampleBuilder::new()
                .value(example(code).map(|error| error.body()))
                .build(),
        )
    });
    let content = ContentBuilder::new()
        .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
            "ErrorBody",
        ))))
        .examples_from_iter(examples)
        .build();
    let mut response = ResponseBuilder::new()
        .description(format!("{}: {}", summary(status), names.join(", ")))
        .content("application/json", content)
        .build();
    match status {
        401 => {
            response.headers.insert(
                "WWW-Authenticate".into(),
                HeaderBuilder::new()
                    .schema(ObjectBuilder::new().schema_type(Type::String))
                    .description(Some("`Bearer` (RFC 6750)"))
                    .build(),
            );
        }
        429 => {
            response.headers.insert(
                "Retry-After".into(),
                HeaderBuilder::new()
                    .schema(
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .minimum(Some(1)),
                    )
                    .description(Some(
                        "Seconds to wait before the next request fits the budget",
                    ))
                    .build(),
            );
        }
        403 => {
            response.headers.insert(
                "WWW-Authenticate".into(),
                HeaderBuilder::new()
                    .schema(ObjectBuilder::new().schema_type(Type::String))
                    .description(Some(
                        "`Bearer error=\"insufficient_scope\", scope=\"<needed>\"` (RFC 6750 §3.1)",
                    ))
                    .build(),
            );
        }
        _ => {}
    }
    response.into()
}

/// The examples of the writes' codes (contract §14.2).
fn write_example(code: Code) -> Option<ApiError> {
    Some(match code {
        Code::InvalidFile => ApiError::InvalidFile {
            message: "line 7 has 3 fields where the header has 4".into(),
        },
        Code::JobNotFound => ApiError::JobNotFound {
            id: "job_3b1c…".into(),
        },
        Code::PublishInProgress => ApiError::PublishInProgress {
            slug: "city-parks".into(),
        },
        Code::PreconditionFailed => ApiError::PreconditionFailed {
            current: Some("\"v4\"".into()),
        },
        Code::UnsupportedMediaType => ApiError::UnsupportedMediaType {
            content_type: "text/plain".into(),
        },
        _ => return None,
    })
}

/// One documented response per status of error, named as the document's components name them.
macro_rules! error_responses {
    ($($(#[doc = $doc:literal])* $name:ident: $status:literal;)*) => {
        $(
            $(#[doc = $doc])*
            pub struct $name;

            impl<'r> ToResponse<'r> for $name {
                fn response() -> (&'r str, RefOr<utoipa::openapi::Response>) {
                    (stringify!($name), error_response($status))
                }
            }
        )*
    };
}

error_responses! {
    /// 400: the request's parameters.
    BadRequest: 400;
    /// 401: no token, or not a valid one.
    Unauthorized: 401;
    /// 403: outside the token's scope.
    Forbidden: 403;
    /// 404: no such dataset, record or version.
    NotFound: 404;
    /// 410: a version no longer kept.
    Gone: 410;
    /// 408: a body that arrived slower than the server's floor; the connection is then closed.
    RequestTimeout: 408;
    /// 413: a body over [`MAX_BODY_BYTES`].
    PayloadTooLarge: 413;
    /// 409: another write to the dataset runs.
    Conflict: 409;
    /// 412: `If-Match` no longer holds.
    PreconditionFailed: 412;
    /// 415: a write's body of another type.
    UnsupportedMediaType: 415;
    /// 429: over the rate limit, with `Retry-After`.
    TooManyRequests: 429;
    /// 503: the store cannot be reached right now.
    Unavailable: 503;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A code answered in the API's body has an example in the document, of its own code: a
    /// new row of the table cannot be documented without one.
    #[test]
    fn every_code_of_the_api_has_its_example() {
        for &code in Code::ALL {
            match example(code) {
                Some(error) => assert_eq!(error.error_code(), code, "{code:?}'s example"),
                None => assert_ne!(code.answered(), Answered::Api, "{code:?} has no example"),
            }
        }
    }

    /// Every member an error body can carry is a property of `ErrorBody`, so generated clients
    /// keep them.
    #[test]
    fn error_body_has_every_member() {
        let schema = serde_json::to_value(<ErrorBody as utoipa::PartialSchema>::schema()).unwrap();
        let properties = &schema["properties"];
        let samples = [
            ApiError::invalid("page", "x"),
            ApiError::MissingParameter {
                parameter: "group_by",
            },
            ApiError::UnknownField { field: "a".into() },
            ApiError::TextFieldExactMatch { field: "a".into() },
            ApiError::InvalidGroupBy {
                field: "a".into(),
                field_type: FieldType::Number,
            },
            ApiError::InvalidField {
                field: "a".into(),
                field_type: FieldType::Text,
            },
            ApiError::MissingToken,
            ApiError::InvalidToken,
            ApiError::InvalidScope {
                message: "x".into(),
            },
            ApiError::InsufficientScope {
                scope: "read".into(),
            },
            ApiError::NotGranted { slug: "a".into() },
            ApiError::InvalidFile {
                message: "x".into(),
            },
            ApiError::UnsupportedMediaType {
                content_type: "text/plain".into(),
            },
            ApiError::PublishInProgress { slug: "a".into() },
            ApiError::JobNotFound { id: "a".into() },
            ApiError::PreconditionFailed { current: None },
            ApiError::DatasetNotFound { slug: "a".into() },
            ApiError::RecordNotFound { id: "a".into() },
            ApiError::NotFound,
            ApiError::VersionNotFound { version: 2 },
            ApiError::VersionGone {
                version: 1,
                retained: vec![3, 2],
            },
            ApiError::MethodNotAllowed,
            ApiError::RequestTimeout,
            ApiError::PayloadTooLarge { limit_bytes: 1 },
            ApiError::RateLimited { retry_after: 1 },
            ApiError::ExportOverBudget {
                records: 2_000_000,
                limit: 1200,
                retry_after: 60,
            },
            ApiError::Unavailable,
            ApiError::Internal,
        ];
        for error in samples {
            for key in error.body().as_object().unwrap().keys() {
                assert!(properties[key].is_object(), "{}: {key}", error.code());
            }
            let description = properties["error"]["description"].as_str().unwrap();
            let listed = format!("`{}` ({})", error.code(), error.error_code().status());
            assert!(description.contains(&listed), "{listed}");
        }
    }

    /// The codes `ErrorBody` documents are the table's codes of the API, in its order, each
    /// with its status.
    #[test]
    fn error_body_lists_the_table() {
        let schema = serde_json::to_value(<ErrorBody as utoipa::PartialSchema>::schema()).unwrap();
        let description = schema["properties"]["error"]["description"]
            .as_str()
            .unwrap();
        let codes: Vec<String> = api_codes_iter()
            .map(|code| format!("`{}` ({})", code.name(), code.status()))
            .collect();
        assert_eq!(description, format!("A stable code: {}.", codes.join(", ")));
        assert!(!description.contains("query_too_deep"), "{description}");
    }
}
