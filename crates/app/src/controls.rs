//! Controls: what the organization does to satisfy its requirements, the sources linked to
//! prove each one, the evidence they recorded, and the status computed from it
//! ([`compliance_domain::control::status`]). Evidence of linked sources is recorded by the store
//! when their changes commit (`compliance_domain::evidence`); files are uploaded here.

use std::sync::Arc;

use compliance_domain::access::{Action, Family};
use compliance_domain::audit::Redaction;
use compliance_domain::comment::{CommentInputError, NewAttachment, decode_file};
use compliance_domain::control::{
    self, Control, ControlChanges, ControlPatch, Evidence, EvidenceKind, EvidenceSource, NewControl, NewEvidenceSource,
    SourceRef, StatusReport,
};
use compliance_domain::etag::IfMatch;
use compliance_domain::{AutomationRunId, ControlId, EvidenceId, OrganizationId, Timestamp};
use compliance_ports::{
    AutomationRepository, BlobStore, Clock, ConnectionRepository, ControlEvidenceState, ControlFilter,
    ControlRepository, MemberRepository, Page, PageRequest, PolicyRepository, TaskRepository,
};

use crate::access::require;
use crate::assignees::require_active_members;
use crate::audit::{AuditTrail, Subject};
use crate::automations::screenshot_subject;
use crate::blob_links::{BlobLinks, LinkTarget};
use crate::{AppError, Ports, Principal, Settings};

/// A control with its status at the moment asked.
#[derive(Debug, Clone)]
pub struct ControlView {
    /// The control.
    pub control: Control,
    /// Its status, explained.
    pub status: StatusReport,
}

/// An evidence item with a link to what shows it: a file's signed download, a run's signed
/// screenshot, or the API address of the task, policy or connection.
#[derive(Debug, Clone)]
pub struct EvidenceView {
    /// The item.
    pub evidence: Evidence,
    /// Where to see it; `None` when there is nothing to link (a run without a screenshot).
    pub link: Option<String>,
}

