//! Reading the audit log, proving what it holds, and verifying it (the sequencer seals and prunes
//! it: [`crate::audit_sequencer`]).
//!
//! The log of an organization is a Merkle tree (RFC 9162, [`compliance_domain::merkle`]) of its
//! sealed entries, committed to by a tree head the server signs with its Ed25519 key
//! ([`TreeHeadSigner`]). An auditor who kept a signed head checks one entry with an inclusion
//! proof, or that the log only grew between two heads with a consistency proof, without reading
//! the log; `verify` reads it all and recomputes every leaf and the root.

use std::sync::Arc;
use std::time::Duration;

use compliance_domain::access::{Action, Family};
use compliance_domain::audit::{AuditEntry, TreeHead};
use compliance_domain::merkle::{self, Frontier, Hash, NodeId};
use compliance_domain::validation::ValidationErrors;
use compliance_domain::{AuditEntryId, OrganizationId};
use compliance_ports::{AuditFilter, AuditRepository, Clock, Page, PageRequest, RepoError};
use tokio::sync::{Notify, watch};

use crate::access::require;
use crate::audit_signing::TreeHeadSigner;
use crate::{AppError, Principal};

/// What `GET /v1/audit-log/verify` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// Whether every sealed entry's leaf hash holds, the entries follow each other without a gap,
    /// and together they make the signed tree head's root.
    pub valid: bool,
    /// How many entries were checked.
    pub checked: u64,
    /// The first entry whose content does not give its leaf hash, or that follows a gap (an entry
    /// removed before it); `None` when the log is valid or when what is wrong is not an entry (a
    /// forged head or checkpoint, entries missing at the end).
    pub first_invalid_id: Option<AuditEntryId>,
}

/// A signed tree head as the API shows it, with what an auditor needs to check its signature.
#[derive(Debug, Clone)]
pub struct SignedTreeHead {
    /// The head.
    pub head: TreeHead,
    /// The signing key, base64 of its 32 bytes.
    pub public_key: String,
    /// The head as a C2SP signed note.
    pub note: String,
}

/// `GET /v1/audit-log/{seq}/proof`: the leaf and the hashes from it to the root of the tree of
/// `tree_size` entries.
#[derive(Debug, Clone)]
pub struct InclusionProof {
    /// The entry's place in the log (its leaf index is `seq - 1`).
    pub seq: i64,
    /// The entry's leaf hash, hex (its `hash`).
    pub leaf_hash: String,
    /// The tree the proof reaches.
    pub tree_size: u64,
    /// RFC 9162 `PATH(m, D[n])`, from the leaf's sibling up.
    pub path: Vec<Hash>,
}

/// `GET /v1/audit-log/consistency`: the hashes showing the tree of `from` entries is a prefix of
/// the tree of `to`.
#[derive(Debug, Clone)]
pub struct ConsistencyProof {
    /// The older tree's size.
    pub from: u64,
    /// The newer tree's size.
    pub to: u64,
    /// RFC 9162 `PROOF(m, D[n])`.
    pub path: Vec<Hash>,
}

/// How many entries verification reads at a time.
const VERIFY_BATCH: usize = 500;

/// How long the log's reads wait for the entries committed before them to be sealed.
const SEALED_WAIT: Duration = Duration::from_secs(2);

/// Reading, proving and verifying the log.
pub struct AuditService {
    audit: Arc<dyn AuditRepository>,
    clock: Arc<dyn Clock>,
    signer: TreeHeadSigner,
    /// Pokes the sequencer.
    seal: Arc<Notify>,
    /// Bumped by the sequencer after each pass that sealed something.
    sealed: watch::Receiver<u64>,
}

impl AuditService {
    pub(crate) fn new(
        audit: Arc<dyn AuditRepository>,
        clock: Arc<dyn Clock>,
        signer: TreeHeadSigner,
        seal: Arc<Notify>,
        sealed: watch::Receiver<u64>,
    ) -> Self {
        Self { audit, clock, signer, seal, sealed }
    }

    /// Tells the sequencer that entries were queued (a write committed): it seals them at once
    /// instead of at its next poll.
    pub fn written(&self) {
        self.seal.notify_one();
    }

    /// A page of the organization's entries matching `filter`, newest first, once the entries
    /// committed before the call are sealed (or, if the sequencer is slow, some with no `seq`).
    pub async fn list(
        &self,
        caller: &Principal,
        filter: &AuditFilter,
        page: &PageRequest,
    ) -> Result<Page<AuditEntry>, AppError> {
        require(caller, Family::Audit, Action::Read)?;
        self.sealed_up_to_now(&caller.organization_id).await?;
        Ok(self.audit.list_audit(&caller.organization_id, filter, page).await?)
    }

