//! Policies in memory: the policies a test puts there or the use cases write (created, patched,
//! published, signed, deleted, with the store's checks: `If-Match`, a save only while the policy is
//! as read), the review claim as the stores make it, and the published versions, for policy
//! documents. Each write makes its audit draft with the record before and after, as the store
//! does, kept in the shared `Drafts`. Lists, signers and a member's policies are not faked (lists
//! are empty; tests/api covers them over the real stores).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use compliance_domain::comment::CommentEntityType;
use compliance_domain::etag::IfMatch;
use compliance_domain::policy::{
    Policy, PolicyPatch, PolicyStatus, PolicyVersion, PolicyVersionSummary, VersionSigners,
};
use compliance_domain::{OrganizationId, PolicyId, Timestamp, UserId};
use compliance_ports::{AuditOf, Deleted, POLICY_CHANGED, Page, PolicyQuery, PolicyRepository, PolicyWrite, RepoError};

use super::MemoryComments;
use super::audit::Drafts;

pub struct MemoryPolicies {
    policies: Mutex<Vec<Policy>>,
    versions: Mutex<Vec<PolicyVersion>>,
    /// Removes the comments on a deleted policy.
    comments: Arc<MemoryComments>,
    /// The drafts written with each change, shared with the other stores.
    drafts: Drafts,
}

impl MemoryPolicies {
    pub fn new(comments: Arc<MemoryComments>, drafts: Drafts) -> Self {
        Self { policies: Mutex::default(), versions: Mutex::default(), comments, drafts }
    }

    pub fn put(&self, policy: Policy) {
        self.policies.lock().unwrap().push(policy);
    }

    pub fn put_version(&self, version: PolicyVersion) {
        self.versions.lock().unwrap().push(version);
    }

    pub fn status(&self, id: &PolicyId) -> PolicyStatus {
        self.policies.lock().unwrap().iter().find(|p| &p.id == id).unwrap().status
    }

    /// What the stores' conditional update matches.
    fn due(policy: &Policy, org: &OrganizationId, now: Timestamp) -> bool {
        &policy.organization_id == org
            && policy.status == PolicyStatus::Published
            && !policy.is_archived
            && policy.review_date <= now
            && policy.updated_at < now
    }
}

fn refused() -> RepoError {
    RepoError::Internal("this use of policies is not faked".into())
}

