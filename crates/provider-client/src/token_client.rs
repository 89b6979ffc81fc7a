//! Token exchange (RFC 6749 §4.1.3) and refresh (§6) with the `oauth2` crate, over our own HTTP
//! client ([`ProviderHttp`]), which decides what a provider's answer means before oauth2 parses it.

use std::borrow::Cow;
use std::collections::BTreeMap;

use compliance_credentials::{
    ClientAuthMethod, ClientCredentials, CodeExchange, OAuth2Config, RESERVED_TOKEN_PARAMS, RefreshRequest, TokenError,
    TokenSet, diagnostics,
};
use oauth2::basic::{BasicErrorResponse, BasicRevocationErrorResponse, BasicTokenIntrospectionResponse};
use oauth2::{
    AuthType, AuthorizationCode, ClientId, ClientSecret, EndpointNotSet, EndpointSet, PkceCodeVerifier, RedirectUrl,
    RefreshToken, RequestTokenError, StandardRevocableToken, TokenResponse as _, TokenUrl,
};
use secrecy::{ExposeSecret, SecretString};
use time::OffsetDateTime;

use crate::http_client::{HttpClientError, HttpSettings, build_http_client};
use crate::provider_http::ProviderHttp;
use crate::token_response::ProviderTokenResponse;

/// Talks to token endpoints.
#[derive(Debug, Clone)]
pub struct TokenClient {
    pub(crate) http: ProviderHttp,
}

/// oauth2's client with a token endpoint, reading answers as [`ProviderTokenResponse`].
type OAuthClient = oauth2::Client<
    BasicErrorResponse,
    ProviderTokenResponse,
    BasicTokenIntrospectionResponse,
    StandardRevocableToken,
    BasicRevocationErrorResponse,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointSet,
>;

impl TokenClient {
    pub fn new(settings: HttpSettings) -> Result<Self, HttpClientError> {
        Ok(Self::with_client(build_http_client(settings)?))
    }

    /// Uses an already built client; it must not follow redirects (see [`build_http_client`]).
    pub fn with_client(http: reqwest::Client) -> Self {
        Self { http: ProviderHttp::new(http) }
    }

    /// Exchanges an authorization code. Logs `Token exchange failed` on failure and `OAuth
    /// completed for <provider>` on success.
    pub async fn exchange_code(&self, request: &CodeExchange<'_>) -> Result<TokenSet, TokenError> {
        let result = self.send_code_exchange(request).await;
        match &result {
            Ok(_) => diagnostics::oauth_completed(request.provider),
            Err(error) => diagnostics::token_exchange_failed(request.provider, error.short_reason()),
        }
        result
    }

    async fn send_code_exchange(&self, request: &CodeExchange<'_>) -> Result<TokenSet, TokenError> {
        let verifier = match (request.config.pkce, request.pkce_verifier) {
            // Without the verifier the provider refuses the code anyway; fail before sending it.
            (true, None) => return Err(TokenError::MissingCodeVerifier),
            (true, Some(verifier)) => Some(PkceCodeVerifier::new(verifier.secret().expose_secret().to_owned())),
            (false, _) => None,
        };
        let redirect_uri = RedirectUrl::new(request.redirect_uri.to_owned()).map_err(|_| TokenError::InvalidUrl)?;
        let client = oauth_client(request.config, request.client)?;
        let mut exchange = client
            .exchange_code(AuthorizationCode::new(request.code.expose_secret().to_owned()))
            .set_redirect_uri(Cow::Owned(redirect_uri));
        if let Some(verifier) = verifier {
            exchange = exchange.set_pkce_verifier(verifier);
        }
        for (name, value) in token_params(&request.config.token_params) {
            exchange = exchange.add_extra_param(name, value);
        }
        let sent_at = OffsetDateTime::now_utc();
        token_set(exchange.request_async(&self.http).await.map_err(from_oauth2)?, sent_at)
    }

