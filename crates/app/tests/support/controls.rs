//! Controls, their links and evidence in memory: enough of the store for the use cases' own
//! decisions (the clock, `asOf`, uploads). The evidence the store records from other records'
//! changes is tested over HTTP on both databases (tests/api/controls.rs).

use std::sync::Mutex;

use async_trait::async_trait;
use compliance_domain::control::{Control, ControlPatch, Evidence, EvidenceKind, EvidenceSource};
use compliance_domain::etag::IfMatch;
use compliance_domain::{ControlId, EvidenceId, OrganizationId, Timestamp};
use compliance_ports::{
    AuditOf, ControlEvidenceState, ControlFilter, ControlRepository, DeletedControl, Page, PageRequest, RepoError,
};

#[derive(Default)]
pub struct MemoryControls {
    controls: Mutex<Vec<Control>>,
    links: Mutex<Vec<EvidenceSource>>,
    evidence: Mutex<Vec<Evidence>>,
}

impl MemoryControls {
    fn find(&self, org: &OrganizationId, id: &ControlId) -> Result<Control, RepoError> {
        let controls = self.controls.lock().unwrap();
        controls.iter().find(|c| &c.organization_id == org && &c.id == id).cloned().ok_or(RepoError::NotFound)
    }

    /// The latest of `items` at or before `moment`.
    fn latest<'a>(items: impl Iterator<Item = &'a Evidence>, moment: Timestamp) -> Option<Evidence> {
        items.filter(|e| e.collected_at <= moment).max_by_key(|e| e.collected_at).cloned()
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
        self.links.lock().unwrap().push(source.clone());
        Ok(())
    }
    async fn remove_evidence_source(
        &self,
        org: &OrganizationId,
        control: &ControlId,
        source_id: &str,
        _: &AuditOf<'_, EvidenceSource>,
    ) -> Result<EvidenceSource, RepoError> {
        let mut links = self.links.lock().unwrap();
        let at = links
            .iter()
            .position(|l| &l.organization_id == org && &l.control_id == control && l.source_id == source_id)
            .ok_or(RepoError::NotFound)?;
        Ok(links.remove(at))
    }
    async fn evidence_state(
        &self,
        _: &OrganizationId,
        controls: &[ControlId],
        moment: Timestamp,
    ) -> Result<Vec<ControlEvidenceState>, RepoError> {
        let (links, evidence) = (self.links.lock().unwrap(), self.evidence.lock().unwrap());
        Ok(controls
            .iter()
            .map(|control| {
                let sources: Vec<EvidenceSource> = links.iter().filter(|l| &l.control_id == control).cloned().collect();
                let mine = || evidence.iter().filter(move |e| &e.control_id == control);
                let latest = sources
                    .iter()
                    .filter_map(|s| Self::latest(mine().filter(|e| e.source_id.as_ref() == Some(&s.source_id)), moment))
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
