//! A typed async client for the compliance REST API.
//!
//! One [`Client`] method per operation of `docs/openapi.json`, named after its `operationId`
//! in snake case (`listRisks` → [`Client::list_risks`]), with the request and response types of
//! [`types`]. Both are generated from the document (`cargo xtask client`; CI fails when the
//! committed `generated.rs` is stale).
//!
//! - Authentication: an API key (`X-API-Key`), or a user's session (`Cookie: session_token=…`)
//!   with the organization it acts in (`X-Organization-Id`); see [`Auth`].
//! - Errors: an error status becomes [`Error::Api`] with the problem's `status`, `type`, `title`,
//!   `detail`, field errors and `requestId` ([`ApiError`]).
//! - Lists: each list that pages has a `…_stream` method, a stream of every item that follows
//!   `nextCursor` (e.g. [`Client::list_risks_stream`]).
//! - Retries: 429 and 503 answers are retried after their `Retry-After`, a bounded number of
//!   times, and only where repeating the request cannot do something twice ([`RetryPolicy`]).
//! - Operations whose answer is not JSON (exports, pages, images, redirects) return a
//!   [`RawResponse`]; redirects are not followed.
//!
//! ```no_run
//! use compliance_client::types::{NewRisk, RiskCategory};
//! use compliance_client::{Auth, Client, ListRisksQuery};
//! use futures_util::TryStreamExt;
//!
//! # async fn example() -> Result<(), compliance_client::Error> {
//! let client = Client::new("http://localhost:8080", Auth::api_key("cpk_…"))?;
//! let new = NewRisk::new(RiskCategory::Technology, "No restore drill.".into(), "Backups untested".into());
//! let risk = client.create_risk(&new).await?;
//! let all: Vec<_> = client.list_risks_stream(ListRisksQuery::default()).try_collect().await?;
//! println!("{} created; {} risks in all", risk.id, all.len());
//! # Ok(())
//! # }
//! ```

mod double_option;
mod error;
mod generated;
mod pagination;
mod retry;
mod transport;

use std::fmt;

use reqwest::header::{COOKIE, HeaderMap, HeaderName, HeaderValue};

pub use error::{ApiError, Error};
pub use generated::types;
pub use generated::types::*;
pub use pagination::{Page, Paged};
pub use retry::RetryPolicy;

/// How the client authenticates.
#[derive(Clone)]
pub enum Auth {
    /// No credentials (the sign-in flow, health and documentation routes).
    Anonymous,
    /// An organization's API key (`cpk_…`), sent as `X-API-Key`; the key names its organization.
    ApiKey(String),
    /// A user's session token, sent as the `session_token` cookie, acting in `organization_id`
    /// (`org_…`, sent as `X-Organization-Id`; the user must be a member).
    Session {
        /// The session token.
        token: String,
        /// The organization the requests act in.
        organization_id: String,
    },
}

impl Auth {
    /// [`Auth::ApiKey`].
    pub fn api_key(key: impl Into<String>) -> Self {
        Self::ApiKey(key.into())
    }

    /// [`Auth::Session`].
    pub fn session(token: impl Into<String>, organization_id: impl Into<String>) -> Self {
        Self::Session { token: token.into(), organization_id: organization_id.into() }
    }

    /// The headers that carry the credentials, marked sensitive (never shown by `Debug`).
    fn headers(&self) -> Result<HeaderMap, Error> {
        let mut headers = HeaderMap::new();
        match self {
            Self::Anonymous => {}
            Self::ApiKey(key) => {
                headers.insert(HeaderName::from_static("x-api-key"), secret(key, "the API key")?);
            }
            Self::Session { token, organization_id } => {
                headers.insert(COOKIE, secret(&format!("session_token={token}"), "the session token")?);
                let organization = HeaderValue::from_str(organization_id)
                    .map_err(|_| Error::Config("the organization id is not a valid header value".to_owned()))?;
                headers.insert(HeaderName::from_static("x-organization-id"), organization);
            }
        }
        Ok(headers)
    }
}

fn secret(value: &str, what: &str) -> Result<HeaderValue, Error> {
    let mut header =
        HeaderValue::from_str(value).map_err(|_| Error::Config(format!("{what} is not a valid header value")))?;
    header.set_sensitive(true);
    Ok(header)
}

impl fmt::Debug for Auth {
    /// Names the kind of credentials, never the secret.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Anonymous => formatter.write_str("Anonymous"),
            Self::ApiKey(_) => formatter.write_str("ApiKey(…)"),
            Self::Session { organization_id, .. } => {
                formatter.debug_struct("Session").field("organization_id", organization_id).finish_non_exhaustive()
            }
        }
    }
}

/// An answer that is not JSON: an export, a page, an image, a redirect.
#[derive(Debug, Clone)]
pub struct RawResponse {
    /// The HTTP status (2xx, or 3xx for the operations that redirect).
    pub status: u16,
    /// The answer's headers (`Content-Type`, `Location`, …).
    pub headers: HeaderMap,
    /// The body as it came.
    pub body: Vec<u8>,
}

/// The API client: cheap to clone (the connection pool is shared).
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base_url: reqwest::Url,
    headers: HeaderMap,
    retry: RetryPolicy,
}

impl fmt::Debug for Client {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Client")
            .field("base_url", &self.base_url.as_str())
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client of the service at `base_url` (e.g. `https://compliance.example.com`) with the
    /// default [`RetryPolicy`] and timeouts (10 s to connect, 60 s per request).
    pub fn new(base_url: &str, auth: Auth) -> Result<Self, Error> {
        ClientBuilder::new(base_url, auth).build()
    }

    /// A client with more settings: [`ClientBuilder`].
    pub fn builder(base_url: &str, auth: Auth) -> ClientBuilder {
        ClientBuilder::new(base_url, auth)
    }

    /// The same client with other credentials (sharing the connection pool).
    pub fn with_auth(&self, auth: &Auth) -> Result<Self, Error> {
        Ok(Self { headers: auth.headers()?, ..self.clone() })
    }
}

/// Settings of a [`Client`].
#[derive(Debug)]
pub struct ClientBuilder {
    base_url: String,
    auth: Auth,
    retry: RetryPolicy,
    http: Option<reqwest::Client>,
}

impl ClientBuilder {
    fn new(base_url: &str, auth: Auth) -> Self {
        Self { base_url: base_url.to_owned(), auth, retry: RetryPolicy::default(), http: None }
    }

    /// When 429 and 503 answers are retried.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// Sends through this `reqwest::Client` (proxies, certificates, timeouts of your own). It
    /// should not follow redirects, or the redirecting operations answer their target instead.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// The client.
    pub fn build(self) -> Result<Client, Error> {
        let base_url = reqwest::Url::parse(&self.base_url)
            .map_err(|error| Error::Config(format!("the base URL `{}` is not a URL: {error}", self.base_url)))?;
        if !matches!(base_url.scheme(), "http" | "https") {
            return Err(Error::Config(format!("the base URL `{}` is not http(s)", self.base_url)));
        }
        let http = match self.http {
            Some(http) => http,
            None => reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(transport::CONNECT_TIMEOUT)
                .timeout(transport::REQUEST_TIMEOUT)
                .build()?,
        };
        Ok(Client { http, base_url, headers: self.auth.headers()?, retry: self.retry })
    }
}
