//! Printing HTML documents to PDF through the printer port (a headless Chromium shared by every
//! organization of the instance): at most a few prints of one organization at once, so that no
//! organization holds the browsers the others print with; and what a failed print answers.

use std::sync::Arc;
use std::time::Duration;

use compliance_domain::OrganizationId;
use compliance_ports::{DocumentPrinter, PrintError};

use crate::AppError;
use crate::organization_slots::{OrganizationSlot, OrganizationSlots};
use crate::policy_document::DocumentSettings;

/// When a print refused for its organization's bound may be tried again.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// The printer with the organizations' slots; clones share the slots.
#[derive(Clone)]
pub(crate) struct Printing {
    printer: Arc<dyn DocumentPrinter>,
    slots: Arc<OrganizationSlots>,
}

impl Printing {
    pub(crate) fn new(printer: Arc<dyn DocumentPrinter>, settings: &DocumentSettings) -> Self {
        Self { printer, slots: OrganizationSlots::new(settings.prints_per_organization, settings.print_wait) }
    }

    /// One of `organization`'s print slots, held until dropped; busy when none comes free in time.
    pub(crate) async fn slot(&self, organization: &OrganizationId) -> Result<OrganizationSlot, AppError> {
        self.slots.take(organization).await.ok_or_else(|| AppError::Busy {
            detail: "this organization's PDF documents are being printed at the most it may print at once; \
                     retry shortly"
                .into(),
            retry_after: RETRY_AFTER,
        })
    }

    /// `html` printed on A4 pages (the caller holds its organization's slot).
    pub(crate) async fn print(&self, html: &str) -> Result<Vec<u8>, AppError> {
        self.printer.print_pdf(html).await.map_err(not_printed)
    }
}

/// Printing failures are the deployment's, never the caller's: no browser is 503, a print that
/// took too long 504, a browser that failed 502; the reason is logged, not answered.
fn not_printed(error: PrintError) -> AppError {
    tracing::warn!(error = %error, "cannot print a document");
    match error {
        PrintError::Unavailable(_) => AppError::NotConfigured(
            "PDF documents are printed by a headless Chromium, which is not available here; format=html works \
             without it"
                .into(),
        ),
        PrintError::Timeout(seconds) => AppError::Upstream {
            timeout: true,
            detail: format!("the headless Chromium did not print the PDF document within {seconds} seconds"),
        },
        PrintError::Failed(_) => AppError::Upstream {
            timeout: false,
            detail: "the headless Chromium failed while printing the PDF document".into(),
        },
        PrintError::Busy { retry_after } => AppError::Busy {
            detail: "every browser that prints PDF documents is busy; retry shortly".into(),
            retry_after,
        },
    }
}
