//! The credential fields each strategy asks the user for: generated for `api_key` and `basic`,
//! declared by a `custom` configuration, none for `oauth2`.

use crate::fields::{API_KEY_FIELD_ID, CredentialField, FieldType};
use crate::strategy::{AuthStrategy, BasicConfig};

/// The fields the user fills in for `strategy` (none for oauth2: the user only clicks Connect).
pub fn credential_fields(strategy: &AuthStrategy) -> Vec<CredentialField> {
    match strategy {
        AuthStrategy::OAuth2(_) => Vec::new(),
        AuthStrategy::ApiKey(_) => vec![api_key_field()],
        AuthStrategy::Basic(config) => basic_fields(config),
        AuthStrategy::Custom(config) => config.credential_fields.clone(),
    }
}

fn api_key_field() -> CredentialField {
    CredentialField {
        id: API_KEY_FIELD_ID.to_owned(),
        label: "API Key".to_owned(),
        field_type: FieldType::Password,
        required: true,
        placeholder: Some("Enter your API key".to_owned()),
        help_text: Some("The API key from the service's settings. It is stored encrypted.".to_owned()),
        options: None,
    }
}

fn basic_fields(config: &BasicConfig) -> Vec<CredentialField> {
    let field = |id: &str, label: &str, field_type| CredentialField {
        id: id.to_owned(),
        label: label.to_owned(),
        field_type,
        required: true,
        placeholder: None,
        help_text: None,
        options: None,
    };
    vec![
        field(&config.username_field, "Username", FieldType::Text),
        field(&config.password_field, "Password", FieldType::Password),
    ]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;
    use crate::fields::FieldOption;
    use crate::strategy::{ApiKeyConfig, ApiKeyLocation, CustomConfig};

    fn field(id: &str, field_type: FieldType, required: bool) -> CredentialField {
        CredentialField {
            id: id.into(),
            label: id.into(),
            field_type,
            required,
            placeholder: None,
            help_text: None,
            options: field_type.takes_options().then(|| vec![FieldOption { value: "eu".into(), label: "EU".into() }]),
        }
    }

    #[test]
    fn api_key_generates_exactly_one_password_field() {
        let strategy = AuthStrategy::ApiKey(ApiKeyConfig {
            location: ApiKeyLocation::Header,
            name: "X-Key".into(),
            prefix: String::new(),
        });
        let fields = credential_fields(&strategy);
        assert_eq!(fields.len(), 1);
        let f = &fields[0];
        assert_eq!(
            (f.id.as_str(), f.label.as_str(), f.field_type, f.required),
            ("api_key", "API Key", FieldType::Password, true)
        );
        assert!(f.placeholder.is_some() && f.help_text.is_some() && f.options.is_none());
    }

    #[test]
    fn basic_generates_username_and_password_under_configured_ids() {
        let strategy =
            AuthStrategy::Basic(BasicConfig { username_field: "email".into(), password_field: "secret".into() });
        let fields = credential_fields(&strategy);
        let summary: Vec<_> = fields.iter().map(|f| (f.id.as_str(), f.field_type, f.required)).collect();
        assert_eq!(summary, [("email", FieldType::Text, true), ("secret", FieldType::Password, true)]);
    }

    #[test]
    fn custom_uses_the_declared_fields() {
        let declared = vec![field("domain", FieldType::Url, true), field("token", FieldType::Password, false)];
        let strategy = AuthStrategy::Custom(CustomConfig {
            description: None,
            credential_fields: declared.clone(),
            setup_instructions: None,
        });
        assert_eq!(credential_fields(&strategy), declared);
    }
}
