//! Frameworks: catalogs of requirements an organization adopts, from an OSCAL catalog, our own
//! JSON shape or a shipped template.

use std::sync::Arc;

use compliance_domain::FrameworkId;
use compliance_domain::access::{Action, Family};
use compliance_domain::audit::Redaction;
use compliance_domain::framework::{
    Framework, FrameworkDraft, FrameworkSource, FrameworkWithRequirements, NewFramework, Template,
};
use compliance_domain::oscal;
use compliance_ports::{Clock, FrameworkQuery, FrameworkRepository, Page};

use crate::access::require;
use crate::audit::{AuditTrail, Subject};
use crate::{AppError, Ports, Principal};

/// Frameworks and their requirements.
pub struct FrameworkService {
    frameworks: Arc<dyn FrameworkRepository>,
    clock: Arc<dyn Clock>,
    audit: Arc<AuditTrail>,
}

/// Frameworks in the audit trail: the framework as the list shows it, with `requirementCount`
/// rather than its requirements (a catalog of a thousand requirements would make every entry,
/// and every webhook delivery of it, hundreds of kilobytes; they never change after the import).
pub(crate) const FRAMEWORK: Subject<Framework> = Subject {
    resource_type: "framework",
    id: |framework| framework.id.to_string(),
    render: |_, f| {
        serde_json::json!({
            "id": f.id, "organizationId": f.organization_id, "name": f.name, "version": f.version,
            "source": f.source.as_str(), "requirementCount": f.requirement_count,
            "createdAt": f.created_at, "updatedAt": f.updated_at,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &[] },
};

impl FrameworkService {
    pub(crate) fn new(ports: &Ports, audit: Arc<AuditTrail>) -> Self {
        Self { frameworks: ports.frameworks.clone(), clock: ports.clock.clone(), audit }
    }

    /// A page of the caller's organization's frameworks, newest first, without their requirements.
    pub async fn list_frameworks(
        &self,
        caller: &Principal,
        query: &FrameworkQuery,
    ) -> Result<Page<Framework>, AppError> {
        require(caller, Family::Frameworks, Action::Read)?;
        Ok(self.frameworks.list_frameworks(&caller.organization_id, query).await?)
    }

    /// One framework of the caller's organization with its requirements, in catalog order.
    pub async fn get_framework(
        &self,
        caller: &Principal,
        id: &FrameworkId,
    ) -> Result<FrameworkWithRequirements, AppError> {
        require(caller, Family::Frameworks, Action::Read)?;
        self.frameworks.get_framework(&caller.organization_id, id).await.map_err(not_found)
    }

    /// A framework from an OSCAL catalog document (`json`, the request's body as sent). A bad
    /// value is [`AppError::Validation`] naming its JSON path; the permission is checked before the
    /// document is read.
    pub async fn import_framework(
        &self,
        caller: &Principal,
        json: &str,
    ) -> Result<FrameworkWithRequirements, AppError> {
        require(caller, Family::Frameworks, Action::Write)?;
        let draft = oscal::catalog::read(json)?.validate()?;
        self.create(caller, draft).await
    }

    /// A framework from our own JSON shape.
    pub async fn create_framework(
        &self,
        caller: &Principal,
        input: NewFramework,
    ) -> Result<FrameworkWithRequirements, AppError> {
        require(caller, Family::Frameworks, Action::Write)?;
        let draft = input.into_draft(FrameworkSource::Custom)?.validate()?;
        self.create(caller, draft).await
    }

    /// The framework manifests this service ships.
    pub fn list_framework_templates(&self, caller: &Principal) -> Result<&'static [Template], AppError> {
        require(caller, Family::Frameworks, Action::Read)?;
        Ok(compliance_domain::framework::templates())
    }

    /// Adopts the shipped template `key` into the caller's organization.
    pub async fn adopt_framework_template(
        &self,
        caller: &Principal,
        key: &str,
    ) -> Result<FrameworkWithRequirements, AppError> {
        require(caller, Family::Frameworks, Action::Write)?;
        let template = compliance_domain::framework::template(key).ok_or(AppError::NotFound("framework template"))?;
        self.create(caller, template.draft.clone()).await
    }

    /// Deletes the framework with its requirements and returns what it was.
    pub async fn delete_framework(&self, caller: &Principal, id: &FrameworkId) -> Result<Framework, AppError> {
        require(caller, Family::Frameworks, Action::Write)?;
        let audit = self.audit.change(caller, "framework.deleted", &FRAMEWORK);
        self.frameworks.delete_framework(&caller.organization_id, id, &audit).await.map_err(not_found)
    }

    async fn create(&self, caller: &Principal, draft: FrameworkDraft) -> Result<FrameworkWithRequirements, AppError> {
        let created = FrameworkWithRequirements::create(caller.organization_id.clone(), draft, self.clock.now());
        let audit = self.audit.change(caller, "framework.created", &FRAMEWORK);
        self.frameworks.insert_framework(&created, &audit).await?;
        Ok(created)
    }
}

fn not_found(error: compliance_ports::RepoError) -> AppError {
    AppError::from_repo(error, "framework")
}
