//! Adopting a framework with the control library: one transaction that reads what the
//! organization already holds and writes what the domain's plan makes of it.

use async_trait::async_trait;
use compliance_domain::OrganizationId;
use compliance_domain::control::{Control, EvidenceSource};
use compliance_domain::framework::Framework;
use compliance_domain::framework_status::RequirementMapping;
use compliance_domain::library::adoption::{Adoption, Holdings};
use compliance_domain::policy::Policy;
use compliance_domain::task::Task;

use crate::{AuditOf, RepoError};

/// Plans an adoption from what the organization holds
/// (`compliance_domain::library::adoption::plan`).
pub type Planner<'a> = dyn Fn(&Holdings) -> Result<Adoption, RepoError> + Send + Sync + 'a;

/// The entries of an adoption's records, one maker per kind of record.
pub struct AdoptionAudits<'a> {
    /// `framework.created`.
    pub framework: &'a AuditOf<'a, Framework>,
    /// `control.created`.
    pub control: &'a AuditOf<'a, Control>,
    /// `policy.created`.
    pub policy: &'a AuditOf<'a, Policy>,
    /// `task.created`.
    pub task: &'a AuditOf<'a, Task>,
    /// `control.requirement_mapped`.
    pub mapping: &'a AuditOf<'a, RequirementMapping>,
    /// `control.evidence_source_added`.
    pub source: &'a AuditOf<'a, EvidenceSource>,
}

/// The check links a new connection brings: for each library control template (by id), the
/// checks of the connection's provider it suggests
/// (`compliance_domain::library::adoption::checks_of_provider`). The organization's control made
/// from the template, if any, is linked to each, with `audit`'s entry.
pub struct SuggestedChecks<'a> {
    /// Template ids with the checks each suggests.
    pub checks: Vec<(String, Vec<String>)>,
    /// `control.evidence_source_added`.
    pub audit: &'a AuditOf<'a, EvidenceSource>,
}

/// Adoptions of the library; scoped to an organization.
#[async_trait]
pub trait LibraryRepository: Send + Sync {
    /// In one transaction under the organization's lock: reads what `org` holds (its records
    /// made from the library, its connections not disconnected), plans the adoption with `plan`,
    /// and writes the framework, the records, mappings and links it made with each one's entry
    /// from `audits`. `RepoError::Conflict` when the organization already has the framework
    /// (nothing is written).
    async fn adopt(
        &self,
        org: &OrganizationId,
        plan: &Planner<'_>,
        audits: &AdoptionAudits<'_>,
    ) -> Result<Adoption, RepoError>;
}
