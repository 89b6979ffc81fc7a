//! A browser that opens pages for automations: today a screenshot after the page loaded; the
//! automation's natural-language instruction is carried for the step that will execute it.

use std::time::Duration;

use async_trait::async_trait;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureRequest {
    /// An absolute http(s) URL.
    pub url: String,
    /// The instruction of the automation (not executed yet).
    pub instruction: String,
    /// The whole run: navigation, load and screenshot.
    pub timeout: Duration,
}

#[derive(Clone, PartialEq, Eq)]
pub struct Capture {
    /// A PNG image of the loaded page.
    pub png: Vec<u8>,
    /// The HTTP status of the main document, when the page came over HTTP.
    pub http_status: Option<u16>,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture").field("png_bytes", &self.png.len()).field("http_status", &self.http_status).finish()
    }
}

/// Why a page could not be captured: each message is fit to show the user as the run's `error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaptureError {
    /// The target is not allowed: its host resolves to a loopback, private, link-local or
    /// metadata address that the allow-list does not name.
    #[error("the target is not allowed: {0}")]
    Refused(String),
    #[error("the host could not be reached: {0}")]
    Unreachable(String),
    #[error("the page did not load within {0} seconds")]
    Timeout(u64),
    #[error("the page answered HTTP {0}")]
    HttpStatus(u16),
    /// The browser itself failed (could not start, crashed, protocol error).
    #[error("the browser failed: {0}")]
    Browser(String),
}

#[async_trait]
pub trait BrowserRunner: Send + Sync {
    /// Whether `url` may be opened at all (scheme, and where its host resolves), before a run is
    /// stored: `CaptureError::Refused` with the reason if not.
    async fn check_target(&self, url: &str) -> Result<(), CaptureError>;
    /// Opens `request.url`, waits for the page to load, takes a screenshot. Checks the target
    /// again first (DNS may have changed since the automation was created).
    async fn capture(&self, request: &CaptureRequest) -> Result<Capture, CaptureError>;
}
