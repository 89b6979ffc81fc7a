//! A browser whose pages the test scripts: a page that loads (showing a text the test sets), an
//! error, a page that never loads, or one that waits until the test lets it load. Its pages note
//! what was typed where and the origins they were kept to, for the tests to look at.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use std::time::Instant;

use compliance_ports::{
    BrowserPage, BrowserRunner, Capture, CaptureError, CaptureRequest, Clickable, Field, PageError, PageSnapshot,
    ScrollDirection,
};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::Notify;

pub const PNG: &[u8] = b"\x89PNG\r\n\x1a\nfake";

#[derive(Clone)]
pub enum Page {
    Loads,
    Fails(CaptureError),
    /// Never loads: only the worker's own timeout ends the run.
    Hangs,
    /// Loads once [`FakeBrowser::release`] is called.
    Waits,
}

pub struct FakeBrowser {
    page: Mutex<Page>,
    /// What the loaded page shows.
    text: Mutex<String>,
    captures: AtomicUsize,
    /// Told when a capture starts.
    started: Notify,
    release: Notify,
    /// Hosts of this fake network that are internal: refused unless a call grants them.
    internal: Mutex<Vec<String>>,
    log: Arc<Mutex<PageLog>>,
}

/// What the pages of a [`FakeBrowser`] were asked to do.
#[derive(Debug, Default, Clone)]
pub struct PageLog {
    /// Each value typed, with the page's URL at that moment.
    pub typed: Vec<(String, String)>,
    /// The origins each page was kept to.
    pub kept_to: Vec<Vec<String>>,
    /// The URLs navigated to.
    pub visited: Vec<String>,
}

impl Default for FakeBrowser {
    fn default() -> Self {
        Self {
            page: Mutex::new(Page::Loads),
            text: Mutex::new(String::new()),
            captures: AtomicUsize::new(0),
            started: Notify::new(),
            release: Notify::new(),
            internal: Mutex::new(Vec::new()),
            log: Arc::default(),
        }
    }
}

impl FakeBrowser {
    pub fn set(&self, page: Page) {
        *self.page.lock().unwrap() = page;
    }

    /// Makes `host` internal: `check_target` and `open` refuse it unless their granted hosts name it.
    pub fn make_internal(&self, host: &str) {
        self.internal.lock().unwrap().push(host.to_owned());
    }

    fn refuse_internal(&self, url: &str, granted_hosts: &[String]) -> Result<(), CaptureError> {
        let authority = url.split_once("://").map_or(url, |(_, rest)| rest);
        let host = authority.split(['/', ':', '?', '#']).next().unwrap_or_default().to_owned();
        match self.internal.lock().unwrap().contains(&host) && !granted_hosts.contains(&host) {
            true => Err(CaptureError::Refused(format!("{host} is a private address"))),
            false => Ok(()),
        }
    }

    /// What pages opened from now on show.
    pub fn show(&self, text: &str) {
        *self.text.lock().unwrap() = text.to_owned();
    }

    /// How many captures (or page sessions) have started.
    pub fn captures(&self) -> usize {
        self.captures.load(Ordering::SeqCst)
    }

    /// Waits until a capture has started (one that started earlier counts).
    pub async fn started(&self) {
        self.started.notified().await;
    }

    /// What the pages were asked to do so far.
    pub fn log(&self) -> PageLog {
        self.log.lock().unwrap().clone()
    }

    /// Lets a waiting capture finish.
    pub fn release(&self) {
        self.release.notify_one();
    }
}

#[async_trait]
impl BrowserRunner for FakeBrowser {
    async fn check_target(&self, url: &str, granted_hosts: &[String]) -> Result<(), CaptureError> {
        self.refuse_internal(url, granted_hosts)
    }

    async fn capture(&self, _request: &CaptureRequest) -> Result<Capture, CaptureError> {
        self.load().await?;
        Ok(Capture { png: PNG.to_vec(), http_status: Some(200) })
    }

    async fn open(
        &self,
        url: &str,
        granted_hosts: &[String],
        _timeout: std::time::Duration,
    ) -> Result<Box<dyn BrowserPage>, PageError> {
        self.refuse_internal(url, granted_hosts)?;
        self.load().await?;
        let text = self.text.lock().unwrap().clone();
        Ok(Box::new(FakePage { url: url.to_owned(), text, origins: None, log: self.log.clone() }))
    }
}

impl FakeBrowser {
    async fn load(&self) -> Result<(), CaptureError> {
        self.captures.fetch_add(1, Ordering::SeqCst);
        self.started.notify_one();
        let page = self.page.lock().unwrap().clone();
        match page {
            Page::Loads => {}
            Page::Fails(error) => return Err(error),
            Page::Hangs => std::future::pending::<()>().await,
            Page::Waits => self.release.notified().await,
        }
        Ok(())
    }
}

/// A loaded page that shows a fixed text, has nothing to click, and takes whatever is typed.
struct FakePage {
    url: String,
    text: String,
    /// Where the page may go, once kept to origins (as the Chromium adapter enforces it).
    origins: Option<Vec<String>>,
    log: Arc<Mutex<PageLog>>,
}

#[async_trait]
impl BrowserPage for FakePage {
    async fn keep_to_origins(&mut self, origins: &[String]) -> Result<(), PageError> {
        self.origins = Some(origins.to_vec());
        self.log.lock().unwrap().kept_to.push(origins.to_vec());
        Ok(())
    }

    async fn navigate(&mut self, url: &str) -> Result<(), PageError> {
        if let Some(origins) = &self.origins
            && !compliance_domain::automation::is_on(url, origins)
        {
            return Err(PageError::Refused(format!("{url} is outside the kept origins")));
        }
        self.url = url.to_owned();
        self.log.lock().unwrap().visited.push(url.to_owned());
        Ok(())
    }

    async fn click(&mut self, target: Clickable<'_>) -> Result<(), PageError> {
        Err(PageError::NotFound(format!("nothing to click on a fake page: {target:?}")))
    }

    async fn type_into(&mut self, _field: Field<'_>, value: &SecretString) -> Result<(), PageError> {
        self.log.lock().unwrap().typed.push((self.url.clone(), value.expose_secret().to_owned()));
        Ok(())
    }

    async fn press(&mut self, _key: &str) -> Result<(), PageError> {
        Ok(())
    }

    async fn scroll(&mut self, _direction: ScrollDirection) -> Result<(), PageError> {
        Ok(())
    }

    async fn wait_for_text(&mut self, text: &str, _deadline: Instant) -> Result<(), PageError> {
        match self.text.contains(text) {
            true => Ok(()),
            false => Err(PageError::Timeout("the text did not appear before the run's deadline".into())),
        }
    }

    async fn contains_text(&mut self, text: &str) -> Result<bool, PageError> {
        Ok(self.text.contains(text))
    }

    async fn current_url(&mut self) -> Result<String, PageError> {
        Ok(self.url.clone())
    }

    async fn snapshot(&mut self) -> Result<PageSnapshot, PageError> {
        Ok(PageSnapshot { url: self.url.clone(), title: String::new(), text: self.text.clone(), elements: Vec::new() })
    }

    async fn screenshot(&mut self) -> Result<Vec<u8>, PageError> {
        Ok(PNG.to_vec())
    }

    async fn close(self: Box<Self>) {}
}
