//! An adapter for the [`BrowserRunner`] port: [`ChromiumRunner`] drives a real headless Chromium
//! over the Chrome DevTools Protocol (CDP) to screenshot the page an automation points at.
//!
//! # Choices
//!
//! - **Raw CDP over one websocket**, not `chromiumoxide` or `headless_chrome`. Those crates
//!   generate bindings for the whole protocol (hundreds of thousands of lines, minutes of
//!   compilation on a small machine) while a capture needs about ten commands. The `cdp` module is a
//!   client over `tokio-tungstenite`: send a command, read the answer with the same id, keep the
//!   events that arrive meanwhile. Sessions are "flat" (`Target.attachToTarget` with
//!   `flatten: true`): page commands and events carry a `sessionId` on the browser's connection.
//! - **A process per capture.** Each capture starts Chromium with a fresh `--user-data-dir`
//!   (cookies, cache and service workers never leak from one tenant's page to another's), and
//!   ends it afterwards, on errors, timeouts and cancellation too (`kill_on_drop`); the profile
//!   directory is removed. Starting Chromium costs about a second, which is acceptable for
//!   automations; a semaphore bounds the browsers running at once to
//!   [`BrowserSettings::max_concurrent`] (captures beyond it wait for a slot, outside their
//!   timeout). The request's timeout bounds navigation, load and screenshot; Chromium's start is
//!   bounded separately, so a slow start is reported as a browser failure, not as a slow page.
//! - **The run.** `Page.navigate`; an `errorText` (`net::ERR_NAME_NOT_RESOLVED`,
//!   `net::ERR_CONNECTION_REFUSED`, …) is [`CaptureError::Unreachable`]. Then the wait for
//!   `Page.loadEventFired`; the main document's status comes from `Network.responseReceived` (type
//!   `Document`, top frame), and a status of 400 or more fails the run with
//!   [`CaptureError::HttpStatus`] without a screenshot (an error page is not evidence). Otherwise
//!   `Page.captureScreenshot` of the 1280×800 viewport, as PNG.
//!
//! # Outbound rules
//!
//! An automation's URL is chosen by a tenant, and the browser runs inside our network, so the
//! browser must not become a way to reach internal services (SSRF). [`BrowserRunner::check_target`]
//! (and again the start of every capture) allows only absolute `http`/`https` URLs whose host
//! resolves exclusively to public addresses: loopback, private (RFC 1918, `fc00::/7`), link-local
//! (`169.254.0.0/16`, `fe80::/10`), unspecified, broadcast, multicast, carrier-grade NAT
//! (`100.64.0.0/10`) and cloud metadata addresses (`169.254.169.254`, `fd00:ec2::254`) are refused,
//! as are the names `localhost`, `*.localhost` and `metadata.google.internal`, unless the host is
//! in [`BrowserSettings::allowed_hosts`] (exact, case-insensitive). IPv4-mapped and NAT64 IPv6
//! addresses are judged by their IPv4 address. A host that does not resolve is
//! [`CaptureError::Unreachable`].
//!
//! - **DNS rebinding** of the target's host: Chromium is started with
//!   `--host-resolver-rules=MAP <host> <ip>`, so it connects to the address that was checked
//!   instead of resolving the name again.
//! - **Every other request** (redirects, sub-resources, frames, workers) is intercepted with the
//!   browser-wide `Fetch` domain and checked by the same rules (one verdict per origin and capture);
//!   a refused one fails with `BlockedByClient`. When that is the main document (a redirect to an
//!   internal host), the capture is [`CaptureError::Refused`].
//!
//! Known limits: hosts other than the target's are resolved again by Chromium after the check, so
//! a sub-resource or redirect host with a rebinding DNS could still reach an internal address;
//! WebSocket and WebRTC connections are not seen by `Fetch` interception. Running the browser in a
//! network namespace or behind an egress proxy that enforces the same rules would close both.

