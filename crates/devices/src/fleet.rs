//! [`FleetDeviceDirectory`]: the hosts of a label from FleetDM's `GET /api/v1/fleet/hosts`.

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use compliance_ports::{DeviceDirectory, DeviceError, DeviceLabel, DeviceRecord};
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderValue};
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;
use url::Url;

/// Hosts asked for per page unless configured otherwise.
pub const DEFAULT_PAGE_SIZE: usize = 100;
/// The largest page size accepted by [`FleetDeviceDirectory::new`].
pub const MAX_PAGE_SIZE: usize = 10_000;
/// Time for one request, from connecting to the last body byte.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Time for establishing a connection (DNS, TCP, TLS).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Pages read for one label at most; a label that fills them all is refused as too large.
pub const MAX_PAGES: usize = 100;
/// The largest page body read (hosts with their software can be big).
pub const MAX_PAGE_BYTES: usize = 16 * 1024 * 1024;

/// Where FleetDM is and how to talk to it. `Debug` shows the token as `[REDACTED]`.
#[derive(Debug, Clone)]
pub struct FleetSettings {
    /// The server's base URL, such as `https://fleet.example.com` (a path prefix is kept).
    pub url: String,
    /// An API token (of an API-only user), sent as `Authorization: Bearer {token}`.
    pub token: SecretString,
    /// Hosts per page (`per_page`), 1 to [`MAX_PAGE_SIZE`]; default [`DEFAULT_PAGE_SIZE`].
    pub page_size: usize,
    /// Per request, from connecting to the last body byte; default [`DEFAULT_TIMEOUT`].
    pub timeout: Duration,
    /// Per connection; default [`DEFAULT_CONNECT_TIMEOUT`].
    pub connect_timeout: Duration,
}

impl FleetSettings {
    /// Settings with the default page size and timeouts.
    pub fn new(url: impl Into<String>, token: SecretString) -> Self {
        Self {
            url: url.into(),
            token,
            page_size: DEFAULT_PAGE_SIZE,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }
}

/// Why [`FleetDeviceDirectory::new`] refused its settings. Messages carry neither the token nor the URL.
#[derive(Debug, thiserror::Error)]
pub enum FleetConfigError {
    #[error("the FleetDM URL must be an absolute http(s) URL without user, password, query or fragment")]
    InvalidUrl,
    #[error("the FleetDM token is empty or cannot be sent in an HTTP header")]
    InvalidToken,
    #[error("the FleetDM page size must be between 1 and {MAX_PAGE_SIZE}")]
    InvalidPageSize,
    #[error("the HTTP client could not be built")]
    Client(#[source] reqwest::Error),
}

/// The hosts of a FleetDM label, fetched page by page (sequentially; see the crate documentation).
#[derive(Clone)]
pub struct FleetDeviceDirectory {
    client: reqwest::Client,
    /// `{base}/api/v1/fleet/hosts`, without a query.
    hosts_url: Url,
    /// `{base}/api/v1/fleet/labels`, to which a label's id is appended.
    labels_url: Url,
    /// `Bearer {token}`, marked sensitive.
    authorization: HeaderValue,
    page_size: usize,
}

impl fmt::Debug for FleetDeviceDirectory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetDeviceDirectory")
            .field("hosts_url", &self.hosts_url.as_str())
            .field("authorization", &"[REDACTED]")
            .field("page_size", &self.page_size)
            .finish_non_exhaustive()
    }
}

