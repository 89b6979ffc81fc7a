//! The organization: the tenant every other record belongs to.

use serde::Deserialize;

use crate::validation::{FieldError, ValidationErrors, device_label, http_url, map_nullable, map_present, set, text};
use crate::{OrganizationId, Timestamp, nullable, required_non_null};

/// The longest name, in characters.
pub const NAME_MAX: usize = 255;
/// The longest slug, in characters.
pub const SLUG_MAX: usize = 64;
/// The most characters of `metadata`'s JSON text.
pub const METADATA_MAX: usize = 10_000;

/// An organization: the tenant every other record belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Organization {
    /// The organization's id.
    pub id: OrganizationId,
    /// 1 to [`NAME_MAX`] characters.
    pub name: String,
    /// Unique: lowercase letters, digits and inner hyphens, up to [`SLUG_MAX`] characters.
    pub slug: String,
    /// An http(s) URL of its logo, if any.
    pub logo: Option<String>,
    /// Free JSON text kept for clients, up to [`METADATA_MAX`] characters.
    pub metadata: Option<String>,
    /// Its website, an http(s) URL, if any.
    pub website: Option<String>,
    /// Whether the client finished its onboarding.
    pub onboarding_completed: bool,
    /// Whether the organization may use the product.
    pub has_access: bool,
    /// The device management system's label of its devices, if set.
    pub device_manager_label_id: Option<i64>,
    /// Whether the device management set-up is done.
    pub is_device_manager_setup_completed: bool,
    /// `#rgb` or `#rrggbb`, if set.
    pub primary_color: Option<String>,
    /// When it was created.
    pub created_at: Timestamp,
}

impl Organization {
    /// The entity tag of this state of the organization
    /// ([`ETag::of_state`](crate::etag::ETag::of_state)): it keeps no `updatedAt`, so its whole
    /// state counts.
    pub fn etag(&self) -> crate::etag::ETag {
        crate::etag::ETag::of_state(self.id.as_str(), self)
    }
}

/// `a-z`, `0-9` and `-`, not at either end, 1 to 64 characters.
pub fn slug(value: String) -> Result<String, FieldError> {
    let well_formed = !value.is_empty()
        && value.len() <= SLUG_MAX
        && value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-');
    if well_formed {
        Ok(value)
    } else {
        Err(FieldError::new(
            "slug",
            format!("must be 1 to {SLUG_MAX} of a-z, 0-9 and -, not starting or ending with -"),
        ))
    }
}

/// A slug derived from a name: lower-cased, runs of other characters turned into one `-`.
pub fn slugify(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    let cut: String = slug.chars().take(SLUG_MAX - 9).collect();
    if cut.is_empty() { "org".to_owned() } else { cut.trim_end_matches('-').to_owned() }
}

fn color(value: String) -> Result<String, FieldError> {
    let hex = value.strip_prefix('#').unwrap_or("");
    if matches!(hex.len(), 3 | 6) && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(value)
    } else {
        Err(FieldError::new("primaryColor", "must be a hex colour such as #1a2b3c or #abc"))
    }
}

fn metadata(value: String) -> Result<String, FieldError> {
    let value = text("metadata", value, 0, METADATA_MAX)?;
    match serde_json::from_str::<serde::de::IgnoredAny>(&value) {
        Ok(_) => Ok(value),
        Err(_) => Err(FieldError::new("metadata", "must be valid JSON text")),
    }
}

impl Organization {
    /// A new organization; without a slug, one is derived from the name.
    pub fn create(name: String, slug_text: Option<String>, now: Timestamp) -> Result<Self, ValidationErrors> {
        let name = text("name", name, 1, NAME_MAX)?;
        let slug = slug(slug_text.unwrap_or_else(|| slugify(&name)))?;
        Ok(Self {
            id: OrganizationId::generate(),
            name,
            slug,
            logo: None,
            metadata: None,
            website: None,
            onboarding_completed: false,
            has_access: true,
            device_manager_label_id: None,
            is_device_manager_setup_completed: false,
            primary_color: None,
            created_at: now,
        })
    }

