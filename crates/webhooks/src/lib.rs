//! The outbound HTTP client of webhooks ([`WebhookSender`]).
//!
//! Every delivery checks its URL again: `https` (or `http` for an allowed host), a host name that
//! resolves only to public addresses (allowed hosts may resolve anywhere). The name is resolved
//! once and the connection goes to a checked address (so a DNS answer that changes between the
//! check and the connection cannot point it inside). Redirects are not followed; the whole request
//! is bounded in time and the response body is read up to a bound.

mod target;

use std::time::Duration;

use async_trait::async_trait;
use compliance_ports::{OutboundRequest, OutboundResponse, SendError, WebhookSender};

pub use target::{Target, check};

/// Settings of the sender.
#[derive(Debug, Clone)]
pub struct SenderSettings {
    /// `WEBHOOK_ALLOWED_HOSTS`: hosts that may be reached over `http` and at internal addresses.
    pub allowed_hosts: Vec<String>,
    /// The whole request, from connecting to the last body byte read.
    pub timeout: Duration,
    /// How much of a response body is read.
    pub max_response_bytes: usize,
}

impl Default for SenderSettings {
    fn default() -> Self {
        Self { allowed_hosts: Vec::new(), timeout: Duration::from_secs(10), max_response_bytes: 64 * 1024 }
    }
}

pub struct HttpWebhookSender {
    settings: SenderSettings,
}

impl HttpWebhookSender {
    pub fn new(settings: SenderSettings) -> Self {
        Self { settings }
    }

    /// A client for one target: its name pinned to the checked addresses, no proxy (a proxy would
    /// resolve the name again), no redirects.
    fn client(&self, target: &Target) -> Result<reqwest::Client, SendError> {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(self.settings.timeout)
            .connect_timeout(self.settings.timeout)
            .user_agent(concat!("compliance-webhooks/", env!("CARGO_PKG_VERSION")));
        if let Some(domain) = target.url.domain() {
            builder = builder.resolve_to_addrs(domain, &target.socket_addresses());
        }
        builder.build().map_err(|error| SendError::Failed(format!("the HTTP client could not be built: {error}")))
    }

    async fn read_body(&self, response: &mut reqwest::Response) -> Result<Vec<u8>, reqwest::Error> {
        let mut body = Vec::new();
        while body.len() < self.settings.max_response_bytes {
            let Some(chunk) = response.chunk().await? else { break };
            let room = self.settings.max_response_bytes - body.len();
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
        Ok(body)
    }
}

#[async_trait]
impl WebhookSender for HttpWebhookSender {
    async fn send(&self, request: &OutboundRequest) -> Result<OutboundResponse, SendError> {
        let target = check(&request.url, &self.settings.allowed_hosts).await?;
        let client = self.client(&target)?;
        let mut post = client.post(target.url.clone()).header("content-type", "application/json");
        for (name, value) in &request.headers {
            post = post.header(*name, value);
        }
        let mut response = post.body(request.body.clone()).send().await.map_err(send_error)?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        // A body cut short by the timeout still tells what the status said.
        let body = self.read_body(&mut response).await.unwrap_or_default();
        Ok(OutboundResponse { status, body, retry_after })
    }
}

fn send_error(error: reqwest::Error) -> SendError {
    let error = error.without_url();
    if error.is_timeout() {
        return SendError::Timeout("no response within the delivery timeout".into());
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    SendError::Failed(text)
}
