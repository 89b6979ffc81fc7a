//! A browser that opens pages for automations: a one-shot screenshot ([`BrowserRunner::capture`])
//! or a page session ([`BrowserRunner::open`]) that the step and agent executors drive.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use secrecy::SecretString;

/// What a one-shot capture opens, and how long it may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureRequest {
    /// An absolute http(s) URL.
    pub url: String,
    /// The instruction of the automation (a capture does not carry it out; a page session does).
    pub instruction: String,
    /// The whole run: navigation, load and screenshot.
    pub timeout: Duration,
}

/// What a capture took.
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
    /// DNS, connection or TLS failed.
    #[error("the host could not be reached: {0}")]
    Unreachable(String),
    /// The page did not load within this many seconds.
    #[error("the page did not load within {0} seconds")]
    Timeout(u64),
    /// The main document answered this HTTP error status.
    #[error("the page answered HTTP {0}")]
    HttpStatus(u16),
    /// The browser itself failed (could not start, crashed, protocol error).
    #[error("the browser failed: {0}")]
    Browser(String),
}

/// A headless browser, checked against internal addresses: one-shot captures and page sessions.
#[async_trait]
pub trait BrowserRunner: Send + Sync {
    /// Whether `url` may be opened at all (scheme, and where its host resolves), before a run is
    /// stored: `CaptureError::Refused` with the reason if not. `granted_hosts` are the internal
    /// hosts granted to the automation's organization, allowed beside the runner's own.
    async fn check_target(&self, url: &str, granted_hosts: &[String]) -> Result<(), CaptureError>;
    /// Opens `request.url`, waits for the page to load, takes a screenshot. Checks the target
    /// again first (DNS may have changed since the automation was created).
    async fn capture(&self, request: &CaptureRequest) -> Result<Capture, CaptureError>;
    /// Checks `url` like [`BrowserRunner::check_target`], starts a browser, opens `url` and waits
    /// for it to load. `timeout` bounds the start and every later navigation or load of the page;
    /// the caller bounds the whole session. Dropping the page ends the browser too, but
    /// [`BrowserPage::close`] ends it gracefully.
    /// `granted_hosts` hold for every request the page makes, as in `check_target`.
    async fn open(
        &self,
        url: &str,
        granted_hosts: &[String],
        timeout: Duration,
    ) -> Result<Box<dyn BrowserPage>, PageError>;
}

/// The element a click means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clickable<'a> {
    /// A button, link or label showing this text (the adapter documents its matching rule).
    Text(&'a str),
    /// The first element matching a CSS selector.
    Css(&'a str),
    /// An element by the reference a [`PageSnapshot`] gave it.
    Reference(&'a str),
}

/// The field a value is typed into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field<'a> {
    /// The text of its label, its placeholder or its `name`.
    Named(&'a str),
    /// A field by the reference a [`PageSnapshot`] gave it.
    Reference(&'a str),
}

/// Which way to scroll the page, by most of a viewport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScrollDirection {
    /// Towards the top.
    Up,
    /// Towards the bottom.
    Down,
}

/// An interactive element of a page, as the agent sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotElement {
    /// Stable for the page as long as it is not reloaded (`e1`, `e2`, …).
    pub reference: String,
    /// `link`, `button`, `textbox`, `checkbox`, …
    pub role: String,
    /// Its visible text, label or placeholder.
    pub name: String,
}

/// A compact view of a page, capped in size ([`PageSnapshot::TEXT_MAX`], [`PageSnapshot::ELEMENTS_MAX`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageSnapshot {
    /// The page's URL now (after redirects).
    pub url: String,
    /// The document's title.
    pub title: String,
    /// The visible text, cut at [`PageSnapshot::TEXT_MAX`] characters.
    pub text: String,
    /// The visible interactive elements, at most [`PageSnapshot::ELEMENTS_MAX`].
    pub elements: Vec<SnapshotElement>,
}

impl PageSnapshot {
    /// The most characters of visible text a snapshot holds.
    pub const TEXT_MAX: usize = 8_000;
    /// The most elements a snapshot lists.
    pub const ELEMENTS_MAX: usize = 150;
}

