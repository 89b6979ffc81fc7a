//! Policies in memory, for the review worker: the policies a test puts there, the review claim
//! as the stores make it, and the audit entries written with it; and the published versions a test
//! puts there, for policy documents. Every other use of policies is refused, and lists are empty
//! (tests/api covers them over the real stores).

use std::sync::Mutex;

use async_trait::async_trait;
use compliance_domain::audit::AuditDraft;
use compliance_domain::etag::IfMatch;
use compliance_domain::policy::{
    Policy, PolicyPatch, PolicyStatus, PolicyVersion, PolicyVersionSummary, VersionSigners,
};
use compliance_domain::{OrganizationId, PolicyId, Timestamp, UserId};
use compliance_ports::{AuditOf, Deleted, Page, PolicyQuery, PolicyRepository, PolicyWrite, RepoError};

#[derive(Default)]
pub struct MemoryPolicies {
    policies: Mutex<Vec<Policy>>,
    versions: Mutex<Vec<PolicyVersion>>,
    /// The entries written with each change, oldest first.
    pub entries: Mutex<Vec<AuditDraft>>,
}

impl MemoryPolicies {
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
    RepoError::Internal("only the review claim is faked".into())
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
    async fn insert_policy(&self, _: &Policy, _: &AuditOf<'_, Policy>) -> Result<(), RepoError> {
        Err(refused())
    }
    async fn update_policy(
        &self,
        _: &OrganizationId,
        _: &PolicyId,
        _: &PolicyPatch,
        _: Timestamp,
        _: &IfMatch,
        _: &AuditOf<'_, Policy>,
    ) -> Result<Policy, RepoError> {
        Err(refused())
    }
    async fn delete_policy(
        &self,
        _: &OrganizationId,
        _: &PolicyId,
        _: &IfMatch,
        _: &AuditOf<'_, Policy>,
    ) -> Result<Deleted<Policy>, RepoError> {
        Err(refused())
    }
    async fn save_policy(&self, _: &Policy, _: &PolicyWrite<'_>, _: &AuditOf<'_, Policy>) -> Result<(), RepoError> {
        Err(refused())
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
            self.entries.lock().unwrap().push(audit(Some(&before), Some(&*policy)));
            flagged.push(policy.clone());
        }
        Ok(flagged)
    }
}
