//! The message of each error: one sentence a person can act on, naming what was wrong and
//! what to send instead.

use entity::FieldType;

use super::ApiError;

impl ApiError {
    /// One sentence a person can act on.
    pub fn message(&self) -> String {
        match self {
            ApiError::InvalidParameter { message, .. } | ApiError::InvalidScope { message } => {
                message.clone()
            }
            ApiError::InsufficientScope { scope } => format!(
                "This token's scope does not cover this request, which needs {scope:?}; GET /api/v1/token shows the token's scope, and a token with more can be made on the account page."
            ),
            ApiError::NotGranted { .. }
            | ApiError::InvalidFile { .. }
            | ApiError::UnsupportedMediaType { .. }
            | ApiError::PublishInProgress { .. }
            | ApiError::PreconditionFailed { .. }
            | ApiError::JobNotFound { .. } => write_message(self),
            ApiError::MissingParameter { parameter } => {
                format!("The parameter {parameter} is required.")
            }
            ApiError::UnknownField { field } => format!(
                "This dataset has no field {field:?}; the dataset's metadata lists its fields."
            ),
            ApiError::TextFieldExactMatch { field } => format!(
                "{field} is a text field and cannot be matched exactly; search it with q[{field}]=… instead."
            ),
            ApiError::InvalidGroupBy { field, field_type } => invalid_group_by(field, *field_type),
            ApiError::InvalidField { field, field_type } => {
                format!("field needs a number field, and {field} is a {field_type} field.")
            }
            ApiError::NoGeoFields { parameter } => format!(
                "{parameter} needs places, and this dataset has no geo pair (a latitude and a longitude field); its metadata names the pair under geo when it has one."
            ),
            ApiError::InvalidFacet { field, field_type } => invalid_facet(field, *field_type),
            ApiError::InvalidOperator {
                field,
                field_type,
                operator,
                allowed,
            } => invalid_operator(field, *field_type, operator, allowed),
            ApiError::InvalidCursor { reason } => format!(
                "This cursor cannot be followed: {reason}. Send it with the same conditions, sort, fields, facets and per_page as the request that gave it, or start again without it."
            ),
            ApiError::TooManyGroups { groups, max } => format!(
                "This answer would hold {groups} groups, more than {max}; add limit=N (at most {max}) to keep the first groups in sort order, or a filter to narrow the records."
            ),
            ApiError::DatasetNotFound { slug } => {
                format!("There is no dataset {slug:?}; GET /api/v1/datasets lists them.")
            }
            ApiError::RecordNotFound { id } => {
                format!("This dataset has no record with _id {id:?}.")
            }
            ApiError::VersionNotFound { version } => format!(
                "This dataset never had a version {version}; GET its versions to list them."
            ),
            ApiError::VersionGone { version, retained } => version_gone(*version, retained),
            ApiError::PayloadTooLarge { limit_bytes } => {
                format!("The request body is larger than {limit_bytes} bytes; send a smaller one.")
            }
            ApiError::RateLimited { retry_after } => {
                format!("Too many requests; try again in {retry_after} seconds.")
            }
            ApiError::ExportOverBudget { records, limit, .. } => {
                export_over_budget(*records, *limit)
            }
            ApiError::MissingToken
            | ApiError::InvalidToken
            | ApiError::NotFound
            | ApiError::MethodNotAllowed
            | ApiError::RequestTimeout
            | ApiError::Unavailable
            | ApiError::Internal => self.fixed_message().to_string(),
        }
    }

    /// The messages of the errors that carry nothing: the same sentence every time;
    /// `Internal`'s, which tells nothing of the cause, for any other.
    fn fixed_message(&self) -> &'static str {
        match self {
            ApiError::MissingToken => {
                "Send an API token in the header Authorization: Bearer <token>."
            }
            ApiError::InvalidToken => {
                "The API token is unknown, revoked or expired; get a new one on the account page."
            }
            ApiError::NotFound => "No such resource; see /api/v1/openapi.json for the API's paths.",
            ApiError::MethodNotAllowed => {
                "The API is read-only: use GET (POST only for the device flow and GraphQL)."
            }
            ApiError::RequestTimeout => {
                "The request body arrived too slowly; send it at once on a new connection."
            }
            ApiError::Unavailable => {
                "The data store cannot be reached right now; try again shortly."
            }
            _ => "Something went wrong on our side; it has been logged. Try again later.",
        }
    }
}