    /// The entries of one record, newest first. Reading them needs reading the audit log too.
    pub async fn history(
        &self,
        caller: &Principal,
        resource_type: &str,
        resource_id: &str,
        page: &PageRequest,
    ) -> Result<Page<AuditEntry>, AppError> {
        let filter = AuditFilter {
            resource_type: Some(resource_type.to_owned()),
            resource_id: Some(resource_id.to_owned()),
            ..AuditFilter::default()
        };
        self.list(caller, &filter, page).await
    }

    /// The organization's latest signed tree head (an empty tree's before its first entry is
    /// sealed, signed now).
    pub async fn tree_head(&self, caller: &Principal) -> Result<SignedTreeHead, AppError> {
        require(caller, Family::Audit, Action::Read)?;
        let org = &caller.organization_id;
        self.sealed_up_to_now(org).await?;
        let head = match self.audit.tree_head(org).await? {
            Some(head) => head,
            None => {
                let mut empty = TreeHead {
                    organization_id: org.clone(),
                    frontier: Frontier::default(),
                    signed_at: self.clock.now(),
                    key_id: String::new(),
                    signature: String::new(),
                };
                self.signer.sign(&mut empty);
                empty
            }
        };
        Ok(SignedTreeHead { note: self.signer.note(&head), public_key: self.signer.public_key(), head })
    }

    /// The inclusion proof of entry `seq` in the tree of `tree_size` entries (the latest head's
    /// when `None`). 404 for an entry not (yet) sealed or pruned, for a size the log has not
    /// reached, and for one that does not hold the entry.
    pub async fn inclusion_proof(
        &self,
        caller: &Principal,
        seq: i64,
        tree_size: Option<u64>,
    ) -> Result<InclusionProof, AppError> {
        require(caller, Family::Audit, Action::Read)?;
        let org = &caller.organization_id;
        let seal = self.audit.sealed_entry(org, seq).await?.and_then(|entry| entry.seal);
        let seal = seal.ok_or(AppError::NotFound("audit entry"))?;
        let size = reached(self.latest_size(org).await?, tree_size)?;
        let index = u64::try_from(seq - 1).unwrap_or(u64::MAX);
        if index >= size {
            // A well-formed size whose tree does not hold the entry: no such proof.
            return Err(AppError::NotFound("proof of the entry in a tree of that size"));
        }
        let path = self.range_hashes(org, merkle::inclusion_ranges(index, size)).await?;
        Ok(InclusionProof { seq: seal.seq, leaf_hash: seal.hash, tree_size: size, path })
    }

    /// The consistency proof between the trees of `from` and `to` entries (the latest head's
    /// size when `to` is `None`).
    pub async fn consistency_proof(
        &self,
        caller: &Principal,
        from: u64,
        to: Option<u64>,
    ) -> Result<ConsistencyProof, AppError> {
        require(caller, Family::Audit, Action::Read)?;
        let org = &caller.organization_id;
        // Both sizes must name trees the log has reached, and be in order.
        let latest = self.latest_size(org).await?;
        let to = reached(latest, to)?;
        reached(latest, Some(from))?;
        if from == 0 || from > to {
            return Err(invalid("from", format!("must be between 1 and to ({to})")));
        }
        let path = self.range_hashes(org, merkle::consistency_ranges(from, to)).await?;
        Ok(ConsistencyProof { from, to, path })
    }

