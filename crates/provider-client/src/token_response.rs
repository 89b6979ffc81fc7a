//! A token endpoint's answer (RFC 6749 §5.1) as providers really send it, for the `oauth2` crate.
//!
//! oauth2's `StandardTokenResponse` refuses an answer without `token_type` and an `expires_in`
//! sent as a string ("3600"), both seen in the wild. This one takes them; members it does not know
//! are ignored.

use std::time::Duration;

use oauth2::helpers::deserialize_space_delimited_vec;
use oauth2::{AccessToken, RefreshToken, Scope, TokenResponse, TokenType};
use serde::{Deserialize, Deserializer, Serialize};

#[derive(Debug, Serialize, Deserialize)]
pub struct ProviderTokenResponse {
    access_token: AccessToken,
    #[serde(default)]
    token_type: TokenTypeName,
    #[serde(default, deserialize_with = "seconds")]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<RefreshToken>,
    #[serde(rename = "scope", default, deserialize_with = "deserialize_space_delimited_vec")]
    scopes: Option<Vec<Scope>>,
}

/// `token_type` as the provider wrote it, when it did (nothing reads it: tokens are sent as Bearer).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TokenTypeName(pub Option<String>);

impl TokenType for TokenTypeName {}

impl TokenResponse for ProviderTokenResponse {
    type TokenType = TokenTypeName;

    fn access_token(&self) -> &AccessToken {
        &self.access_token
    }

    fn token_type(&self) -> &TokenTypeName {
        &self.token_type
    }

    fn expires_in(&self) -> Option<Duration> {
        self.expires_in.map(Duration::from_secs)
    }

    fn refresh_token(&self) -> Option<&RefreshToken> {
        self.refresh_token.as_ref()
    }

    fn scopes(&self) -> Option<&Vec<Scope>> {
        self.scopes.as_ref()
    }
}

/// A whole number of seconds, or such a number in a string; a negative one counts as 0.
fn seconds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Seconds {
        Number(i64),
        Text(String),
    }
    let seconds = match Option::<Seconds>::deserialize(deserializer)? {
        None => return Ok(None),
        Some(Seconds::Number(n)) => n,
        Some(Seconds::Text(text)) => text.trim().parse().map_err(serde::de::Error::custom)?,
    };
    Ok(Some(seconds.max(0).unsigned_abs()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    fn parse(json: &str) -> Result<ProviderTokenResponse, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn quirks_of_real_providers_are_taken() {
        let minimal = parse(r#"{"access_token":"a"}"#).unwrap();
        assert_eq!(minimal.token_type(), &TokenTypeName(None));
        assert_eq!(minimal.expires_in(), None);
        assert!(minimal.refresh_token().is_none() && minimal.scopes().is_none());

        let odd = parse(
            r#"{"access_token":"a","token_type":"Bearer","expires_in":" 60 ","scope":"repo,user gist","vendor":{"x":1}}"#,
        )
        .unwrap();
        assert_eq!(odd.token_type(), &TokenTypeName(Some("Bearer".into())));
        assert_eq!(odd.expires_in(), Some(Duration::from_secs(60)));
        let scopes: Vec<&str> = odd.scopes().unwrap().iter().map(|s| s.as_str()).collect();
        assert_eq!(scopes, ["repo,user", "gist"]);

        assert_eq!(parse(r#"{"access_token":"a","expires_in":-5}"#).unwrap().expires_in(), Some(Duration::ZERO));
        assert_eq!(parse(r#"{"access_token":"a","expires_in":null}"#).unwrap().expires_in(), None);
    }

    #[test]
    fn broken_answers_are_refused() {
        assert!(parse(r#"{"token_type":"bearer"}"#).is_err());
        assert!(parse(r#"{"access_token":"a","expires_in":"soon"}"#).is_err());
        assert!(parse("access_token=a").is_err());
    }
}