impl FleetDeviceDirectory {
    /// Checks the settings and builds the HTTP client (no redirects, the settings' timeouts).
    pub fn new(settings: FleetSettings) -> Result<Self, FleetConfigError> {
        let hosts_url = endpoint_url(&settings.url, "hosts")?;
        let labels_url = endpoint_url(&settings.url, "labels")?;
        if settings.page_size == 0 || settings.page_size > MAX_PAGE_SIZE {
            return Err(FleetConfigError::InvalidPageSize);
        }
        let token = settings.token.expose_secret().trim();
        if token.is_empty() {
            return Err(FleetConfigError::InvalidToken);
        }
        let mut authorization =
            HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| FleetConfigError::InvalidToken)?;
        authorization.set_sensitive(true);
        // No redirects: the bearer token must not travel to a host the configuration did not name.
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(settings.connect_timeout)
            .timeout(settings.timeout)
            .user_agent(concat!("compliance-devices/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FleetConfigError::Client(e.without_url()))?;
        Ok(Self { client, hosts_url, labels_url, authorization, page_size: settings.page_size })
    }

    /// One page of the label's hosts, each checked to be a JSON object.
    async fn page(&self, label_id: i64, page: usize) -> Result<Vec<DeviceRecord>, DeviceError> {
        let mut url = self.hosts_url.clone();
        url.query_pairs_mut()
            .append_pair("label_id", &label_id.to_string())
            .append_pair("populate_policies", "true")
            .append_pair("populate_software", "true")
            .append_pair("page", &page.to_string())
            .append_pair("per_page", &self.page_size.to_string())
            .append_pair("order_key", "id");
        let response = self
            .client
            .get(url)
            .header(AUTHORIZATION, self.authorization.clone())
            .header(ACCEPT, "application/json")
            .send()
            .await
            .map_err(transport_error)?;
        let status = response.status();
        if !status.is_success() {
            return Err(DeviceError::Upstream { status: status.as_u16() });
        }
        let body = read_body(response, page).await?;
        parse_page(&body, page)
    }
}

#[async_trait]
impl DeviceDirectory for FleetDeviceDirectory {
    /// Pages 0, 1, … one after another until a page is short; at most [`MAX_PAGES`] pages.
    async fn hosts_with_label(&self, label_id: i64) -> Result<Vec<DeviceRecord>, DeviceError> {
        let mut hosts = Vec::new();
        let mut seen = HashSet::new();
        for page in 0..MAX_PAGES {
            let batch = self.page(label_id, page).await?;
            if batch.len() > self.page_size {
                // FleetDM ignored per_page; paging on would return the same hosts again.
                return Err(invalid(page, "more hosts than the page size asked for"));
            }
            let full = batch.len() == self.page_size;
            // A host that moved to a later page while paging (membership changed) is kept once.
            hosts.extend(batch.into_iter().filter(|host| match host.get("id") {
                Some(id) => seen.insert(id.to_string()),
                None => true,
            }));
            if !full {
                return Ok(hosts);
            }
        }
        Err(DeviceError::InvalidResponse(format!(
            "label too large: more than {} hosts ({MAX_PAGES} pages of {})",
            MAX_PAGES * self.page_size,
            self.page_size
        )))
    }

    /// `GET /api/v1/fleet/labels/{id}`: a 404 is no such label; `label_type: builtin` marks
    /// FleetDM's own labels (`All Hosts`, `macOS`, …).
    async fn label(&self, label_id: i64) -> Result<Option<DeviceLabel>, DeviceError> {
        let mut url = self.labels_url.clone();
        url.path_segments_mut()
            .map_err(|()| DeviceError::InvalidResponse("no label URL".into()))?
            .push(&label_id.to_string());
        let response = self
            .client
            .get(url)
            .header(AUTHORIZATION, self.authorization.clone())
            .header(ACCEPT, "application/json")
            .send()
            .await
            .map_err(transport_error)?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(DeviceError::Upstream { status: status.as_u16() });
        }
        let body = read_body(response, 0).await?;
        parse_label(&body).map(Some)
    }
}

/// `{"label": {"name": …, "label_type": …}}`. Messages never quote the body.
fn parse_label(body: &[u8]) -> Result<DeviceLabel, DeviceError> {
    let wrong = |what: &str| DeviceError::InvalidResponse(format!("label: {what}"));
    let value: Value = serde_json::from_slice(body).map_err(|_| wrong("the body is not JSON"))?;
    let label = value.get("label").ok_or_else(|| wrong("the body has no `label` object"))?;
    let name = label.get("name").and_then(Value::as_str).ok_or_else(|| wrong("the label has no `name`"))?;
    let kind = label.get("label_type").and_then(Value::as_str).ok_or_else(|| wrong("the label has no `label_type`"))?;
    // Anything but `regular` counts as built in: a kind FleetDM adds later is not trusted.
    Ok(DeviceLabel { name: name.chars().take(200).collect(), builtin: kind != "regular" })
}

/// `{base}/api/v1/fleet/{endpoint}`, keeping a path prefix of the base URL.
fn endpoint_url(base: &str, endpoint: &str) -> Result<Url, FleetConfigError> {
    let mut url = Url::parse(base.trim()).map_err(|_| FleetConfigError::InvalidUrl)?;
    let acceptable = matches!(url.scheme(), "http" | "https")
        && url.host().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.query().is_none()
        && url.fragment().is_none();
    if !acceptable {
        return Err(FleetConfigError::InvalidUrl);
    }
    let path = format!("{}/api/v1/fleet/{endpoint}", url.path().trim_end_matches('/'));
    url.set_path(&path);
    Ok(url)
}

/// Maps a reqwest failure; the error loses its URL before it is formatted.
fn transport_error(error: reqwest::Error) -> DeviceError {
    let error = error.without_url();
    if error.is_timeout() {
        DeviceError::Timeout
    } else if error.is_body() || error.is_decode() {
        DeviceError::InvalidResponse(format!("the answer could not be read: {error}"))
    } else {
        // Connection refused, DNS failure, TLS failure, connection closed before an answer.
        DeviceError::Unreachable
    }
}

