//! Policies: the organization's rules as rich text, with their review cycle, assignee and approver.

use std::sync::Arc;

use compliance_domain::PolicyId;
use compliance_domain::access::{Action, Family};
use compliance_domain::audit::Redaction;
use compliance_domain::policy::{NewPolicy, Policy, PolicyChanges, PolicyPatch};
use compliance_ports::{Clock, MemberRepository, Page, PolicyQuery, PolicyRepository};

use crate::access::require;
use crate::assignees::require_active_members;
use crate::audit::{AuditTrail, Subject};
use crate::{AppError, CommentService, Ports, Principal};

pub struct PolicyService {
    policies: Arc<dyn PolicyRepository>,
    members: Arc<dyn MemberRepository>,
    clock: Arc<dyn Clock>,
    /// Removes the bytes of the attachments deleted with a policy.
    comments: Arc<CommentService>,
    audit: Arc<AuditTrail>,
}

/// Policies in the audit trail: their description and content are rich text, shown by length.
pub(crate) const POLICY: Subject<Policy> = Subject {
    resource_type: "policy",
    id: |policy| policy.id.to_string(),
    render: |renderer, policy| renderer.policy(policy),
    redaction: Redaction { secret: &[], rich_text: &["description", "content"] },
};

impl PolicyService {
    pub(crate) fn new(ports: &Ports, comments: Arc<CommentService>, audit: Arc<AuditTrail>) -> Self {
        Self {
            policies: ports.policies.clone(),
            members: ports.members.clone(),
            clock: ports.clock.clone(),
            comments,
            audit,
        }
    }

    /// A page of the caller's organization's policies, newest first.
    pub async fn list_policies(&self, caller: &Principal, query: &PolicyQuery) -> Result<Page<Policy>, AppError> {
        require(caller, Family::Policies, Action::Read)?;
        Ok(self.policies.list_policies(&caller.organization_id, query).await?)
    }

    pub async fn get_policy(&self, caller: &Principal, id: &PolicyId) -> Result<Policy, AppError> {
        require(caller, Family::Policies, Action::Read)?;
        self.policies.get_policy(&caller.organization_id, id).await.map_err(not_found)
    }

    pub async fn create_policy(&self, caller: &Principal, input: NewPolicy) -> Result<Policy, AppError> {
        require(caller, Family::Policies, Action::Write)?;
        let created = Policy::create(caller.organization_id.clone(), input, self.clock.now())?;
        require_active_members(self.members.as_ref(), &caller.organization_id, created.named_members()).await?;
        self.policies.insert_policy(&created, &self.audit.change(caller, "policy.created", &POLICY)).await?;
        Ok(created)
    }

    /// Changes only the fields the body names; an empty body answers the policy unchanged.
    pub async fn update_policy(
        &self,
        caller: &Principal,
        id: &PolicyId,
        changes: PolicyChanges,
    ) -> Result<Policy, AppError> {
        require(caller, Family::Policies, Action::Write)?;
        let patch = PolicyPatch::new(changes)?;
        if patch.is_empty() {
            return self.get_policy(caller, id).await;
        }
        require_active_members(self.members.as_ref(), &caller.organization_id, patch.named_members()).await?;
        let audit = self.audit.change(caller, "policy.updated", &POLICY);
        self.policies
            .update_policy(&caller.organization_id, id, &patch, self.clock.now(), &audit)
            .await
            .map_err(not_found)
    }

    /// Deletes the policy for good, with its comments and their attachments, and returns what it was.
    pub async fn delete_policy(&self, caller: &Principal, id: &PolicyId) -> Result<Policy, AppError> {
        require(caller, Family::Policies, Action::Write)?;
        let audit = self.audit.change(caller, "policy.deleted", &POLICY);
        let deleted = self.policies.delete_policy(&caller.organization_id, id, &audit).await.map_err(not_found)?;
        self.comments.remove_attachments(&deleted.attachments).await;
        Ok(deleted.record)
    }
}

fn not_found(error: compliance_ports::RepoError) -> AppError {
    AppError::from_repo(error, "policy")
}
