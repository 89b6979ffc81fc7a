//! The audit trail's storage, and how a change's entry reaches the store with the change.
//!
//! A write method of a repository takes an [`AuditOf`]: the store calls it inside the change's
//! transaction with the record as it was and as it is, and queues the entry it returns before
//! committing. So an entry exists exactly when its change committed; the sequencer seals it
//! into its organization's tree soon after ([`AuditRepository::seal_queued`]).

use std::collections::HashMap;

use async_trait::async_trait;
use compliance_domain::audit::{AuditDraft, AuditEntry, TreeHead};
use compliance_domain::merkle::{Hash, NodeId};
use compliance_domain::{OrganizationId, Timestamp};
use serde_json::Value;

use crate::{Clock, Page, PageRequest, RepoError};

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

/// What one pass of the sequencer sealed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SealedBatch {
    /// How many entries it sealed.
    pub entries: usize,
    /// The organizations whose trees grew.
    pub organizations: Vec<OrganizationId>,
}

/// Signs a tree head: fills its `key_id` and `signature`.
pub type SignTreeHead<'a> = dyn Fn(&mut TreeHead) + Send + Sync + 'a;

/// The organizations' audit logs: entries queued in the transaction of each change (through the
/// `AuditOf` arguments of the other repositories), sealed into each organization's Merkle tree
/// by the sequencer, listed, proved, verified and pruned.
#[async_trait]
pub trait AuditRepository: Send + Sync {
    /// Queues an entry that goes with no other change (a sign-in, a webhook endpoint disabled by
    /// the worker) in its own transaction, and returns it (not yet sealed).
    async fn append_audit(&self, draft: &AuditDraft) -> Result<AuditEntry, RepoError>;

    /// A page of the organization's entries matching `filter`, newest first; sealed or not.
    async fn list_audit(
        &self,
        org: &OrganizationId,
        filter: &AuditFilter,
        page: &PageRequest,
    ) -> Result<Page<AuditEntry>, RepoError>;

    /// Up to `limit` of the organization's sealed entries with `seq` greater than `after_seq`, in
    /// `seq` order. `seq` is gap-free and given only at sealing, so a reader that remembers the
    /// last `seq` it handled misses nothing and sees nothing twice (webhook delivery,
    /// verification).
    async fn entries_after(
        &self,
        org: &OrganizationId,
        after_seq: i64,
        limit: usize,
    ) -> Result<Vec<AuditEntry>, RepoError>;

    /// The sealed entry number `seq` of the organization.
    async fn sealed_entry(&self, org: &OrganizationId, seq: i64) -> Result<Option<AuditEntry>, RepoError>;

    /// The queue positions of the organization's unsealed entries: the first and the last.
    async fn unsealed(&self, org: &OrganizationId) -> Result<Option<(i64, i64)>, RepoError>;

    /// Seals up to `limit` queued entries, oldest queued first, in one transaction: gives each
    /// its organization's next `seq`, adds it to the organization's tree, and stores the tree's
    /// new head, signed by `sign`. The time of sealing is `clock`'s once the entries are read
    /// (so no entry is sealed before it was made).
    async fn seal_queued(
        &self,
        limit: usize,
        clock: &dyn Clock,
        sign: &SignTreeHead<'_>,
    ) -> Result<SealedBatch, RepoError>;

    /// The organization's latest signed tree head.
    async fn tree_head(&self, org: &OrganizationId) -> Result<Option<TreeHead>, RepoError>;

    /// Re-signs, with `sign`, every tree head signed by another key than `key_id` (after the
    /// signing key changed); how many.
    async fn resign_tree_heads(&self, key_id: &str, sign: &SignTreeHead<'_>) -> Result<u64, RepoError>;

    /// The hashes of these perfect subtrees of the organization's tree (those it has).
    async fn tree_nodes(&self, org: &OrganizationId, nodes: &[NodeId]) -> Result<HashMap<NodeId, Hash>, RepoError>;

    /// The organization's checkpoint (the signed head of its pruned prefix), when pruned.
    async fn audit_checkpoint(&self, org: &OrganizationId) -> Result<Option<TreeHead>, RepoError>;

    /// Organizations with sealed entries created before `before` (candidates for pruning).
    async fn organizations_with_entries_before(&self, before: Timestamp) -> Result<Vec<OrganizationId>, RepoError>;

    /// Deletes the organization's sealed entries up to the last one created before `before` (a
    /// prefix of the log) and stores the head of the tree they make, signed by `sign`, as its
    /// checkpoint, in one transaction; returns how many were deleted. The tree's nodes stay, so
    /// the remaining entries' proofs still reach the root.
    async fn prune_audit(
        &self,
        org: &OrganizationId,
        before: Timestamp,
        now: Timestamp,
        sign: &SignTreeHead<'_>,
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
