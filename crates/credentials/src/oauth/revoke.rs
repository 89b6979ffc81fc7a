//! Token revocation (RFC 7009): tells the provider a token is no longer wanted, when a connection is
//! removed.

use reqwest::StatusCode;
use reqwest::header::ACCEPT;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use crate::diagnostics;
use crate::oauth::token::{
    ClientCredentials, TokenClient, TokenError, authenticate_client, read_limited, transport_error,
};
use crate::strategy::OAuth2Config;

/// Which kind of token is revoked (RFC 7009 §2.1 `token_type_hint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenTypeHint {
    RefreshToken,
    AccessToken,
}

impl TokenTypeHint {
    /// The form value: `refresh_token` or `access_token`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RefreshToken => "refresh_token",
            Self::AccessToken => "access_token",
        }
    }
}

/// A revocation request (RFC 7009 §2.1).
#[derive(Debug)]
pub struct RevokeRequest<'a> {
    /// Name of the integration, for the diagnostic log only.
    pub provider: &'a str,
    /// The revocation endpoint.
    pub url: &'a str,
    pub client: &'a ClientCredentials,
    /// Only its `clientAuthMethod` is used: the client authenticates as it does at the token endpoint.
    pub config: &'a OAuth2Config,
    pub token: &'a SecretString,
    pub token_type_hint: TokenTypeHint,
}

#[derive(Deserialize)]
struct RawErrorResponse {
    error: Option<String>,
}

impl TokenClient {
    /// Revokes a token: a form POST of `token` and `token_type_hint` with the client authenticated by
    /// `clientAuthMethod`. Any 2xx is success (RFC 7009 §2.2 says 200, and also that an unknown or
    /// already revoked token is answered with 200). 5xx and 429 are retryable; redirects are not
    /// followed. Logs `Token revocation failed` on failure, never with the token.
    pub async fn revoke(&self, request: &RevokeRequest<'_>) -> Result<(), TokenError> {
        let result = self.send_revocation(request).await;
        if let Err(error) = &result {
            tracing::warn!(provider = request.provider, reason = error.short_reason(), "Token revocation failed");
        }
        result
    }

    async fn send_revocation(&self, request: &RevokeRequest<'_>) -> Result<(), TokenError> {
        let mut form: Vec<(&str, &str)> =
            vec![("token", request.token.expose_secret()), ("token_type_hint", request.token_type_hint.as_str())];
        let http = self.http.post(request.url).header(ACCEPT, "application/json");
        let http = authenticate_client(http, &mut form, request.config.client_auth_method, request.client)?;
        let response = http.form(&form).send().await.map_err(transport_error)?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        if status.is_redirection() {
            return Err(TokenError::Redirected { status: status.as_u16() });
        }
        if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
            return Err(TokenError::Transient { status: Some(status.as_u16()) });
        }
        let body = read_limited(response).await?;
        let code = serde_json::from_slice::<RawErrorResponse>(&body).ok().and_then(|raw| raw.error);
        Err(match code.as_deref() {
            // RFC 7009 §2.2.1: the provider asks the client to try again later.
            Some("temporarily_unavailable") => TokenError::Transient { status: Some(status.as_u16()) },
            Some(code) => {
                TokenError::Rejected { status: status.as_u16(), error: diagnostics::safe_code(code).to_owned() }
            }
            None => TokenError::Rejected { status: status.as_u16(), error: "no_error_code".to_owned() },
        })
    }
}
