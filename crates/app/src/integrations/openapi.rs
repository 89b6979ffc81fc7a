//! OpenAPI schemas (feature `openapi`) of what the integration use cases take and give, for the
//! HTTP layer's document. The types of `compliance-credentials` that the views carry derive their
//! schemas in that crate (its feature `openapi`, which this crate's enables).

use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{Object, RefOr, Schema};

/// A provider slug as manifests declare them (`docs/integrations.md`).
pub const SLUG_PATTERN: &str = "^[a-z0-9][a-z0-9-]*$";
/// Longest provider slug.
pub const SLUG_MAX: usize = 63;

/// Text with at least one character that is neither white space nor a control character, and no
/// control character (`char::is_control`) anywhere: what OAuth app values must be.
pub const NON_BLANK_NO_CONTROL: &str = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000-\\u001f\\u007f-\\u009f]*$";
/// Any text without control characters.
pub const NO_CONTROL: &str = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$";

/// A provider slug.
pub fn slug() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(SLUG_MAX))
        .pattern(Some(SLUG_PATTERN))
        .examples(["github"])
        .build()
}

/// A provider slug in a request body: any string is taken, an unknown one is a 404.
pub fn slug_input() -> Object {
    let mut schema = slug();
    schema.description = Some("The provider's slug; 404 when no provider has it.".to_owned());
    schema
}

fn bounded(max: usize, pattern: &str) -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String).max_length(Some(max)).pattern(Some(pattern))
}

pub(crate) fn client_id() -> Object {
    bounded(super::limits::CLIENT_ID_MAX, NON_BLANK_NO_CONTROL).min_length(Some(1)).build()
}

pub(crate) fn client_secret() -> Object {
    let types = [Type::String, Type::Null];
    ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter(types))
        .min_length(Some(1))
        .max_length(Some(super::limits::CLIENT_SECRET_MAX))
        .pattern(Some(NON_BLANK_NO_CONTROL))
        .description(Some(
            "The client secret; write-only. May be left out or `null` when an app is configured already \
             (the stored secret is kept); without a stored app that is a 400.",
        ))
        .build()
}

pub(crate) fn custom_settings_input() -> Object {
    let value: RefOr<Schema> = bounded(super::limits::SETTING_MAX, NO_CONTROL).into();
    let types = [Type::Object, Type::Null];
    ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter(types))
        .additional_properties(Some(value))
        .description(Some(
            "`{settingId: value}`: the provider's `oauth.customSettings`. Every required setting must have a \
             non-blank value and no other id may appear; the server answers 400 otherwise (the ids are \
             provider-specific, so this schema cannot list them).",
        ))
        .build()
}

/// `{fieldId: value}`: the values of the provider's credential fields.
pub(crate) fn credentials_input() -> Object {
    let value = ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([Type::String, Type::Number]))
        .max_length(Some(super::limits::VALUE_MAX))
        .pattern(Some(compliance_domain::openapi::NO_NUL));
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .additional_properties(Some(value))
        .description(Some(
            "`{fieldId: value}` for the provider's `credentialFields` (a number is taken as its decimal text). \
             The fields are provider-specific: a missing required field, an unknown field or a value the \
             field's type refuses (e.g. a `url` field's value that is not an http(s) URL, a `select` \
             value not among its options) is a 400 naming `credentials.<fieldId>`.",
        ))
        .build()
}

/// The optional `redirectUrl` of an OAuth start.
pub(crate) fn redirect_url() -> Object {
    let types = [Type::String, Type::Null];
    ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter(types))
        .pattern(Some("^https?://[^/?#]"))
        .description(Some(
            "Where the callback sends the browser at the end: an absolute http(s) URL whose origin is the \
             service's `PUBLIC_URL` or one of `OAUTH_REDIRECT_ORIGINS`; any other is a 400 naming \
             `redirectUrl` (the allowed origins are configuration, so this schema cannot list them).",
        ))
        .build()
}