    /// Walks the organization's sealed entries from the start (or its signed checkpoint): each
    /// leaf recomputed from the entry, their tree rebuilt and its root compared with the signed
    /// head's.
    pub async fn verify(&self, caller: &Principal) -> Result<Verification, AppError> {
        require(caller, Family::Audit, Action::Read)?;
        let org = &caller.organization_id;
        self.sealed_up_to_now(org).await?;
        let broken =
            |checked, entry: Option<AuditEntryId>| Verification { valid: false, checked, first_invalid_id: entry };
        let mut frontier = Frontier::default();
        match Stored::read(self.audit.audit_checkpoint(org).await)? {
            Stored::Head(checkpoint) if self.signer.signed(&checkpoint) => frontier = checkpoint.frontier,
            Stored::Head(_) | Stored::Corrupt => return Ok(broken(0, None)),
            Stored::None => {}
        }
        let mut checked = 0_u64;
        loop {
            let after = i64::try_from(frontier.size()).unwrap_or(i64::MAX);
            let batch = self.audit.entries_after(org, after, VERIFY_BATCH).await?;
            let done = batch.len() < VERIFY_BATCH;
            for entry in batch {
                checked += 1;
                let expected = i64::try_from(frontier.size()).unwrap_or(i64::MAX) + 1;
                let in_place = entry.seal.as_ref().is_some_and(|seal| seal.seq == expected);
                if !in_place || !entry.leaf_matches() {
                    return Ok(broken(checked, Some(entry.draft.id)));
                }
                frontier.push(compliance_domain::audit::entry_leaf(&entry.draft, expected));
            }
            if done {
                break;
            }
        }
        // Entries removed from the end leave the signed head larger than the log; a head edited
        // in the database (or signed with another key) fails its signature.
        let head_matches = match Stored::read(self.audit.tree_head(org).await)? {
            Stored::Head(head) => {
                self.signer.signed(&head) && head.size() == frontier.size() && head.root() == frontier.root()
            }
            Stored::Corrupt => false,
            Stored::None => frontier.size() == 0,
        };
        Ok(Verification { valid: head_matches, checked, first_invalid_id: None })
    }

    /// The size of the organization's latest signed tree (0 before its first entry is sealed).
    async fn latest_size(&self, org: &OrganizationId) -> Result<u64, AppError> {
        Ok(self.audit.tree_head(org).await?.map_or(0, |head| head.size()))
    }

    /// The hashes of these leaf ranges, each folded from the perfect subtrees the store keeps:
    /// one read for all of them.
    async fn range_hashes(&self, org: &OrganizationId, ranges: Vec<(u64, u64)>) -> Result<Vec<Hash>, AppError> {
        let covers: Vec<Vec<NodeId>> = ranges.iter().map(|&(lo, hi)| merkle::cover(lo, hi)).collect();
        let wanted: Vec<NodeId> = covers.iter().flatten().copied().collect();
        let nodes = self.audit.tree_nodes(org, &wanted).await?;
        covers
            .iter()
            .map(|cover| {
                let hashes = cover.iter().map(|node| nodes.get(node).copied()).collect::<Option<Vec<Hash>>>();
                hashes
                    .map(|hashes| merkle::fold(&hashes))
                    .ok_or_else(|| AppError::Internal("a node of the audit log's tree is missing".into()))
            })
            .collect()
    }

    /// Waits (up to [`SEALED_WAIT`]) until the entries of the organization queued before the call
    /// are sealed: a write answered before a read of the log shows in it with its `seq`.
    async fn sealed_up_to_now(&self, org: &OrganizationId) -> Result<(), AppError> {
        let Some((_, last)) = self.audit.unsealed(org).await? else { return Ok(()) };
        self.seal.notify_one();
        let mut sealed = self.sealed.clone();
        let deadline = tokio::time::Instant::now() + SEALED_WAIT;
        loop {
            tokio::select! {
                _ = sealed.changed() => {}
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            match self.audit.unsealed(org).await? {
                Some((first, _)) if first <= last => {}
                _ => return Ok(()),
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(());
            }
        }
    }
}

/// The tree size asked for (`latest`, the log's sealed size, when none is named). A size the log
/// has not reached names no tree (yet): 404, as a record that does not exist.
fn reached(latest: u64, asked: Option<u64>) -> Result<u64, AppError> {
    match asked {
        None => Ok(latest),
        Some(size) if size <= latest => Ok(size),
        Some(_) => Err(AppError::NotFound("audit tree of that size")),
    }
}

/// A 400 naming the query parameter.
fn invalid(parameter: &str, message: String) -> AppError {
    AppError::Validation(ValidationErrors::field(parameter, message))
}

/// A tree head or checkpoint as verification reads it.
enum Stored {
    /// There is none.
    None,
    /// Its row no longer makes a head: edited in the database, which is what verification is
    /// there to find, so it is an answer, not an error.
    Corrupt,
    Head(TreeHead),
}

impl Stored {
    fn read(read: Result<Option<TreeHead>, RepoError>) -> Result<Self, AppError> {
        match read {
            Ok(Some(head)) => Ok(Self::Head(head)),
            Ok(None) => Ok(Self::None),
            Err(RepoError::Internal(_)) => Ok(Self::Corrupt),
            Err(error) => Err(error.into()),
        }
    }
}
