//! Automations and their runs in memory. The claims are compare-and-swap under one lock, as the
//! SQL adapters make them with one conditional statement; a gate on `due` lets a test hold two
//! workers at the point where both have seen the same schedule due. Each write makes its audit
//! draft with the record before and after, as the store does, kept in the shared `Drafts` (the
//! claim of a pending run writes no entry, in the store neither).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use compliance_domain::automation::{AutomationRun, BrowserAutomation, RunStatus};
use compliance_domain::{AutomationId, AutomationRunId, OrganizationId, TaskId, Timestamp};
use compliance_ports::{AutomationRepository, Cursor, Page, RepoError};
use tokio::sync::Barrier;

use super::audit::Drafts;

#[derive(Default)]
pub struct MemoryAutomations {
    automations: Mutex<HashMap<AutomationId, BrowserAutomation>>,
    runs: Mutex<Vec<AutomationRun>>,
    due_gate: Mutex<Option<Arc<Barrier>>>,
    drafts: Drafts,
}

impl MemoryAutomations {
    pub fn new(drafts: Drafts) -> Self {
        Self { drafts, ..Self::default() }
    }

    /// `due` answers only once `callers` callers are waiting in it.
    pub fn hold_due_for(&self, callers: usize) {
        *self.due_gate.lock().unwrap() = Some(Arc::new(Barrier::new(callers)));
    }

    /// Every run, of every automation and organization, oldest first.
    pub fn all_runs(&self) -> Vec<AutomationRun> {
        self.runs.lock().unwrap().clone()
    }

    pub fn automation(&self, id: &AutomationId) -> BrowserAutomation {
        self.automations.lock().unwrap()[id].clone()
    }

    fn busy(runs: &[AutomationRun], automation: &AutomationId) -> bool {
        runs.iter()
            .any(|r| &r.automation_id == automation && matches!(r.status, RunStatus::Pending | RunStatus::Running))
    }
}

#[async_trait]
impl AutomationRepository for MemoryAutomations {
    async fn insert(
        &self,
        automation: &BrowserAutomation,
        audit: &compliance_ports::AuditOf<'_, BrowserAutomation>,
    ) -> Result<(), RepoError> {
        self.drafts.record(audit, None, Some(automation));
        self.automations.lock().unwrap().insert(automation.id.clone(), automation.clone());
        Ok(())
    }

    async fn get(&self, org: &OrganizationId, id: &AutomationId) -> Result<BrowserAutomation, RepoError> {
        let automations = self.automations.lock().unwrap();
        automations.get(id).filter(|a| &a.organization_id == org).cloned().ok_or(RepoError::NotFound)
    }

    async fn list_for_task(&self, org: &OrganizationId, task: &TaskId) -> Result<Vec<BrowserAutomation>, RepoError> {
        let automations = self.automations.lock().unwrap();
        let mut found: Vec<BrowserAutomation> =
            automations.values().filter(|a| &a.organization_id == org && &a.task_id == task).cloned().collect();
        found.sort_by(|a, b| (a.created_at, a.id.as_str()).cmp(&(b.created_at, b.id.as_str())));
        Ok(found)
    }

    async fn update(
        &self,
        automation: &BrowserAutomation,
        previous: &BrowserAutomation,
        audit: &compliance_ports::AuditOf<'_, BrowserAutomation>,
    ) -> Result<(), RepoError> {
        let mut automations = self.automations.lock().unwrap();
        match automations.get_mut(&automation.id) {
            Some(stored)
                if stored.organization_id == previous.organization_id
                    && stored.updated_at == previous.updated_at
                    && stored.next_run_at == previous.next_run_at =>
            {
                self.drafts.record(audit, Some(previous), Some(automation));
                *stored = automation.clone();
                Ok(())
            }
            _ => Err(RepoError::NotFound),
        }
    }

    async fn delete(
        &self,
        org: &OrganizationId,
        id: &AutomationId,
        _: &compliance_domain::etag::IfMatch,
        audit: &compliance_ports::AuditOf<'_, BrowserAutomation>,
    ) -> Result<Vec<AutomationRun>, RepoError> {
        let mut automations = self.automations.lock().unwrap();
        if automations.get(id).is_none_or(|a| &a.organization_id != org) {
            return Err(RepoError::NotFound);
        }
        let deleted = automations.remove(id);
        self.drafts.record(audit, deleted.as_ref(), None);
        let mut runs = self.runs.lock().unwrap();
        let (gone, kept): (Vec<AutomationRun>, Vec<AutomationRun>) =
            runs.drain(..).partition(|r| &r.automation_id == id);
        *runs = kept;
        Ok(gone)
    }

    async fn insert_run(
        &self,
        run: &AutomationRun,
        audit: &compliance_ports::AuditOf<'_, AutomationRun>,
    ) -> Result<(), RepoError> {
        let mut runs = self.runs.lock().unwrap();
        if Self::busy(&runs, &run.automation_id) {
            return Err(RepoError::Conflict("a run is pending or running".into()));
        }
        self.drafts.record(audit, None, Some(run));
        runs.push(run.clone());
        Ok(())
    }

