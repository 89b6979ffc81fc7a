#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

//! Shared pieces of the integration tests: configurations pointing at a local provider.
#![allow(dead_code, reason = "each test binary uses a different part")]

use std::collections::BTreeMap;

use compliance_credentials::{ClientAuthMethod, ClientCredentials, OAuth2Config};
use compliance_provider_client::{HttpSettings, TokenClient};

pub const CLIENT_SECRET: &str = "cs-Zq8!kP2 /+&=secret";

pub fn oauth_config(base: &str, method: ClientAuthMethod, pkce: bool) -> OAuth2Config {
    OAuth2Config {
        authorize_url: format!("{base}/authorize"),
        token_url: format!("{base}/token"),
        scopes: vec!["read".into()],
        pkce,
        client_auth_method: method,
        supports_refresh_token: true,
        authorization_params: BTreeMap::new(),
        token_params: BTreeMap::new(),
        setup_instructions: None,
        create_app_url: None,
        custom_settings: Vec::new(),
    }
}

pub fn client() -> ClientCredentials {
    ClientCredentials { client_id: "client:id 1".into(), client_secret: CLIENT_SECRET.into() }
}

pub fn token_client() -> TokenClient {
    TokenClient::new(HttpSettings::default()).unwrap()
}

/// The pairs of a form-encoded body, in order.
pub fn form_pairs(body: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(body).map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}
