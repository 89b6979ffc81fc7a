//! Token exchange and refresh: a small form-encoded client over reqwest (see the crate docs for why not
//! the `oauth2` crate).

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderValue};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use time::{Duration, OffsetDateTime};
use url::form_urlencoded;

use crate::diagnostics;
use crate::http_client::{HttpClientError, HttpSettings, build_http_client};
use crate::oauth::pkce::PkceVerifier;
use crate::strategy::{ClientAuthMethod, OAuth2Config};

/// Form fields the flow sets itself; `tokenParams` may not override them.
pub const RESERVED_TOKEN_PARAMS: &[&str] =
    &["grant_type", "code", "redirect_uri", "code_verifier", "client_id", "client_secret", "refresh_token"];

/// A token response larger than this is refused rather than buffered.
const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

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
#[derive(Debug, thiserror::Error)]
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
    #[error("the token request could not be sent")]
    Request(#[source] reqwest::Error),
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

    pub(super) fn short_reason(&self) -> &str {
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
            Self::Request(_) => "request_failed",
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

/// Talks to token endpoints.
#[derive(Debug, Clone)]
pub struct TokenClient {
    pub(super) http: reqwest::Client,
}

impl TokenClient {
    pub fn new(settings: HttpSettings) -> Result<Self, HttpClientError> {
        Ok(Self { http: build_http_client(settings)? })
    }

    /// Uses an already built client; it must not follow redirects (see [`build_http_client`]).
    pub fn with_client(http: reqwest::Client) -> Self {
        Self { http }
    }

    /// Exchanges an authorization code. Logs `Token exchange failed` on failure.
    pub async fn exchange_code(&self, request: &CodeExchange<'_>) -> Result<TokenSet, TokenError> {
        let mut form: Vec<(&str, &str)> = vec![
            ("grant_type", "authorization_code"),
            ("code", request.code.expose_secret()),
            ("redirect_uri", request.redirect_uri),
        ];
        if request.config.pkce {
            // Without the verifier the provider refuses the code anyway; fail before sending it.
            let Some(verifier) = request.pkce_verifier else {
                diagnostics::token_exchange_failed(request.provider, "missing_code_verifier");
                return Err(TokenError::MissingCodeVerifier);
            };
            form.push(("code_verifier", verifier.secret().expose_secret()));
        }
        let result = self.post(request.config, request.client, form).await;
        if let Err(error) = &result {
            diagnostics::token_exchange_failed(request.provider, error.short_reason());
        }
        result
    }

    /// Refreshes an access token. When the provider sends no new refresh token the old one is kept.
    pub async fn refresh(&self, request: &RefreshRequest<'_>) -> Result<TokenSet, TokenError> {
        if !request.config.supports_refresh_token {
            return Err(TokenError::RefreshNotSupported);
        }
        let form = vec![("grant_type", "refresh_token"), ("refresh_token", request.refresh_token.expose_secret())];
        let mut tokens = self.post(request.config, request.client, form).await.inspect_err(|error| {
            tracing::warn!(provider = request.provider, reason = error.short_reason(), "Token refresh failed");
        })?;
        if tokens.refresh_token.is_none() {
            tokens.refresh_token = Some(request.refresh_token.clone());
        }
        Ok(tokens)
    }

    async fn post(
        &self,
        config: &OAuth2Config,
        client: &ClientCredentials,
        mut form: Vec<(&str, &str)>,
    ) -> Result<TokenSet, TokenError> {
        // tokenParams go into refreshes too: providers that need e.g. `audience` need it on both.
        append_token_params(&mut form, &config.token_params);
        let request = self.http.post(&config.token_url).header(ACCEPT, "application/json");
        let request = authenticate_client(request, &mut form, config.client_auth_method, client)?;
        let sent_at = OffsetDateTime::now_utc();
        let response = request.form(&form).send().await.map_err(transport_error)?;
        let status = response.status();
        let body = read_limited(response).await?;
        interpret(status, &body, sent_at)
    }
}

fn append_token_params<'a>(form: &mut Vec<(&'a str, &'a str)>, params: &'a BTreeMap<String, String>) {
    for (name, value) in params {
        if !RESERVED_TOKEN_PARAMS.contains(&name.as_str()) {
            form.push((name, value));
        }
    }
}

/// Client authentication as `clientAuthMethod` says: `client_id` and `client_secret` appended to the form
/// (`body`), or the RFC 6749 §2.3.1 Basic header and nothing in the form (`header`). Token and revocation
/// requests alike.
pub(super) fn authenticate_client<'a>(
    request: reqwest::RequestBuilder,
    form: &mut Vec<(&'a str, &'a str)>,
    method: ClientAuthMethod,
    client: &'a ClientCredentials,
) -> Result<reqwest::RequestBuilder, TokenError> {
    Ok(match method {
        ClientAuthMethod::Body => {
            form.push(("client_id", &client.client_id));
            form.push(("client_secret", client.client_secret.expose_secret()));
            request
        }
        ClientAuthMethod::Header => request.header(AUTHORIZATION, client_basic_header(client)?),
    })
}