    /// Applies a validated patch.
    pub fn apply(&mut self, patch: &OrganizationPatch) {
        let c = &patch.0;
        set(&mut self.name, &c.name);
        set(&mut self.slug, &c.slug);
        set(&mut self.logo, &c.logo);
        set(&mut self.metadata, &c.metadata);
        set(&mut self.website, &c.website);
        set(&mut self.onboarding_completed, &c.onboarding_completed);
        set(&mut self.has_access, &c.has_access);
        set(&mut self.device_manager_label_id, &c.device_manager_label_id);
        set(&mut self.is_device_manager_setup_completed, &c.is_device_manager_setup_completed);
        set(&mut self.primary_color, &c.primary_color);
    }
}

/// The body of `PATCH /v1/organization`: only present fields change; `null` clears a nullable field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrganizationChanges {
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::name))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub name: Option<String>,
    /// Unique among organizations (else 409).
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::slug))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub slug: Option<String>,
    /// Absent: unchanged; `null`: cleared.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::nullable_http_url))]
    #[serde(default, deserialize_with = "nullable")]
    pub logo: Option<Option<String>>,
    /// JSON text.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::metadata))]
    #[serde(default, deserialize_with = "nullable")]
    pub metadata: Option<Option<String>>,
    /// Absent: unchanged; `null`: cleared.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::nullable_http_url))]
    #[serde(default, deserialize_with = "nullable")]
    pub website: Option<Option<String>>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = bool))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub onboarding_completed: Option<bool>,
    /// Read-only: only its current value is accepted (else 403); `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = bool))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub has_access: Option<bool>,
    /// Only its current value is accepted (else 403): the operator assigns device labels
    /// (`admin set-device-label`).
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::people::schemas::device_label))]
    #[serde(default, deserialize_with = "nullable")]
    pub device_manager_label_id: Option<Option<i64>>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = bool))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub is_device_manager_setup_completed: Option<bool>,
    /// Absent: unchanged; `null`: cleared.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::color))]
    #[serde(default, deserialize_with = "nullable")]
    pub primary_color: Option<Option<String>>,
}

/// The schemas of this module's inputs, as the validation here checks them.
#[cfg(feature = "openapi")]
pub mod schemas {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};

    /// URLs that `validation::http_url` accepts: `http`/`https`, a DNS host name whose last label
    /// starts with a letter, an optional port, then anything without control characters. (The
    /// check accepts more, e.g. IP addresses and user info; the pattern keeps to what is certain.)
    pub const HTTP_URL: &str = "^[Hh][Tt][Tt][Pp][Ss]?://(?:[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\\.)*[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*(?::[0-9]{1,4})?(?:[/?#][^\\u0000-\\u001f\\u007f-\\u009f]*)?$";

    /// `validation::http_url`: an absolute http(s) URL of at most 2048 characters.
    pub fn http_url() -> ObjectBuilder {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(crate::validation::URL_MAX))
            .pattern(Some(HTTP_URL))
    }

    /// An http(s) URL or `null`.
    pub fn nullable_http_url() -> utoipa::openapi::Object {
        http_url().schema_type(SchemaType::from_iter([Type::String, Type::Null])).build()
    }

    /// 1 to [`NAME_MAX`](super::NAME_MAX) characters.
    pub fn name() -> utoipa::openapi::Object {
        crate::openapi::text(1, super::NAME_MAX).build()
    }

    /// Lowercase letters, digits and inner hyphens.
    pub fn slug() -> utoipa::openapi::Object {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(super::SLUG_MAX))
            .pattern(Some("^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$"))
            .build()
    }

    /// `#rgb`, `#rrggbb` or `null`.
    pub fn color() -> utoipa::openapi::Object {
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
            .pattern(Some("^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"))
            .build()
    }

    /// JSON text of at most 10,000 characters. A regular expression cannot describe JSON, so the
    /// pattern admits the JSON texts nested at most one level deep (a scalar, or an array or object
    /// of scalars) without `\u` escapes; the service accepts any JSON text.
    pub fn metadata() -> utoipa::openapi::Object {
        let ws = "[ \\t\\n\\r]*";
        let string = r#""(?:[^"\\\u0000-\u001f]|\\["\\/bfnrt])*""#;
        let number = "-?(?:0|[1-9][0-9]{0,14})(?:\\.[0-9]{1,15})?(?:[eE][+-]?[0-9]{1,2})?";
        let scalar = format!("(?:null|true|false|{number}|{string})");
        let member = format!("{string}{ws}:{ws}{scalar}");
        let object = format!("\\{{{ws}(?:{member}(?:{ws},{ws}{member})*)?{ws}\\}}");
        let array = format!("\\[{ws}(?:{scalar}(?:{ws},{ws}{scalar})*)?{ws}\\]");
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
            .content_media_type("application/json")
            .max_length(Some(super::METADATA_MAX))
            .pattern(Some(format!("^{ws}(?:{scalar}|{object}|{array}){ws}$")))
            .build()
    }
}

