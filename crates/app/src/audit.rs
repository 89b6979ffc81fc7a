//! The audit trail: the entry each change writes with it ([`AuditTrail::change`], one call in each
//! use case), reading the log, verifying its hash chain, and pruning it under a signed checkpoint.

use std::sync::Arc;

use compliance_domain::access::{Action, Family};
use compliance_domain::audit::{Actor, ActorType, AuditDraft, AuditEntry, GENESIS_HASH, Redaction, diff, redact_data};
use compliance_domain::{AuditEntryId, OrganizationId, Timestamp};
use compliance_ports::{AuditCheckpoint, AuditFilter, AuditRepository, Clock, Page, PageRequest, ResourceRenderer};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::access::require;
use crate::{AppError, AuthType, Principal};

/// How entries of one kind of resource are made: its type in entries, its id, its API form and
/// which of its fields are secret or rich text.
pub(crate) struct Subject<T> {
    pub resource_type: &'static str,
    pub id: fn(&T) -> String,
    pub render: fn(&dyn ResourceRenderer, &T) -> Value,
    pub redaction: Redaction,
}

/// Makes the entries of changes, for the use cases (which hand them to the store with the change).
pub(crate) struct AuditTrail {
    renderer: Arc<dyn ResourceRenderer>,
    clock: Arc<dyn Clock>,
}

impl AuditTrail {
    pub(crate) fn new(renderer: Arc<dyn ResourceRenderer>, clock: Arc<dyn Clock>) -> Self {
        Self { renderer, clock }
    }

    /// The entry of `caller`'s change `action` (`risk.updated`) to a `subject` record, made by the
    /// store inside the change's transaction from the record before and after it: `changes` is
    /// their difference, `data` the record as the API shows it after (before, for a delete).
    pub(crate) fn change<'a, T>(
        &'a self,
        caller: &'a Principal,
        action: &'static str,
        subject: &'a Subject<T>,
    ) -> impl Fn(Option<&T>, Option<&T>) -> AuditDraft + Send + Sync + 'a {
        move |before: Option<&T>, after: Option<&T>| {
            let render = |record: &T| (subject.render)(self.renderer.as_ref(), record);
            let (before_view, after_view) = (before.map(render), after.map(render));
            let record = after.or(before);
            let data = after_view.clone().or_else(|| before_view.clone()).map(|v| redact_data(v, &subject.redaction));
            AuditDraft {
                id: AuditEntryId::generate(),
                organization_id: caller.organization_id.clone(),
                actor: actor_of(caller),
                action: action.to_owned(),
                resource_type: subject.resource_type.to_owned(),
                resource_id: record.map(subject.id).unwrap_or_default(),
                changes: diff(before_view.as_ref(), after_view.as_ref(), &subject.redaction),
                data,
                request_id: caller.request_id.clone(),
                created_at: self.clock.now(),
            }
        }
    }
}

/// The caller as an entry's actor.
pub(crate) fn actor_of(caller: &Principal) -> Actor {
    let actor_type = match caller.auth_type {
        AuthType::ApiKey => ActorType::ApiKey,
        AuthType::Session => ActorType::User,
    };
    Actor {
        actor_type,
        id: caller.user_id.to_string(),
        email: Some(caller.email.clone()),
        api_key_id: caller.api_key_id.clone(),
    }
}

/// What `GET /v1/audit-log/verify` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    pub valid: bool,
    /// How many entries were checked.
    pub checked: u64,
    /// The first entry that does not follow from its predecessor; `None` when the chain is valid
    /// or when what is wrong is not an entry (a forged checkpoint, entries missing at the end).
    pub first_invalid_id: Option<AuditEntryId>,
}

/// How many entries verification reads at a time.
const VERIFY_BATCH: usize = 500;

/// Reading, verifying and pruning the log.
pub struct AuditService {
    audit: Arc<dyn AuditRepository>,
    clock: Arc<dyn Clock>,
    checkpoint_key: Vec<u8>,
    retention: Option<time::Duration>,
}

