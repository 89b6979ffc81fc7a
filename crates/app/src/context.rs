//! Context entries: questions and answers about the company, tagged.

use std::sync::Arc;

use compliance_domain::ContextEntryId;
use compliance_domain::access::{Action, Family};
use compliance_domain::audit::Redaction;
use compliance_domain::context::{ContextEntry, ContextEntryChanges, ContextEntryPatch, NewContextEntry};
use compliance_domain::etag::IfMatch;
use compliance_ports::{Clock, ContextQuery, ContextRepository, Page};

use crate::access::require;
use crate::audit::{AuditTrail, Subject};
use crate::{AppError, Ports, Principal};

/// Context entries: questions and answers about the organization.
pub struct ContextService {
    context: Arc<dyn ContextRepository>,
    clock: Arc<dyn Clock>,
    audit: Arc<AuditTrail>,
}

/// Context entries in the audit trail: answers are rich text, shown by length.
pub(crate) const CONTEXT_ENTRY: Subject<ContextEntry> = Subject {
    resource_type: "contextEntry",
    id: |entry| entry.id.to_string(),
    render: |renderer, entry| renderer.context_entry(entry),
    redaction: Redaction { secret: &[], rich_text: &["answer"] },
    evidence: None,
};

impl ContextService {
    pub(crate) fn new(ports: &Ports, audit: Arc<AuditTrail>) -> Self {
        Self { context: ports.context.clone(), clock: ports.clock.clone(), audit }
    }

    /// A page of the caller's organization's context entries, newest first.
    pub async fn list_context_entries(
        &self,
        caller: &Principal,
        query: &ContextQuery,
    ) -> Result<Page<ContextEntry>, AppError> {
        require(caller, Family::Context, Action::Read)?;
        Ok(self.context.list_context_entries(&caller.organization_id, query).await?)
    }

    /// One context entry of the caller's organization.
    pub async fn get_context_entry(&self, caller: &Principal, id: &ContextEntryId) -> Result<ContextEntry, AppError> {
        require(caller, Family::Context, Action::Read)?;
        self.context.get_context_entry(&caller.organization_id, id).await.map_err(not_found)
    }

    /// A new context entry; a bad field is [`AppError::Validation`].
    pub async fn create_context_entry(
        &self,
        caller: &Principal,
        input: NewContextEntry,
    ) -> Result<ContextEntry, AppError> {
        require(caller, Family::Context, Action::Write)?;
        let created = ContextEntry::create(caller.organization_id.clone(), input, self.clock.now())?;
        self.context
            .insert_context_entry(&created, &self.audit.change(caller, "contextEntry.created", &CONTEXT_ENTRY))
            .await?;
        Ok(created)
    }

    /// Changes only the fields the body names; an empty body answers the entry unchanged.
    pub async fn update_context_entry(
        &self,
        caller: &Principal,
        id: &ContextEntryId,
        changes: ContextEntryChanges,
        if_match: &IfMatch,
    ) -> Result<ContextEntry, AppError> {
        require(caller, Family::Context, Action::Write)?;
        let patch = ContextEntryPatch::new(changes)?;
        if patch.is_empty() {
            // Nothing to write, but the precondition still decides the answer.
            let current = self.get_context_entry(caller, id).await?;
            if_match.check(&current.etag())?;
            return Ok(current);
        }
        let org = &caller.organization_id;
        let audit = self.audit.change(caller, "contextEntry.updated", &CONTEXT_ENTRY);
        self.context.update_context_entry(org, id, &patch, self.clock.now(), if_match, &audit).await.map_err(not_found)
    }

    /// Deletes the entry for good and returns what it was.
    pub async fn delete_context_entry(
        &self,
        caller: &Principal,
        id: &ContextEntryId,
        if_match: &IfMatch,
    ) -> Result<ContextEntry, AppError> {
        require(caller, Family::Context, Action::Write)?;
        let audit = self.audit.change(caller, "contextEntry.deleted", &CONTEXT_ENTRY);
        self.context.delete_context_entry(&caller.organization_id, id, if_match, &audit).await.map_err(not_found)
    }
}

fn not_found(error: compliance_ports::RepoError) -> AppError {
    AppError::from_repo(error, "context entry")
}
