//! A printer that turns an HTML document into PDF (a policy version people can file and print).

use async_trait::async_trait;

/// Why a document could not be printed; the message is for the log, not for the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrintError {
    /// No printer is available (the browser is not installed or could not start).
    #[error("no printer is available: {0}")]
    Unavailable(String),
    /// The printer started but did not finish within its time.
    #[error("printing took longer than {0} seconds")]
    Timeout(u64),
    /// The printer failed while printing (crashed, or answered a protocol error).
    #[error("printing failed: {0}")]
    Failed(String),
    /// Every printer is busy and none came free in time: try again after `retry_after`.
    #[error("every printer is busy")]
    Busy {
        /// When a retry may find a printer free.
        retry_after: std::time::Duration,
    },
}

/// Prints HTML documents to PDF (the headless browser, or `NoPrinter` where there is none).
#[async_trait]
pub trait DocumentPrinter: Send + Sync {
    /// Prints a self-contained HTML document on A4 pages. The document is loaded with scripts
    /// disabled and every network request refused: nothing it names is fetched.
    async fn print_pdf(&self, html: &str) -> Result<Vec<u8>, PrintError>;
}

/// A deployment without a printer: every print is [`PrintError::Unavailable`].
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPrinter;

#[async_trait]
impl DocumentPrinter for NoPrinter {
    async fn print_pdf(&self, _html: &str) -> Result<Vec<u8>, PrintError> {
        Err(PrintError::Unavailable("no printer is configured".into()))
    }
}
