//! The outbound HTTP client of webhooks ([`WebhookSender`]).
//!
//! Every delivery checks its URL again: `https` (or `http` for an allowed host), a host name that
//! resolves only to public addresses (allowed hosts may resolve anywhere). The name is resolved
//! once and the connection goes to a checked address (so a DNS answer that changes between the
//! check and the connection cannot point it inside). Redirects are not followed; the whole request
//! is bounded in time and the response body is read up to a bound.

mod target;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use compliance_ports::{OutboundRequest, OutboundResponse, SendError, WebhookSender};

pub use target::{Target, check};

/// Settings of the sender.
#[derive(Debug, Clone)]
pub struct SenderSettings {
    /// `WEBHOOK_ALLOWED_HOSTS`: hosts that may be reached over `http` and at internal addresses,
    /// by every request (a request adds its organization's own grants).
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

/// Clients kept for reuse, at most this many (then they are all dropped and made again).
const CLIENTS_KEPT: usize = 256;

/// A client's pinning: the host name (none for an address) and the checked addresses it goes to.
type Pinning = (Option<String>, Vec<SocketAddr>);

pub struct HttpWebhookSender {
    settings: SenderSettings,
    /// One client per pinning, so that a burst of deliveries to one endpoint does not build a
    /// client (and load the TLS roots) per delivery, and may reuse its connections. A client only
    /// ever connects to the addresses of its key, so reuse never skips a check.
    clients: Mutex<HashMap<Pinning, reqwest::Client>>,
}

impl HttpWebhookSender {
    pub fn new(settings: SenderSettings) -> Self {
        Self { settings, clients: Mutex::new(HashMap::new()) }
    }

    /// The client for `target`, made once per pinning.
    fn client(&self, target: &Target) -> Result<reqwest::Client, SendError> {
        let domain = target.url.domain().map(str::to_owned);
        let key = (domain.clone(), if domain.is_some() { target.socket_addresses() } else { Vec::new() });
        let mut clients = self.clients.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let client = self.build_client(target)?;
        if clients.len() >= CLIENTS_KEPT {
            clients.clear();
        }
        clients.insert(key, client.clone());
        Ok(client)
    }

    /// A client for one target: its name pinned to the checked addresses, no proxy (a proxy would
    /// resolve the name again), no redirects.
    fn build_client(&self, target: &Target) -> Result<reqwest::Client, SendError> {
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
        let allowed: Vec<String> = self.settings.allowed_hosts.iter().chain(&request.granted_hosts).cloned().collect();
        let target = check(&request.url, &allowed).await?;
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
            .and_then(|value| retry_after(value, SystemTime::now()));
        // A body cut short by the timeout still tells what the status said.
        let body = self.read_body(&mut response).await.unwrap_or_default();
        Ok(OutboundResponse { status, body, retry_after })
    }
}

/// A `Retry-After` value (RFC 9110 §10.2.3) as a delay from `now`: delay-seconds, or an
/// HTTP-date in any of its three forms (a date already past is no delay). `None` for anything else.
fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    /// Wed, 21 Oct 2015 07:28:00 GMT.
    fn at_0728() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480)
    }

    #[test]
    fn retry_after_takes_delay_seconds() {
        assert_eq!(retry_after("120", at_0728()), Some(Duration::from_secs(120)));
        assert_eq!(retry_after(" 0 ", at_0728()), Some(Duration::ZERO));
    }

    #[test]
    fn retry_after_takes_an_http_date_in_each_form() {
        let now = at_0728() - Duration::from_secs(90);
        let ninety = Some(Duration::from_secs(90));
        assert_eq!(retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now), ninety, "IMF-fixdate");
        assert_eq!(retry_after("Wednesday, 21-Oct-15 07:28:00 GMT", now), ninety, "obsolete RFC 850");
        assert_eq!(retry_after("Wed Oct 21 07:28:00 2015", now), ninety, "obsolete asctime");
        let later = at_0728() + Duration::from_secs(5);
        assert_eq!(retry_after("Wed, 21 Oct 2015 07:28:00 GMT", later), Some(Duration::ZERO), "a past date");
    }

    #[test]
    fn retry_after_ignores_anything_else() {
        for value in ["", "soon", "-5", "1.5", "Wed, 32 Oct 2015 07:28:00 GMT"] {
            assert_eq!(retry_after(value, at_0728()), None, "{value:?}");
        }
    }
}