/// Validated changes to an organization.
#[derive(Debug, Clone)]
pub struct OrganizationPatch(OrganizationChanges);

impl OrganizationPatch {
    /// Validates `changes`; the first wrong field is the error.
    pub fn new(changes: OrganizationChanges) -> Result<Self, ValidationErrors> {
        Ok(Self(OrganizationChanges {
            name: map_present(changes.name, |n| text("name", n, 1, NAME_MAX))?,
            slug: map_present(changes.slug, slug)?,
            logo: map_nullable(changes.logo, |l| http_url("logo", l))?,
            metadata: map_nullable(changes.metadata, metadata)?,
            website: map_nullable(changes.website, |w| http_url("website", w))?,
            primary_color: map_nullable(changes.primary_color, color)?,
            device_manager_label_id: map_nullable(changes.device_manager_label_id, |l| {
                device_label("deviceManagerLabelId", l)
            })?,
            ..changes
        }))
    }

    /// The device label the patch assigns, if it assigns one.
    pub fn device_label(&self) -> Option<i64> {
        self.0.device_manager_label_id.flatten()
    }

    /// Takes out the fields only the operator sets (`deviceManagerLabelId`, `hasAccess`), so the
    /// patch no longer writes them; the caller compares what was asked with the stored values.
    pub fn take_operator_fields(&mut self) -> OperatorFields {
        OperatorFields {
            device_manager_label_id: self.0.device_manager_label_id.take(),
            has_access: self.0.has_access.take(),
        }
    }
}

/// What a tenant's `PATCH /v1/organization` asked of the fields the operator sets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OperatorFields {
    /// `deviceManagerLabelId`, when present: `Some(None)` clears it.
    pub device_manager_label_id: Option<Option<i64>>,
    /// `hasAccess`, when present.
    pub has_access: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_derived_and_checked() {
        assert_eq!(slugify("Acme  Corp, Inc."), "acme-corp-inc");
        assert_eq!(slugify("!!!"), "org");
        assert!(slug("Acme".into()).is_err());
        assert!(slug("-acme".into()).is_err());
        assert!(slug("acme-2".into()).is_ok());
    }

    #[test]
    fn patch_checks_colour_metadata_and_urls() {
        let parse = |json: &str| OrganizationPatch::new(serde_json::from_str(json).unwrap());
        assert!(parse(r##"{"primaryColor":"#12ab9F"}"##).is_ok());
        assert_eq!(parse(r#"{"primaryColor":"red"}"#).unwrap_err().0[0].field, "primaryColor");
        assert_eq!(parse(r#"{"metadata":"{not json"}"#).unwrap_err().0[0].field, "metadata");
        assert_eq!(parse(r#"{"logo":"ftp://x"}"#).unwrap_err().0[0].field, "logo");
        assert!(parse(r#"{"metadata":"{\"plan\":\"pro\"}","logo":null}"#).is_ok());
    }
}

/// The body of `POST /v1/organizations`.
#[derive(Debug, Clone, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewOrganization {
    /// 1 to 255 characters.
    pub name: String,
    /// Derived from the name when absent (with a random suffix when taken); one given must be free.
    #[serde(default)]
    pub slug: Option<String>,
}
