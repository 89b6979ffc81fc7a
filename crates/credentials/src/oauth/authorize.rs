//! The authorization URL the user is redirected to.

use std::collections::BTreeMap;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use secrecy::ExposeSecret;
use url::Url;

use crate::field_error::is_http_url;
use crate::oauth::pkce::PkceChallenge;
use crate::oauth::state::StateToken;
use crate::strategy::OAuth2Config;

/// Query parameters the flow sets itself; `authorizationParams` may not override them.
pub const RESERVED_AUTHORIZATION_PARAMS: &[&str] =
    &["client_id", "response_type", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method"];

/// Everything an authorization URL is made of besides the integration's configuration.
#[derive(Debug)]
pub struct AuthorizationRequest<'a> {
    pub client_id: &'a str,
    pub redirect_uri: &'a str,
    /// The administrator's custom settings, by setting id.
    pub settings: &'a BTreeMap<String, String>,
    pub state: &'a StateToken,
    /// Required when the configuration says `pkce: true`.
    pub pkce_challenge: Option<&'a PkceChallenge>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthorizeUrlError {
    #[error("the custom setting {0} is required but has no value")]
    MissingSetting(String),
    #[error("the authorization URL is not an http or https URL once its placeholders are replaced")]
    InvalidUrl,
    #[error("the redirect URI is not an http or https URL")]
    InvalidRedirectUri,
    #[error("authorizationParams may not override {0}")]
    ReservedParam(String),
    #[error("the configuration asks for PKCE but no code challenge was given")]
    MissingPkceChallenge,
}

/// Builds the URL: placeholders replaced (values percent-encoded), then client_id, response_type=code,
/// redirect_uri, scope (space-joined), state, the PKCE challenge, and finally authorizationParams.
pub fn authorization_url(config: &OAuth2Config, request: &AuthorizationRequest<'_>) -> Result<Url, AuthorizeUrlError> {
    if let Some(name) = config.authorization_params.keys().find(|k| RESERVED_AUTHORIZATION_PARAMS.contains(&k.as_str()))
    {
        return Err(AuthorizeUrlError::ReservedParam(name.clone()));
    }
    if !is_http_url(request.redirect_uri) {
        return Err(AuthorizeUrlError::InvalidRedirectUri);
    }
    let mut text = config.authorize_url.clone();
    for setting in &config.custom_settings {
        let Some(token) = &setting.token else { continue };
        let value = request.settings.get(&setting.id).map(String::as_str).unwrap_or_default();
        if setting.required && value.trim().is_empty() {
            return Err(AuthorizeUrlError::MissingSetting(setting.id.clone()));
        }
        text = text.replace(token.as_str(), &percent_encode(value));
    }
    let mut url = Url::parse(&text).map_err(|_| AuthorizeUrlError::InvalidUrl)?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(AuthorizeUrlError::InvalidUrl);
    }
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("client_id", request.client_id)
            .append_pair("response_type", "code")
            .append_pair("redirect_uri", request.redirect_uri);
        if !config.scopes.is_empty() {
            query.append_pair("scope", &config.scopes.join(" "));
        }
        query.append_pair("state", request.state.value().expose_secret());
        if config.pkce {
            let challenge = request.pkce_challenge.ok_or(AuthorizeUrlError::MissingPkceChallenge)?;
            query.append_pair("code_challenge", challenge.as_str());
            query.append_pair("code_challenge_method", PkceChallenge::METHOD);
        }
        for (name, value) in &config.authorization_params {
            query.append_pair(name, value);
        }
    }
    Ok(url)
}

/// Every byte but RFC 3986's unreserved characters (`A-Z a-z 0-9 - . _ ~`).
const NOT_UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// Percent-encodes everything but RFC 3986 unreserved characters, so a value can stand in a host
/// label, a path segment or a query without changing the URL's structure.
pub fn percent_encode(value: &str) -> String {
    utf8_percent_encode(value, NOT_UNRESERVED).to_string()
}

/// The `{NAME}` placeholders in a text, in order of appearance.
pub(crate) fn placeholders_in(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else { break };
        let candidate = &rest[start..=start + len];
        if is_placeholder(candidate) {
            found.push(candidate);
        }
        rest = &rest[start + len + 1..];
    }
    found
}

