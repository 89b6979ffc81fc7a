//! Policies: the organization's rules as rich text, with their review cycle, assignee and approver.

use std::sync::Arc;

use compliance_domain::access::{Action, Family};
use compliance_domain::audit::Redaction;
use compliance_domain::etag::IfMatch;
use compliance_domain::policy::{NewPolicy, Policy, PolicyChanges, PolicyPatch, PolicyStatus, PolicyVersion};
use compliance_domain::{PolicyId, Timestamp};
use compliance_ports::{Clock, MemberRepository, POLICY_CHANGED, Page, PolicyQuery, PolicyRepository, PolicyWrite};

use crate::access::require;
use crate::assignees::require_active_members;
use crate::audit::{AuditTrail, Subject};
use crate::{AppError, CommentService, Ports, Principal};

/// Policies: their content, status, versions, approval and signatures.
pub struct PolicyService {
    pub(crate) policies: Arc<dyn PolicyRepository>,
    pub(crate) members: Arc<dyn MemberRepository>,
    pub(crate) clock: Arc<dyn Clock>,
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
    evidence: Some(compliance_domain::evidence::of_policy),
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

    /// One policy of the caller's organization.
    pub async fn get_policy(&self, caller: &Principal, id: &PolicyId) -> Result<Policy, AppError> {
        require(caller, Family::Policies, Action::Read)?;
        self.policies.get_policy(&caller.organization_id, id).await.map_err(not_found)
    }

    /// A policy created `published` is created as a draft and published at once: two entries,
    /// `policy.created` and `policy.published` (version 1).
    pub async fn create_policy(&self, caller: &Principal, input: NewPolicy) -> Result<Policy, AppError> {
        require(caller, Family::Policies, Action::Write)?;
        let publishes = input.status == Some(PolicyStatus::Published);
        let created = Policy::create(caller.organization_id.clone(), input, self.clock.now())?;
        require_active_members(self.members.as_ref(), &caller.organization_id, created.named_members()).await?;
        if publishes {
            may_publish_directly(&created)?;
        }
        self.policies.insert_policy(&created, &self.audit.change(caller, "policy.created", &POLICY)).await?;
        if !publishes {
            return Ok(created);
        }
        let mut published = created.clone();
        let version = published.publish(&caller.user_id, None, later_than(self.clock.now(), &created));
        self.save(caller, &created, &published, Some(&version), "policy.published").await?;
        Ok(published)
    }

    /// Changes only the fields the body names; an empty body answers the policy unchanged.
    pub async fn update_policy(
        &self,
        caller: &Principal,
        id: &PolicyId,
        changes: PolicyChanges,
        if_match: &IfMatch,
    ) -> Result<Policy, AppError> {
        require(caller, Family::Policies, Action::Write)?;
        let patch = PolicyPatch::new(changes)?;
        if patch.is_empty() {
            // Nothing to write, but the precondition still decides the answer.
            let current = self.get_policy(caller, id).await?;
            if_match.check(&current.etag())?;
            return Ok(current);
        }
        require_active_members(self.members.as_ref(), &caller.organization_id, patch.named_members()).await?;
        for _ in 0..ATTEMPTS {
            let before = self.get_policy(caller, id).await?;
            // Checked again by the store in the write's transaction; publishing's `save` writes
            // only while the policy is still `before`, so this check holds to its commit.
            if_match.check(&before.etag())?;
            if before.status == PolicyStatus::PendingApproval && patch.sets_content() {
                return Err(AppError::Conflict(
                    "the policy is pending approval: approve or reject it before changing its content".into(),
                ));
            }
            let mut after = before.clone();
            let now = later_than(self.clock.now(), &before);
            let written = if after.apply(&patch, now) {
                // `status: published`: publishing directly, without approval
                may_publish_directly(&before)?;
                let version = after.publish(&caller.user_id, None, now);
                self.save(caller, &before, &after, Some(&version), "policy.published").await.map(|()| after)
            } else {
                let audit = self.audit.change(caller, "policy.updated", &POLICY);
                self.policies
                    .update_policy(&caller.organization_id, id, &patch, now, if_match, &audit)
                    .await
                    .map_err(not_found)
            };
            match written {
                Err(AppError::Conflict(why)) if why == POLICY_CHANGED => continue,
                written => return written,
            }
        }
        Err(AppError::Conflict(POLICY_CHANGED.into()))
    }

    /// Writes a change the use case decided from `before` (see `PolicyRepository::save_policy`).
    pub(crate) async fn save(
        &self,
        caller: &Principal,
        before: &Policy,
        after: &Policy,
        version: Option<&PolicyVersion>,
        action: &'static str,
    ) -> Result<(), AppError> {
        self.save_write(caller, before, &PolicyWrite { policy: after, version, signature: None }, action).await
    }

    pub(crate) async fn save_write(
        &self,
        caller: &Principal,
        before: &Policy,
        write: &PolicyWrite<'_>,
        action: &'static str,
    ) -> Result<(), AppError> {
        let audit = self.audit.change(caller, action, &POLICY);
        self.policies.save_policy(before, write, &audit).await.map_err(not_found)
    }

    /// Deletes the policy for good, with its comments and their attachments, and returns what it was.
    pub async fn delete_policy(
        &self,
        caller: &Principal,
        id: &PolicyId,
        if_match: &IfMatch,
    ) -> Result<Policy, AppError> {
        require(caller, Family::Policies, Action::Write)?;
        let audit = self.audit.change(caller, "policy.deleted", &POLICY);
        let deleted =
            self.policies.delete_policy(&caller.organization_id, id, if_match, &audit).await.map_err(not_found)?;
        self.comments.remove_attachments(&deleted.attachments).await;
        Ok(deleted.record)
    }
}

pub(crate) fn not_found(error: compliance_ports::RepoError) -> AppError {
    AppError::from_repo(error, "policy")
}

/// How often a use case reads the policy again when another request changed it between its read
/// and its write ([`POLICY_CHANGED`]).
pub(crate) const ATTEMPTS: usize = 5;

/// A change's time: now, or just after the policy's last change if the clock says otherwise, so
/// that `updatedAt` moves with every change.
pub(crate) fn later_than(now: Timestamp, before: &Policy) -> Timestamp {
    if now > before.updated_at { now } else { before.updated_at.plus(time::Duration::microseconds(1)) }
}

/// Publishing without approval is for policies without an approver.
fn may_publish_directly(policy: &Policy) -> Result<(), AppError> {
    match policy.approver_id {
        None => Ok(()),
        Some(_) => Err(AppError::Conflict(
            "the policy has an approver: submit it (POST /v1/policies/{id}/submit) for them to approve".into(),
        )),
    }
}
