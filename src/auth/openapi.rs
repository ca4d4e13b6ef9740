//! The device flow's shapes in the OpenAPI document (contract §8; RFC 6749, RFC 8628): its
//! request bodies, its answers and its OAuth-shaped errors, referenced by the `#[utoipa::path]`s
//! of [`super::device`].

use serde::Serialize;
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};

use query::error::{Answered, Code};
use query::scope::{DEFAULT_SCOPE, MAX_SCOPE_BYTES};

use super::grant::{GRANT_TYPE_URN, MAX_LABEL};

fn string() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String)
}

/// A scope a client may ask for: blank (the default), or words among `read`, `export` and
/// `dataset:<slug>` with `read` or `export` among them (contract §13.3).
const SCOPE_PATTERN: &str = r"^\s*$|^(?=[\s\S]*(?:^|\s)(?:read|export)(?:\s|$))\s*(?:(?:read|export|dataset:[A-Za-z0-9][A-Za-z0-9._~-]*)(?:\s+|$))+$";

/// A label: any text without a NUL character.
const VALUE_PATTERN: &str = r"^[^\u0000]*$";

/// An error of the device flow, in OAuth's shape (RFC 6749 §5.2, RFC 8628 §3.5).
#[derive(Serialize, ToSchema)]
pub struct OAuthErrorBody {
    /// The code, from the error table: the device flow's own, and those it shares with the
    /// API (listed in the document from the table).
    #[schema(schema_with = oauth_codes)]
    pub error: String,
    /// One sentence a person can act on.
    pub error_description: String,
}

/// The API's codes that the device flow answers too, in its shape.
const SHARED_CODES: [Code; 4] = [
    Code::InvalidRequest,
    Code::InvalidScope,
    Code::PayloadTooLarge,
    Code::RateLimited,
];

/// `OAuthErrorBody.error`: a string whose description lists the device flow's codes (its own
/// rows of the table, then [`SHARED_CODES`]) with their statuses.
fn oauth_codes() -> ObjectBuilder {
    let own = Code::ALL
        .iter()
        .copied()
        .filter(|code| code.answered() == Answered::OAuth);
    crate::http::error::openapi::code_schema(own.chain(SHARED_CODES))
}

/// `POST /auth/device` (RFC 8628 §3.1) as JSON: every parameter optional, unknown ones
/// ignored, `null` taken as absent. Documentation only; the handler reads the body itself
/// (`crate::auth::http::device`).
pub struct DeviceAuthorizationRequest;

impl utoipa::PartialSchema for DeviceAuthorizationRequest {
    fn schema() -> RefOr<Schema> {
        device_authorization(true)
    }
}

impl ToSchema for DeviceAuthorizationRequest {}

/// [`DeviceAuthorizationRequest`] as a form, where a value is always text (a form has no
/// `null`, so the text `null` is a scope word, and not one of them).
pub struct DeviceAuthorizationForm;

impl utoipa::PartialSchema for DeviceAuthorizationForm {
    fn schema() -> RefOr<Schema> {
        device_authorization(false)
    }
}

impl ToSchema for DeviceAuthorizationForm {}

/// The device authorization request's schema; JSON's (`json`) takes `null` for a scope.
fn device_authorization(json: bool) -> RefOr<Schema> {
    // JSON `null` is taken as absent.
    let label = |description: &str| {
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
            .max_length(Some(MAX_LABEL))
            .pattern(Some(VALUE_PATTERN))
            .description(Some(format!(
                "{description}; at most {MAX_LABEL} characters, no NUL"
            )))
    };
    ObjectBuilder::new()
        .description(Some(
            "Every parameter is optional (a standard OAuth client sends only `client_id`); unknown ones are ignored.",
        ))
        .property("device_name", label("What the approval page shows as the device asking"))
        .property("client", label("The client program asking, shown on the approval page"))
        .property(
            "client_id",
            label("A standard OAuth client's identifier; taken as `client` when `client` is absent"),
        )
        .property(
            "scope",
            ObjectBuilder::new()
                .schema_type(if json {
                    SchemaType::from_iter([Type::String, Type::Null])
                } else {
                    SchemaType::new(Type::String)
                })
                .max_length(Some(MAX_SCOPE_BYTES))
                .pattern(Some(SCOPE_PATTERN))
                .description(Some(format!(
                    "What the token may do, space-separated: `read`, `export`, `dataset:<slug>` (repeatable; none means every dataset), with `read` or `export` or both. Default `{DEFAULT_SCOPE}`; at most {MAX_SCOPE_BYTES} bytes. A word otherwise, or a dataset not published: 400 `invalid_scope`"
                ))),
        )
        .into()
}

