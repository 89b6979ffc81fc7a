//! Risks and tasks in memory (the records comments and automations hang on), the tasks' audit
//! drafts kept in the shared `Drafts`; vendors, policies and context entries as empty stores that
//! refuse writes, since no test here needs them (the World's policies are `MemoryPolicies`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use compliance_domain::comment::CommentEntityType;
use compliance_domain::context::{ContextEntry, ContextEntryPatch};
use compliance_domain::etag::IfMatch;
use compliance_domain::policy::{Policy, PolicyPatch};
use compliance_domain::risk::{Risk, RiskPatch};
use compliance_domain::task::{Task, TaskPatch};
use compliance_domain::vendor::{Vendor, VendorPatch};
use compliance_domain::{ContextEntryId, MemberId, OrganizationId, PolicyId, RiskId, TaskId, Timestamp, VendorId};
use compliance_ports::{
    AuditOf, BulkApplied, BulkError, BulkWrite, ContextRepository, Cursor, Deleted, HealthCheck, ListGenerations,
    ListName, Page, PageRequest, PolicyRepository, RepoError, RiskRepository, TaskRepository, VendorRepository,
};

use compliance_domain::audit::{AuditDraft, AuditEntry, TreeHead};
use compliance_domain::merkle::{Hash, NodeId};
use compliance_ports::{AuditFilter, AuditRepository, ResourceRenderer, SealedBatch, SignTreeHead};

use super::audit::Drafts;
use super::{MemoryComments, newest_first};

pub struct MemoryRisks {
    risks: Mutex<Vec<Risk>>,
    comments: Arc<MemoryComments>,
}

impl MemoryRisks {
    pub fn new(comments: Arc<MemoryComments>) -> Self {
        Self { risks: Mutex::default(), comments }
    }
}

#[async_trait]
impl RiskRepository for MemoryRisks {
    async fn list_risks(
        &self,
        org: &OrganizationId,
        query: &compliance_ports::RiskQuery,
    ) -> Result<Page<Risk>, RepoError> {
        let page = &query.page;
        let risks: Vec<Risk> =
            self.risks.lock().unwrap().iter().filter(|r| &r.organization_id == org).cloned().collect();
        Ok(newest_first(risks, page, |r| Cursor::newest_first(r.created_at, r.id.to_string())))
    }

    async fn get_risk(&self, org: &OrganizationId, id: &RiskId) -> Result<Risk, RepoError> {
        let risks = self.risks.lock().unwrap();
        risks.iter().find(|r| &r.organization_id == org && &r.id == id).cloned().ok_or(RepoError::NotFound)
    }

    async fn insert_risk(&self, risk: &Risk, audit: &AuditOf<'_, Risk>) -> Result<(), RepoError> {
        audit(None, Some(risk));
        self.risks.lock().unwrap().push(risk.clone());
        Ok(())
    }

    async fn update_risk(
        &self,
        org: &OrganizationId,
        id: &RiskId,
        patch: &RiskPatch,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Risk>,
    ) -> Result<Risk, RepoError> {
        let mut risks = self.risks.lock().unwrap();
        let risk = risks.iter_mut().find(|r| &r.organization_id == org && &r.id == id).ok_or(RepoError::NotFound)?;
        if_match.check(&risk.etag())?;
        let before = risk.clone();
        risk.apply(patch, now);
        audit(Some(&before), Some(risk));
        Ok(risk.clone())
    }

    async fn delete_risk(
        &self,
        org: &OrganizationId,
        id: &RiskId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Risk>,
    ) -> Result<Deleted<Risk>, RepoError> {
        let record = {
            let mut risks = self.risks.lock().unwrap();
            let at = risks.iter().position(|r| &r.organization_id == org && &r.id == id).ok_or(RepoError::NotFound)?;
            if_match.check(&risks[at].etag())?;
            risks.remove(at)
        };
        audit(Some(&record), None);
        let attachments = self.comments.delete_on(org, CommentEntityType::Risk, id.as_str());
        Ok(Deleted { record, attachments })
    }

    // No test here applies bulk writes (tests/api/bulk.rs does, on both databases).
    async fn apply_risk_bulk(
        &self,
        _: &OrganizationId,
        _: &[BulkWrite<Risk, RiskId, RiskPatch>],
        _: Timestamp,
        _: &AuditOf<'_, Risk>,
    ) -> Result<BulkApplied<Risk>, BulkError> {
        Err(BulkError::Store(refused()))
    }
}

pub struct MemoryTasks {
    tasks: Mutex<Vec<Task>>,
    comments: Arc<MemoryComments>,
    drafts: Drafts,
}