/// `group_by` on a field it cannot group: a date or a number can, with a bucket or a bin.
fn invalid_group_by(field: &str, field_type: FieldType) -> String {
    if field == "_id" {
        return "_id identifies single records and cannot be grouped by; group by a keyword field."
            .into();
    }
    match field_type {
        FieldType::Date => format!(
            "{field} is a date field: group it into buckets with {field}[year], [month], [day] or [hour]."
        ),
        FieldType::Number => format!(
            "{field} is a number field: group it into bins with {field}[<width>], such as {field}[100]."
        ),
        _ => format!("group_by needs a keyword field, and {field} is a {field_type} field."),
    }
}

/// `facet` on a field that is not a keyword: `agg` groups the others.
fn invalid_facet(field: &str, field_type: FieldType) -> String {
    if field == "_id" {
        return "_id identifies single records and cannot be a facet; count a keyword field."
            .into();
    }
    format!(
        "facet counts the values of keyword fields, and {field} is a {field_type} field; agg groups other fields (dates by bucket, numbers by bin)."
    )
}

/// An operator the field does not take, or no operator at all: says which it takes, and for
/// an unknown one, every operator there is.
fn invalid_operator(
    field: &str,
    field_type: FieldType,
    operator: &str,
    allowed: &[&'static str],
) -> String {
    let known = crate::operators::Op::parse(operator).is_some();
    let allowed = if allowed.is_empty() {
        format!("{field} takes no operator")
    } else {
        format!("{field} takes {}", allowed.join(", "))
    };
    if known {
        format!("{field} is a {field_type} field and does not take [{operator}]; {allowed}.")
    } else {
        format!(
            "There is no operator [{operator}]; the operators are {}, and {allowed}.",
            crate::operators::names(&crate::operators::ALL).join(", ")
        )
    }
}

fn version_gone(version: u64, retained: &[i64]) -> String {
    format!(
        "Version {version} of this dataset is no longer kept; the versions kept are {}.",
        retained
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// An export no wait can make fit: how many records the budget could take in one answer.
fn export_over_budget(records: u64, limit: u32) -> String {
    let per = crate::cost::RECORDS_PER_REQUEST;
    let most = u64::from(limit.saturating_sub(1)) * per;
    format!(
        "This export would send {records} records, which counts as {} requests (one plus one per {per} records): more than the whole budget of {limit} requests a minute. Narrow it with filters to at most {most} records.",
        1 + crate::cost::extra_requests(records)
    )
}

/// The message of an error of a write (contract §14.2).
fn write_message(error: &ApiError) -> String {
    match error {
        ApiError::NotGranted { slug } => format!(
            "This token's account holds no grant to publish {slug:?}; the operator grants one (odqs grant publish), and GET /api/v1/token lists the token's grants."
        ),
        ApiError::InvalidFile { message } => {
            format!("The file cannot be published: {message}.")
        }
        ApiError::UnsupportedMediaType { content_type } => format!(
            "A body of type {content_type:?} cannot be published; send text/csv, application/x-ndjson or application/json, optionally with Content-Encoding: gzip."
        ),
        ApiError::JobNotFound { id } => format!(
            "No job {id:?} belongs to this token's account; a write sent with Prefer: respond-async names its job in Location."
        ),
        ApiError::PublishInProgress { slug } => format!(
            "Another write to {slug:?} is running; nothing was published. Retry once it has ended."
        ),
        ApiError::PreconditionFailed { current } => match current {
            Some(tag) => format!(
                "If-Match does not name the dataset's current version, {tag}; nothing was published."
            ),
            None => {
                "If-Match names a version, and the dataset has none; nothing was published.".into()
            }
        },
        // Asked of the writes' errors only.
        other => other.code().into(),
    }
}
