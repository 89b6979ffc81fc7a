//! Storage of the organization's records: one trait per resource, each method named for what it
//! does to which resource (`update_risk`), so a reader finds the implementation by name in
//! `compliance-store`'s file of the same resource.
//!
//! Every method takes the organization: a record of another organization is indistinguishable
//! from a missing one (`RepoError::NotFound`).
//!
//! A write that takes an [`IfMatch`] checks it against the record as it was, inside the write's
//! transaction after the record's row is locked (so no other write of the record can come
//! between the check and the commit), and answers
//! `RepoError::PreconditionFailed` having written nothing when it no longer holds.

use async_trait::async_trait;
use compliance_domain::comment::Attachment;
use compliance_domain::context::{ContextEntry, ContextEntryPatch};
use compliance_domain::etag::IfMatch;
use compliance_domain::policy::{
    Policy, PolicyPatch, PolicySignature, PolicyVersion, PolicyVersionSummary, VersionSigners,
};
use compliance_domain::risk::{Risk, RiskPatch};
use compliance_domain::task::{Task, TaskPatch};
use compliance_domain::vendor::{Vendor, VendorPatch};
use compliance_domain::{
    ContextEntryId, MemberId, OrganizationId, PolicyId, RiskId, TaskId, Timestamp, UserId, VendorId,
};

use crate::{
    AuditOf, BulkApplied, BulkError, BulkWrite, ContextQuery, Page, PolicyQuery, RepoError, RiskQuery, TaskQuery,
    VendorQuery,
};

/// A deleted record and the attachments deleted with it (of the comments on it), whose bytes are
/// now to be removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deleted<R> {
    /// The deleted record.
    pub record: R,
    /// Its comments' attachments, deleted with it.
    pub attachments: Vec<Attachment>,
}