impl MemoryTasks {
    pub fn new(comments: Arc<MemoryComments>, drafts: Drafts) -> Self {
        Self { tasks: Mutex::default(), comments, drafts }
    }
}

#[async_trait]
impl TaskRepository for MemoryTasks {
    async fn list_tasks(
        &self,
        org: &OrganizationId,
        query: &compliance_ports::TaskQuery,
    ) -> Result<Page<Task>, RepoError> {
        let page = &query.page;
        let tasks: Vec<Task> =
            self.tasks.lock().unwrap().iter().filter(|t| &t.organization_id == org).cloned().collect();
        Ok(newest_first(tasks, page, |t| Cursor::newest_first(t.created_at, t.id.to_string())))
    }

    async fn list_tasks_assigned(
        &self,
        org: &OrganizationId,
        assignee: &MemberId,
        query: &compliance_ports::TaskQuery,
    ) -> Result<Page<Task>, RepoError> {
        let page = &query.page;
        let tasks: Vec<Task> = self
            .tasks
            .lock()
            .unwrap()
            .iter()
            .filter(|t| &t.organization_id == org && t.assignee_id.as_ref() == Some(assignee))
            .cloned()
            .collect();
        Ok(newest_first(tasks, page, |t| Cursor::newest_first(t.created_at, t.id.to_string())))
    }

    async fn get_task(&self, org: &OrganizationId, id: &TaskId) -> Result<Task, RepoError> {
        let tasks = self.tasks.lock().unwrap();
        tasks.iter().find(|t| &t.organization_id == org && &t.id == id).cloned().ok_or(RepoError::NotFound)
    }

    async fn insert_task(&self, task: &Task, audit: &AuditOf<'_, Task>) -> Result<(), RepoError> {
        self.drafts.record(audit, None, Some(task));
        self.tasks.lock().unwrap().push(task.clone());
        Ok(())
    }

    async fn update_task(
        &self,
        org: &OrganizationId,
        id: &TaskId,
        patch: &TaskPatch,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Task>,
    ) -> Result<Task, RepoError> {
        let mut tasks = self.tasks.lock().unwrap();
        let task = tasks.iter_mut().find(|t| &t.organization_id == org && &t.id == id).ok_or(RepoError::NotFound)?;
        if_match.check(&task.etag())?;
        let before = task.clone();
        task.apply(patch, now).map_err(RepoError::Conflict)?;
        self.drafts.record(audit, Some(&before), Some(task));
        Ok(task.clone())
    }

    async fn delete_task(
        &self,
        org: &OrganizationId,
        id: &TaskId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Task>,
    ) -> Result<Deleted<Task>, RepoError> {
        let record = {
            let mut tasks = self.tasks.lock().unwrap();
            let at = tasks.iter().position(|t| &t.organization_id == org && &t.id == id).ok_or(RepoError::NotFound)?;
            if_match.check(&tasks[at].etag())?;
            tasks.remove(at)
        };
        self.drafts.record(audit, Some(&record), None);
        let attachments = self.comments.delete_on(org, CommentEntityType::Task, id.as_str());
        Ok(Deleted { record, attachments })
    }

    // No test here applies bulk writes (tests/api/bulk.rs does, on both databases).
    async fn apply_task_bulk(
        &self,
        _: &OrganizationId,
        _: &[BulkWrite<Task, TaskId, TaskPatch>],
        _: Timestamp,
        _: &AuditOf<'_, Task>,
    ) -> Result<BulkApplied<Task>, BulkError> {
        Err(BulkError::Store(refused()))
    }

    async fn save_task(&self, before: &Task, after: &Task, audit: &AuditOf<'_, Task>) -> Result<(), RepoError> {
        let mut tasks = self.tasks.lock().unwrap();
        let task = tasks.iter_mut().find(|t| t.organization_id == before.organization_id && t.id == before.id);
        let task = task.ok_or(RepoError::NotFound)?;
        if task.updated_at != before.updated_at {
            return Err(RepoError::Conflict(compliance_ports::TASK_CHANGED.into()));
        }
        self.drafts.record(audit, Some(before), Some(after));
        *task = after.clone();
        Ok(())
    }
}

/// A store of a record kind these tests never write: every read finds nothing, every write is refused.
#[derive(Default)]
pub struct NoRecords;

fn refused() -> RepoError {
    RepoError::Internal("this record kind is not faked".into())
}

pub(crate) fn empty<T>() -> Page<T> {
    Page { items: Vec::new(), total: 0, next: None }
}