    async fn runs(
        &self,
        org: &OrganizationId,
        automation: &AutomationId,
        query: &compliance_ports::RunQuery,
    ) -> Result<Page<AutomationRun>, RepoError> {
        let page = &query.page;
        let runs = self.runs.lock().unwrap();
        let mut all: Vec<AutomationRun> =
            runs.iter().filter(|r| &r.organization_id == org && &r.automation_id == automation).cloned().collect();
        all.sort_by(|a, b| (b.created_at, b.id.as_str()).cmp(&(a.created_at, a.id.as_str())));
        let total = all.len() as u64;
        let after = |r: &AutomationRun| match &page.after {
            None => true,
            Some(c) => {
                let at = match c.values.first() {
                    Some(compliance_ports::SortValue::Time(at)) => Some(*at),
                    _ => None,
                };
                (Some(r.created_at), r.id.as_str()) < (at, c.id.as_str())
            }
        };
        let rows: Vec<AutomationRun> = all.into_iter().filter(after).take(page.limit + 1).collect();
        let key = |r: &AutomationRun| Cursor::newest_first(r.created_at, r.id.to_string());
        Ok(Page::from_rows(rows, page, Some(total), key))
    }

    async fn delete_finished_runs(
        &self,
        created_before: Timestamp,
        limit: usize,
    ) -> Result<Vec<AutomationRun>, RepoError> {
        let mut runs = self.runs.lock().unwrap();
        let expired = |r: &AutomationRun| {
            matches!(r.status, RunStatus::Completed | RunStatus::Failed) && r.created_at < created_before
        };
        let mut gone = Vec::new();
        runs.retain(|r| match expired(r) && gone.len() < limit {
            true => {
                gone.push(r.clone());
                false
            }
            false => true,
        });
        Ok(gone)
    }

    async fn get_run(&self, org: &OrganizationId, id: &AutomationRunId) -> Result<AutomationRun, RepoError> {
        let runs = self.runs.lock().unwrap();
        runs.iter().find(|r| &r.organization_id == org && &r.id == id).cloned().ok_or(RepoError::NotFound)
    }

    async fn due(&self, now: Timestamp, limit: usize) -> Result<Vec<BrowserAutomation>, RepoError> {
        let mut due: Vec<BrowserAutomation> = {
            let automations = self.automations.lock().unwrap();
            automations
                .values()
                .filter(|a| a.is_enabled && a.next_run_at.is_some_and(|at| at <= now))
                .cloned()
                .collect()
        };
        due.sort_by_key(|a| a.next_run_at);
        due.truncate(limit);
        let gate = self.due_gate.lock().unwrap().clone();
        if let Some(gate) = gate {
            gate.wait().await;
        }
        Ok(due)
    }

    async fn claim_due(
        &self,
        automation: &AutomationId,
        previous: Timestamp,
        next: Option<Timestamp>,
        run: &AutomationRun,
        audit: &compliance_ports::AuditOf<'_, AutomationRun>,
    ) -> Result<bool, RepoError> {
        let mut automations = self.automations.lock().unwrap();
        let Some(stored) = automations.get_mut(automation) else { return Ok(false) };
        if stored.next_run_at != Some(previous) {
            return Ok(false);
        }
        stored.next_run_at = next;
        let mut runs = self.runs.lock().unwrap();
        // The store's entry says which: a skipped run is the record "before" with none after.
        if Self::busy(&runs, automation) {
            self.drafts.record(audit, Some(run), None);
            return Ok(false);
        }
        self.drafts.record(audit, None, Some(run));
        runs.push(run.clone());
        Ok(true)
    }

    async fn claim_pending(
        &self,
        now: Timestamp,
        skip: &[OrganizationId],
    ) -> Result<Option<(AutomationRun, BrowserAutomation)>, RepoError> {
        let automations = self.automations.lock().unwrap();
        let mut runs = self.runs.lock().unwrap();
        let pending = runs.iter_mut().filter(|r| r.status == RunStatus::Pending && !skip.contains(&r.organization_id));
        let Some(run) = pending.min_by_key(|r| r.created_at) else {
            return Ok(None);
        };
        let automation = automations.get(&run.automation_id).cloned().ok_or(RepoError::NotFound)?;
        run.start(now);
        Ok(Some((run.clone(), automation)))
    }

    async fn finish_run(
        &self,
        run: &AutomationRun,
        audit: &compliance_ports::AuditOf<'_, AutomationRun>,
    ) -> Result<(), RepoError> {
        let mut runs = self.runs.lock().unwrap();
        match runs.iter_mut().find(|r| r.id == run.id && r.status == RunStatus::Running) {
            Some(stored) => {
                self.drafts.record(audit, Some(&*stored), Some(run));
                *stored = run.clone();
                Ok(())
            }
            None => Err(RepoError::NotFound),
        }
    }

    async fn stale_runs(&self, started_before: Timestamp, limit: usize) -> Result<Vec<AutomationRun>, RepoError> {
        let runs = self.runs.lock().unwrap();
        let mut stale: Vec<AutomationRun> = runs
            .iter()
            .filter(|run| run.status == RunStatus::Running && run.started_at.is_some_and(|at| at < started_before))
            .cloned()
            .collect();
        stale.sort_by_key(|run| (run.started_at, run.id.to_string()));
        stale.truncate(limit);
        Ok(stale)
    }
}
