//! The `auth: {type, config}` model of an integration, as the spec writes it (camelCase JSON).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::fields::CredentialField;

/// How an integration authenticates: the spec's `auth` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "config")]
pub enum AuthStrategy {
    #[serde(rename = "oauth2")]
    OAuth2(OAuth2Config),
    #[serde(rename = "api_key")]
    ApiKey(ApiKeyConfig),
    #[serde(rename = "basic")]
    Basic(BasicConfig),
    #[serde(rename = "custom")]
    Custom(CustomConfig),
}

impl AuthStrategy {
    /// The strategy's `type`, without its configuration.
    pub fn kind(&self) -> StrategyKind {
        match self {
            Self::OAuth2(_) => StrategyKind::OAuth2,
            Self::ApiKey(_) => StrategyKind::ApiKey,
            Self::Basic(_) => StrategyKind::Basic,
            Self::Custom(_) => StrategyKind::Custom,
        }
    }
}

/// The four strategy types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = AuthStrategyKind, description = "The strategy of a provider."))]
pub enum StrategyKind {
    #[serde(rename = "oauth2")]
    OAuth2,
    #[serde(rename = "api_key")]
    ApiKey,
    #[serde(rename = "basic")]
    Basic,
    #[serde(rename = "custom")]
    Custom,
}

/// `oauth2` configuration. Unknown keys are refused so that a misspelt option is not silently ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OAuth2Config {
    /// May contain placeholders such as `{APP_NAME}`, so it is kept as text until they are replaced.
    pub authorize_url: String,
    pub token_url: String,
    pub scopes: Vec<String>,
    #[serde(default)]
    pub pkce: bool,
    #[serde(default)]
    pub client_auth_method: ClientAuthMethod,
    #[serde(default = "default_true")]
    pub supports_refresh_token: bool,
    #[serde(default)]
    pub authorization_params: BTreeMap<String, String>,
    #[serde(default)]
    pub token_params: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_app_url: Option<String>,
    #[serde(default)]
    pub custom_settings: Vec<CustomSetting>,
}

fn default_true() -> bool {
    true
}

/// How client credentials reach the token endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuthMethod {
    /// `client_id` and `client_secret` as form fields.
    #[default]
    Body,
    /// `Authorization: Basic …` and no client credentials in the form.
    Header,
}

/// An administrator-entered setting of an OAuth app.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = OAuthCustomSetting))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CustomSetting {
    pub id: String,
    pub label: String,
    /// Input type, for example `text`; the spec leaves the set open.
    #[serde(rename = "type")]
    pub input_type: String,
    // The spec gives no default; a setting is optional unless it says otherwise. Always serialized.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    #[serde(default)]
    pub required: bool,
    /// Placeholder such as `{APP_NAME}` in `authorizeUrl`. Optional: a setting need not be a URL token.
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// `api_key` configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiKeyConfig {
    #[serde(rename = "in")]
    pub location: ApiKeyLocation,
    pub name: String,
    #[serde(default)]
    pub prefix: String,
}

/// Where an API key is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApiKeyLocation {
    Header,
    Query,
}

/// `basic` configuration: the ids of the two generated fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BasicConfig {
    #[serde(default = "default_username_field")]
    pub username_field: String,
    #[serde(default = "default_password_field")]
    pub password_field: String,
}

impl Default for BasicConfig {
    fn default() -> Self {
        Self { username_field: default_username_field(), password_field: default_password_field() }
    }
}

fn default_username_field() -> String {
    "username".to_owned()
}

fn default_password_field() -> String {
    "password".to_owned()
}

/// `custom` configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CustomConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub credential_fields: Vec<CredentialField>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_instructions: Option<String>,
}

/// One credential a service asks for, as input to [`choose_strategy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfferedCredential {
    /// A single static key or token.
    Key,
    Username,
    Password,
    /// Anything else (a domain, a region, a second key, …).
    Other,
}

/// What a third-party service offers for authentication.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceAuthOffer {
    pub oauth_available: bool,
    pub static_credentials: Vec<OfferedCredential>,
}

