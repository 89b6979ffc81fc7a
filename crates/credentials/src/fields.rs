//! Credential fields: the ones each strategy generates or declares, and validation of submitted values.

use std::collections::{BTreeMap, BTreeSet};

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::field_error::{FieldError, ValidationErrors, is_http_url};

/// One input the user fills in when connecting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "openapi",
    schema(description = "One input the user fills in when connecting; absent members are left out.")
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CredentialField {
    pub id: String,
    pub label: String,
    #[serde(rename = "type")]
    pub field_type: FieldType,
    pub required: bool,
    // `None` is left out, never `null`.
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help_text: Option<String>,
    /// Only `select` and `combobox` fields have options.
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<FieldOption>>,
}

/// Input kinds of a credential field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = CredentialFieldType))]
#[serde(rename_all = "snake_case")]
pub enum FieldType {
    Text,
    Password,
    Textarea,
    Select,
    Combobox,
    Number,
    Url,
}

impl FieldType {
    /// select and combobox carry `options`; no other type does.
    pub fn takes_options(self) -> bool {
        matches!(self, Self::Select | Self::Combobox)
    }
}

/// One choice of a select or combobox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "openapi",
    schema(as = CredentialFieldOption, description = "One choice of a `select` or `combobox` field.")
)]
#[serde(deny_unknown_fields)]
pub struct FieldOption {
    pub value: String,
    pub label: String,
}

/// The id of the one field an `api_key` strategy generates.
pub const API_KEY_FIELD_ID: &str = "api_key";

/// Submitted credential values by field id. Every value is secret: `Debug` shows none of them.
#[derive(Debug, Clone, Default)]
pub struct CredentialValues(BTreeMap<String, SecretString>);

impl CredentialValues {
    pub fn get(&self, id: &str) -> Option<&SecretString> {
        self.0.get(id)
    }

    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// Wraps already-validated values (e.g. decrypted from the vault).
    pub fn from_validated(values: BTreeMap<String, SecretString>) -> Self {
        Self(values)
    }

    pub fn into_inner(self) -> BTreeMap<String, SecretString> {
        self.0
    }
}

/// Checks submitted values against `fields`. Errors name the field, never the value. An optional
/// field submitted empty is dropped, so checks see it as missing.
pub fn validate_values(
    fields: &[CredentialField],
    submitted: BTreeMap<String, SecretString>,
) -> Result<CredentialValues, ValidationErrors> {
    let known: BTreeSet<&str> = fields.iter().map(|f| f.id.as_str()).collect();
    let mut errors: Vec<FieldError> = submitted
        .keys()
        .filter(|id| !known.contains(id.as_str()))
        .map(|id| FieldError::new(id.clone(), "is not a field of this integration"))
        .collect();
    let mut accepted = BTreeMap::new();
    for field in fields {
        match submitted.get(&field.id) {
            Some(value) if !value.expose_secret().trim().is_empty() => {
                if let Some(message) = value_problem(field, value.expose_secret()) {
                    errors.push(FieldError::new(field.id.clone(), message));
                } else {
                    accepted.insert(field.id.clone(), value.clone());
                }
            }
            _ if field.required => errors.push(FieldError::new(field.id.clone(), "is required")),
            _ => {}
        }
    }
    ValidationErrors::into_result(errors).map(|()| CredentialValues(accepted))
}

fn value_problem(field: &CredentialField, value: &str) -> Option<&'static str> {
    match field.field_type {
        FieldType::Number if !value.trim().parse::<f64>().is_ok_and(f64::is_finite) => Some("must be a number"),
        FieldType::Url if !is_http_url(value) => Some("must be an http or https URL"),
        FieldType::Select if !field.options.iter().flatten().any(|o| o.value == value) => {
            Some("must be one of the offered options")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    fn field(id: &str, field_type: FieldType, required: bool) -> CredentialField {
        CredentialField {
            id: id.into(),
            label: id.into(),
            field_type,
            required,
            placeholder: None,
            help_text: None,
            options: field_type.takes_options().then(|| {
                vec![
                    FieldOption { value: "eu".into(), label: "EU".into() },
                    FieldOption { value: "us".into(), label: "US".into() },
                ]
            }),
        }
    }

    fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, SecretString> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), SecretString::from(*v))).collect()
    }

    #[test]
    fn required_values_must_be_present_and_non_empty() {
        let fields = [field("a", FieldType::Text, true), field("b", FieldType::Text, true)];
        let err = validate_values(&fields, values(&[("a", "   ")])).unwrap_err();
        assert_eq!(err.for_field("a")[0].message, "is required");
        assert_eq!(err.for_field("b")[0].message, "is required");
        assert!(validate_values(&fields, values(&[("a", "x"), ("b", "y")])).is_ok());
    }

    #[test]
    fn optional_empty_values_are_dropped() {
        let fields = [field("a", FieldType::Number, false)];
        let ok = validate_values(&fields, values(&[("a", "")])).unwrap();
        assert!(ok.get("a").is_none());
    }

    #[test]
    fn numbers_must_parse() {
        let fields = [field("n", FieldType::Number, true)];
        assert!(validate_values(&fields, values(&[("n", "42.5")])).is_ok());
        assert!(validate_values(&fields, values(&[("n", "-3")])).is_ok());
        for bad in ["four", "NaN", "inf", "1,5"] {
            let err = validate_values(&fields, values(&[("n", bad)])).unwrap_err();
            assert_eq!(err.for_field("n")[0].message, "must be a number", "{bad}");
        }
    }

    #[test]
    fn urls_must_be_http_or_https() {
        let fields = [field("u", FieldType::Url, true)];
        assert!(validate_values(&fields, values(&[("u", "https://acme.example.com/api")])).is_ok());
        for bad in ["ftp://x.test", "javascript:alert(1)", "acme.example.com", "http://"] {
            assert!(validate_values(&fields, values(&[("u", bad)])).is_err(), "{bad}");
        }
    }

    #[test]
    fn select_only_accepts_offered_values_and_combobox_any_string() {
        let fields = [field("s", FieldType::Select, true), field("c", FieldType::Combobox, true)];
        assert!(validate_values(&fields, values(&[("s", "eu"), ("c", "ap-south")])).is_ok());
        let err = validate_values(&fields, values(&[("s", "ap"), ("c", "eu")])).unwrap_err();
        assert_eq!(err.0.len(), 1);
        assert_eq!(err.for_field("s")[0].message, "must be one of the offered options");
    }

    #[test]
    fn unknown_keys_are_refused_and_values_never_appear_in_errors() {
        let fields = [field("n", FieldType::Number, true)];
        let err = validate_values(&fields, values(&[("n", "s3cr3t-value"), ("extra", "other-s3cr3t")])).unwrap_err();
        assert_eq!(err.for_field("extra")[0].message, "is not a field of this integration");
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
    }
}
