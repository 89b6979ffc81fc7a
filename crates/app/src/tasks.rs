//! Tasks: work to do, assigned to a member; browser automations collect their evidence.

use std::sync::Arc;

use compliance_domain::TaskId;
use compliance_domain::access::{Action, Family};
use compliance_domain::audit::Redaction;
use compliance_domain::etag::IfMatch;
use compliance_domain::task::{NewTask, Task, TaskChanges, TaskPatch};
use compliance_ports::{Clock, MemberRepository, Page, TaskQuery, TaskRepository};

use crate::access::{Reach, only_own, require};
use crate::assignees::{assignee, require_active_members};
use crate::audit::{AuditTrail, Subject};
use crate::{AppError, CommentService, Ports, Principal};

/// Tasks: their assignees, status and due dates.
pub struct TaskService {
    tasks: Arc<dyn TaskRepository>,
    members: Arc<dyn MemberRepository>,
    clock: Arc<dyn Clock>,
    /// Removes the bytes of the attachments deleted with a task.
    comments: Arc<CommentService>,
    audit: Arc<AuditTrail>,
}

/// Tasks in the audit trail: descriptions are rich text, shown by length.
pub(crate) const TASK: Subject<Task> = Subject {
    resource_type: "task",
    id: |task| task.id.to_string(),
    render: |renderer, task| renderer.task(task),
    redaction: Redaction { secret: &[], rich_text: &["description"] },
};

impl TaskService {
    pub(crate) fn new(ports: &Ports, comments: Arc<CommentService>, audit: Arc<AuditTrail>) -> Self {
        Self { tasks: ports.tasks.clone(), members: ports.members.clone(), clock: ports.clock.clone(), comments, audit }
    }

    /// A page of the caller's organization's tasks, newest first.
    /// Only the caller's own tasks when the caller's role reads only those.
    pub async fn list_tasks(&self, caller: &Principal, query: &TaskQuery) -> Result<Page<Task>, AppError> {
        match require(caller, Family::Tasks, Action::Read)? {
            Reach::All => Ok(self.tasks.list_tasks(&caller.organization_id, query).await?),
            Reach::Own => Ok(self.tasks.list_tasks_assigned(&caller.organization_id, &caller.member_id, query).await?),
        }
    }

    /// One task of the caller's organization.
    pub async fn get_task(&self, caller: &Principal, id: &TaskId) -> Result<Task, AppError> {
        let reach = require(caller, Family::Tasks, Action::Read)?;
        let task = self.tasks.get_task(&caller.organization_id, id).await.map_err(not_found)?;
        if reach == Reach::Own && task.assignee_id.as_ref() != Some(&caller.member_id) {
            return Err(only_own(caller, Action::Read, "tasks assigned to them"));
        }
        Ok(task)
    }

    /// A new task; its assignee must be an active member of the organization.
    pub async fn create_task(&self, caller: &Principal, input: NewTask) -> Result<Task, AppError> {
        require(caller, Family::Tasks, Action::Write)?;
        let created = Task::create(caller.organization_id.clone(), input, self.clock.now())?;
        require_active_members(self.members.as_ref(), &caller.organization_id, assignee(created.assignee_id.as_ref()))
            .await?;
        self.tasks.insert_task(&created, &self.audit.change(caller, "task.created", &TASK)).await?;
        Ok(created)
    }

    /// Changes only the fields the body names; an empty body answers the task unchanged.
    pub async fn update_task(
        &self,
        caller: &Principal,
        id: &TaskId,
        changes: TaskChanges,
        if_match: &IfMatch,
    ) -> Result<Task, AppError> {
        require(caller, Family::Tasks, Action::Write)?;
        let patch = TaskPatch::new(changes)?;
        if patch.is_empty() {
            // Nothing to write, but the precondition still decides the answer.
            let current = self.get_task(caller, id).await?;
            if_match.check(&current.etag())?;
            return Ok(current);
        }
        require_active_members(self.members.as_ref(), &caller.organization_id, assignee(patch.assignee())).await?;
        let audit = self.audit.change(caller, "task.updated", &TASK);
        self.tasks
            .update_task(&caller.organization_id, id, &patch, self.clock.now(), if_match, &audit)
            .await
            .map_err(not_found)
    }

    /// Deletes the task for good, with its comments and their attachments, and returns what it was.
    pub async fn delete_task(&self, caller: &Principal, id: &TaskId, if_match: &IfMatch) -> Result<Task, AppError> {
        require(caller, Family::Tasks, Action::Write)?;
        let audit = self.audit.change(caller, "task.deleted", &TASK);
        let deleted = self.tasks.delete_task(&caller.organization_id, id, if_match, &audit).await.map_err(not_found)?;
        self.comments.remove_attachments(&deleted.attachments).await;
        Ok(deleted.record)
    }
}

fn not_found(error: compliance_ports::RepoError) -> AppError {
    AppError::from_repo(error, "task")
}
