//! The third-party providers an organization connects: their token endpoints and their APIs.
//!
//! The requests are the credential model's (`compliance-credentials`); the adapter sends them, with
//! no redirect followed and bounded time, and decides what an answer means, so no use case reads
//! an HTTP response.

use async_trait::async_trait;
use compliance_credentials::{
    CodeExchange, RefreshRequest, RequestAuth, RevokeRequest, TokenError, TokenSet, VerifyRequest,
};

/// A provider's answer to a signed request.
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The body, as sent (bounded by the adapter).
    pub body: Vec<u8>,
}

/// Leaves the body out: it may echo a credential.
impl std::fmt::Debug for ProviderAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderAnswer").field("status", &self.status).finish_non_exhaustive()
    }
}

/// Why a signed request got no answer. Names no credential, and no URL (a key may be in its query).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderRequestError {
    /// A credential field the strategy sends has no value.
    #[error("the credential field {0} has no value")]
    MissingCredential(String),
    /// The credentials cannot be put into an HTTP header.
    #[error("the credentials cannot be put into an HTTP header")]
    InvalidHeader,
    /// The URL is not an absolute http(s) URL.
    #[error("the request URL is not an absolute http(s) URL")]
    InvalidUrl,
    /// No answer in time.
    #[error("the provider did not answer in time")]
    TimedOut,
    /// No connection to the provider.
    #[error("the provider could not be reached")]
    Unreachable,
    /// The answer's body is larger than the adapter reads.
    #[error("the provider's answer is too large")]
    TooLarge,
    /// Anything else that stopped the request.
    #[error("the request failed")]
    Failed,
}

/// Talks to providers: the OAuth token endpoints (RFC 6749, RFC 7009) and the provider's own API.
#[async_trait]
pub trait ProviderClient: Send + Sync {
    /// Exchanges an authorization code for tokens. Logs `Token exchange failed` on failure and
    /// `OAuth completed for <provider>` on success.
    async fn exchange(&self, request: &CodeExchange<'_>) -> Result<TokenSet, TokenError>;
    /// Refreshes an access token; a refresh that brings no new refresh token keeps the old one.
    async fn refresh(&self, request: &RefreshRequest<'_>) -> Result<TokenSet, TokenError>;
    /// Revokes a token (any 2xx without an RFC 6749 `error` member is success).
    async fn revoke(&self, request: &RevokeRequest<'_>) -> Result<(), TokenError>;
    /// Sends the manifest's `verify` request with `auth`; its status (the body is not read).
    async fn verify(&self, request: &VerifyRequest, auth: &RequestAuth) -> Result<u16, ProviderRequestError>;
    /// Sends an authenticated `GET url` to the provider's API; its status and body.
    async fn signed_get(&self, url: &str, auth: &RequestAuth) -> Result<ProviderAnswer, ProviderRequestError>;
}

/// Where no provider can be reached (an embedding without outbound HTTP): every token request
/// is a transient failure and every signed request unreachable.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProviderClient;

#[async_trait]
impl ProviderClient for NoProviderClient {
    async fn exchange(&self, _: &CodeExchange<'_>) -> Result<TokenSet, TokenError> {
        Err(TokenError::Transient { status: None })
    }
    async fn refresh(&self, _: &RefreshRequest<'_>) -> Result<TokenSet, TokenError> {
        Err(TokenError::Transient { status: None })
    }
    async fn revoke(&self, _: &RevokeRequest<'_>) -> Result<(), TokenError> {
        Err(TokenError::Transient { status: None })
    }
    async fn verify(&self, _: &VerifyRequest, _: &RequestAuth) -> Result<u16, ProviderRequestError> {
        Err(ProviderRequestError::Unreachable)
    }
    async fn signed_get(&self, _: &str, _: &RequestAuth) -> Result<ProviderAnswer, ProviderRequestError> {
        Err(ProviderRequestError::Unreachable)
    }
}
