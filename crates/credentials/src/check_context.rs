//! What a check sees: the access token, the credential values, and `fetch`, which authenticates.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use reqwest::{Method, RequestBuilder, Response};
use secrecy::{ExposeSecret, SecretString};

use crate::fields::{API_KEY_FIELD_ID, CredentialValues};
use crate::oauth::refresh::{AccessTokenError, OAuthConnection, TokenRefresher};
use crate::strategy::{ApiKeyConfig, ApiKeyLocation, BasicConfig};

/// How `fetch` authenticates, one per strategy.
#[derive(Debug, Clone)]
pub enum CheckAuth {
    OAuth2 {
        refresher: Arc<TokenRefresher>,
        connection: Box<OAuthConnection>,
    },
    ApiKey(ApiKeyConfig),
    Basic(BasicConfig),
    /// The check authenticates itself.
    Custom,
}

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("this integration does not use OAuth, so there is no access token")]
    NoAccessToken,
    #[error("the credential field {0} has no value")]
    MissingCredential(String),
    #[error("the credentials cannot be put into an HTTP header")]
    InvalidHeader,
    #[error(transparent)]
    AccessToken(#[from] AccessTokenError),
    #[error("the request failed")]
    Request(#[source] reqwest::Error),
}

/// The context handed to a check.
#[derive(Debug, Clone)]
pub struct CheckContext {
    http: reqwest::Client,
    auth: CheckAuth,
    credentials: CredentialValues,
}

impl CheckContext {
    /// `http` should come from [`crate::build_http_client`]: no redirects, so credentials never follow
    /// a redirect to another host.
    pub fn new(http: reqwest::Client, auth: CheckAuth, credentials: CredentialValues) -> Self {
        Self { http, auth, credentials }
    }

    /// The credential values by field id (`ctx.credentials` of the spec).
    pub fn credentials(&self) -> &CredentialValues {
        &self.credentials
    }

    /// The OAuth access token (`ctx.accessToken`), refreshed first when due.
    pub async fn access_token(&self) -> Result<SecretString, FetchError> {
        match &self.auth {
            CheckAuth::OAuth2 { refresher, connection } => Ok(refresher.access_token(connection).await?),
            _ => Err(FetchError::NoAccessToken),
        }
    }

    /// Starts a request on the context's client; send it with [`CheckContext::fetch`].
    pub fn request(&self, method: Method, url: &str) -> RequestBuilder {
        self.http.request(method, url)
    }

    /// Sends `request` with the strategy's authentication added.
    pub async fn fetch(&self, request: RequestBuilder) -> Result<Response, FetchError> {
        let (_, built) = request.build_split();
        let mut request = built.map_err(|e| FetchError::Request(e.without_url()))?;
        self.authenticate(&mut request).await?;
        // without_url: with in=query the URL holds the API key.
        self.http.execute(request).await.map_err(|e| FetchError::Request(e.without_url()))
    }

    async fn authenticate(&self, request: &mut reqwest::Request) -> Result<(), FetchError> {
        match &self.auth {
            CheckAuth::OAuth2 { .. } => {
                let token = self.access_token().await?;
                let value = sensitive(&format!("Bearer {}", token.expose_secret()))?;
                request.headers_mut().insert(AUTHORIZATION, value);
            }
            CheckAuth::ApiKey(config) => {
                let key = self.value(API_KEY_FIELD_ID)?.expose_secret();
                match config.location {
                    ApiKeyLocation::Header => {
                        let name =
                            HeaderName::from_bytes(config.name.as_bytes()).map_err(|_| FetchError::InvalidHeader)?;
                        request.headers_mut().insert(name, sensitive(&format!("{}{key}", config.prefix))?);
                    }
                    ApiKeyLocation::Query => {
                        request.url_mut().query_pairs_mut().append_pair(&config.name, key);
                    }
                }
            }
            CheckAuth::Basic(config) => {
                let username = self.value(&config.username_field)?.expose_secret();
                let password = self.value(&config.password_field)?.expose_secret();
                let value = sensitive(&format!("Basic {}", STANDARD.encode(format!("{username}:{password}"))))?;
                request.headers_mut().insert(AUTHORIZATION, value);
            }
            CheckAuth::Custom => {}
        }
        Ok(())
    }

    fn value(&self, id: &str) -> Result<&SecretString, FetchError> {
        self.credentials.get(id).ok_or_else(|| FetchError::MissingCredential(id.to_owned()))
    }
}

/// Sensitive header values are left out of reqwest's and hyper's Debug output.
fn sensitive(text: &str) -> Result<HeaderValue, FetchError> {
    let mut value = HeaderValue::from_str(text).map_err(|_| FetchError::InvalidHeader)?;
    value.set_sensitive(true);
    Ok(value)
}