/// Why a page action failed: each message is fit for a run's step `detail` or `error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    /// No element matches (a click, a field): the step failed, the page is still usable.
    #[error("{0}")]
    NotFound(String),
    /// A navigation (the target, `go to`, a redirect, a link) to a host the target check refuses.
    #[error("the target is not allowed: {0}")]
    Refused(String),
    /// DNS, connection or TLS failed.
    #[error("the host could not be reached: {0}")]
    Unreachable(String),
    /// The page answered this HTTP error status.
    #[error("the page answered HTTP {0}")]
    HttpStatus(u16),
    /// What did not happen in time, e.g. "the page did not load within 30 seconds".
    #[error("{0}")]
    Timeout(String),
    /// The browser itself failed (could not start, crashed, protocol error).
    #[error("the browser failed: {0}")]
    Browser(String),
}

impl PageError {
    /// Whether the page can still be used after this error (only a missing element leaves it so).
    pub fn is_recoverable(&self) -> bool {
        matches!(self, PageError::NotFound(_))
    }
}

impl From<CaptureError> for PageError {
    fn from(error: CaptureError) -> Self {
        match error {
            CaptureError::Refused(why) => PageError::Refused(why),
            CaptureError::Unreachable(why) => PageError::Unreachable(why),
            CaptureError::Timeout(seconds) => {
                PageError::Timeout(format!("the page did not load within {seconds} seconds"))
            }
            CaptureError::HttpStatus(status) => PageError::HttpStatus(status),
            CaptureError::Browser(why) => PageError::Browser(why),
        }
    }
}

/// An open page in a running browser, driven one action at a time. Every navigation it makes
/// (`navigate`, a click on a link, a redirect, a script) passes the same target check as the
/// automation's `targetUrl`; a refused one is [`PageError::Refused`].
#[async_trait]
pub trait BrowserPage: Send {
    /// From now on the page stays on `origins` (each `scheme://host[:port]`, as a browser writes
    /// it): a request for a document of the page or of a new window on any other origin (a
    /// `navigate`, a link, a form, a redirect, a script) is not sent, and the action that caused
    /// it (or the next one) fails with [`PageError::Refused`] naming that origin.
    async fn keep_to_origins(&mut self, origins: &[String]) -> Result<(), PageError>;
    /// Opens `url` and waits for it to load.
    async fn navigate(&mut self, url: &str) -> Result<(), PageError>;
    /// Clicks the element, then waits for a navigation it started to load.
    async fn click(&mut self, target: Clickable<'_>) -> Result<(), PageError>;
    /// Focuses the field, replaces its value with `value`, and fires `input` and `change`.
    async fn type_into(&mut self, field: Field<'_>, value: &SecretString) -> Result<(), PageError>;
    /// Presses a key (a name of `compliance_domain::automation::PRESSABLE_KEYS` or one character)
    /// on the focused element, then waits for a navigation it started to load.
    async fn press(&mut self, key: &str) -> Result<(), PageError>;
    /// Scrolls by most of a viewport.
    async fn scroll(&mut self, direction: ScrollDirection) -> Result<(), PageError>;
    /// Waits until the page's visible text contains `text` (case-sensitive), polling;
    /// [`PageError::Timeout`] at `deadline`.
    async fn wait_for_text(&mut self, text: &str, deadline: Instant) -> Result<(), PageError>;
    /// Whether the page's visible text contains `text` (case-sensitive) now.
    async fn contains_text(&mut self, text: &str) -> Result<bool, PageError>;
    /// The page's URL now.
    async fn current_url(&mut self) -> Result<String, PageError>;
    /// A compact view of the page for the model ([`PageSnapshot`]).
    async fn snapshot(&mut self) -> Result<PageSnapshot, PageError>;
    /// A PNG of the viewport.
    async fn screenshot(&mut self) -> Result<Vec<u8>, PageError>;
    /// Ends the browser.
    async fn close(self: Box<Self>);
}