/// `{NAME}` with NAME made of letters, digits, `_` or `-`.
pub(crate) fn is_placeholder(token: &str) -> bool {
    token
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .is_some_and(|name| !name.is_empty() && name.chars().all(|ch| ch.is_ascii_alphanumeric() || "_-".contains(ch)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;
    use crate::oauth::pkce::PkceVerifier;
    use crate::strategy::{ClientAuthMethod, CustomSetting};

    fn config() -> OAuth2Config {
        OAuth2Config {
            authorize_url: "https://{APP_NAME}.idp.test/oauth/authorize?tenant={TENANT}".into(),
            token_url: "https://idp.test/token".into(),
            scopes: vec!["read:org".into(), "repo".into()],
            pkce: true,
            client_auth_method: ClientAuthMethod::Body,
            supports_refresh_token: true,
            authorization_params: BTreeMap::from([("prompt".into(), "consent".into())]),
            token_params: BTreeMap::new(),
            setup_instructions: None,
            create_app_url: None,
            custom_settings: vec![
                CustomSetting {
                    id: "app".into(),
                    label: "App".into(),
                    input_type: "text".into(),
                    required: true,
                    token: Some("{APP_NAME}".into()),
                },
                CustomSetting {
                    id: "tenant".into(),
                    label: "Tenant".into(),
                    input_type: "text".into(),
                    required: false,
                    token: Some("{TENANT}".into()),
                },
            ],
        }
    }

    fn query(url: &Url) -> BTreeMap<String, String> {
        url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
    }

    #[test]
    fn percent_encode_keeps_only_unreserved_characters() {
        assert_eq!(
            percent_encode("aZ09-._~ !*'()/?#[]@%+:;=&,$\u{0}\u{7f}é"),
            "aZ09-._~%20%21%2A%27%28%29%2F%3F%23%5B%5D%40%25%2B%3A%3B%3D%26%2C%24%00%7F%C3%A9"
        );
        // Every ASCII byte: kept exactly when unreserved, else `%XX` in upper-case hex.
        for byte in 0..=127u8 {
            let text = char::from(byte).to_string();
            let unreserved = byte.is_ascii_alphanumeric() || b"-._~".contains(&byte);
            let expected = if unreserved { text.clone() } else { format!("%{byte:02X}") };
            assert_eq!(percent_encode(&text), expected);
        }
    }

    #[test]
    fn builds_the_full_url() {
        let state = StateToken::generate();
        let verifier = PkceVerifier::generate();
        let challenge = verifier.challenge();
        let settings =
            BTreeMap::from([("app".to_owned(), "acme".to_owned()), ("tenant".to_owned(), "a b&c".to_owned())]);
        let url = authorization_url(
            &config(),
            &AuthorizationRequest {
                client_id: "cid",
                redirect_uri: "https://app.test/oauth/callback",
                settings: &settings,
                state: &state,
                pkce_challenge: Some(&challenge),
            },
        )
        .unwrap();
        assert_eq!(url.host_str(), Some("acme.idp.test"));
        assert!(url.as_str().contains("tenant=a%20b%26c&"), "{url}");
        let q = query(&url);
        assert_eq!(q["tenant"], "a b&c");
        assert_eq!(q["client_id"], "cid");
        assert_eq!(q["response_type"], "code");
        assert_eq!(q["redirect_uri"], "https://app.test/oauth/callback");
        assert_eq!(q["scope"], "read:org repo");
        assert_eq!(q["state"], state.value().expose_secret());
        assert_eq!(q["code_challenge"], challenge.as_str());
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["prompt"], "consent");
    }

    #[test]
    fn a_missing_required_setting_is_an_error_and_optional_ones_become_empty() {
        let state = StateToken::generate();
        let challenge = PkceVerifier::generate().challenge();
        let request = |settings| AuthorizationRequest {
            client_id: "cid",
            redirect_uri: "https://app.test/cb",
            settings,
            state: &state,
            pkce_challenge: Some(&challenge),
        };
        let empty = BTreeMap::new();
        assert_eq!(
            authorization_url(&config(), &request(&empty)),
            Err(AuthorizeUrlError::MissingSetting("app".into()))
        );
        let only_app = BTreeMap::from([("app".to_owned(), "acme".to_owned())]);
        let url = authorization_url(&config(), &request(&only_app)).unwrap();
        assert_eq!(query(&url)["tenant"], "");
    }

    #[test]
    fn a_setting_value_cannot_change_the_host() {
        let state = StateToken::generate();
        let challenge = PkceVerifier::generate().challenge();
        let settings = BTreeMap::from([("app".to_owned(), "evil.test/x?".to_owned())]);
        let result = authorization_url(
            &config(),
            &AuthorizationRequest {
                client_id: "c",
                redirect_uri: "https://a.test/cb",
                settings: &settings,
                state: &state,
                pkce_challenge: Some(&challenge),
            },
        );
        // Encoded, the value is not a valid host label: refused rather than redirecting elsewhere.
        assert!(!matches!(result, Ok(ref u) if u.host_str() == Some("evil.test")), "{result:?}");
    }

    #[test]
    fn reserved_params_pkce_and_redirect_uri_are_enforced() {
        let state = StateToken::generate();
        let settings = BTreeMap::from([("app".to_owned(), "acme".to_owned())]);
        let request = |redirect_uri| AuthorizationRequest {
            client_id: "c",
            redirect_uri,
            settings: &settings,
            state: &state,
            pkce_challenge: None,
        };
        assert_eq!(
            authorization_url(&config(), &request("https://a.test/cb")),
            Err(AuthorizeUrlError::MissingPkceChallenge)
        );
        assert_eq!(authorization_url(&config(), &request("not a url")), Err(AuthorizeUrlError::InvalidRedirectUri));
        let mut reserved = config();
        reserved.pkce = false;
        reserved.authorization_params.insert("redirect_uri".into(), "https://evil.test".into());
        assert_eq!(
            authorization_url(&reserved, &request("https://a.test/cb")),
            Err(AuthorizeUrlError::ReservedParam("redirect_uri".into()))
        );
        reserved.authorization_params.remove("redirect_uri");
        let url = authorization_url(&reserved, &request("https://a.test/cb")).unwrap();
        assert!(!query(&url).contains_key("code_challenge"));
    }

    #[test]
    fn placeholders_are_found() {
        assert_eq!(placeholders_in("https://{A}.x/{B_1}/{}/{not valid}"), ["{A}", "{B_1}"]);
    }
}
