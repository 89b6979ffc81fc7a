//! Validation of an `auth` configuration. Every error names the field by its JSON path.

use std::collections::BTreeSet;

use crate::field_error::{FieldError, ValidationErrors, is_http_url};
use crate::fields::CredentialField;
use crate::oauth::authorize::{RESERVED_AUTHORIZATION_PARAMS, is_placeholder, placeholders_in};
use crate::oauth::token::RESERVED_TOKEN_PARAMS;
use crate::strategy::{
    ApiKeyConfig, ApiKeyLocation, AuthStrategy, BasicConfig, CustomConfig, OAuth2Config, StrategyKind,
};

/// Reads an `auth` object from JSON and validates it: the one entry point for an integration's
/// declaration. A shape error (unknown `type`, `in: "cookie"`, a missing field) names its path too.
pub fn parse_strategy(auth: &serde_json::Value) -> Result<AuthStrategy, ValidationErrors> {
    // Step by step: serde's adjacently tagged enums buffer `config`, which loses the error's path.
    let raw: RawAuth = with_path(auth, "")?;
    let strategy = match raw.kind {
        StrategyKind::OAuth2 => AuthStrategy::OAuth2(with_path(&raw.config, "config")?),
        StrategyKind::ApiKey => AuthStrategy::ApiKey(with_path(&raw.config, "config")?),
        StrategyKind::Basic => AuthStrategy::Basic(with_path(&raw.config, "config")?),
        StrategyKind::Custom => AuthStrategy::Custom(with_path(&raw.config, "config")?),
    };
    validate_strategy(&strategy)?;
    Ok(strategy)
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAuth {
    #[serde(rename = "type")]
    kind: StrategyKind,
    config: serde_json::Value,
}

fn with_path<T: serde::de::DeserializeOwned>(value: &serde_json::Value, prefix: &str) -> Result<T, ValidationErrors> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let inner = error.path().to_string();
        let field = match (prefix, inner.as_str()) {
            ("", ".") => "auth".to_owned(),
            ("", path) => path.to_owned(),
            (prefix, ".") => prefix.to_owned(),
            (prefix, path) => format!("{prefix}.{path}"),
        };
        ValidationErrors(vec![FieldError::new(field, error.into_inner().to_string())])
    })
}

/// Checks everything serde cannot: URLs, names, ids, options, placeholders.
pub fn validate_strategy(strategy: &AuthStrategy) -> Result<(), ValidationErrors> {
    let mut errors = Vec::new();
    match strategy {
        AuthStrategy::OAuth2(c) => check_oauth2(c, &mut errors),
        AuthStrategy::ApiKey(c) => check_api_key(c, &mut errors),
        AuthStrategy::Basic(c) => check_basic(c, &mut errors),
        AuthStrategy::Custom(c) => check_custom(c, &mut errors),
    }
    ValidationErrors::into_result(errors)
}

fn check_oauth2(c: &OAuth2Config, errors: &mut Vec<FieldError>) {
    let tokens: Vec<&str> = c.custom_settings.iter().filter_map(|s| s.token.as_deref()).collect();
    // Placeholders stand for host labels or path segments: check the URL with a harmless stand-in.
    let mut probe = c.authorize_url.clone();
    for token in &tokens {
        probe = probe.replace(token, "placeholder");
    }
    if !is_http_url(&probe) {
        errors.push(FieldError::new("config.authorizeUrl", "must be an http or https URL"));
    }
    for unknown in placeholders_in(&c.authorize_url).into_iter().filter(|p| !tokens.contains(p)) {
        errors.push(FieldError::new(
            "config.authorizeUrl",
            format!("placeholder {unknown} is not the token of any custom setting"),
        ));
    }
    if !is_http_url(&c.token_url) {
        errors.push(FieldError::new("config.tokenUrl", "must be an http or https URL"));
    }
    if let Some(url) = &c.create_app_url
        && !is_http_url(url)
    {
        errors.push(FieldError::new("config.createAppUrl", "must be an http or https URL"));
    }
    for (i, scope) in c.scopes.iter().enumerate() {
        // Scopes are joined with spaces, so one scope cannot hold a space.
        if scope.is_empty() || scope.chars().any(char::is_whitespace) {
            errors.push(FieldError::new(format!("config.scopes[{i}]"), "must be non-empty without spaces"));
        }
    }
    check_params(&c.authorization_params, "config.authorizationParams", RESERVED_AUTHORIZATION_PARAMS, errors);
    check_params(&c.token_params, "config.tokenParams", RESERVED_TOKEN_PARAMS, errors);
    let mut ids = BTreeSet::new();
    for (i, setting) in c.custom_settings.iter().enumerate() {
        let at = format!("config.customSettings[{i}]");
        if setting.id.trim().is_empty() {
            errors.push(FieldError::new(format!("{at}.id"), "must not be empty"));
        } else if !ids.insert(setting.id.as_str()) {
            errors.push(FieldError::new(format!("{at}.id"), "is used by another setting"));
        }
        if setting.label.trim().is_empty() {
            errors.push(FieldError::new(format!("{at}.label"), "must not be empty"));
        }
        if let Some(token) = &setting.token {
            if !is_placeholder(token) {
                errors.push(FieldError::new(format!("{at}.token"), "must look like {NAME}"));
            } else if !c.authorize_url.contains(token.as_str()) {
                errors.push(FieldError::new(format!("{at}.token"), "does not appear in authorizeUrl"));
            }
        }
    }
}