/// The answer of `POST /auth/device` (RFC 8628 §3.2).
#[derive(Serialize, ToSchema)]
pub struct DeviceAuthorization {
    /// Secret; poll `POST /auth/token` with it. Starts `odqs_dc_`.
    pub device_code: String,
    /// What the person types on the approval page: two groups of four letters, `XXXX-XXXX`.
    pub user_code: String,
    /// `{site_url}/device`.
    pub verification_uri: String,
    /// `{site_url}/device?code=XXXX-XXXX`.
    pub verification_uri_complete: String,
    /// Seconds the codes live.
    pub expires_in: i64,
    /// Seconds to wait between polls.
    pub interval: i32,
}

/// `POST /auth/token` (RFC 8628 §3.4). Documentation only, as [`DeviceAuthorizationRequest`].
pub struct TokenRequest;

impl utoipa::PartialSchema for TokenRequest {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .description(Some("Unknown parameters are ignored."))
            .property(
                "grant_type",
                string()
                    .enum_values(Some([GRANT_TYPE_URN, "device_code"]))
                    .description(Some(format!(
                        "`{GRANT_TYPE_URN}`, or the short `device_code`"
                    ))),
            )
            .required("grant_type")
            .property(
                "device_code",
                string()
                    .min_length(Some(1))
                    .description(Some("The `device_code` of `POST /auth/device`")),
            )
            .required("device_code")
            .into()
    }
}

impl ToSchema for TokenRequest {}

/// A token granted by the device flow (RFC 6749 §5.1).
#[derive(Serialize, ToSchema)]
pub struct TokenAnswer {
    /// The API token: send it as `Authorization: Bearer <access_token>`.
    pub access_token: String,
    /// `Bearer`.
    pub token_type: String,
    /// Seconds the token lives.
    pub expires_in: i64,
    /// What the token may do: the scope asked for, in canonical order.
    #[schema(example = "read dataset:flights")]
    pub scope: String,
}

/// `POST /auth/revoke` (RFC 7009 §2.1). Documentation only, as [`DeviceAuthorizationRequest`].
pub struct RevokeRequest;

impl utoipa::PartialSchema for RevokeRequest {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .description(Some("Unknown parameters are ignored."))
            .property(
                "token",
                string()
                    .min_length(Some(1))
                    .description(Some("The API token to revoke")),
            )
            .required("token")
            .property(
                "token_type_hint",
                ObjectBuilder::new()
                    .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
                    .description(Some("`access_token`; optional, and not needed")),
            )
            .into()
    }
}

impl ToSchema for RevokeRequest {}

/// `GET /token`: the calling token, never its secret.
#[derive(Serialize, ToSchema)]
pub struct TokenInfo {
    /// The token's label, as the account page shows it.
    pub name: String,
    /// What the token may do.
    #[schema(example = "read export")]
    pub scope: String,
    /// When it was minted (RFC 3339).
    pub created_at: String,
    /// When it stops working (RFC 3339); `null`: never.
    pub expires_at: Option<String>,
    /// The token's last four characters, to tell tokens apart.
    pub last4: String,
    /// What the token may publish: its account's grants, each narrowed to the
    /// token's `dataset:` words; empty without the `publish` scope.
    pub grants: Vec<GrantInfo>,
}

/// A grant as a token may use it.
#[derive(Serialize, ToSchema)]
pub struct GrantInfo {
    /// The right granted: `publish`.
    #[schema(example = "publish")]
    pub right: String,
    /// The datasets: a slug, a prefix ending in `*`, or `*`.
    #[schema(example = "city-*")]
    pub datasets: String,
}
