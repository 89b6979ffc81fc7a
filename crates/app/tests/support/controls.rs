//! Controls, their links and evidence in memory: enough of the store for the use cases' own
//! decisions (the clock, `asOf`, uploads, links and their history). Like the store, it records the
//! evidence the other stores' changes observe (their drafts, [`Drafts`]) for the controls linked
//! to the source when the change was made; it compares no policy signatures (a policy's
//! observation that needs the active members records nothing here). The store's own evidence is
//! tested over HTTP on both databases (tests/api/controls.rs).

use std::sync::Mutex;

use async_trait::async_trait;
use compliance_domain::control::{Control, ControlPatch, Evidence, EvidenceKind, EvidenceSource};
use compliance_domain::etag::IfMatch;
use compliance_domain::{ControlId, EvidenceId, OrganizationId, Timestamp};
use compliance_ports::{
    AuditOf, ControlEvidenceState, ControlFilter, ControlRepository, DeletedControl, Page, PageRequest, RepoError,
};

use super::Drafts;

pub struct MemoryControls {
    controls: Mutex<Vec<Control>>,
    /// Every link made, removed ones included (with their `removed_at`), as the store keeps them.
    links: Mutex<Vec<EvidenceSource>>,
    evidence: Mutex<Vec<Evidence>>,
    /// The drafts of the evidence sources' changes, and how many of them are recorded here.
    drafts: Drafts,
    recorded: Mutex<usize>,
}

impl MemoryControls {
    pub fn new(drafts: Drafts) -> Self {
        Self {
            controls: Mutex::default(),
            links: Mutex::default(),
            evidence: Mutex::default(),
            drafts,
            recorded: Mutex::new(0),
        }
    }

    fn find(&self, org: &OrganizationId, id: &ControlId) -> Result<Control, RepoError> {
        let controls = self.controls.lock().unwrap();
        controls.iter().find(|c| &c.organization_id == org && &c.id == id).cloned().ok_or(RepoError::NotFound)
    }

    /// Records the evidence of the drafts made since the last call, for the links in force now:
    /// every method calls it first, and links change only here, so these are the links in force
    /// when each change was made (the store records it in the change's transaction).
    fn record_new_drafts(&self) {
        let mut recorded = self.recorded.lock().unwrap();
        let drafts = self.drafts.all();
        let links = self.links.lock().unwrap();
        let mut evidence = self.evidence.lock().unwrap();
        for draft in &drafts[*recorded..] {
            let Some(observation) = &draft.evidence else { continue };
            if observation.needs_active_members() {
                continue;
            }
            let Some((outcome, detail)) = observation.decide(&[]) else { continue };
            let linked = links.iter().filter(|l| {
                l.organization_id == draft.organization_id
                    && l.source_id == observation.source_id
                    && l.kind == observation.kind
                    && l.removed_at.is_none()
            });
            for link in linked {
                evidence.push(Evidence {
                    id: EvidenceId::generate(),
                    organization_id: draft.organization_id.clone(),
                    control_id: link.control_id.clone(),
                    kind: observation.kind.into(),
                    source_id: Some(observation.source_id.clone()),
                    outcome,
                    collected_at: draft.created_at,
                    detail: detail.clone(),
                    blob_key: None,
                    run_id: observation.run_id.clone(),
                });
            }
        }
        *recorded = drafts.len();
    }

    /// The latest of `items` at or before `moment`.
    fn latest<'a>(items: impl Iterator<Item = &'a Evidence>, moment: Timestamp) -> Option<Evidence> {
        items.filter(|e| e.collected_at <= moment).max_by_key(|e| (e.collected_at, e.id.to_string())).cloned()
    }
}

