//! Token revocation (RFC 7009): tells the provider a token is no longer wanted, when a connection is
//! removed.
//!
//! Not through the `oauth2` crate: its `revoke_token` refuses any revocation URL that is not https
//! (RFC 7009 §2), while a manifest's `revoke` may be any http(s) URL, like its `tokenUrl` (a provider
//! on a private network, the local providers of the tests). The request is a form of two fields and
//! the client authentication; it goes through the same client and reading of answers as the token
//! requests ([`ProviderHttp`](crate::ProviderHttp)).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use compliance_credentials::{ClientAuthMethod, ClientCredentials, RevokeRequest, TokenError};
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderValue};
use secrecy::ExposeSecret;
use url::form_urlencoded;

use crate::token_client::TokenClient;

impl TokenClient {
    /// Revokes a token: a form POST of `token` and `token_type_hint` with the client authenticated by
    /// `clientAuthMethod`. Any 2xx without an RFC 6749 `error` member is success (RFC 7009 §2.2 says
    /// 200, and also that an unknown or already revoked token is answered with 200). 5xx and 429 are
    /// retryable; redirects are not followed. Logs `Token revocation failed` on failure, never with the token.
    pub async fn revoke(&self, request: &RevokeRequest<'_>) -> Result<(), TokenError> {
        let result = self.send_revocation(request).await;
        if let Err(error) = &result {
            tracing::warn!(provider = request.provider, reason = error.short_reason(), "Token revocation failed");
        }
        result
    }

    async fn send_revocation(&self, request: &RevokeRequest<'_>) -> Result<(), TokenError> {
        let url = url::Url::parse(request.url).map_err(|_| TokenError::InvalidUrl)?;
        let mut form: Vec<(&str, &str)> =
            vec![("token", request.token.expose_secret()), ("token_type_hint", request.token_type_hint.as_str())];
        let mut http = self.http.client().post(url).header(ACCEPT, "application/json");
        match request.config.client_auth_method {
            ClientAuthMethod::Body => {
                form.push(("client_id", &request.client.client_id));
                form.push(("client_secret", request.client.client_secret.expose_secret()));
            }
            ClientAuthMethod::Header => http = http.header(AUTHORIZATION, client_basic_header(request.client)?),
        }
        let http = http.form(&form).build().map_err(|_| TokenError::Request)?;
        self.http.send(http).await.map(drop)
    }
}

/// RFC 6749 §2.3.1, as at the token endpoint: both parts form-urlencoded before base64, so a `:` in
/// the id cannot split it.
fn client_basic_header(client: &ClientCredentials) -> Result<HeaderValue, TokenError> {
    let id: String = form_urlencoded::byte_serialize(client.client_id.as_bytes()).collect();
    let secret: String = form_urlencoded::byte_serialize(client.client_secret.expose_secret().as_bytes()).collect();
    HeaderValue::from_str(&format!("Basic {}", STANDARD.encode(format!("{id}:{secret}"))))
        .map_err(|_| TokenError::InvalidClientCredentials)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    #[test]
    fn client_basic_header_urlencodes_both_parts() {
        let client = ClientCredentials { client_id: "id:1 x".into(), client_secret: "s/e+c%".into() };
        let header = client_basic_header(&client).unwrap();
        let encoded = header.to_str().unwrap().strip_prefix("Basic ").unwrap();
        assert_eq!(STANDARD.decode(encoded).unwrap(), b"id%3A1+x:s%2Fe%2Bc%25");
    }
}
