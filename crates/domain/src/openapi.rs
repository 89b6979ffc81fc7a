//! OpenAPI schemas of the domain's own value types (feature `openapi`), so that the HTTP layer's
//! document states exactly what the validation here accepts.

use std::borrow::Cow;

use utoipa::openapi::schema::{
    AnyOfBuilder, ArrayBuilder, KnownFormat, Object, ObjectBuilder, SchemaFormat, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

use crate::{Id, IdKind, Timestamp};

/// Text `validation::text` accepts with a minimum length: no NUL, not only white space. The class
/// lists Rust's `char::is_whitespace` exactly, so that a fuzzer's idea of "blank" is ours.
pub const NON_BLANK: &str = "^[^\\u0000]*[^\\u0000\\u0009-\\u000d\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000]*$";

/// Text `validation::text` accepts with no minimum length: anything without NUL.
pub const NO_NUL: &str = "^[^\\u0000]*$";

impl<K: IdKind> PartialSchema for Id<K> {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(format!("^{}_[0-9a-hjkmnp-tv-z]{{32}}$", K::PREFIX)))
            .examples([format!("{}_01jd0000000000000000000000000000", K::PREFIX)])
            .into()
    }
}

impl<K: IdKind> ToSchema for Id<K> {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed(K::NAME)
    }
}

impl PartialSchema for Timestamp {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
            .into()
    }
}

impl ToSchema for Timestamp {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Timestamp")
    }
}

/// The schema of a `string_enum!`: a string of the listed values.
#[doc(hidden)]
pub fn string_enum_schema(values: &[&str]) -> RefOr<Schema> {
    ObjectBuilder::new().schema_type(Type::String).enum_values(Some(values.iter().copied())).into()
}

/// A string `validation::text` accepts between `min` and `max` characters.
pub fn text(min: usize, max: usize) -> ObjectBuilder {
    let pattern = if min > 0 { NON_BLANK } else { NO_NUL };
    ObjectBuilder::new().schema_type(Type::String).min_length(Some(min)).max_length(Some(max)).pattern(Some(pattern))
}

/// The same, or null.
pub fn nullable_text(min: usize, max: usize) -> ObjectBuilder {
    text(min, max).schema_type(SchemaType::from_iter([Type::String, Type::Null]))
}

/// Field schemas for `#[schema(schema_with = …)]`, which takes a function, not arguments: each
/// record's `schemas` module declares its fields' with this, beside the bounds it reads, as
/// `title = text(1, super::TITLE_MAX);` (or `nullable_text`).
macro_rules! text_fields {
    ($($name:ident = $kind:ident($min:expr, $max:expr);)*) => {$(
        #[doc = concat!("The schema of `", stringify!($name), "`: a string whose length `validation::text` bounds.")]
        pub fn $name() -> ::utoipa::openapi::Object {
            $crate::openapi::$kind($min, $max).build()
        }
    )*};
}
pub(crate) use text_fields;

/// An absolute http(s) URL as `validation::http_url` takes it, or null. The pattern is narrower
/// than what the URL parser accepts (host names of letters, digits, dots and dashes, the last
/// label not numeric, so that it is never read as an IPv4 address), so that every value a client
/// builds from it is accepted.
pub fn nullable_http_url() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .format(Some(SchemaFormat::Custom("uri".to_owned())))
        .min_length(Some(1))
        .max_length(Some(crate::validation::URL_MAX))
        .pattern(Some(HTTP_URL))
        .build()
}

/// The path (with query) keeps to the characters RFC 3986 allows there, so that every match is also
/// a `uri` (no fragment: a second `#` would not be).
const HTTP_URL: &str = "^[Hh][Tt][Tt][Pp][Ss]?://([A-Za-z0-9-]+\\.)*[A-Za-z][A-Za-z0-9-]*(:[0-9]{1,4})?(/([A-Za-z0-9._~:/?@!$&'()*+,;=-]|%[0-9A-Fa-f]{2})*)?$";

/// Policy content: rich-text nodes (`RichTextNode`).
pub fn policy_content() -> utoipa::openapi::Array {
    ArrayBuilder::new().items(Ref::from_schema_name(RichTextNode::name())).build()
}

/// A rich-text node: a string `type`, optional `attrs` (object or null), optional `content`
/// (nodes, at most 32 levels deep) and, on `text` nodes, a string `text`; other members are kept.
/// No string anywhere in it may hold NUL, keys included (`RichTextValue`).
pub struct RichTextNode;

impl PartialSchema for RichTextNode {
    fn schema() -> RefOr<Schema> {
        let value = || Ref::from_schema_name(RichTextValue::name());
        let attrs = ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
            .property_names(Some(no_nul_key()))
            .additional_properties(Some(value()));
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("type", ObjectBuilder::new().schema_type(Type::String).pattern(Some(NO_NUL)))
            .required("type")
            .property("attrs", attrs)
            .property("content", ArrayBuilder::new().items(Ref::from_schema_name("RichTextNode")))
            .property("text", ObjectBuilder::new().schema_type(Type::String).pattern(Some(NO_NUL)))
            .property_names(Some(no_nul_key()))
            .additional_properties(Some(value()))
            .into()
    }
}

impl ToSchema for RichTextNode {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("RichTextNode")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((RichTextValue::name().into_owned(), RichTextValue::schema()));
    }
}

/// Any JSON value whose strings and object keys hold no NUL: the other members of a rich-text node.
pub struct RichTextValue;

impl PartialSchema for RichTextValue {
    fn schema() -> RefOr<Schema> {
        let value = || Ref::from_schema_name(RichTextValue::name());
        AnyOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::String).pattern(Some(NO_NUL)))
            .item(ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::Number, Type::Boolean, Type::Null])))
            .item(ArrayBuilder::new().items(value()))
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Object)
                    .property_names(Some(no_nul_key()))
                    .additional_properties(Some(value())),
            )
            .into()
    }
}

impl ToSchema for RichTextValue {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("RichTextValue")
    }
}

fn no_nul_key() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String).pattern(Some(NO_NUL))
}
