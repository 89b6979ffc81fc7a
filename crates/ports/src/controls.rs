//! Controls, their evidence sources and their evidence.

use async_trait::async_trait;
use compliance_domain::control::{Control, ControlFrequency, ControlPatch, Evidence, EvidenceSource};
use compliance_domain::etag::IfMatch;
use compliance_domain::{ControlId, EvidenceId, MemberId, OrganizationId, Timestamp};

use crate::{AuditOf, Page, PageRequest, RepoError};

/// The filters of `GET /v1/controls`.
#[derive(Debug, Clone, Default)]
pub struct ControlFilter {
    /// Only controls owned by this member.
    pub owner: Option<MemberId>,
    /// Only controls of this frequency.
    pub frequency: Option<ControlFrequency>,
}

/// What deleting a control removed: the control, and the blob keys of its uploaded files.
#[derive(Debug, Clone)]
pub struct DeletedControl {
    /// The control as it was.
    pub control: Control,
    /// The blobs of the evidence files deleted with it.
    pub blob_keys: Vec<String>,
}

/// What a control's status at a moment is computed from: its links in force then, the latest
/// evidence of each of their sources, and its latest uploaded file.
#[derive(Debug, Clone, Default)]
pub struct ControlEvidenceState {
    /// Its links in force at the moment (made at or before it, not removed at or before it).
    pub sources: Vec<EvidenceSource>,
    /// Per link (by source id), its source's latest evidence collected since the link was made
    /// and at or before the moment.
    pub latest: Vec<Evidence>,
    /// Its latest file at or before the moment.
    pub latest_file: Option<Evidence>,
}

/// Controls; every method is scoped to an organization.
#[async_trait]
pub trait ControlRepository: Send + Sync {
    /// A page of the organization's controls, newest first.
    async fn list_controls(
        &self,
        org: &OrganizationId,
        filter: &ControlFilter,
        page: &PageRequest,
    ) -> Result<Page<Control>, RepoError>;
    /// One control.
    async fn get_control(&self, org: &OrganizationId, id: &ControlId) -> Result<Control, RepoError>;
    /// Inserts the control with `audit`'s entry.
    async fn insert_control(&self, control: &Control, audit: &AuditOf<'_, Control>) -> Result<(), RepoError>;
    /// Applies the patch with `audit`'s entry, if `if_match` holds.
    async fn update_control(
        &self,
        org: &OrganizationId,
        id: &ControlId,
        patch: &ControlPatch,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Control>,
    ) -> Result<Control, RepoError>;
    /// Deletes the control with its links and evidence, with `audit`'s entry.
    async fn delete_control(
        &self,
        org: &OrganizationId,
        id: &ControlId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Control>,
    ) -> Result<DeletedControl, RepoError>;
    /// Links a source; `Conflict` when the control already has it, `NotFound` without the control.
    async fn add_evidence_source(
        &self,
        source: &EvidenceSource,
        audit: &AuditOf<'_, EvidenceSource>,
    ) -> Result<(), RepoError>;
    /// Unlinks a source at `now` and answers the link, removed: it stays in the history, in force
    /// before `now` ([`EvidenceSource::removed_at`]). `NotFound` when the control has no such link
    /// in force.
    async fn remove_evidence_source(
        &self,
        org: &OrganizationId,
        control: &ControlId,
        source_id: &str,
        now: Timestamp,
        audit: &AuditOf<'_, EvidenceSource>,
    ) -> Result<EvidenceSource, RepoError>;
    /// What the status of each of `controls` at `moment` is computed from, in their order: the
    /// links in force at `moment` and their evidence (see [`ControlEvidenceState`]). A fixed
    /// number of statements, however many controls, links and evidence items there are.
    async fn evidence_state(
        &self,
        org: &OrganizationId,
        controls: &[ControlId],
        moment: Timestamp,
    ) -> Result<Vec<ControlEvidenceState>, RepoError>;
    /// A page of the control's evidence, newest first.
    async fn list_evidence(
        &self,
        org: &OrganizationId,
        control: &ControlId,
        page: &PageRequest,
    ) -> Result<Page<Evidence>, RepoError>;
    /// One evidence item.
    async fn get_evidence(&self, org: &OrganizationId, id: &EvidenceId) -> Result<Evidence, RepoError>;
    /// Inserts an uploaded file's evidence with `audit`'s entry; `NotFound` without the control.
    async fn insert_evidence(&self, evidence: &Evidence, audit: &AuditOf<'_, Evidence>) -> Result<(), RepoError>;
}