/// The body, at most [`MAX_PAGE_BYTES`].
async fn read_body(mut response: reqwest::Response, page: usize) -> Result<Vec<u8>, DeviceError> {
    let too_large = || invalid(page, &format!("the body is larger than {MAX_PAGE_BYTES} bytes"));
    if response.content_length().is_some_and(|length| length > MAX_PAGE_BYTES as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport_error)? {
        if body.len() + chunk.len() > MAX_PAGE_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// `{"hosts": [{...}, ...]}` into its hosts. Messages say what was wrong, never what the body held.
fn parse_page(body: &[u8], page: usize) -> Result<Vec<DeviceRecord>, DeviceError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| invalid(page, &format!("the body is not JSON (line {}, column {})", e.line(), e.column())))?;
    let Value::Object(mut envelope) = value else {
        return Err(invalid(page, "the body is not a JSON object"));
    };
    let hosts = match envelope.remove("hosts") {
        Some(Value::Array(hosts)) => hosts,
        // Go encodes an empty slice that was never allocated as null.
        Some(Value::Null) => Vec::new(),
        Some(_) => return Err(invalid(page, "`hosts` is not an array")),
        None => return Err(invalid(page, "the body has no `hosts` member")),
    };
    hosts
        .into_iter()
        .enumerate()
        .map(|(index, host)| match host {
            Value::Object(host) => Ok(host),
            _ => Err(invalid(page, &format!("host {index} is not a JSON object"))),
        })
        .collect()
}

fn invalid(page: usize, what: &str) -> DeviceError {
    DeviceError::InvalidResponse(format!("hosts page {page}: {what}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    #[test]
    fn hosts_url_keeps_a_path_prefix_and_refuses_queries() {
        assert_eq!(
            endpoint_url("https://fleet.example.com", "hosts").unwrap().as_str(),
            "https://fleet.example.com/api/v1/fleet/hosts"
        );
        assert_eq!(
            endpoint_url("https://example.com/fleet/", "hosts").unwrap().as_str(),
            "https://example.com/fleet/api/v1/fleet/hosts"
        );
        for bad in [
            "fleet.example.com",
            "ftp://fleet.example.com",
            "https://u:p@fleet.example.com",
            "https://f.example.com/?a=1",
            "https://f.example.com/#x",
        ] {
            assert!(matches!(endpoint_url(bad, "hosts"), Err(FleetConfigError::InvalidUrl)), "{bad}");
        }
    }

    #[test]
    fn envelopes_are_checked_without_quoting_the_body() {
        assert_eq!(parse_page(br#"{"hosts": null}"#, 0).unwrap().len(), 0);
        assert_eq!(parse_page(br#"{"hosts": [{"id": 1}], "meta": {}}"#, 0).unwrap().len(), 1);
        for body in [
            &br#"{"hosts": ["secret-value"]}"#[..],
            br#"{"hosts": "secret-value"}"#,
            br#"["secret-value"]"#,
            br#"{"secret-value": 1}"#,
            b"secret-value",
        ] {
            let error = parse_page(body, 3).unwrap_err();
            assert!(matches!(&error, DeviceError::InvalidResponse(m) if m.starts_with("hosts page 3: ")), "{error:?}");
            assert!(!error.to_string().contains("secret-value"), "{error}");
        }
    }

    #[test]
    fn only_regular_labels_are_not_built_in() {
        let label =
            |kind: &str| parse_label(format!(r#"{{"label": {{"name": "n", "label_type": "{kind}"}}}}"#).as_bytes());
        assert!(!label("regular").unwrap().builtin);
        assert!(label("builtin").unwrap().builtin);
        assert!(label("something-new").unwrap().builtin);
        let error = parse_label(br#"{"label": {"name": "secret-value"}}"#).unwrap_err();
        assert!(!error.to_string().contains("secret-value"), "{error}");
        assert!(parse_label(b"secret-value").is_err());
    }

    #[test]
    fn settings_are_checked() {
        let settings = |page_size, token: &str| FleetSettings {
            page_size,
            ..FleetSettings::new("https://fleet.example.com", SecretString::from(token))
        };
        assert!(matches!(FleetDeviceDirectory::new(settings(0, "t")), Err(FleetConfigError::InvalidPageSize)));
        assert!(matches!(FleetDeviceDirectory::new(settings(100, " ")), Err(FleetConfigError::InvalidToken)));
        assert!(matches!(FleetDeviceDirectory::new(settings(100, "a\nb")), Err(FleetConfigError::InvalidToken)));
        assert!(FleetDeviceDirectory::new(settings(MAX_PAGE_SIZE, "t")).is_ok());
    }
}