/// RFC 6749 §2.3.1: both parts form-urlencoded before base64, so a `:` in the id cannot split it.
fn client_basic_header(client: &ClientCredentials) -> Result<HeaderValue, TokenError> {
    let id: String = form_urlencoded::byte_serialize(client.client_id.as_bytes()).collect();
    let secret: String = form_urlencoded::byte_serialize(client.client_secret.expose_secret().as_bytes()).collect();
    let mut value = HeaderValue::from_str(&format!("Basic {}", STANDARD.encode(format!("{id}:{secret}"))))
        .map_err(|_| TokenError::InvalidClientCredentials)?;
    value.set_sensitive(true);
    Ok(value)
}

pub(super) fn transport_error(error: reqwest::Error) -> TokenError {
    if error.is_timeout() || error.is_connect() {
        TokenError::Transient { status: None }
    } else {
        TokenError::Request(error.without_url())
    }
}

pub(super) async fn read_limited(mut response: reqwest::Response) -> Result<Vec<u8>, TokenError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport_error)? {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(TokenError::InvalidResponse);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[derive(Deserialize)]
struct RawTokenResponse {
    access_token: Option<String>,
    token_type: Option<String>,
    expires_in: Option<ExpiresIn>,
    refresh_token: Option<String>,
    scope: Option<String>,
    error: Option<String>,
}

/// Some providers send `expires_in` as a string.
#[derive(Deserialize)]
#[serde(untagged)]
enum ExpiresIn {
    Seconds(i64),
    Text(String),
}

fn interpret(status: StatusCode, body: &[u8], sent_at: OffsetDateTime) -> Result<TokenSet, TokenError> {
    if status.is_redirection() {
        return Err(TokenError::Redirected { status: status.as_u16() });
    }
    if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
        return Err(TokenError::Transient { status: Some(status.as_u16()) });
    }
    let parsed: Option<RawTokenResponse> = serde_json::from_slice(body).ok();
    // Some providers (GitHub) answer 200 with an `error` body; the error wins over the status.
    if let Some(error) = parsed.as_ref().and_then(|p| p.error.as_deref()) {
        return Err(match error {
            "invalid_grant" => TokenError::InvalidGrant,
            "temporarily_unavailable" => TokenError::Transient { status: Some(status.as_u16()) },
            other => TokenError::Rejected { status: status.as_u16(), error: diagnostics::safe_code(other).to_owned() },
        });
    }
    if !status.is_success() {
        return Err(TokenError::Rejected { status: status.as_u16(), error: "no_error_code".to_owned() });
    }
    let raw = parsed.ok_or(TokenError::InvalidResponse)?;
    let access_token = raw.access_token.filter(|t| !t.is_empty()).ok_or(TokenError::InvalidResponse)?;
    let expires_in = match raw.expires_in {
        None => None,
        Some(ExpiresIn::Seconds(s)) => Some(s),
        Some(ExpiresIn::Text(t)) => Some(t.trim().parse::<i64>().map_err(|_| TokenError::InvalidResponse)?),
    };
    Ok(TokenSet {
        access_token: SecretString::from(access_token),
        refresh_token: raw.refresh_token.filter(|t| !t.is_empty()).map(SecretString::from),
        // Measured from when the request was sent, so network time errs towards refreshing early.
        // An absurd `expires_in` (past what a date can hold) counts as "no expiry given".
        expires_at: expires_in.and_then(|s| sent_at.checked_add(Duration::seconds(s.max(0)))),
        token_type: raw.token_type,
        scope: raw.scope,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    #[test]
    fn client_basic_header_urlencodes_both_parts() {
        let client = ClientCredentials { client_id: "id:1 x".into(), client_secret: "s/e+c%".into() };
        let header = client_basic_header(&client).unwrap();
        assert!(header.is_sensitive());
        let encoded = header.to_str().unwrap().strip_prefix("Basic ").unwrap();
        assert_eq!(STANDARD.decode(encoded).unwrap(), b"id%3A1+x:s%2Fe%2Bc%25");
    }

    #[test]
    fn responses_are_classified() {
        let t0 = OffsetDateTime::UNIX_EPOCH;
        let ok =
            interpret(StatusCode::OK, br#"{"access_token":"a","expires_in":"60","token_type":"bearer"}"#, t0).unwrap();
        assert_eq!(ok.expires_at, Some(t0 + Duration::seconds(60)));
        assert!(ok.refresh_token.is_none());
        assert!(matches!(
            interpret(StatusCode::OK, br#"{"error":"bad_verification_code"}"#, t0),
            Err(TokenError::Rejected { status: 200, .. })
        ));
        assert!(matches!(
            interpret(StatusCode::BAD_REQUEST, br#"{"error":"invalid_grant"}"#, t0),
            Err(TokenError::InvalidGrant)
        ));
        assert!(interpret(StatusCode::SERVICE_UNAVAILABLE, b"", t0).unwrap_err().is_retryable());
        assert!(interpret(StatusCode::TOO_MANY_REQUESTS, b"", t0).unwrap_err().is_retryable());
        assert!(matches!(
            interpret(StatusCode::OK, br#"{"token_type":"bearer"}"#, t0),
            Err(TokenError::InvalidResponse)
        ));
        assert!(matches!(interpret(StatusCode::OK, b"access_token=a", t0), Err(TokenError::InvalidResponse)));
        let odd = interpret(StatusCode::UNAUTHORIZED, br#"{"error":"Secret-Echo-123"}"#, t0).unwrap_err();
        assert!(!odd.to_string().contains("Secret-Echo"));
    }
}