#[async_trait]
impl ControlRepository for MemoryControls {
    async fn list_controls(
        &self,
        org: &OrganizationId,
        _: &ControlFilter,
        _: &PageRequest,
    ) -> Result<Page<Control>, RepoError> {
        let items: Vec<Control> =
            self.controls.lock().unwrap().iter().filter(|c| &c.organization_id == org).rev().cloned().collect();
        Ok(Page { total: items.len() as u64, items, next: None })
    }
    async fn get_control(&self, org: &OrganizationId, id: &ControlId) -> Result<Control, RepoError> {
        self.record_new_drafts();
        self.find(org, id)
    }
    async fn insert_control(&self, control: &Control, _: &AuditOf<'_, Control>) -> Result<(), RepoError> {
        self.controls.lock().unwrap().push(control.clone());
        Ok(())
    }
    async fn update_control(
        &self,
        org: &OrganizationId,
        id: &ControlId,
        patch: &ControlPatch,
        now: Timestamp,
        if_match: &IfMatch,
        _: &AuditOf<'_, Control>,
    ) -> Result<Control, RepoError> {
        let mut controls = self.controls.lock().unwrap();
        let control =
            controls.iter_mut().find(|c| &c.organization_id == org && &c.id == id).ok_or(RepoError::NotFound)?;
        if_match.check(&control.etag()).map_err(RepoError::PreconditionFailed)?;
        control.apply(patch, now);
        Ok(control.clone())
    }
    async fn delete_control(
        &self,
        org: &OrganizationId,
        id: &ControlId,
        _: &IfMatch,
        _: &AuditOf<'_, Control>,
    ) -> Result<DeletedControl, RepoError> {
        let control = self.find(org, id)?;
        self.controls.lock().unwrap().retain(|c| &c.id != id);
        self.links.lock().unwrap().retain(|l| &l.control_id != id);
        let mut evidence = self.evidence.lock().unwrap();
        let blob_keys = evidence.iter().filter(|e| &e.control_id == id).filter_map(|e| e.blob_key.clone()).collect();
        evidence.retain(|e| &e.control_id != id);
        Ok(DeletedControl { control, blob_keys })
    }
    async fn add_evidence_source(
        &self,
        source: &EvidenceSource,
        _: &AuditOf<'_, EvidenceSource>,
    ) -> Result<(), RepoError> {
        self.record_new_drafts();
        self.find(&source.organization_id, &source.control_id)?;
        let mut links = self.links.lock().unwrap();
        let in_force = |l: &&EvidenceSource| {
            l.control_id == source.control_id && l.source_id == source.source_id && l.removed_at.is_none()
        };
        if links.iter().any(|l| in_force(&l)) {
            return Err(RepoError::Conflict("the control is already linked to this source".into()));
        }
        links.push(source.clone());
        Ok(())
    }
    async fn remove_evidence_source(
        &self,
        org: &OrganizationId,
        control: &ControlId,
        source_id: &str,
        now: Timestamp,
        _: &AuditOf<'_, EvidenceSource>,
    ) -> Result<EvidenceSource, RepoError> {
        self.record_new_drafts();
        let mut links = self.links.lock().unwrap();
        let link = links
            .iter_mut()
            .find(|l| {
                &l.organization_id == org
                    && &l.control_id == control
                    && l.source_id == source_id
                    && l.removed_at.is_none()
            })
            .ok_or(RepoError::NotFound)?;
        link.removed_at = Some(now);
        Ok(link.clone())
    }
    async fn evidence_state(
        &self,
        org: &OrganizationId,
        controls: &[ControlId],
        moment: Timestamp,
    ) -> Result<Vec<ControlEvidenceState>, RepoError> {
        self.record_new_drafts();
        let (links, evidence) = (self.links.lock().unwrap(), self.evidence.lock().unwrap());
        Ok(controls
            .iter()
            .map(|control| {
                let sources: Vec<EvidenceSource> = links
                    .iter()
                    .filter(|l| &l.organization_id == org && &l.control_id == control && l.in_force_at(moment))
                    .cloned()
                    .collect();
                let mine = || evidence.iter().filter(move |e| &e.organization_id == org && &e.control_id == control);
                let latest = sources
                    .iter()
                    .filter_map(|s| {
                        let of_link = mine().filter(|e| e.source_id.as_ref() == Some(&s.source_id));
                        Self::latest(of_link.filter(|e| e.collected_at >= s.created_at), moment)
                    })
                    .collect();
                let latest_file = Self::latest(mine().filter(|e| e.kind == EvidenceKind::File), moment);
                ControlEvidenceState { sources, latest, latest_file }
            })
            .collect())
    }
    async fn list_evidence(
        &self,
        org: &OrganizationId,
        control: &ControlId,
        _: &PageRequest,
    ) -> Result<Page<Evidence>, RepoError> {
        self.record_new_drafts();
        let evidence = self.evidence.lock().unwrap();
        let items: Vec<Evidence> =
            evidence.iter().filter(|e| &e.organization_id == org && &e.control_id == control).rev().cloned().collect();
        Ok(Page { total: items.len() as u64, items, next: None })
    }
    async fn get_evidence(&self, org: &OrganizationId, id: &EvidenceId) -> Result<Evidence, RepoError> {
        let evidence = self.evidence.lock().unwrap();
        evidence.iter().find(|e| &e.organization_id == org && &e.id == id).cloned().ok_or(RepoError::NotFound)
    }
    async fn insert_evidence(&self, item: &Evidence, _: &AuditOf<'_, Evidence>) -> Result<(), RepoError> {
        self.find(&item.organization_id, &item.control_id)?;
        self.evidence.lock().unwrap().push(item.clone());
        Ok(())
    }
}