fn check_params(
    params: &std::collections::BTreeMap<String, String>,
    at: &str,
    reserved: &[&str],
    errors: &mut Vec<FieldError>,
) {
    for name in params.keys() {
        if name.trim().is_empty() {
            errors.push(FieldError::new(at, "parameter names must not be empty"));
        } else if reserved.contains(&name.as_str()) {
            errors.push(FieldError::new(format!("{at}.{name}"), "is set by the OAuth flow and cannot be overridden"));
        }
    }
}

fn check_api_key(c: &ApiKeyConfig, errors: &mut Vec<FieldError>) {
    if c.name.trim().is_empty() {
        errors.push(FieldError::new("config.name", "must not be empty"));
    } else if c.location == ApiKeyLocation::Header && !crate::header_text::is_header_name(&c.name) {
        errors.push(FieldError::new("config.name", "must be a valid HTTP header name"));
    }
    if c.location == ApiKeyLocation::Header && !crate::header_text::is_header_value(&c.prefix) {
        errors.push(FieldError::new("config.prefix", "must be valid in an HTTP header value"));
    }
}

fn check_basic(c: &BasicConfig, errors: &mut Vec<FieldError>) {
    if c.username_field.trim().is_empty() {
        errors.push(FieldError::new("config.usernameField", "must not be empty"));
    }
    if c.password_field.trim().is_empty() {
        errors.push(FieldError::new("config.passwordField", "must not be empty"));
    }
    if c.username_field == c.password_field {
        errors.push(FieldError::new("config.passwordField", "must differ from usernameField"));
    }
}

/// A custom strategy may declare no field: a connection whose checks read only what the
/// deployment provides (`providers/fleetdm.json`) stores no credential.
fn check_custom(c: &CustomConfig, errors: &mut Vec<FieldError>) {
    let mut ids = BTreeSet::new();
    for (i, field) in c.credential_fields.iter().enumerate() {
        check_field(field, &format!("config.credentialFields[{i}]"), &mut ids, errors);
    }
}

