//! A published policy version as a document people read: HTML rendered by the domain
//! (`compliance_domain::policy_document`), or that HTML printed to PDF by the printer port.
//!
//! Reading a version's document takes what reading the version takes (reading policies); the
//! header's names are read from the caller's organization and its users.
//!
//! A published version never changes, so its PDF is printed once and kept in the blob store
//! (shared by every instance, kept across restarts) under
//! `<organization>/<policy>_v<version>_pdf_<SHA-256 of the HTML>`: the HTML's digest
//! in the key makes a renamed organization or user print a fresh PDF instead of serving a stale
//! header. A print takes one of the organization's printing slots
//! ([`DocumentSettings::prints_per_organization`], waited for at most
//! [`DocumentSettings::print_wait`]), so one tenant's flood of prints cannot hold the printing
//! browsers other tenants need: over it, and when every browser stays busy, the answer is
//! [`AppError::Busy`] (503 with `Retry-After`).

use std::sync::Arc;
use std::time::Duration;

use compliance_domain::access::{Action, Family};
use compliance_domain::policy::PolicyVersion;
use compliance_domain::policy_document::{DocumentHeader, file_stem, render_html};
use compliance_domain::{PolicyId, UserId};
use compliance_ports::{BlobError, BlobStore, OrganizationRepository, PolicyRepository, UserRepository};
use sha2::{Digest, Sha256};

use crate::access::require;
use crate::printing::Printing;
use crate::{AppError, Ports, Principal};

/// How printing PDF documents shares the browsers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentSettings {
    /// Prints one organization may run at once in one instance; 1 by default.
    pub prints_per_organization: usize,
    /// How long a print waits for its organization's slot (and again for a browser) before it is
    /// refused as busy; 10 seconds by default.
    pub print_wait: Duration,
}

impl Default for DocumentSettings {
    fn default() -> Self {
        Self { prints_per_organization: 1, print_wait: Duration::from_secs(10) }
    }
}

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
/// same permission as reading the version. Clones share the organizations' slots.
#[derive(Clone)]
pub struct PolicyDocumentService {
    policies: Arc<dyn PolicyRepository>,
    organizations: Arc<dyn OrganizationRepository>,
    users: Arc<dyn UserRepository>,
    blobs: Arc<dyn BlobStore>,
    printing: Printing,
}

impl PolicyDocumentService {
    pub(crate) fn new(ports: &Ports, printing: Printing) -> Self {
        Self {
            policies: ports.policies.clone(),
            organizations: ports.organizations.clone(),
            users: ports.users.clone(),
            blobs: ports.blobs.clone(),
            printing,
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
            DocumentFormat::Pdf => self.pdf(caller, &version, &html).await?,
        };
        Ok(PolicyDocument { format, bytes, file_stem: file_stem(&version.name, version.number) })
    }

    /// The version's PDF: the kept one, or printed (in one of the organization's slots) and kept.
    async fn pdf(&self, caller: &Principal, version: &PolicyVersion, html: &str) -> Result<Vec<u8>, AppError> {
        let key = pdf_key(version, html);
        if let Some(kept) = self.kept(&key).await {
            return Ok(kept);
        }
        let _slot = self.printing.slot(&caller.organization_id).await?;
        // A request of the same organization may have printed it while this one waited.
        if let Some(kept) = self.kept(&key).await {
            return Ok(kept);
        }
        let pdf = self.printing.print(html).await?;
        if let Err(error) = self.blobs.put(&key, pdf.clone(), "application/pdf").await {
            tracing::warn!(%error, "cannot keep a printed policy document; it is printed again next time");
        }
        Ok(pdf)
    }

    /// The PDF kept under `key`, if any; a store that fails is logged and printed around.
    async fn kept(&self, key: &str) -> Option<Vec<u8>> {
        match self.blobs.get(key).await {
            Ok(pdf) => Some(pdf),
            Err(BlobError::NotFound) => None,
            Err(error) => {
                tracing::warn!(%error, "cannot read a kept policy document; printing it");
                None
            }
        }
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

/// Where the PDF of `version` rendered as `html` is kept (see the module's documentation).
fn pdf_key(version: &PolicyVersion, html: &str) -> String {
    let digest = hex::encode(Sha256::digest(html.as_bytes()));
    format!("{}/{}_v{}_pdf_{digest}", version.organization_id, version.policy_id, version.number)
}