/// Risks; every method is scoped to an organization.
#[async_trait]
pub trait RiskRepository: Send + Sync {
    /// A page of the organization's risks, newest first.
    async fn list_risks(&self, org: &OrganizationId, query: &RiskQuery) -> Result<Page<Risk>, RepoError>;
    /// One risk; `RepoError::NotFound` when it is not the organization's.
    async fn get_risk(&self, org: &OrganizationId, id: &RiskId) -> Result<Risk, RepoError>;
    /// Inserts the risk and `audit`'s entry of it, in one transaction.
    async fn insert_risk(&self, risk: &Risk, audit: &AuditOf<'_, Risk>) -> Result<(), RepoError>;
    /// Sets the fields the patch names, atomically with `audit`'s entry, and returns the risk as
    /// it now is.
    async fn update_risk(
        &self,
        org: &OrganizationId,
        id: &RiskId,
        patch: &RiskPatch,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Risk>,
    ) -> Result<Risk, RepoError>;
    /// Deletes the risk with its comments and their attachments' rows, and writes `audit`'s
    /// entry, in one transaction.
    async fn delete_risk(
        &self,
        org: &OrganizationId,
        id: &RiskId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Risk>,
    ) -> Result<Deleted<Risk>, RepoError>;
    /// Applies `writes` in order in ONE transaction, each with `audit`'s entry (`audit` tells a
    /// create, an update and a delete apart by the records before and after), and commits only
    /// when every one succeeded; else [`BulkError::Operations`] names the failed ones.
    async fn apply_risk_bulk(
        &self,
        org: &OrganizationId,
        writes: &[BulkWrite<Risk, RiskId, RiskPatch>],
        now: Timestamp,
        audit: &AuditOf<'_, Risk>,
    ) -> Result<BulkApplied<Risk>, BulkError>;
}

/// Vendors; every method is scoped to an organization.
#[async_trait]
pub trait VendorRepository: Send + Sync {
    /// A page of the organization's vendors, newest first.
    async fn list_vendors(&self, org: &OrganizationId, query: &VendorQuery) -> Result<Page<Vendor>, RepoError>;
    /// One vendor; `RepoError::NotFound` when it is not the organization's.
    async fn get_vendor(&self, org: &OrganizationId, id: &VendorId) -> Result<Vendor, RepoError>;
    /// Inserts the vendor and `audit`'s entry of it, in one transaction.
    async fn insert_vendor(&self, vendor: &Vendor, audit: &AuditOf<'_, Vendor>) -> Result<(), RepoError>;
    /// Sets the fields the patch names, atomically, and returns the vendor as it now is.
    async fn update_vendor(
        &self,
        org: &OrganizationId,
        id: &VendorId,
        patch: &VendorPatch,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Vendor>,
    ) -> Result<Vendor, RepoError>;
    /// Deletes the vendor with its comments and their attachments' rows, in one transaction.
    async fn delete_vendor(
        &self,
        org: &OrganizationId,
        id: &VendorId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Vendor>,
    ) -> Result<Deleted<Vendor>, RepoError>;
    /// Applies `writes` in order in ONE transaction, each with `audit`'s entry (`audit` tells a
    /// create, an update and a delete apart by the records before and after), and commits only
    /// when every one succeeded; else [`BulkError::Operations`] names the failed ones.
    async fn apply_vendor_bulk(
        &self,
        org: &OrganizationId,
        writes: &[BulkWrite<Vendor, VendorId, VendorPatch>],
        now: Timestamp,
        audit: &AuditOf<'_, Vendor>,
    ) -> Result<BulkApplied<Vendor>, BulkError>;
}

/// Tasks; every method is scoped to an organization.
#[async_trait]
pub trait TaskRepository: Send + Sync {
    /// A page of the organization's tasks, newest first.
    async fn list_tasks(&self, org: &OrganizationId, query: &TaskQuery) -> Result<Page<Task>, RepoError>;
    /// A page of the tasks assigned to `assignee` or awaiting their approval (`approverId`),
    /// newest first.
    async fn list_tasks_assigned(
        &self,
        org: &OrganizationId,
        assignee: &MemberId,
        query: &TaskQuery,
    ) -> Result<Page<Task>, RepoError>;
    /// One task; `RepoError::NotFound` when it is not the organization's.
    async fn get_task(&self, org: &OrganizationId, id: &TaskId) -> Result<Task, RepoError>;
    /// Inserts the task and `audit`'s entry of it, in one transaction.
    async fn insert_task(&self, task: &Task, audit: &AuditOf<'_, Task>) -> Result<(), RepoError>;
    /// Applies the patch to the stored task (`Task::apply`: moving to `done` completes it; a
    /// patch that does not fit the task's state is a `Conflict`) atomically, and returns the task
    /// as it now is.
    async fn update_task(
        &self,
        org: &OrganizationId,
        id: &TaskId,
        patch: &TaskPatch,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Task>,
    ) -> Result<Task, RepoError>;
    /// Deletes the task with its comments and their attachments' rows, in one transaction (its
    /// automations go with it, by foreign key).
    async fn delete_task(
        &self,
        org: &OrganizationId,
        id: &TaskId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Task>,
    ) -> Result<Deleted<Task>, RepoError>;
    /// Applies `writes` in order in ONE transaction, each with `audit`'s entry (`audit` tells a
    /// create, an update and a delete apart by the records before and after), and commits only
    /// when every one succeeded; else [`BulkError::Operations`] names the failed ones.
    async fn apply_task_bulk(
        &self,
        org: &OrganizationId,
        writes: &[BulkWrite<Task, TaskId, TaskPatch>],
        now: Timestamp,
        audit: &AuditOf<'_, Task>,
    ) -> Result<BulkApplied<Task>, BulkError>;
    /// Writes `after` over the stored task if it is still `before` (same `updatedAt`), with
    /// `audit`'s entry, in one transaction (a lifecycle transition the use case decided). A task
    /// changed meanwhile is a `Conflict` of [`TASK_CHANGED`].
    async fn save_task(&self, before: &Task, after: &Task, audit: &AuditOf<'_, Task>) -> Result<(), RepoError>;
}

/// The conflict of a task written by another request between a use case's read and its write;
/// the use case reads again and retries.
pub const TASK_CHANGED: &str = "the task changed while this request ran; retry";

/// Policies, their versions and signatures; every method is scoped to an organization.
#[async_trait]
pub trait PolicyRepository: Send + Sync {
    /// A page of the organization's policies, newest first.
    async fn list_policies(&self, org: &OrganizationId, query: &PolicyQuery) -> Result<Page<Policy>, RepoError>;
    /// One policy; `RepoError::NotFound` when it is not the organization's.
    async fn get_policy(&self, org: &OrganizationId, id: &PolicyId) -> Result<Policy, RepoError>;
    /// Inserts the policy and `audit`'s entry of it, in one transaction.
    async fn insert_policy(&self, policy: &Policy, audit: &AuditOf<'_, Policy>) -> Result<(), RepoError>;
    /// Applies the patch to the stored policy (`Policy::apply`: archiving stamps its date, a
    /// content change of a published policy makes it need review) atomically, and returns the
    /// policy as it now is. A patch that would publish (which only [`save_policy`] does, with
    /// the version) is refused with [`POLICY_CHANGED`]: the policy changed since the use case
    /// read it.
    ///
    /// [`save_policy`]: PolicyRepository::save_policy
    async fn update_policy(
        &self,
        org: &OrganizationId,
        id: &PolicyId,
        patch: &PolicyPatch,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Policy>,
    ) -> Result<Policy, RepoError>;
    /// Deletes the policy with its comments and their attachments' rows, in one transaction.
    async fn delete_policy(
        &self,
        org: &OrganizationId,
        id: &PolicyId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Policy>,
    ) -> Result<Deleted<Policy>, RepoError>;
    /// Writes `after` over the stored policy if it is still `before` (same `updatedAt`), with
    /// the version it publishes and the signature it records, and `audit`'s entry, in one
    /// transaction. A policy changed meanwhile is a `Conflict` of [`POLICY_CHANGED`].
    async fn save_policy(
        &self,
        before: &Policy,
        after: &PolicyWrite<'_>,
        audit: &AuditOf<'_, Policy>,
    ) -> Result<(), RepoError>;
    /// The policy's versions, oldest first, with their signature counts.
    async fn list_policy_versions(
        &self,
        org: &OrganizationId,
        id: &PolicyId,
    ) -> Result<Vec<PolicyVersionSummary>, RepoError>;
    /// Version `number` of the policy.
    async fn get_policy_version(
        &self,
        org: &OrganizationId,
        id: &PolicyId,
        number: i32,
    ) -> Result<PolicyVersion, RepoError>;
    /// Who signed version `number`, and the organization's active members who have not.
    async fn policy_signers(
        &self,
        org: &OrganizationId,
        id: &PolicyId,
        number: i32,
    ) -> Result<VersionSigners, RepoError>;
    /// The organization's policies with a published version, each with when `user` signed that
    /// version (`None`: not signed), oldest first.
    async fn policies_of_user(
        &self,
        org: &OrganizationId,
        user: &UserId,
    ) -> Result<Vec<(Policy, Option<Timestamp>)>, RepoError>;
    /// Up to `limit` organizations, by id, with a published, unarchived policy whose review
    /// date is at or before `now`.
    async fn organizations_with_reviews_due(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<OrganizationId>, RepoError>;
    /// Moves up to `limit` of the organization's published, unarchived policies whose review
    /// date is at or before `now` to `needs_review` (`updatedAt` `now`), each with `audit`'s
    /// entry, in one transaction, and answers them. The conditional update is the claim: of
    /// instances racing for the same policies, one moves them and the others find none.
    async fn flag_policies_for_review(
        &self,
        org: &OrganizationId,
        now: Timestamp,
        limit: usize,
        audit: &AuditOf<'_, Policy>,
    ) -> Result<Vec<Policy>, RepoError>;
}

/// What [`PolicyRepository::save_policy`] writes: the policy, and what the change adds.
pub struct PolicyWrite<'a> {
    /// The policy after the change.
    pub policy: &'a Policy,
    /// A version the change publishes, if it does.
    pub version: Option<&'a PolicyVersion>,
    /// A signature the change records, if it does.
    pub signature: Option<&'a PolicySignature>,
}

/// The conflict of a policy written by another request between a use case's read and its write;
/// the use case reads again and retries.
pub const POLICY_CHANGED: &str = "the policy changed while this request ran; retry";

/// Context entries; every method is scoped to an organization.
#[async_trait]
pub trait ContextRepository: Send + Sync {
    /// A page of the organization's context entries, newest first.
    async fn list_context_entries(
        &self,
        org: &OrganizationId,
        query: &ContextQuery,
    ) -> Result<Page<ContextEntry>, RepoError>;
    /// One entry; `RepoError::NotFound` when it is not the organization's.
    async fn get_context_entry(&self, org: &OrganizationId, id: &ContextEntryId) -> Result<ContextEntry, RepoError>;
    /// Inserts the entry and `audit`'s entry of it, in one transaction.
    async fn insert_context_entry(
        &self,
        entry: &ContextEntry,
        audit: &AuditOf<'_, ContextEntry>,
    ) -> Result<(), RepoError>;
    /// Sets the fields the patch names, atomically, and returns the entry as it now is.
    async fn update_context_entry(
        &self,
        org: &OrganizationId,
        id: &ContextEntryId,
        patch: &ContextEntryPatch,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, ContextEntry>,
    ) -> Result<ContextEntry, RepoError>;
    /// Deletes the entry (context entries carry no comments).
    async fn delete_context_entry(
        &self,
        org: &OrganizationId,
        id: &ContextEntryId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, ContextEntry>,
    ) -> Result<ContextEntry, RepoError>;
}
