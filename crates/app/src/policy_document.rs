//! A published policy version as a document people read: HTML rendered by the domain
//! (`compliance_domain::policy_document`), or that HTML printed to PDF by the printer port.
//!
//! Reading a version's document takes what reading the version takes (reading policies); the
//! header's names are read from the caller's organization and its users.

use std::sync::Arc;

use compliance_domain::access::{Action, Family};
use compliance_domain::policy::PolicyVersion;
use compliance_domain::policy_document::{DocumentHeader, file_stem, render_html};
use compliance_domain::{PolicyId, UserId};
use compliance_ports::{DocumentPrinter, OrganizationRepository, PolicyRepository, PrintError, UserRepository};

use crate::access::require;
use crate::{AppError, Ports, Principal};

/// The formats a version's document comes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentFormat {
    /// One self-contained HTML5 page (`text/html`).
    Html,
    /// The same page printed on A4 by the headless browser (`application/pdf`).
    Pdf,
}

/// A rendered document and the file name it is offered under (without extension).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyDocument {
    /// Which of the formats `bytes` holds.
    pub format: DocumentFormat,
    /// The document itself: UTF-8 HTML or a PDF file.
    pub bytes: Vec<u8>,
    /// `<policy-name-slug>-v<n>`.
    pub file_stem: String,
}

/// Renders a published policy version as a document people can read (HTML or PDF), with the
/// same permission as reading the version.
pub struct PolicyDocumentService {
    policies: Arc<dyn PolicyRepository>,
    organizations: Arc<dyn OrganizationRepository>,
    users: Arc<dyn UserRepository>,
    printer: Arc<dyn DocumentPrinter>,
}

impl PolicyDocumentService {
    pub(crate) fn new(ports: &Ports) -> Self {
        Self {
            policies: ports.policies.clone(),
            organizations: ports.organizations.clone(),
            users: ports.users.clone(),
            printer: ports.printer.clone(),
        }
    }

    /// Version `number` of the policy as an HTML or PDF document.
    pub async fn get_policy_version_document(
        &self,
        caller: &Principal,
        id: &PolicyId,
        number: i32,
        format: DocumentFormat,
    ) -> Result<PolicyDocument, AppError> {
        require(caller, Family::Policies, Action::Read)?;
        let version = self
            .policies
            .get_policy_version(&caller.organization_id, id, number)
            .await
            .map_err(|error| AppError::from_repo(error, "policy version"))?;
        let html = self.html(caller, &version).await?;
        let bytes = match format {
            DocumentFormat::Html => html.into_bytes(),
            DocumentFormat::Pdf => self.printer.print_pdf(&html).await.map_err(not_printed)?,
        };
        Ok(PolicyDocument { format, bytes, file_stem: file_stem(&version.name, version.number) })
    }

    async fn html(&self, caller: &Principal, version: &PolicyVersion) -> Result<String, AppError> {
        let organization = self.organizations.get(&caller.organization_id).await?;
        let published_by = self.user_name(version.published_by.as_ref()).await?;
        let approved_by = self.user_name(version.approved_by.as_ref()).await?;
        let header = DocumentHeader {
            organization: &organization.name,
            policy: &version.name,
            version: version.number,
            published_at: version.published_at,
            published_by: published_by.as_deref(),
            approved_by: approved_by.as_deref(),
            approved_at: version.approved_at,
        };
        Ok(render_html(&header, &version.content))
    }

    /// A user's name; their id when the user no longer exists (the record still names them).
    async fn user_name(&self, user: Option<&UserId>) -> Result<Option<String>, AppError> {
        let Some(user) = user else { return Ok(None) };
        match self.users.get(user).await {
            Ok(found) => Ok(Some(found.name)),
            Err(compliance_ports::RepoError::NotFound) => Ok(Some(user.to_string())),
            Err(other) => Err(other.into()),
        }
    }
}

/// Printing failures are the deployment's, never the caller's: no browser is 503, a print that
/// took too long 504, a browser that failed 502; the reason is logged, not answered.
fn not_printed(error: PrintError) -> AppError {
    tracing::warn!(error = %error, "cannot print a policy document");
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
    }
}