impl AuditService {
    pub(crate) fn new(
        audit: Arc<dyn AuditRepository>,
        clock: Arc<dyn Clock>,
        checkpoint_key: Vec<u8>,
        retention: Option<time::Duration>,
    ) -> Self {
        Self { audit, clock, checkpoint_key, retention }
    }

    /// A page of the organization's entries matching `filter`, newest first.
    pub async fn list(
        &self,
        caller: &Principal,
        filter: &AuditFilter,
        page: &PageRequest,
    ) -> Result<Page<AuditEntry>, AppError> {
        require(caller, Family::Audit, Action::Read)?;
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
        require(caller, Family::Audit, Action::Read)?;
        let filter = AuditFilter {
            resource_type: Some(resource_type.to_owned()),
            resource_id: Some(resource_id.to_owned()),
            ..AuditFilter::default()
        };
        Ok(self.audit.list_audit(&caller.organization_id, &filter, page).await?)
    }

    /// Walks the organization's chain from its start (or its signed checkpoint) to its head.
    pub async fn verify(&self, caller: &Principal) -> Result<Verification, AppError> {
        require(caller, Family::Audit, Action::Read)?;
        let org = &caller.organization_id;
        let (mut seq, mut hash) = (0_i64, GENESIS_HASH.to_owned());
        if let Some(checkpoint) = self.audit.audit_checkpoint(org).await? {
            if !self.signature_matches(&checkpoint) {
                return Ok(Verification { valid: false, checked: 0, first_invalid_id: None });
            }
            (seq, hash) = (checkpoint.through_seq, checkpoint.through_hash);
        }
        let mut checked = 0_u64;
        loop {
            let batch = self.audit.entries_after(org, seq, VERIFY_BATCH).await?;
            let done = batch.len() < VERIFY_BATCH;
            for entry in batch {
                checked += 1;
                if entry.seq != seq + 1 || entry.prev_hash != hash || !entry.hash_matches() {
                    return Ok(Verification { valid: false, checked, first_invalid_id: Some(entry.draft.id) });
                }
                (seq, hash) = (entry.seq, entry.hash);
            }
            if done {
                break;
            }
        }
        // Entries deleted from the end leave the head ahead of the last entry.
        let head_matches = match self.audit.audit_head(org).await? {
            Some((head_seq, head_hash)) => head_seq == seq && head_hash == hash,
            None => seq == 0,
        };
        Ok(Verification { valid: head_matches, checked, first_invalid_id: None })
    }

    /// Deletes entries older than `AUDIT_RETENTION_DAYS` in every organization, each pruned
    /// prefix replaced by a signed checkpoint; returns how many were deleted. Nothing without a
    /// retention period.
    pub async fn prune_expired(&self) -> Result<u64, AppError> {
        let Some(retention) = self.retention else { return Ok(0) };
        let now = self.clock.now();
        let before = Timestamp::from_offset(now.to_offset() - retention);
        let mut pruned = 0;
        for org in self.audit.organizations_with_entries_before(before).await? {
            pruned += self.audit.prune_audit(&org, before, now, &|checkpoint| self.sign(checkpoint)).await?;
        }
        Ok(pruned)
    }

    /// Whether a retention period is set (the server then prunes periodically).
    pub fn prunes(&self) -> bool {
        self.retention.is_some()
    }

    fn mac(&self, checkpoint: &AuditCheckpoint) -> Option<Hmac<Sha256>> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.checkpoint_key).ok()?;
        mac.update(checkpoint.signed_text().as_bytes());
        Some(mac)
    }

    fn sign(&self, checkpoint: &AuditCheckpoint) -> String {
        self.mac(checkpoint).map(|mac| hex::encode(mac.finalize().into_bytes())).unwrap_or_default()
    }

    fn signature_matches(&self, checkpoint: &AuditCheckpoint) -> bool {
        let (Some(mac), Ok(bytes)) = (self.mac(checkpoint), hex::decode(&checkpoint.signature)) else {
            return false;
        };
        mac.verify_slice(&bytes).is_ok()
    }
}