/// Controls in the audit trail.
pub(crate) const CONTROL: Subject<Control> = Subject {
    resource_type: "control",
    id: |control| control.id.to_string(),
    render: |_, c| {
        serde_json::json!({
            "id": c.id, "name": c.name, "description": c.description, "ownerId": c.owner_id,
            "frequency": c.frequency.map(|f| f.as_str()), "createdAt": c.created_at, "updatedAt": c.updated_at,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &["description"] },
    evidence: None,
};

/// A control's links in the audit trail: in the control's history.
pub(crate) const EVIDENCE_SOURCE: Subject<EvidenceSource> = Subject {
    resource_type: "control",
    id: |link| link.control_id.to_string(),
    render: |_, l| {
        serde_json::json!({
            "controlId": l.control_id, "kind": l.kind.as_str(), "sourceId": l.source_id, "createdAt": l.created_at,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: None,
};

/// Uploaded evidence in the audit trail: in the control's history.
const EVIDENCE: Subject<Evidence> = Subject {
    resource_type: "control",
    id: |item| item.control_id.to_string(),
    render: |_, e| {
        serde_json::json!({
            "evidenceId": e.id, "controlId": e.control_id, "kind": e.kind.as_str(), "outcome": e.outcome.as_str(),
            "collectedAt": e.collected_at, "detail": e.detail,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: None,
};

/// Controls, their evidence sources, evidence and status.
pub struct ControlService {
    controls: Arc<dyn ControlRepository>,
    members: Arc<dyn MemberRepository>,
    policies: Arc<dyn PolicyRepository>,
    tasks: Arc<dyn TaskRepository>,
    automations: Arc<dyn AutomationRepository>,
    connections: Arc<dyn ConnectionRepository>,
    clock: Arc<dyn Clock>,
    blobs: Arc<dyn BlobStore>,
    links: BlobLinks,
    settings: Arc<Settings>,
    audit: Arc<AuditTrail>,
}

impl ControlService {
    pub(crate) fn new(ports: &Ports, settings: Arc<Settings>, audit: Arc<AuditTrail>) -> Self {
        Self {
            controls: ports.controls.clone(),
            members: ports.members.clone(),
            policies: ports.policies.clone(),
            tasks: ports.tasks.clone(),
            automations: ports.automations.clone(),
            connections: ports.connections.clone(),
            clock: ports.clock.clone(),
            blobs: ports.blobs.clone(),
            links: BlobLinks::new(ports.blobs.clone(), ports.clock.clone(), settings.clone()),
            settings,
            audit,
        }
    }

    /// A page of the caller's organization's controls, newest first, each with its status now.
    pub async fn list_controls(
        &self,
        caller: &Principal,
        filter: &ControlFilter,
        page: &PageRequest,
    ) -> Result<Page<ControlView>, AppError> {
        require(caller, Family::Controls, Action::Read)?;
        let org = &caller.organization_id;
        let page = self.controls.list_controls(org, filter, page).await?;
        let ids: Vec<ControlId> = page.items.iter().map(|c| c.id.clone()).collect();
        let now = self.clock.now();
        let states = self.controls.evidence_state(org, &ids, now).await?;
        let mut states = states.into_iter();
        Ok(page.map(|control| {
            let state = states.next().unwrap_or_default();
            let status = status_of(&control, &state, now);
            ControlView { control, status }
        }))
    }

    /// One control with its status at `as_of` (now when `None`; a future moment is refused).
    pub async fn get_control(
        &self,
        caller: &Principal,
        id: &ControlId,
        as_of: Option<Timestamp>,
    ) -> Result<ControlView, AppError> {
        require(caller, Family::Controls, Action::Read)?;
        let moment = moment(self.clock.now(), as_of)?;
        let control = self.control(&caller.organization_id, id).await?;
        self.view(control, moment).await
    }

    /// A new control; its owner must be an active member.
    pub async fn create_control(&self, caller: &Principal, input: NewControl) -> Result<ControlView, AppError> {
        require(caller, Family::Controls, Action::Write)?;
        let created = Control::create(caller.organization_id.clone(), input, self.clock.now())?;
        let owner = created.owner_id.as_ref().map(|m| ("ownerId", m));
        require_active_members(self.members.as_ref(), &caller.organization_id, owner).await?;
        self.controls.insert_control(&created, &self.audit.change(caller, "control.created", &CONTROL)).await?;
        let now = self.clock.now();
        self.view(created, now).await
    }

    /// Changes only the fields the body names; an empty body answers the control unchanged.
    pub async fn update_control(
        &self,
        caller: &Principal,
        id: &ControlId,
        changes: ControlChanges,
        if_match: &IfMatch,
    ) -> Result<ControlView, AppError> {
        require(caller, Family::Controls, Action::Write)?;
        let patch = ControlPatch::new(changes)?;
        let control = if patch.is_empty() {
            let current = self.control(&caller.organization_id, id).await?;
            if_match.check(&current.etag())?;
            current
        } else {
            let owner = patch.owner().map(|m| ("ownerId", m));
            require_active_members(self.members.as_ref(), &caller.organization_id, owner).await?;
            let audit = self.audit.change(caller, "control.updated", &CONTROL);
            self.controls
                .update_control(&caller.organization_id, id, &patch, self.clock.now(), if_match, &audit)
                .await
                .map_err(not_found)?
        };
        let now = self.clock.now();
        self.view(control, now).await
    }

    /// Deletes the control with its links and evidence (and the uploaded files' bytes).
    pub async fn delete_control(
        &self,
        caller: &Principal,
        id: &ControlId,
        if_match: &IfMatch,
    ) -> Result<Control, AppError> {
        require(caller, Family::Controls, Action::Write)?;
        let audit = self.audit.change(caller, "control.deleted", &CONTROL);
        let deleted =
            self.controls.delete_control(&caller.organization_id, id, if_match, &audit).await.map_err(not_found)?;
        let keys: Vec<&str> = deleted.blob_keys.iter().map(String::as_str).collect();
        self.links.remove(&keys, "evidence file").await;
        Ok(deleted.control)
    }

    /// Links a policy, task, connection or automation of the organization to the control.
    pub async fn add_evidence_source(
        &self,
        caller: &Principal,
        id: &ControlId,
        input: NewEvidenceSource,
    ) -> Result<EvidenceSource, AppError> {
        require(caller, Family::Controls, Action::Write)?;
        let org = &caller.organization_id;
        let control = self.control(org, id).await?;
        let link = EvidenceSource::link(&control, input, self.clock.now())?;
        self.require_source(org, &link).await?;
        let audit = self.audit.change(caller, "control.evidence_source_added", &EVIDENCE_SOURCE);
        self.controls.add_evidence_source(&link, &audit).await.map_err(not_found)?;
        Ok(link)
    }

    /// Unlinks a source now; its evidence recorded so far stays in the control's evidence list,
    /// and a status `asOf` a moment before now still counts the link.
    pub async fn remove_evidence_source(
        &self,
        caller: &Principal,
        id: &ControlId,
        source_id: &str,
    ) -> Result<EvidenceSource, AppError> {
        require(caller, Family::Controls, Action::Write)?;
        let org = &caller.organization_id;
        self.control(org, id).await?;
        let audit = self.audit.change(caller, "control.evidence_source_removed", &EVIDENCE_SOURCE);
        self.controls
            .remove_evidence_source(org, id, source_id, self.clock.now(), &audit)
            .await
            .map_err(|e| AppError::from_repo(e, "evidence source"))
    }

    /// The control's status at `as_of` (now when `None`).
    pub async fn control_status(
        &self,
        caller: &Principal,
        id: &ControlId,
        as_of: Option<Timestamp>,
    ) -> Result<StatusReport, AppError> {
        Ok(self.get_control(caller, id, as_of).await?.status)
    }

    /// A page of the control's evidence, newest first, each with its link.
    pub async fn list_evidence(
        &self,
        caller: &Principal,
        id: &ControlId,
        page: &PageRequest,
    ) -> Result<Page<EvidenceView>, AppError> {
        require(caller, Family::Controls, Action::Read)?;
        let org = &caller.organization_id;
        self.control(org, id).await?;
        let page = self.controls.list_evidence(org, id, page).await?;
        let mut items = Vec::with_capacity(page.items.len());
        for evidence in &page.items {
            items.push(self.link(evidence).await?);
        }
        Ok(Page { items, total: page.total, next: page.next })
    }

    /// Stores an uploaded file as passing evidence of the control, collected now.
    pub async fn upload_evidence(
        &self,
        caller: &Principal,
        id: &ControlId,
        input: NewAttachment,
    ) -> Result<EvidenceView, AppError> {
        require(caller, Family::Controls, Action::Write)?;
        let control = self.control(&caller.organization_id, id).await?;
        let file = decode_file("", input, self.settings.attachments).map_err(|error| match error {
            CommentInputError::Invalid(errors) => AppError::Validation(errors),
            CommentInputError::TooLarge(why) => AppError::TooLarge(why),
        })?;
        let size = i64::try_from(file.bytes.len()).unwrap_or(i64::MAX);
        let item =
            Evidence::file(&control, &file.name, &file.media_type, size, file.description.as_deref(), self.clock.now());
        let key = item.blob_key.clone().unwrap_or_default();
        if let Err(error) = self.blobs.put(&key, file.bytes, &file.media_type).await {
            tracing::warn!(%error, "could not store an evidence file");
            return Err(AppError::Unavailable("the attachment store cannot be written".into()));
        }
        let audit = self.audit.change(caller, "evidence.uploaded", &EVIDENCE);
        if let Err(error) = self.controls.insert_evidence(&item, &audit).await {
            self.links.remove(&[key.as_str()], "evidence file").await;
            return Err(not_found(error));
        }
        self.link(&item).await
    }

    /// The bytes of an uploaded file behind a URL this service signed. Tampering or expiry: 403.
    pub async fn download_evidence(
        &self,
        org: &str,
        id: &str,
        expires: i64,
        signature: &str,
    ) -> Result<(Evidence, Vec<u8>), AppError> {
        const REFUSED: AppError = AppError::Forbidden("the download link is invalid or has expired");
        if !self.links.accepts(org, &file_subject(id), expires, signature) {
            return Err(REFUSED);
        }
        let (Ok(org), Ok(id)) = (OrganizationId::parse(org), EvidenceId::parse(id)) else {
            return Err(REFUSED);
        };
        let item = self.controls.get_evidence(&org, &id).await.map_err(|e| AppError::from_repo(e, "evidence"))?;
        let key = item
            .blob_key
            .clone()
            .filter(|_| item.kind == EvidenceKind::File)
            .ok_or(AppError::NotFound("evidence file"))?;
        let bytes = self.links.read(&key, "evidence file").await?;
        Ok((item, bytes))
    }

    async fn view(&self, control: Control, moment: Timestamp) -> Result<ControlView, AppError> {
        let org = control.organization_id.clone();
        let state = self.controls.evidence_state(&org, std::slice::from_ref(&control.id), moment).await?;
        let state = state.into_iter().next().unwrap_or_default();
        let status = status_of(&control, &state, moment);
        Ok(ControlView { control, status })
    }

    async fn control(&self, org: &OrganizationId, id: &ControlId) -> Result<Control, AppError> {
        self.controls.get_control(org, id).await.map_err(not_found)
    }

    /// The linked record must be the organization's: another's or a missing one is a 404 naming it.
    async fn require_source(&self, org: &OrganizationId, link: &EvidenceSource) -> Result<(), AppError> {
        let found = match link.target() {
            Some(SourceRef::Policy(id)) => {
                self.policies.get_policy(org, &id).await.map(drop).map_err(|e| (e, "policy"))
            }
            Some(SourceRef::Task(id)) => self.tasks.get_task(org, &id).await.map(drop).map_err(|e| (e, "task")),
            Some(SourceRef::Connection(id)) => {
                self.connections.get_connection(org, &id).await.map(drop).map_err(|e| (e, "connection"))
            }
            Some(SourceRef::Automation(id)) => {
                self.automations.get(org, &id).await.map(drop).map_err(|e| (e, "automation"))
            }
            Some(SourceRef::Check(connection, check_id)) => {
                let connection = self
                    .connections
                    .get_connection(org, &connection)
                    .await
                    .map_err(|e| AppError::from_repo(e, "connection"))?;
                let provider = compliance_domain::check::reading(&check_id).map(|check| check.provider.as_str());
                if provider != Some(connection.provider.as_str()) {
                    return Err(AppError::invalid(
                        "sourceId",
                        format!("{check_id} is not a check of the connection's provider {}", connection.provider),
                    ));
                }
                Ok(())
            }
            None => return Err(AppError::invalid("sourceId", "is not a well-formed id")),
        };
        found.map_err(|(error, what)| AppError::from_repo(error, what))
    }

    async fn link(&self, evidence: &Evidence) -> Result<EvidenceView, AppError> {
        let base = self.settings.public_url.trim_end_matches('/');
        let source = evidence.source_id.as_deref().unwrap_or_default();
        let link = match evidence.kind {
            EvidenceKind::File => {
                let key = evidence.blob_key.clone().unwrap_or_default();
                let (subject, path) =
                    (file_subject(evidence.id.as_str()), format!("/v1/evidence/{}/content", evidence.id));
                let org = evidence.organization_id.as_str();
                let target = LinkTarget { key: &key, org, subject: &subject, path: &path, what: "evidence file" };
                Some(self.links.link(&target).await?.url)
            }
            EvidenceKind::Automation => self.run_screenshot(evidence).await?,
            EvidenceKind::Connection => Some(format!("{base}/v1/integrations/connections/{source}")),
            EvidenceKind::Check => {
                let run = evidence.detail.get("checkRunId").and_then(|run| run.as_str()).unwrap_or_default();
                Some(format!("{base}/v1/check-runs/{run}/results"))
            }
            EvidenceKind::Task => Some(format!("{base}/v1/tasks/{source}")),
            EvidenceKind::Policy => Some(format!("{base}/v1/policies/{source}")),
        };
        Ok(EvidenceView { evidence: evidence.clone(), link })
    }

    /// The signed link of the run's final screenshot, while the run and its screenshot exist.
    async fn run_screenshot(&self, evidence: &Evidence) -> Result<Option<String>, AppError> {
        let Some(run_id) = evidence.run_id.as_deref().and_then(|id| AutomationRunId::parse(id).ok()) else {
            return Ok(None);
        };
        let Ok(run) = self.automations.get_run(&evidence.organization_id, &run_id).await else { return Ok(None) };
        let Some(key) = run.screenshot_key.as_deref() else { return Ok(None) };
        let (subject, path) =
            (screenshot_subject(run.id.as_str(), None), format!("/v1/browser/runs/{}/screenshot", run.id));
        let target =
            LinkTarget { key, org: run.organization_id.as_str(), subject: &subject, path: &path, what: "screenshot" };
        Ok(Some(self.links.link(&target).await?.url))
    }
}

/// The moment a status is asked for: `as_of`, or `now` when `None`; a moment after `now` is
/// refused (there is no evidence of the future to answer from).
pub(crate) fn moment(now: Timestamp, as_of: Option<Timestamp>) -> Result<Timestamp, AppError> {
    match as_of {
        Some(moment) if moment > now => Err(AppError::invalid("asOf", "must not be in the future")),
        Some(moment) => Ok(moment),
        None => Ok(now),
    }
}

/// The status of each of `controls` at `moment`, with what it was computed from, in their order:
/// one read of what they are computed from ([`ControlRepository::evidence_state`], a fixed number
/// of statements however many controls and links), for a roll-up over many controls (a
/// framework's requirements).
pub(crate) async fn statuses(
    repository: &dyn ControlRepository,
    org: &OrganizationId,
    controls: &[Control],
    moment: Timestamp,
) -> Result<Vec<(StatusReport, ControlEvidenceState)>, AppError> {
    let ids: Vec<ControlId> = controls.iter().map(|c| c.id.clone()).collect();
    let states = repository.evidence_state(org, &ids, moment).await?;
    Ok(controls.iter().zip(states).map(|(control, state)| (status_of(control, &state, moment), state)).collect())
}

/// The control's status from what the store read for it.
fn status_of(control: &Control, state: &ControlEvidenceState, moment: Timestamp) -> StatusReport {
    let sources: Vec<_> = state
        .sources
        .iter()
        .map(|source| (source, state.latest.iter().find(|e| e.source_id.as_deref() == Some(source.source_id.as_str()))))
        .collect();
    control::status(control.frequency, &sources, state.latest_file.as_ref(), moment)
}

/// What a file's download link signs: the purpose keeps it from passing for another kind of link.
fn file_subject(id: &str) -> String {
    format!("evidence:{id}")
}

fn not_found(error: compliance_ports::RepoError) -> AppError {
    AppError::from_repo(error, "control")
}