/// The spec's choice rule, in order: OAuth when offered; one key → api_key; exactly username plus
/// password → basic; anything else → custom.
pub fn choose_strategy(offer: &ServiceAuthOffer) -> StrategyKind {
    use OfferedCredential::{Key, Password, Username};
    if offer.oauth_available {
        return StrategyKind::OAuth2;
    }
    match offer.static_credentials.as_slice() {
        [Key] => StrategyKind::ApiKey,
        [Username, Password] | [Password, Username] => StrategyKind::Basic,
        _ => StrategyKind::Custom,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;
    use serde_json::json;

    #[test]
    fn oauth2_defaults_follow_the_spec() {
        let auth: AuthStrategy = serde_json::from_value(json!({
            "type": "oauth2",
            "config": {"authorizeUrl": "https://x.test/a", "tokenUrl": "https://x.test/t", "scopes": ["read"]}
        }))
        .unwrap();
        let AuthStrategy::OAuth2(c) = auth else { panic!("not oauth2") };
        assert!(!c.pkce);
        assert_eq!(c.client_auth_method, ClientAuthMethod::Body);
        assert!(c.supports_refresh_token);
        assert!(c.authorization_params.is_empty() && c.token_params.is_empty() && c.custom_settings.is_empty());
    }

    #[test]
    fn oauth2_reads_every_camel_case_field() {
        let auth: AuthStrategy = serde_json::from_value(json!({
            "type": "oauth2",
            "config": {
                "authorizeUrl": "https://{APP_NAME}.x.test/a", "tokenUrl": "https://x.test/t", "scopes": ["a", "b"],
                "pkce": true, "clientAuthMethod": "header", "supportsRefreshToken": false,
                "authorizationParams": {"prompt": "consent"}, "tokenParams": {"audience": "api"},
                "setupInstructions": "# Setup", "createAppUrl": "https://x.test/apps",
                "customSettings": [{"id": "app", "label": "App", "type": "text", "required": true, "token": "{APP_NAME}"}]
            }
        }))
        .unwrap();
        let AuthStrategy::OAuth2(c) = auth else { panic!("not oauth2") };
        assert!(c.pkce && !c.supports_refresh_token);
        assert_eq!(c.client_auth_method, ClientAuthMethod::Header);
        assert_eq!(c.authorization_params["prompt"], "consent");
        assert_eq!(c.token_params["audience"], "api");
        assert_eq!(c.custom_settings[0].token.as_deref(), Some("{APP_NAME}"));
        assert!(c.custom_settings[0].required);
    }

    #[test]
    fn api_key_prefix_defaults_to_empty_and_basic_field_ids_default() {
        let auth: AuthStrategy =
            serde_json::from_value(json!({"type": "api_key", "config": {"in": "header", "name": "X-Key"}})).unwrap();
        assert_eq!(
            auth,
            AuthStrategy::ApiKey(ApiKeyConfig {
                location: ApiKeyLocation::Header,
                name: "X-Key".into(),
                prefix: String::new()
            })
        );
        let auth: AuthStrategy = serde_json::from_value(json!({"type": "basic", "config": {}})).unwrap();
        assert_eq!(auth, AuthStrategy::Basic(BasicConfig::default()));
        assert_eq!(BasicConfig::default().username_field, "username");
        assert_eq!(BasicConfig::default().password_field, "password");
    }

    #[test]
    fn unknown_types_locations_and_keys_are_refused() {
        for bad in [
            json!({"type": "saml", "config": {}}),
            json!({"type": "api_key", "config": {"in": "cookie", "name": "k"}}),
            json!({"type": "basic", "config": {"userField": "u"}}),
            json!({"type": "oauth2", "config": {"authorizeUrl": "https://a", "tokenUrl": "https://t", "scopes": [], "clientAuthMethod": "jwt"}}),
        ] {
            assert!(serde_json::from_value::<AuthStrategy>(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn choice_rule_prefers_oauth_then_key_then_basic_then_custom() {
        use OfferedCredential::*;
        let offer = |oauth, creds: &[OfferedCredential]| ServiceAuthOffer {
            oauth_available: oauth,
            static_credentials: creds.to_vec(),
        };
        assert_eq!(choose_strategy(&offer(true, &[Key])), StrategyKind::OAuth2);
        assert_eq!(choose_strategy(&offer(true, &[])), StrategyKind::OAuth2);
        assert_eq!(choose_strategy(&offer(false, &[Key])), StrategyKind::ApiKey);
        assert_eq!(choose_strategy(&offer(false, &[Username, Password])), StrategyKind::Basic);
        assert_eq!(choose_strategy(&offer(false, &[Password, Username])), StrategyKind::Basic);
        assert_eq!(choose_strategy(&offer(false, &[Key, Key])), StrategyKind::Custom);
        assert_eq!(choose_strategy(&offer(false, &[Username, Password, Other])), StrategyKind::Custom);
        assert_eq!(choose_strategy(&offer(false, &[])), StrategyKind::Custom);
    }
}