    /// Refreshes an access token. When the provider sends no new refresh token the old one is kept.
    /// No scope is sent: the grant keeps the scopes it was given.
    pub async fn refresh(&self, request: &RefreshRequest<'_>) -> Result<TokenSet, TokenError> {
        if !request.config.supports_refresh_token {
            return Err(TokenError::RefreshNotSupported);
        }
        let mut tokens = self.send_refresh(request).await.inspect_err(|error| {
            tracing::warn!(provider = request.provider, reason = error.short_reason(), "Token refresh failed");
        })?;
        if tokens.refresh_token.is_none() {
            tokens.refresh_token = Some(request.refresh_token.clone());
        }
        Ok(tokens)
    }

    async fn send_refresh(&self, request: &RefreshRequest<'_>) -> Result<TokenSet, TokenError> {
        let client = oauth_client(request.config, request.client)?;
        let refresh_token = RefreshToken::new(request.refresh_token.expose_secret().to_owned());
        let mut refresh = client.exchange_refresh_token(&refresh_token);
        // tokenParams go into refreshes too: providers that need e.g. `audience` need it on both.
        for (name, value) in token_params(&request.config.token_params) {
            refresh = refresh.add_extra_param(name, value);
        }
        let sent_at = OffsetDateTime::now_utc();
        token_set(refresh.request_async(&self.http).await.map_err(from_oauth2)?, sent_at)
    }
}

/// Client authentication as `clientAuthMethod` says: `client_id` and `client_secret` in the form
/// (`body`), or the RFC 6749 §2.3.1 Basic header (each part form-urlencoded) and nothing in the form
/// (`header`).
fn oauth_client(config: &OAuth2Config, client: &ClientCredentials) -> Result<OAuthClient, TokenError> {
    let token_url = TokenUrl::new(config.token_url.clone()).map_err(|_| TokenError::InvalidUrl)?;
    let auth_type = match config.client_auth_method {
        ClientAuthMethod::Body => AuthType::RequestBody,
        ClientAuthMethod::Header => AuthType::BasicAuth,
    };
    Ok(oauth2::Client::new(ClientId::new(client.client_id.clone()))
        .set_client_secret(ClientSecret::new(client.client_secret.expose_secret().to_owned()))
        .set_auth_type(auth_type)
        .set_token_uri(token_url))
}

/// `tokenParams` without the ones the flow sets itself (validation refuses those already).
fn token_params(params: &BTreeMap<String, String>) -> impl Iterator<Item = (&str, &str)> {
    params
        .iter()
        .filter(|(name, _)| !RESERVED_TOKEN_PARAMS.contains(&name.as_str()))
        .map(|(name, value)| (name.as_str(), value.as_str()))
}

/// [`ProviderHttp`] hands oauth2 only successful answers, so what oauth2 reports besides our own
/// errors is about a success's body: not a token response. The body itself is dropped here (it may
/// hold a token), and so is the parse error (serde quotes the values it refuses).
fn from_oauth2(error: RequestTokenError<TokenError, BasicErrorResponse>) -> TokenError {
    match error {
        RequestTokenError::Request(ours) => ours,
        RequestTokenError::ServerResponse(_) | RequestTokenError::Parse(..) | RequestTokenError::Other(_) => {
            TokenError::InvalidResponse
        }
    }
}

fn token_set(response: ProviderTokenResponse, sent_at: OffsetDateTime) -> Result<TokenSet, TokenError> {
    if response.access_token().secret().is_empty() {
        return Err(TokenError::InvalidResponse);
    }
    // Measured from when the request was sent, so network time errs towards refreshing early.
    // An absurd `expires_in` (past what a date can hold) counts as "no expiry given".
    let expires_at = response
        .expires_in()
        .and_then(|lifetime| time::Duration::try_from(lifetime).ok())
        .and_then(|lifetime| sent_at.checked_add(lifetime));
    Ok(TokenSet {
        access_token: SecretString::from(response.access_token().secret().as_str()),
        refresh_token: response
            .refresh_token()
            .map(|token| token.secret().as_str())
            .filter(|token| !token.is_empty())
            .map(SecretString::from),
        expires_at,
        token_type: response.token_type().0.clone(),
        scope: response.scopes().map(|scopes| scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ")),
    })
}
