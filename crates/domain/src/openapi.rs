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

/// The statuses a client may set on a policy: every one but `pending_approval`, which only
/// `POST /v1/policies/{id}/submit` reaches.
pub fn settable_policy_status() -> Object {
    use crate::policy::PolicyStatus;
    let settable = [PolicyStatus::Draft, PolicyStatus::Published, PolicyStatus::NeedsReview];
    ObjectBuilder::new().schema_type(Type::String).enum_values(Some(settable.map(PolicyStatus::as_str))).build()
}

/// The statuses a client may set on a task: every one but `in_review`, which only
/// `POST /v1/tasks/{id}/submit` reaches.
pub fn settable_task_status() -> Object {
    use crate::task::TaskStatus;
    let settable = TaskStatus::ALL.iter().copied().filter(|status| *status != TaskStatus::InReview);
    ObjectBuilder::new().schema_type(Type::String).enum_values(Some(settable.map(TaskStatus::as_str))).build()
}

/// A string `validation::text` accepts between `min` and `max` characters.
pub fn text(min: usize, max: usize) -> ObjectBuilder {
    let pattern = if min > 0 { NON_BLANK } else { NO_NUL };
    ObjectBuilder::new().schema_type(Type::String).min_length(Some(min)).max_length(Some(max)).pattern(Some(pattern))
}

/// Field schemas for `#[schema(schema_with = …)]`, which takes a function, not arguments.
macro_rules! text_fields {
    ($($(#[$doc:meta])* $name:ident = text($min:expr, $max:expr) $(, $nullable:ident)?;)*) => {$(
        $(#[$doc])*
        #[doc = concat!("The schema of `", stringify!($name), "`: a string whose length `validation::text` bounds.")]
        pub fn $name() -> Object {
            let schema = text($min, $max);
            $(let schema = schema.schema_type(nullable!($nullable));)?
            schema.build()
        }
    )*};
}

macro_rules! nullable {
    (nullable) => {
        SchemaType::from_iter([Type::String, Type::Null])
    };
}

text_fields! {
    context_question = text(1, crate::context::QUESTION_MAX);
    context_answer = text(1, crate::context::ANSWER_MAX);
    risk_title = text(1, crate::risk::TITLE_MAX);
    risk_description = text(1, crate::risk::DESCRIPTION_MAX);
    risk_treatment_description = text(0, crate::risk::DESCRIPTION_MAX), nullable;
    vendor_name = text(1, crate::vendor::NAME_MAX);
    vendor_description = text(1, crate::vendor::DESCRIPTION_MAX);
    task_title = text(1, crate::task::TITLE_MAX);
    task_description = text(0, crate::task::DESCRIPTION_MAX);
    task_rejection_reason = text(1, crate::task::REASON_MAX);
    policy_name = text(1, crate::policy::NAME_MAX);
    policy_description = text(0, crate::policy::DESCRIPTION_MAX);
    policy_template_id = text(1, crate::policy::TEMPLATE_ID_MAX), nullable;
    policy_change_note = text(0, crate::policy::NOTE_MAX), nullable;
    policy_rejection_reason = text(1, crate::policy::NOTE_MAX);
    control_name = text(1, crate::control::NAME_MAX);
    control_description = text(0, crate::control::DESCRIPTION_MAX);
}

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

/// A context entry's tags: distinct, non-blank, bounded.
pub fn context_tags() -> utoipa::openapi::Array {
    use crate::context::{TAG_MAX, TAGS_MAX};
    ArrayBuilder::new().items(text(1, TAG_MAX)).max_items(Some(TAGS_MAX)).unique_items(true).build()
}
