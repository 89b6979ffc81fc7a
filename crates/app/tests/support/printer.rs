//! A printer that counts its prints and, when gated, holds each print until the test lets one go.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use compliance_ports::{DocumentPrinter, PrintError};
use tokio::sync::Semaphore;

pub struct FakePrinter {
    started: AtomicUsize,
    gated: AtomicBool,
    gate: Semaphore,
}

impl Default for FakePrinter {
    fn default() -> Self {
        Self { started: AtomicUsize::new(0), gated: AtomicBool::new(false), gate: Semaphore::new(0) }
    }
}

impl FakePrinter {
    /// Prints started so far (held ones too).
    pub fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    /// From now on every print waits for [`FakePrinter::release`].
    pub fn hold(&self) {
        self.gated.store(true, Ordering::SeqCst);
    }

    /// Lets `n` held prints finish.
    pub fn release(&self, n: usize) {
        self.gate.add_permits(n);
    }

    /// Waits (polling, up to 5 s) until `n` prints started.
    pub async fn until_started(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.started() < n {
            assert!(Instant::now() < deadline, "{n} prints started; only {}", self.started());
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

#[async_trait]
impl DocumentPrinter for FakePrinter {
    async fn print_pdf(&self, html: &str) -> Result<Vec<u8>, PrintError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        if self.gated.load(Ordering::SeqCst) {
            self.gate.acquire().await.unwrap().forget();
        }
        Ok(format!("%PDF-fake {} bytes of HTML", html.len()).into_bytes())
    }
}