mod cdp;
mod chromium;
mod outbound;
mod page;

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use compliance_ports::{BrowserRunner, Capture, CaptureError, CaptureRequest};
use serde_json::json;
use tokio::sync::Semaphore;

use crate::cdp::Cdp;
use crate::chromium::Chromium;

/// How long Chromium may take to start and accept the DevTools connection.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(30);

/// How [`ChromiumRunner`] runs Chromium.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserSettings {
    /// The Chromium executable; `/usr/bin/chromium` by default.
    pub chromium_path: PathBuf,
    /// Hosts (names or IP literals) that may be opened although they resolve to internal
    /// addresses: exact, case-insensitive matches.
    pub allowed_hosts: Vec<String>,
    /// How many browsers may run at once; 2 by default (at least 1 is used).
    pub max_concurrent: usize,
    /// The timeout of a capture whose request has a zero timeout; 30 seconds by default.
    pub default_timeout: Duration,
    /// Where the fresh profile directories are created; the system's temporary directory by
    /// default.
    pub work_dir: PathBuf,
}

impl Default for BrowserSettings {
    fn default() -> Self {
        Self {
            chromium_path: PathBuf::from("/usr/bin/chromium"),
            allowed_hosts: Vec::new(),
            max_concurrent: 2,
            default_timeout: Duration::from_secs(30),
            work_dir: std::env::temp_dir(),
        }
    }
}

/// A [`BrowserRunner`] that starts a headless Chromium per capture.
#[derive(Debug)]
pub struct ChromiumRunner {
    settings: BrowserSettings,
    slots: Semaphore,
}

impl ChromiumRunner {
    pub fn new(settings: BrowserSettings) -> Self {
        let slots = Semaphore::new(settings.max_concurrent.max(1));
        Self { settings, slots }
    }

    pub fn settings(&self) -> &BrowserSettings {
        &self.settings
    }
}

#[async_trait]
impl BrowserRunner for ChromiumRunner {
    async fn check_target(&self, url: &str) -> Result<(), CaptureError> {
        outbound::check(url, &self.settings.allowed_hosts).await.map(|_| ())
    }

    async fn capture(&self, request: &CaptureRequest) -> Result<Capture, CaptureError> {
        let settings = &self.settings;
        let target = outbound::check(&request.url, &settings.allowed_hosts).await?;
        let timeout = match request.timeout.is_zero() {
            true => settings.default_timeout,
            false => request.timeout,
        };
        let _slot = self.slots.acquire().await.map_err(|_| CaptureError::Browser("the runner is closed".into()))?;
        let rules: Vec<String> =
            target.resolver_rule.iter().map(|rule| format!("--host-resolver-rules={rule}")).collect();
        let chromium = Chromium::launch(&settings.chromium_path, &settings.work_dir, &rules, LAUNCH_TIMEOUT).await?;
        let result = match tokio::time::timeout(LAUNCH_TIMEOUT, Cdp::connect(&chromium.ws_url)).await {
            Ok(Ok(mut cdp)) => {
                let run = tokio::time::timeout(timeout, page::capture(&mut cdp, &target, &settings.allowed_hosts));
                let result = run.await.unwrap_or_else(|_| Err(CaptureError::Timeout(whole_seconds(timeout))));
                // A graceful exit lets Chromium end its renderers; `shutdown` kills it otherwise.
                let _ = cdp.send("Browser.close", json!({}), None).await;
                result
            }
            // On a connection failure, `shutdown` waits a moment for an exit that will not come,
            // then kills the process.
            Ok(Err(error)) => Err(error.into()),
            Err(_) => Err(CaptureError::Browser("the DevTools connection timed out".into())),
        };
        chromium.shutdown().await;
        result
    }
}

/// A timeout in whole seconds, rounded up (as the user set it).
fn whole_seconds(timeout: Duration) -> u64 {
    timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0)
}
