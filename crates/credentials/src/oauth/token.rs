//! What a token endpoint is asked and answers (RFC 6749 §4.1.3 and §6, RFC 7009), as data: the
//! requests are sent by the `ProviderClient` port's adapter, which decides what an answer means.

use secrecy::SecretString;
use time::{Duration, OffsetDateTime};

use crate::oauth::pkce::PkceVerifier;
use crate::strategy::OAuth2Config;

/// Form fields the flow sets itself; `tokenParams` may not override them.
pub const RESERVED_TOKEN_PARAMS: &[&str] =
    &["grant_type", "code", "redirect_uri", "code_verifier", "client_id", "client_secret", "refresh_token"];

/// The spec leaves the margin open: five minutes covers clock skew and a slow check run.
pub const DEFAULT_REFRESH_MARGIN: Duration = Duration::minutes(5);

/// True when a token expiring at `expires_at` should be refreshed at `now`. A token without an
/// expiry is long-lived and never refreshed proactively.
pub fn needs_refresh(expires_at: Option<OffsetDateTime>, now: OffsetDateTime, margin: Duration) -> bool {
    expires_at.is_some_and(|at| now + margin >= at)
}

/// The OAuth app's client credentials, entered by an administrator.
#[derive(Debug, Clone)]
pub struct ClientCredentials {
    pub client_id: String,
    pub client_secret: SecretString,
}

/// What a token endpoint granted.
#[derive(Debug, Clone)]
pub struct TokenSet {
    pub access_token: SecretString,
    pub refresh_token: Option<SecretString>,
    /// None when the provider gave no `expires_in`: such a token is treated as long-lived.
    pub expires_at: Option<OffsetDateTime>,
    pub token_type: Option<String>,
    pub scope: Option<String>,
}

/// Why a token request failed. No variant carries a code, token or secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the grant is no longer valid: the connection must be authorised again")]
    InvalidGrant,
    #[error("the token endpoint is unavailable for now (status {status:?}); retry later")]
    Transient { status: Option<u16> },
    #[error("the token endpoint refused the request with status {status} ({error})")]
    Rejected { status: u16, error: String },
    #[error("the token endpoint answered with redirect status {status}, which is not followed")]
    Redirected { status: u16 },
    #[error("the token endpoint's answer is not a valid token response")]
    InvalidResponse,
    #[error("this integration's tokens are long-lived and are never refreshed")]
    RefreshNotSupported,
    /// Refreshes failed transiently just before; the provider is left alone a while.
    #[error("the token endpoint failed moments ago; waiting before asking it again")]
    BackingOff,
    #[error("the configuration asks for PKCE but no code verifier was given")]
    MissingCodeVerifier,
    #[error("the client credentials cannot be put into an Authorization header")]
    InvalidClientCredentials,
    #[error("the endpoint or the redirect URI is not a valid URL")]
    InvalidUrl,
    /// The request could not be built or sent (the adapter's own error is left out: it may name
    /// the URL, which may hold a secret).
    #[error("the token request could not be sent")]
    Request,
}

impl TokenError {
    /// 5xx, 429, timeouts and connection failures: worth trying again later.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Transient { .. } | Self::BackingOff)
    }

    /// The user must connect again; retrying cannot help.
    pub fn needs_reauthorization(&self) -> bool {
        matches!(self, Self::InvalidGrant)
    }

    /// A code for the diagnostic log: the provider's own only when it is a plain word.
    pub fn short_reason(&self) -> &str {
        match self {
            Self::InvalidGrant => "invalid_grant",
            Self::Transient { .. } => "temporarily_unavailable",
            Self::Rejected { error, .. } => error,
            Self::Redirected { .. } => "redirected",
            Self::InvalidResponse => "invalid_response",
            Self::RefreshNotSupported => "refresh_not_supported",
            Self::BackingOff => "backing_off",
            Self::MissingCodeVerifier => "missing_code_verifier",
            Self::InvalidClientCredentials => "invalid_client_credentials",
            Self::InvalidUrl => "invalid_url",
            Self::Request => "request_failed",
        }
    }
}

/// A code exchange (RFC 6749 §4.1.3).
#[derive(Debug)]
pub struct CodeExchange<'a> {
    /// Name of the integration, for the diagnostic log only.
    pub provider: &'a str,
    pub config: &'a OAuth2Config,
    pub client: &'a ClientCredentials,
    pub code: &'a SecretString,
    pub redirect_uri: &'a str,
    /// Required when `config.pkce` is true.
    pub pkce_verifier: Option<&'a PkceVerifier>,
}

/// A refresh (RFC 6749 §6).
#[derive(Debug)]
pub struct RefreshRequest<'a> {
    pub provider: &'a str,
    pub config: &'a OAuth2Config,
    pub client: &'a ClientCredentials,
    pub refresh_token: &'a SecretString,
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-11-22 08:00 UTC);

    #[test]
    fn refresh_is_due_within_the_margin() {
        let margin = DEFAULT_REFRESH_MARGIN;
        assert!(!needs_refresh(Some(NOW + Duration::minutes(6)), NOW, margin));
        assert!(needs_refresh(Some(NOW + Duration::minutes(5)), NOW, margin));
        assert!(needs_refresh(Some(NOW + Duration::minutes(1)), NOW, margin));
        assert!(needs_refresh(Some(NOW - Duration::minutes(1)), NOW, margin));
        assert!(!needs_refresh(None, NOW, margin));
        assert!(!needs_refresh(Some(NOW + Duration::seconds(30)), NOW, Duration::ZERO));
    }

    #[test]
    fn default_margin_is_five_minutes() {
        assert_eq!(DEFAULT_REFRESH_MARGIN, Duration::minutes(5));
    }
}
