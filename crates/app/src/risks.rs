//! Risks: what could go wrong, how likely, how bad, and what is done about it.

use std::sync::Arc;

use compliance_domain::RiskId;
use compliance_domain::access::{Action, Family};
use compliance_domain::audit::Redaction;
use compliance_domain::etag::IfMatch;
use compliance_domain::risk::{NewRisk, Risk, RiskChanges, RiskPatch};
use compliance_ports::{Clock, MemberRepository, Page, RiskQuery, RiskRepository};

use crate::access::require;
use crate::assignees::{assignee, require_active_members};
use crate::audit::{AuditTrail, Provenance, Subject};
use crate::bulk::{self, ActiveMembers, BulkOperation, Steps};
use crate::{AppError, CommentService, Ports, Principal};

/// Risks: their assessment, treatment and owner.
pub struct RiskService {
    risks: Arc<dyn RiskRepository>,
    members: Arc<dyn MemberRepository>,
    clock: Arc<dyn Clock>,
    /// Removes the bytes of the attachments deleted with a risk.
    comments: Arc<CommentService>,
    audit: Arc<AuditTrail>,
}

/// Risks in the audit trail: descriptions are rich text, shown by length.
pub(crate) const RISK: Subject<Risk> = Subject {
    resource_type: "risk",
    id: |risk| risk.id.to_string(),
    render: |renderer, risk| renderer.risk(risk),
    redaction: Redaction { secret: &[], rich_text: &["description", "treatmentStrategyDescription"] },
    evidence: None,
};

impl RiskService {
    pub(crate) fn new(ports: &Ports, comments: Arc<CommentService>, audit: Arc<AuditTrail>) -> Self {
        Self { risks: ports.risks.clone(), members: ports.members.clone(), clock: ports.clock.clone(), comments, audit }
    }

    /// A page of the caller's organization's risks, newest first.
    pub async fn list_risks(&self, caller: &Principal, query: &RiskQuery) -> Result<Page<Risk>, AppError> {
        require(caller, Family::Risks, Action::Read)?;
        Ok(self.risks.list_risks(&caller.organization_id, query).await?)
    }

    /// One risk of the caller's organization; another organization's is [`AppError::NotFound`].
    pub async fn get_risk(&self, caller: &Principal, id: &RiskId) -> Result<Risk, AppError> {
        require(caller, Family::Risks, Action::Read)?;
        self.risks.get_risk(&caller.organization_id, id).await.map_err(not_found)
    }

    /// A new risk; a bad field is [`AppError::Validation`] naming it.
    pub async fn create_risk(&self, caller: &Principal, input: NewRisk) -> Result<Risk, AppError> {
        require(caller, Family::Risks, Action::Write)?;
        let created = Risk::create(caller.organization_id.clone(), input, self.clock.now())?;
        require_active_members(self.members.as_ref(), &caller.organization_id, assignee(created.assignee_id.as_ref()))
            .await?;
        self.risks.insert_risk(&created, &self.audit.change(caller, "risk.created", &RISK)).await?;
        Ok(created)
    }

    /// Changes only the fields the body names; an empty body answers the risk unchanged.
    pub async fn update_risk(
        &self,
        caller: &Principal,
        id: &RiskId,
        changes: RiskChanges,
        if_match: &IfMatch,
    ) -> Result<Risk, AppError> {
        require(caller, Family::Risks, Action::Write)?;
        let patch = RiskPatch::new(changes)?;
        if patch.is_empty() {
            // Nothing to write, but the precondition still decides the answer.
            let current = self.get_risk(caller, id).await?;
            if_match.check(&current.etag())?;
            return Ok(current);
        }
        require_active_members(self.members.as_ref(), &caller.organization_id, assignee(patch.assignee())).await?;
        let audit = self.audit.change(caller, "risk.updated", &RISK);
        self.risks
            .update_risk(&caller.organization_id, id, &patch, self.clock.now(), if_match, &audit)
            .await
            .map_err(not_found)
    }

    /// Deletes the risk for good, with its comments and their attachments, and returns what it was.
    pub async fn delete_risk(&self, caller: &Principal, id: &RiskId, if_match: &IfMatch) -> Result<Risk, AppError> {
        require(caller, Family::Risks, Action::Write)?;
        let audit = self.audit.change(caller, "risk.deleted", &RISK);
        let deleted = self.risks.delete_risk(&caller.organization_id, id, if_match, &audit).await.map_err(not_found)?;
        self.comments.remove_attachments(&deleted.attachments).await;
        Ok(deleted.record)
    }

    /// Applies a bulk request's operations (see [`crate::bulk`]): when `atomic`, all validated
    /// first and then written in one transaction, or nothing and [`AppError::BulkFailed`]; else
    /// one by one through the single writes, each with its own result. Answers each operation's
    /// risk, in order (for a delete, the risk as it was).
    pub async fn bulk_risks(
        &self,
        caller: &Principal,
        operations: Vec<BulkOperation<NewRisk, RiskChanges, RiskId>>,
        atomic: bool,
    ) -> Result<Vec<Result<Risk, AppError>>, AppError> {
        require(caller, Family::Risks, Action::Write)?;
        let (org, now) = (&caller.organization_id, self.clock.now());
        let members = &ActiveMembers::new(self.members.as_ref(), org);
        let actions = bulk::action_of(["risk.created", "risk.updated", "risk.deleted"]);
        let audit = self.audit.change_by(Provenance::of(caller), actions, &RISK);
        let steps = Steps {
            what: "risk",
            create: Box::new(move |input| Box::pin(self.create_risk(caller, input))),
            update: Box::new(move |(id, changes)| {
                Box::pin(async move { self.update_risk(caller, &id, changes, &IfMatch::Absent).await })
            }),
            delete: Box::new(move |id| Box::pin(async move { self.delete_risk(caller, &id, &IfMatch::Absent).await })),
            check_create: Box::new(move |input| {
                Box::pin(async move {
                    let risk = Risk::create(org.clone(), input, now)?;
                    members.require_all(assignee(risk.assignee_id.as_ref())).await?;
                    Ok(risk)
                })
            }),
            check_update: Box::new(move |changes| {
                Box::pin(async move {
                    let patch = RiskPatch::new(changes)?;
                    members.require_all(assignee(patch.assignee())).await?;
                    Ok(patch)
                })
            }),
            find: Box::new(move |id| Box::pin(async move { self.risks.get_risk(org, &id).await.map_err(not_found) })),
            write: Box::new(move |writes| {
                Box::pin(async move { self.risks.apply_risk_bulk(org, &writes, now, &audit).await })
            }),
        };
        bulk::apply(operations, atomic, &self.comments, steps).await
    }
}

fn not_found(error: compliance_ports::RepoError) -> AppError {
    AppError::from_repo(error, "risk")
}
