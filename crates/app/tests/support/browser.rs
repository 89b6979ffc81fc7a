//! A browser whose captures the test scripts: a screenshot, an error, a page that never loads,
//! or one that waits until the test lets it finish.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use compliance_ports::{BrowserPage, BrowserRunner, Capture, CaptureError, CaptureRequest, PageError};
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
    captures: AtomicUsize,
    /// Told when a capture starts.
    started: Notify,
    release: Notify,
}

impl Default for FakeBrowser {
    fn default() -> Self {
        Self {
            page: Mutex::new(Page::Loads),
            captures: AtomicUsize::new(0),
            started: Notify::new(),
            release: Notify::new(),
        }
    }
}

impl FakeBrowser {
    pub fn set(&self, page: Page) {
        *self.page.lock().unwrap() = page;
    }

    /// How many captures have started.
    pub fn captures(&self) -> usize {
        self.captures.load(Ordering::SeqCst)
    }

    /// Waits until a capture has started (one that started earlier counts).
    pub async fn started(&self) {
        self.started.notified().await;
    }

    /// Lets a waiting capture finish.
    pub fn release(&self) {
        self.release.notify_one();
    }
}

#[async_trait]
impl BrowserRunner for FakeBrowser {
    async fn check_target(&self, _url: &str) -> Result<(), CaptureError> {
        Ok(())
    }

    async fn capture(&self, _request: &CaptureRequest) -> Result<Capture, CaptureError> {
        self.captures.fetch_add(1, Ordering::SeqCst);
        self.started.notify_one();
        let page = self.page.lock().unwrap().clone();
        match page {
            Page::Loads => {}
            Page::Fails(error) => return Err(error),
            Page::Hangs => std::future::pending::<()>().await,
            Page::Waits => self.release.notified().await,
        }
        Ok(Capture { png: PNG.to_vec(), http_status: Some(200) })
    }

    async fn open(&self, _url: &str, _timeout: std::time::Duration) -> Result<Box<dyn BrowserPage>, PageError> {
        Err(PageError::Browser("the fake browser has no pages yet".into()))
    }
}
