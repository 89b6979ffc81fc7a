//! The `ProviderClient` port over HTTP: the OAuth token endpoints (exchange and refresh on the
//! `oauth2` crate, revocation by hand) and requests to a provider's API signed with a connection's
//! credentials, all through one reqwest client that follows no redirect and bounds its time.
//!
//! # Choices where the spec is silent
//!
//! - **Token client**: the `oauth2` crate builds the exchange and refresh requests and parses token
//!   responses (`ProviderTokenResponse`, which also takes a missing `token_type` and a string
//!   `expires_in`), over [`ProviderHttp`], our reqwest client behind its `AsyncHttpClient` trait.
//!   oauth2 reads any non-200 answer as an error body and keeps the body in its parse errors, so our
//!   client judges every answer first (redirects refused, 5xx and 429 transient by status alone,
//!   RFC 6749 error bodies reduced to their code) and oauth2 only ever sees successes. Revocation
//!   uses the same client without oauth2, whose `revoke_token` refuses http URLs. A refresh that
//!   brings no new refresh token keeps the old one. `tokenParams` are sent with refreshes too; no
//!   scope is sent on refresh.
//! - **Redirects** are never followed, for token endpoints and signed requests alike: credentials
//!   must not travel to a host the configuration did not name. Timeouts: 5 s connect, 30 s total
//!   ([`HttpSettings`]). Token responses over 1 MiB are refused. `Accept: application/json` is sent,
//!   and a 200 answer with an `error` member (GitHub does this) counts as an error.
//! - **Errors** never carry a code, token or secret, nor a URL (an API key may be in the query).
//! - **api_key with in=query** sends the key without the prefix (the spec's rule 2). Basic
//!   authentication of signed requests is `base64(username:password)` as RFC 7617 (no
//!   URL-encoding, unlike the OAuth client header).
//! - **Refresh failures** log `Token refresh failed`, revocation failures `Token revocation
//!   failed` (not in the spec's table, which covers the connection flow).

mod http_client;
mod provider_http;
mod revoke;
mod signed_request;
mod token_client;
mod token_response;

use async_trait::async_trait;
use compliance_credentials::{
    CodeExchange, RefreshRequest, RequestAuth, RevokeRequest, TokenError, TokenSet, VerifyMethod, VerifyRequest,
};
use compliance_ports::{ProviderAnswer, ProviderClient, ProviderRequestError};
use reqwest::Method;

pub use http_client::{HttpClientError, HttpSettings, build_http_client};
pub use provider_http::ProviderHttp;
pub use token_client::TokenClient;

/// [`ProviderClient`] over one HTTP client.
#[derive(Debug, Clone)]
pub struct HttpProviderClient {
    http: reqwest::Client,
    tokens: TokenClient,
}

impl HttpProviderClient {
    pub fn new(settings: HttpSettings) -> Result<Self, HttpClientError> {
        Ok(Self::with_client(build_http_client(settings)?))
    }

    /// Uses an already built client; it must not follow redirects (see [`build_http_client`]).
    pub fn with_client(http: reqwest::Client) -> Self {
        Self { tokens: TokenClient::with_client(http.clone()), http }
    }
}

#[async_trait]
impl ProviderClient for HttpProviderClient {
    async fn exchange(&self, request: &CodeExchange<'_>) -> Result<TokenSet, TokenError> {
        self.tokens.exchange_code(request).await
    }

    async fn refresh(&self, request: &RefreshRequest<'_>) -> Result<TokenSet, TokenError> {
        self.tokens.refresh(request).await
    }

    async fn revoke(&self, request: &RevokeRequest<'_>) -> Result<(), TokenError> {
        self.tokens.revoke(request).await
    }

    async fn verify(&self, request: &VerifyRequest, auth: &RequestAuth) -> Result<u16, ProviderRequestError> {
        let method = match request.method {
            VerifyMethod::Get => Method::GET,
            VerifyMethod::Head => Method::HEAD,
            VerifyMethod::Post => Method::POST,
        };
        let response = signed_request::send(&self.http, method, &request.url, auth).await?;
        Ok(response.status().as_u16())
    }

    async fn signed_get(&self, url: &str, auth: &RequestAuth) -> Result<ProviderAnswer, ProviderRequestError> {
        signed_request::answer(signed_request::send(&self.http, Method::GET, url, auth).await?).await
    }
}
