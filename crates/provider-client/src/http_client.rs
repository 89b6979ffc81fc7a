//! The one HTTP client shape used for providers and checks: no redirects, bounded time.

use std::time::Duration;

/// Timeouts of the outbound client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpSettings {
    pub connect_timeout: Duration,
    /// The whole request, from connecting to the last body byte.
    pub total_timeout: Duration,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self { connect_timeout: Duration::from_secs(5), total_timeout: Duration::from_secs(30) }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the HTTP client could not be built")]
pub struct HttpClientError(#[source] reqwest::Error);

/// Builds the client. Redirects are never followed: a redirect would carry credentials (a Basic
/// header, an API key in the query) to a host the configuration did not name, and a token endpoint
/// that redirects is misconfigured.
pub fn build_http_client(settings: HttpSettings) -> Result<reqwest::Client, HttpClientError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(settings.connect_timeout)
        .timeout(settings.total_timeout)
        .user_agent(concat!(env!("CARGO_PKG_NAME"), "/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| HttpClientError(e.without_url()))
}