fn check_field<'a>(field: &'a CredentialField, at: &str, ids: &mut BTreeSet<&'a str>, errors: &mut Vec<FieldError>) {
    if field.id.trim().is_empty() {
        errors.push(FieldError::new(format!("{at}.id"), "must not be empty"));
    } else if !ids.insert(field.id.as_str()) {
        errors.push(FieldError::new(format!("{at}.id"), "is used by another field"));
    }
    if field.label.trim().is_empty() {
        errors.push(FieldError::new(format!("{at}.label"), "must not be empty"));
    }
    match (&field.options, field.field_type.takes_options()) {
        (None, true) => errors.push(FieldError::new(format!("{at}.options"), "is required for select and combobox")),
        (Some(options), true) if options.is_empty() => {
            errors.push(FieldError::new(format!("{at}.options"), "must offer at least one choice"));
        }
        (Some(options), true) => {
            let mut values = BTreeSet::new();
            for (j, option) in options.iter().enumerate() {
                if option.value.is_empty() || !values.insert(option.value.as_str()) {
                    errors.push(FieldError::new(format!("{at}.options[{j}].value"), "must be non-empty and unique"));
                }
            }
        }
        (Some(_), false) => {
            errors.push(FieldError::new(format!("{at}.options"), "is only allowed for select and combobox"));
        }
        (None, false) => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;
    use serde_json::{Value, json};

    fn errors_of(auth: Value) -> ValidationErrors {
        let strategy: AuthStrategy = serde_json::from_value(auth).unwrap();
        validate_strategy(&strategy).unwrap_err()
    }

    fn oauth(extra: Value) -> Value {
        let mut config =
            json!({"authorizeUrl": "https://x.test/authorize", "tokenUrl": "https://x.test/token", "scopes": ["read"]});
        for (k, v) in extra.as_object().unwrap() {
            config[k] = v.clone();
        }
        json!({"type": "oauth2", "config": config})
    }

    #[test]
    fn a_complete_oauth_config_is_valid() {
        let strategy: AuthStrategy = serde_json::from_value(oauth(json!({
            "authorizeUrl": "https://{APP_NAME}.x.test/authorize",
            "customSettings": [{"id": "app", "label": "App", "type": "text", "required": true, "token": "{APP_NAME}"}],
            "authorizationParams": {"prompt": "consent"}, "tokenParams": {"audience": "api"},
            "createAppUrl": "https://x.test/apps"
        })))
        .unwrap();
        validate_strategy(&strategy).unwrap();
    }

    #[test]
    fn oauth_urls_must_be_http_urls() {
        let err =
            errors_of(oauth(json!({"authorizeUrl": "ftp://x.test/a", "tokenUrl": "/token", "createAppUrl": "x"})));
        for field in ["config.authorizeUrl", "config.tokenUrl", "config.createAppUrl"] {
            assert_eq!(err.for_field(field)[0].message, "must be an http or https URL", "{field}");
        }
    }

    #[test]
    fn every_setting_token_must_appear_in_authorize_url_and_every_placeholder_must_be_declared() {
        let err = errors_of(oauth(json!({
            "authorizeUrl": "https://{TENANT}.x.test/authorize",
            "customSettings": [{"id": "app", "label": "App", "type": "text", "token": "{APP_NAME}"}]
        })));
        assert_eq!(err.for_field("config.customSettings[0].token")[0].message, "does not appear in authorizeUrl");
        assert!(err.for_field("config.authorizeUrl")[0].message.contains("{TENANT}"));
        let err =
            errors_of(oauth(json!({"customSettings": [{"id": "a", "label": "A", "type": "text", "token": "APP"}]})));
        assert_eq!(err.for_field("config.customSettings[0].token")[0].message, "must look like {NAME}");
    }

    #[test]
    fn setting_ids_are_non_empty_and_unique() {
        let err = errors_of(oauth(json!({"customSettings": [
            {"id": "a", "label": "A", "type": "text"}, {"id": "a", "label": "B", "type": "text"},
            {"id": "", "label": "", "type": "text"}
        ]})));
        assert_eq!(err.for_field("config.customSettings[1].id")[0].message, "is used by another setting");
        assert_eq!(err.for_field("config.customSettings[2].id")[0].message, "must not be empty");
        assert_eq!(err.for_field("config.customSettings[2].label")[0].message, "must not be empty");
    }

    #[test]
    fn reserved_params_cannot_be_overridden_and_scopes_have_no_spaces() {
        let err = errors_of(oauth(json!({
            "scopes": ["read write", ""],
            "authorizationParams": {"state": "x", "redirect_uri": "y"},
            "tokenParams": {"grant_type": "password", "client_secret": "z"}
        })));
        for field in [
            "config.scopes[0]",
            "config.scopes[1]",
            "config.authorizationParams.state",
            "config.authorizationParams.redirect_uri",
            "config.tokenParams.grant_type",
            "config.tokenParams.client_secret",
        ] {
            assert_eq!(err.for_field(field).len(), 1, "{field}: {err}");
        }
    }

    #[test]
    fn api_key_needs_a_usable_name() {
        let err = errors_of(json!({"type": "api_key", "config": {"in": "query", "name": " "}}));
        assert_eq!(err.for_field("config.name")[0].message, "must not be empty");
        let err = errors_of(json!({"type": "api_key", "config": {"in": "header", "name": "Bad Header"}}));
        assert_eq!(err.for_field("config.name")[0].message, "must be a valid HTTP header name");
        let ok: AuthStrategy = serde_json::from_value(
            json!({"type": "api_key", "config": {"in": "header", "name": "Authorization", "prefix": "Token "}}),
        )
        .unwrap();
        validate_strategy(&ok).unwrap();
    }

    #[test]
    fn basic_field_ids_are_non_empty_and_distinct() {
        let err = errors_of(json!({"type": "basic", "config": {"usernameField": "", "passwordField": "x"}}));
        assert_eq!(err.for_field("config.usernameField")[0].message, "must not be empty");
        let err = errors_of(json!({"type": "basic", "config": {"usernameField": "u", "passwordField": "u"}}));
        assert_eq!(err.for_field("config.passwordField")[0].message, "must differ from usernameField");
    }

    #[test]
    fn custom_fields_have_unique_ids_and_options_exactly_where_needed() {
        let err = errors_of(json!({"type": "custom", "config": {"credentialFields": [
            {"id": "a", "label": "A", "type": "text", "required": true},
            {"id": "a", "label": "A2", "type": "text", "required": true},
            {"id": "s", "label": "S", "type": "select", "required": true},
            {"id": "t", "label": "T", "type": "text", "required": false, "options": [{"value": "x", "label": "X"}]},
            {"id": "c", "label": "C", "type": "combobox", "required": false, "options": []},
            {"id": "", "label": "", "type": "password", "required": true}
        ]}}));
        assert_eq!(err.for_field("config.credentialFields[1].id")[0].message, "is used by another field");
        assert_eq!(
            err.for_field("config.credentialFields[2].options")[0].message,
            "is required for select and combobox"
        );
        assert_eq!(
            err.for_field("config.credentialFields[3].options")[0].message,
            "is only allowed for select and combobox"
        );
        assert_eq!(err.for_field("config.credentialFields[4].options")[0].message, "must offer at least one choice");
        assert_eq!(err.for_field("config.credentialFields[5].id")[0].message, "must not be empty");
        assert_eq!(err.for_field("config.credentialFields[5].label")[0].message, "must not be empty");
        assert!(err.for_field("config.credentialFields[0].id").is_empty());
    }

    #[test]
    fn shape_errors_name_their_path() {
        let err = parse_strategy(&json!({"type": "api_key", "config": {"in": "cookie", "name": "k"}})).unwrap_err();
        assert_eq!(err.0.len(), 1);
        assert_eq!(err.0[0].field, "config.in", "{err}");
        let err = parse_strategy(&json!({"type": "custom", "config": {"credentialFields": [{"id": "a", "label": "A", "type": "date", "required": true}]}})).unwrap_err();
        assert_eq!(err.0[0].field, "config.credentialFields[0].type", "{err}");
        let err = parse_strategy(&json!({"type": "saml", "config": {}})).unwrap_err();
        assert_eq!(err.0[0].field, "type", "{err}");
        let err =
            parse_strategy(&json!({"type": "oauth2", "config": {"tokenUrl": "https://t", "scopes": []}})).unwrap_err();
        assert_eq!(err.0[0].field, "config", "{err}");
        assert!(err.0[0].message.contains("authorizeUrl"), "{err}");
        let ok = parse_strategy(&json!({"type": "basic", "config": {}})).unwrap();
        assert_eq!(ok, AuthStrategy::Basic(BasicConfig::default()));
        let err = parse_strategy(&json!({"type": "basic", "config": {"usernameField": "", "passwordField": "p"}}))
            .unwrap_err();
        assert_eq!(err.0[0].field, "config.usernameField");
    }

    #[test]
    fn custom_may_need_no_field() {
        let ok = parse_strategy(&json!({"type": "custom", "config": {"credentialFields": []}})).unwrap();
        assert!(matches!(ok, AuthStrategy::Custom(config) if config.credential_fields.is_empty()));
    }
}
