//! The audit trail's storage, and how a change's entry reaches the store with the change.
//!
//! A write method of a repository takes an [`AuditOf`]: the store calls it inside the change's
//! transaction with the record as it was and as it is, and appends the entry it returns to the
//! organization's chain before committing. So an entry exists exactly when its change committed.

use async_trait::async_trait;
use compliance_domain::audit::{AuditDraft, AuditEntry};
use compliance_domain::{OrganizationId, Timestamp};
use serde_json::Value;

use crate::{Page, PageRequest, RepoError};

/// Makes a change's audit entry from the record before (`None`: created) and after (`None`:
/// deleted) it, inside the change's transaction.
pub type AuditOf<'a, T> = dyn Fn(Option<&T>, Option<&T>) -> AuditDraft + Send + Sync + 'a;

/// Makes the entry of a change to a record of a user rather than of one organization (a
/// session) in organization `org`: the store calls it once for each organization the user is an
/// active member of, in that organization's chain, inside the change's transaction.
pub type AuditEach<'a, T> = dyn Fn(&OrganizationId, Option<&T>, Option<&T>) -> AuditDraft + Send + Sync + 'a;

/// Which entries a list holds. Each filter narrows it; `action_prefix` matches the start of the
/// action (`risk.` finds every risk action).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only entries about this resource type (`risk`, `policy`, …).
    pub resource_type: Option<String>,
    /// Only entries about this record id.
    pub resource_id: Option<String>,
    /// Only entries by this actor (a user id or a system part).
    pub actor_id: Option<String>,
    /// Only actions starting with this.
    pub action_prefix: Option<String>,
    /// Only entries created at or after this instant.
    pub created_after: Option<Timestamp>,
    /// Only entries created before this instant.
    pub created_before: Option<Timestamp>,
}

/// The signed record of a pruned prefix of an organization's chain: entries 1..=`through_seq`
/// are gone, the last of them had hash `through_hash`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditCheckpoint {
    /// The organization whose chain was pruned.
    pub organization_id: OrganizationId,
    /// The last pruned entry's sequence number.
    pub through_seq: i64,
    /// The last pruned entry's hash, hex: the next entry links to it.
    pub through_hash: String,
    /// When the prefix was pruned.
    pub created_at: Timestamp,
    /// HMAC-SHA256 of [`AuditCheckpoint::signed_text`] with the server's checkpoint key, hex.
    pub signature: String,
}

impl AuditCheckpoint {
    /// What the signature covers.
    pub fn signed_text(&self) -> String {
        format!("{}.{}.{}.{}", self.organization_id, self.through_seq, self.through_hash, self.created_at)
    }
}

/// The organizations' hash-chained audit trails: appended in the transaction of each change
/// (through the `AuditOf` arguments of the other repositories), listed, verified and pruned.
#[async_trait]
pub trait AuditRepository: Send + Sync {
    /// Appends an entry that goes with no other change (a sign-in, a webhook endpoint disabled by
    /// the worker) in its own transaction, and returns it chained.
    async fn append_audit(&self, draft: &AuditDraft) -> Result<AuditEntry, RepoError>;

    /// A page of the organization's entries matching `filter`, newest first.
    async fn list_audit(
        &self,
        org: &OrganizationId,
        filter: &AuditFilter,
        page: &PageRequest,
    ) -> Result<Page<AuditEntry>, RepoError>;

    /// Up to `limit` of the organization's entries with `seq` greater than `after_seq`, in `seq`
    /// order. `seq` is gap-free and in commit order, so a reader that remembers the last `seq` it
    /// handled misses nothing and sees nothing twice (webhook delivery, verification).
    async fn entries_after(
        &self,
        org: &OrganizationId,
        after_seq: i64,
        limit: usize,
    ) -> Result<Vec<AuditEntry>, RepoError>;

    /// The organization's chain head: the last `seq` given and the hash of that entry.
    async fn audit_head(&self, org: &OrganizationId) -> Result<Option<(i64, String)>, RepoError>;

    /// The organization's checkpoint, when its chain was pruned.
    async fn audit_checkpoint(&self, org: &OrganizationId) -> Result<Option<AuditCheckpoint>, RepoError>;

    /// Organizations with entries created before `before` (candidates for pruning).
    async fn organizations_with_entries_before(&self, before: Timestamp) -> Result<Vec<OrganizationId>, RepoError>;

    /// Deletes the organization's entries created before `before` and writes `sign`'s checkpoint
    /// of what was deleted, in one transaction; returns how many were deleted. Only a prefix of
    /// the chain is deleted (entries up to the last one created before `before`).
    async fn prune_audit(
        &self,
        org: &OrganizationId,
        before: Timestamp,
        now: Timestamp,
        sign: &(dyn for<'c> Fn(&'c AuditCheckpoint) -> String + Send + Sync),
    ) -> Result<u64, RepoError>;
}

/// Renders records as the API returns them, for the `data` of audit entries (what webhooks
/// deliver) and the diff of `changes`. Implemented by the HTTP layer from its wire types, so the
/// use cases never see them.
pub trait ResourceRenderer: Send + Sync {
    /// A risk as the API shows it.
    fn risk(&self, risk: &compliance_domain::risk::Risk) -> Value;
    /// A vendor as the API shows it.
    fn vendor(&self, vendor: &compliance_domain::vendor::Vendor) -> Value;
    /// A task as the API shows it.
    fn task(&self, task: &compliance_domain::task::Task) -> Value;
    /// A policy as the API shows it.
    fn policy(&self, policy: &compliance_domain::policy::Policy) -> Value;
    /// A context entry as the API shows it.
    fn context_entry(&self, entry: &compliance_domain::context::ContextEntry) -> Value;
}