#[async_trait]
impl VendorRepository for NoRecords {
    async fn list_vendors(
        &self,
        _: &OrganizationId,
        _: &compliance_ports::VendorQuery,
    ) -> Result<Page<Vendor>, RepoError> {
        Ok(empty())
    }
    async fn get_vendor(&self, _: &OrganizationId, _: &VendorId) -> Result<Vendor, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn insert_vendor(&self, _: &Vendor, _: &AuditOf<'_, Vendor>) -> Result<(), RepoError> {
        Err(refused())
    }
    async fn update_vendor(
        &self,
        _: &OrganizationId,
        _: &VendorId,
        _: &VendorPatch,
        _: Timestamp,
        _: &IfMatch,
        _: &AuditOf<'_, Vendor>,
    ) -> Result<Vendor, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn delete_vendor(
        &self,
        _: &OrganizationId,
        _: &VendorId,
        _: &IfMatch,
        _: &AuditOf<'_, Vendor>,
    ) -> Result<Deleted<Vendor>, RepoError> {
        Err(RepoError::NotFound)
    }

    // No test here applies bulk writes (tests/api/bulk.rs does, on both databases).
    async fn apply_vendor_bulk(
        &self,
        _: &OrganizationId,
        _: &[BulkWrite<Vendor, VendorId, VendorPatch>],
        _: Timestamp,
        _: &AuditOf<'_, Vendor>,
    ) -> Result<BulkApplied<Vendor>, BulkError> {
        Err(BulkError::Store(refused()))
    }
}

#[async_trait]
impl PolicyRepository for NoRecords {
    async fn list_policies(
        &self,
        _: &OrganizationId,
        _: &compliance_ports::PolicyQuery,
    ) -> Result<Page<Policy>, RepoError> {
        Ok(empty())
    }
    async fn get_policy(&self, _: &OrganizationId, _: &PolicyId) -> Result<Policy, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn insert_policy(&self, _: &Policy, _: &AuditOf<'_, Policy>) -> Result<(), RepoError> {
        Err(refused())
    }
    async fn update_policy(
        &self,
        _: &OrganizationId,
        _: &PolicyId,
        _: &PolicyPatch,
        _: Timestamp,
        _: &IfMatch,
        _: &AuditOf<'_, Policy>,
    ) -> Result<Policy, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn delete_policy(
        &self,
        _: &OrganizationId,
        _: &PolicyId,
        _: &IfMatch,
        _: &AuditOf<'_, Policy>,
    ) -> Result<Deleted<Policy>, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn save_policy(
        &self,
        _: &Policy,
        _: &compliance_ports::PolicyWrite<'_>,
        _: &AuditOf<'_, Policy>,
    ) -> Result<(), RepoError> {
        Err(RepoError::NotFound)
    }
    async fn list_policy_versions(
        &self,
        _: &OrganizationId,
        _: &PolicyId,
    ) -> Result<Vec<compliance_domain::policy::PolicyVersionSummary>, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn get_policy_version(
        &self,
        _: &OrganizationId,
        _: &PolicyId,
        _: i32,
    ) -> Result<compliance_domain::policy::PolicyVersion, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn policy_signers(
        &self,
        _: &OrganizationId,
        _: &PolicyId,
        _: i32,
    ) -> Result<compliance_domain::policy::VersionSigners, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn policies_of_user(
        &self,
        _: &OrganizationId,
        _: &compliance_domain::UserId,
    ) -> Result<Vec<(Policy, Option<Timestamp>)>, RepoError> {
        Ok(Vec::new())
    }
    async fn organizations_with_reviews_due(&self, _: Timestamp, _: usize) -> Result<Vec<OrganizationId>, RepoError> {
        Ok(Vec::new())
    }
    async fn flag_policies_for_review(
        &self,
        _: &OrganizationId,
        _: Timestamp,
        _: usize,
        _: &AuditOf<'_, Policy>,
    ) -> Result<Vec<Policy>, RepoError> {
        Ok(Vec::new())
    }
}

#[async_trait]
impl ContextRepository for NoRecords {
    async fn list_context_entries(
        &self,
        _: &OrganizationId,
        _: &compliance_ports::ContextQuery,
    ) -> Result<Page<ContextEntry>, RepoError> {
        Ok(empty())
    }
    async fn get_context_entry(&self, _: &OrganizationId, _: &ContextEntryId) -> Result<ContextEntry, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn insert_context_entry(&self, _: &ContextEntry, _: &AuditOf<'_, ContextEntry>) -> Result<(), RepoError> {
        Err(refused())
    }
    async fn update_context_entry(
        &self,
        _: &OrganizationId,
        _: &ContextEntryId,
        _: &ContextEntryPatch,
        _: Timestamp,
        _: &IfMatch,
        _: &AuditOf<'_, ContextEntry>,
    ) -> Result<ContextEntry, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn delete_context_entry(
        &self,
        _: &OrganizationId,
        _: &ContextEntryId,
        _: &IfMatch,
        _: &AuditOf<'_, ContextEntry>,
    ) -> Result<ContextEntry, RepoError> {
        Err(RepoError::NotFound)
    }
}

