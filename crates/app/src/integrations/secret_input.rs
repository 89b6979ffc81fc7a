//! Deserialising secrets from request bodies without ever echoing them: serde's own type errors
//! quote the offending value (`invalid type: integer `12345``), which for a secret is a leak.

use std::collections::BTreeMap;

use secrecy::SecretString;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

/// An optional string secret (`null` or absent is `None`); any other JSON type is refused without
/// quoting it.
pub(crate) fn optional_secret<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<SecretString>, D::Error> {
    match serde_json::Value::deserialize(deserializer)? {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::String(text) => Ok(Some(SecretString::from(text))),
        _ => Err(D::Error::custom("must be a string")),
    }
}

/// `{fieldId: value}` with string values; a number is taken as its decimal text (number fields).
pub(crate) fn secret_map<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, SecretString>, D::Error> {
    // Read as a Value first: a type error on the map itself would quote it.
    let serde_json::Value::Object(raw) = serde_json::Value::deserialize(deserializer)? else {
        return Err(D::Error::custom("must be an object of field ids to strings"));
    };
    raw.into_iter()
        .map(|(id, value)| match value {
            serde_json::Value::String(text) => Ok((id, SecretString::from(text))),
            serde_json::Value::Number(number) => Ok((id, SecretString::from(number.to_string()))),
            _ => Err(D::Error::custom(format!("the value of {id} must be a string"))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use secrecy::ExposeSecret;

    use super::*;

    #[derive(Deserialize)]
    struct Body {
        #[serde(deserialize_with = "secret_map")]
        credentials: BTreeMap<String, SecretString>,
        #[serde(default, deserialize_with = "optional_secret")]
        client_secret: Option<SecretString>,
    }

    #[test]
    fn wrong_types_are_refused_without_quoting_the_value() {
        for body in [
            r#"{"credentials":{"k":[98765]}}"#,
            r#"{"credentials":{},"client_secret":98765}"#,
            r#"{"credentials":"98765"}"#,
            r#"{"credentials":98765}"#,
        ] {
            let error = serde_json::from_str::<Body>(body).err().unwrap().to_string();
            assert!(!error.contains("98765"), "{error}");
            assert!(error.contains("must be"), "{error}");
        }
    }

    #[test]
    fn strings_and_numbers_are_accepted() {
        let body: Body = serde_json::from_str(r#"{"credentials":{"k":"v","port":8443},"client_secret":"s"}"#).unwrap();
        assert_eq!(body.credentials["k"].expose_secret(), "v");
        assert_eq!(body.credentials["port"].expose_secret(), "8443");
        assert_eq!(body.client_secret.unwrap().expose_secret(), "s");
    }
}
