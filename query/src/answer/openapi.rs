//! The OpenAPI schemas of the answers that their derives cannot describe (a record's free-form
//! fields, [`Stats`]' flattened statistics, [`Percentiles`]' labelled map), for the REST front
//! end's document; built only with the `openapi` feature.

use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::{KnownFormat, RefOr};
use utoipa::{PartialSchema, ToSchema};

use crate::answer::views::{Percentiles, Record, Stats};

impl PartialSchema for Record {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .description(Some(
                "A record: `_id` (always present, a string) and the dataset's fields, as its schema entries describe them; dotted field names are nested objects.",
            ))
            .property("_id", ObjectBuilder::new().schema_type(Type::String))
            .required("_id")
            .additional_properties(Some(AdditionalProperties::FreeForm(true)))
            .into()
    }
}

impl ToSchema for Record {}

/// The schema of [`Stats`] written out, because a flattened `Option` would otherwise be
/// described as "`count` and maybe something": generated clients then type only `count`.
impl PartialSchema for Stats {
    fn schema() -> RefOr<Schema> {
        let number = |description: &str| {
            ObjectBuilder::new()
                .schema_type(Type::Number)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Double)))
                .description(Some(description))
        };
        let nullable = |description: &str| {
            number(description).schema_type(utoipa::openapi::schema::SchemaType::from_iter([
                Type::Number,
                Type::Null,
            ]))
        };
        ObjectBuilder::new()
            .description(Some(
                "A group's statistics: `count` always; `sum`, `avg`, `min`, `max` and `percentiles` when the request names a number `field` (`sum` 0 and the others null in a group without values of it).",
            ))
            .property(
                "count",
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                    .minimum(Some(0))
                    .description(Some("Records in the group")),
            )
            .required("count")
            .property("sum", number("Sum of `field` (an integer when every value is one)"))
            .property("avg", nullable("Mean of `field`"))
            .property("min", nullable("Smallest value of `field`"))
            .property("max", nullable("Largest value of `field`"))
            .property(
                "missing",
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                    .minimum(Some(0))
                    .description(Some("Records of the group without a value of `field`")),
            )
            .property("percentiles", Percentiles::schema())
            .into()
    }
}

impl ToSchema for Stats {}

impl PartialSchema for Percentiles {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .description(Some(
                "The requested percentiles of `field` (`percentiles`, default 25, 50, 75), keyed by label; null in a group without values of it.",
            ))
            .additional_properties(Some(AdditionalProperties::RefOr(RefOr::T(
                ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
                        Type::Number,
                        Type::Null,
                    ]))
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Double)))
                    .into(),
            ))))
            .into()
    }
}

impl ToSchema for Percentiles {}