/// Generations that move only when a test moves them, as the database's triggers would on a
/// write (a test models a write by another instance with [`MemoryGenerations::bump`]).
#[derive(Default)]
pub struct MemoryGenerations {
    counts: Mutex<std::collections::HashMap<(OrganizationId, ListName), u64>>,
}

impl MemoryGenerations {
    pub fn bump(&self, org: &OrganizationId, list: ListName) {
        *self.counts.lock().unwrap().entry((org.clone(), list)).or_default() += 1;
    }
}

#[async_trait]
impl ListGenerations for MemoryGenerations {
    async fn generation(&self, org: &OrganizationId, list: ListName) -> Result<u64, RepoError> {
        Ok(self.counts.lock().unwrap().get(&(org.clone(), list)).copied().unwrap_or(0))
    }
}

/// Lists that never change (no test here keeps pages), and a store that always answers.
#[derive(Default)]
pub struct Unchanging;

#[async_trait]
impl ListGenerations for Unchanging {
    async fn generation(&self, _: &OrganizationId, _: ListName) -> Result<u64, RepoError> {
        Ok(0)
    }
}

#[async_trait]
impl HealthCheck for Unchanging {
    async fn ping(&self) -> Result<(), RepoError> {
        Ok(())
    }
}

/// The audit trail of these tests: entries are made (the repositories call the closure) and not
/// chained; the drafts of the evidence sources' stores are kept in `support::audit::Drafts`, and
/// the store's contract tests and tests/api check what is written.
#[derive(Default)]
pub struct NoAudit;

#[async_trait]
impl AuditRepository for NoAudit {
    async fn append_audit(&self, draft: &AuditDraft) -> Result<AuditEntry, RepoError> {
        Ok(draft.clone().queued())
    }
    async fn list_audit(
        &self,
        _: &OrganizationId,
        _: &AuditFilter,
        _: &PageRequest,
    ) -> Result<Page<AuditEntry>, RepoError> {
        Ok(empty())
    }
    async fn entries_after(&self, _: &OrganizationId, _: i64, _: usize) -> Result<Vec<AuditEntry>, RepoError> {
        Ok(Vec::new())
    }
    async fn sealed_entry(&self, _: &OrganizationId, _: i64) -> Result<Option<AuditEntry>, RepoError> {
        Ok(None)
    }
    async fn unsealed(&self, _: &OrganizationId) -> Result<Option<(i64, i64)>, RepoError> {
        Ok(None)
    }
    async fn seal_queued(
        &self,
        _: usize,
        _: &dyn compliance_ports::Clock,
        _: &SignTreeHead<'_>,
    ) -> Result<SealedBatch, RepoError> {
        Ok(SealedBatch::default())
    }
    async fn tree_head(&self, _: &OrganizationId) -> Result<Option<TreeHead>, RepoError> {
        Ok(None)
    }
    async fn resign_tree_heads(&self, _: &str, _: &SignTreeHead<'_>) -> Result<u64, RepoError> {
        Ok(0)
    }
    async fn tree_nodes(&self, _: &OrganizationId, _: &[NodeId]) -> Result<HashMap<NodeId, Hash>, RepoError> {
        Ok(HashMap::new())
    }
    async fn audit_checkpoint(&self, _: &OrganizationId) -> Result<Option<TreeHead>, RepoError> {
        Ok(None)
    }
    async fn organizations_with_entries_before(&self, _: Timestamp) -> Result<Vec<OrganizationId>, RepoError> {
        Ok(Vec::new())
    }
    async fn prune_audit(
        &self,
        _: &OrganizationId,
        _: Timestamp,
        _: Timestamp,
        _: &SignTreeHead<'_>,
    ) -> Result<u64, RepoError> {
        Ok(0)
    }
}

/// Records as ids only: enough for entries to be made.
pub struct IdRenderer;

impl ResourceRenderer for IdRenderer {
    fn risk(&self, risk: &Risk) -> serde_json::Value {
        serde_json::json!({"id": risk.id, "title": risk.title})
    }
    fn vendor(&self, vendor: &Vendor) -> serde_json::Value {
        serde_json::json!({"id": vendor.id})
    }
    fn task(&self, task: &Task) -> serde_json::Value {
        serde_json::json!({"id": task.id, "title": task.title})
    }
    fn policy(&self, policy: &Policy) -> serde_json::Value {
        serde_json::json!({"id": policy.id})
    }
    fn context_entry(&self, entry: &ContextEntry) -> serde_json::Value {
        serde_json::json!({"id": entry.id})
    }
}
