//! The secrets an automation logs in with (`type secret "NAME"`): their names and the write-only
//! body that sets one. The values themselves are only ever in `SecretString`s.

use secrecy::{ExposeSecret, SecretString};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

use crate::validation::{FieldError, ValidationErrors};

/// The longest name: a letter, then letters, digits and `_`.
pub const NAME_MAX: usize = 64;
/// The longest value, in characters.
pub const VALUE_MAX: usize = 4_096;
/// The most secrets one automation may keep.
pub const PER_AUTOMATION_MAX: usize = 50;

/// A secret's name: `[A-Za-z][A-Za-z0-9_]{0,63}`, case-sensitive. The grammar keeps names safe
/// in a path, a step and a vault owner id, and apart from the values they stand for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SecretName(String);

impl SecretName {
    /// `field` names the problem in the 400 (`name` for the path's name).
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        let mut chars = raw.chars();
        let starts_with_letter = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
        let rest_valid = chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !starts_with_letter || !rest_valid || raw.len() > NAME_MAX {
            return Err(FieldError::new(
                "name",
                format!("must be a letter followed by up to {} letters, digits or `_`", NAME_MAX - 1),
            ));
        }
        Ok(Self(raw.to_owned()))
    }

    /// The name as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SecretName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The body of `PUT /v1/browser/automations/{id}/secrets/{NAME}`. `Debug` never shows the value.
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretInput {
    /// 1 to 4096 characters; never answered back.
    #[serde(default, deserialize_with = "secret_text")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, min_length = 1, max_length = 4096, required = true, write_only))]
    pub value: Option<SecretString>,
}

impl std::fmt::Debug for SecretInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretInput").field("value", &self.value.as_ref().map(|_| "[REDACTED]")).finish()
    }
}

impl SecretInput {
    /// The value, checked for presence and length (the message never quotes it).
    pub fn value(self) -> Result<SecretString, ValidationErrors> {
        let Some(value) = self.value else { return Err(FieldError::new("value", "is required").into()) };
        let length = value.expose_secret().chars().count();
        if length == 0 || length > VALUE_MAX {
            return Err(FieldError::new("value", format!("must be 1 to {VALUE_MAX} characters long")).into());
        }
        Ok(value)
    }
}

/// A JSON string as a secret; any other type is refused without quoting it (serde's own type
/// errors would: `invalid type: integer `12345``).
fn secret_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<SecretString>, D::Error> {
    match serde_json::Value::deserialize(deserializer)? {
        serde_json::Value::String(text) => Ok(Some(SecretString::from(text))),
        _ => Err(D::Error::custom("must be a string")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    #[test]
    fn names_follow_the_grammar() {
        for good in ["a", "Password", "admin_password_2", &"x".repeat(NAME_MAX)] {
            assert_eq!(SecretName::parse(good).unwrap().as_str(), good);
        }
        for bad in ["", "1password", "_x", "pass word", "pass-word", "päss", &"x".repeat(NAME_MAX + 1)] {
            assert_eq!(SecretName::parse(bad).unwrap_err().field, "name", "{bad:?}");
        }
    }

    #[test]
    fn values_are_bounded_and_never_echoed() {
        let parse = |body: &str| serde_json::from_str::<SecretInput>(body);
        assert_eq!(parse(r#"{"value":"hunter2"}"#).unwrap().value().unwrap().expose_secret(), "hunter2");
        for body in [r#"{"value":""}"#, r#"{}"#, &format!(r#"{{"value":"{}"}}"#, "v".repeat(VALUE_MAX + 1))] {
            assert_eq!(parse(body).unwrap().value().unwrap_err().0[0].field, "value", "{body}");
        }
        let refused = parse(r#"{"value":987654321}"#).err().unwrap().to_string();
        assert!(!refused.contains("987654321"), "{refused}");
        let debug = format!("{:?}", parse(r#"{"value":"hunter2"}"#).unwrap());
        assert!(!debug.contains("hunter2"), "{debug}");
    }
}