#[async_trait]
impl PolicyRepository for MemoryPolicies {
    async fn list_policies(&self, _: &OrganizationId, _: &PolicyQuery) -> Result<Page<Policy>, RepoError> {
        Ok(Page { items: Vec::new(), total: 0, next: None })
    }
    async fn get_policy(&self, org: &OrganizationId, id: &PolicyId) -> Result<Policy, RepoError> {
        let policies = self.policies.lock().unwrap();
        policies.iter().find(|p| &p.organization_id == org && &p.id == id).cloned().ok_or(RepoError::NotFound)
    }
    async fn insert_policy(&self, policy: &Policy, audit: &AuditOf<'_, Policy>) -> Result<(), RepoError> {
        self.drafts.record(audit, None, Some(policy));
        self.policies.lock().unwrap().push(policy.clone());
        Ok(())
    }
    /// As the store: `If-Match` against the policy as it is, no content change of a policy
    /// submitted meanwhile, `updatedAt` strictly later, and no publishing (only `save_policy`).
    async fn update_policy(
        &self,
        org: &OrganizationId,
        id: &PolicyId,
        patch: &PolicyPatch,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Policy>,
    ) -> Result<Policy, RepoError> {
        let mut policies = self.policies.lock().unwrap();
        let stored =
            policies.iter_mut().find(|p| &p.organization_id == org && &p.id == id).ok_or(RepoError::NotFound)?;
        if_match.check(&stored.etag())?;
        if stored.status == PolicyStatus::PendingApproval && patch.sets_content() {
            return Err(RepoError::Conflict(POLICY_CHANGED.into()));
        }
        let before = stored.clone();
        let mut policy = before.clone();
        let now = if now > before.updated_at { now } else { before.updated_at.plus(time::Duration::microseconds(1)) };
        if policy.apply(patch, now) {
            return Err(RepoError::Conflict(POLICY_CHANGED.into()));
        }
        self.drafts.record(audit, Some(&before), Some(&policy));
        *stored = policy.clone();
        Ok(policy)
    }
    async fn delete_policy(
        &self,
        org: &OrganizationId,
        id: &PolicyId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Policy>,
    ) -> Result<Deleted<Policy>, RepoError> {
        let record = {
            let mut policies = self.policies.lock().unwrap();
            let at =
                policies.iter().position(|p| &p.organization_id == org && &p.id == id).ok_or(RepoError::NotFound)?;
            if_match.check(&policies[at].etag())?;
            policies.remove(at)
        };
        self.drafts.record(audit, Some(&record), None);
        let attachments = self.comments.delete_on(org, CommentEntityType::Policy, id.as_str());
        Ok(Deleted { record, attachments })
    }
    /// As the store: only while the policy is still `before` (same `updatedAt`), with the version
    /// it publishes (the signature is not kept: signers are not faked).
    async fn save_policy(
        &self,
        before: &Policy,
        after: &PolicyWrite<'_>,
        audit: &AuditOf<'_, Policy>,
    ) -> Result<(), RepoError> {
        let mut policies = self.policies.lock().unwrap();
        let stored = policies
            .iter_mut()
            .find(|p| p.organization_id == before.organization_id && p.id == before.id)
            .ok_or(RepoError::NotFound)?;
        if stored.updated_at != before.updated_at {
            return Err(RepoError::Conflict(POLICY_CHANGED.into()));
        }
        self.drafts.record(audit, Some(before), Some(after.policy));
        *stored = after.policy.clone();
        if let Some(version) = after.version {
            self.versions.lock().unwrap().push(version.clone());
        }
        Ok(())
    }
    async fn list_policy_versions(
        &self,
        _: &OrganizationId,
        _: &PolicyId,
    ) -> Result<Vec<PolicyVersionSummary>, RepoError> {
        Err(refused())
    }
    async fn get_policy_version(
        &self,
        org: &OrganizationId,
        id: &PolicyId,
        number: i32,
    ) -> Result<PolicyVersion, RepoError> {
        let versions = self.versions.lock().unwrap();
        let found = versions.iter().find(|v| &v.organization_id == org && &v.policy_id == id && v.number == number);
        found.cloned().ok_or(RepoError::NotFound)
    }
    async fn policy_signers(&self, _: &OrganizationId, _: &PolicyId, _: i32) -> Result<VersionSigners, RepoError> {
        Err(refused())
    }
    async fn policies_of_user(
        &self,
        _: &OrganizationId,
        _: &UserId,
    ) -> Result<Vec<(Policy, Option<Timestamp>)>, RepoError> {
        Err(refused())
    }
    async fn organizations_with_reviews_due(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<OrganizationId>, RepoError> {
        let policies = self.policies.lock().unwrap();
        let mut orgs: Vec<OrganizationId> = policies
            .iter()
            .filter(|p| p.status == PolicyStatus::Published && !p.is_archived && p.review_date <= now)
            .map(|p| p.organization_id.clone())
            .collect();
        orgs.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        orgs.dedup();
        orgs.truncate(limit);
        Ok(orgs)
    }
    async fn flag_policies_for_review(
        &self,
        org: &OrganizationId,
        now: Timestamp,
        limit: usize,
        audit: &AuditOf<'_, Policy>,
    ) -> Result<Vec<Policy>, RepoError> {
        let mut policies = self.policies.lock().unwrap();
        let mut flagged = Vec::new();
        for policy in policies.iter_mut().filter(|p| Self::due(p, org, now)).take(limit) {
            let before = policy.clone();
            policy.status = PolicyStatus::NeedsReview;
            policy.updated_at = now;
            self.drafts.record(audit, Some(&before), Some(&*policy));
            flagged.push(policy.clone());
        }
        Ok(flagged)
    }
}
