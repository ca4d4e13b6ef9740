//! The answers of the REST operations that are not errors and not a schema's body: an export's
//! stream and 304 Not Modified. (The error answers come from the error table:
//! [`crate::http::error::openapi`].)

use query::ExportFormat;
use query::cost::RECORDS_PER_REQUEST;
use query::export::BATCH_RECORDS;
use utoipa::ToResponse;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{ContentBuilder, KnownFormat, RefOr};

fn string() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String)
}

fn etag_header() -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(string())
        .description(Some(
            "The answer's tag, from the dataset's version and the normalized request: send it back in `If-None-Match` to get 304 while the dataset is unchanged",
        ))
        .build()
}

/// 200 of an export: the records as NDJSON or CSV, streamed.
pub struct ExportAnswer;

impl<'r> ToResponse<'r> for ExportAnswer {
    fn response() -> (&'r str, RefOr<utoipa::openapi::Response>) {
        let text = || {
            ContentBuilder::new()
                .schema(Some(
                    string().format(Some(SchemaFormat::Custom("binary".into()))),
                ))
                .build()
        };
        let mut builder = ResponseBuilder::new().description(format!(
            "Every matching record, streamed in chunks of {BATCH_RECORDS}. The export counts as one request for the rate limit plus one per started {RECORDS_PER_REQUEST} records (charged up front from the total; `RateLimit` shows what is left after it; an export the budget cannot cover now is 429). `Accept-Encoding: gzip` (or `br`, `zstd`) compresses it. A store failure after the first byte cuts the body short (no final chunk), which clients report as an incomplete answer."
        ));
        for format in ExportFormat::ALL {
            builder = builder.content(super::export::media_type(format), text());
        }
        let response = builder
            .header(
                "X-Total-Count",
                HeaderBuilder::new()
                    .schema(
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                            .minimum(Some(0)),
                    )
                    .description(Some("The number of records the export sends"))
                    .build(),
            )
            .header(
                "Content-Disposition",
                HeaderBuilder::new()
                    .schema(string())
                    .description(Some("`attachment; filename=\"<slug>.<ndjson|csv>\"`"))
                    .build(),
            )
            .build();
        ("ExportAnswer", response.into())
    }
}

/// 304 Not Modified.
pub struct NotModified;

impl<'r> ToResponse<'r> for NotModified {
    fn response() -> (&'r str, RefOr<utoipa::openapi::Response>) {
        (
            "NotModified",
            ResponseBuilder::new()
                .description("Not modified: the `If-None-Match` tag is the answer's current one")
                .header("ETag", etag_header())
                .build()
                .into(),
        )
    }
}
