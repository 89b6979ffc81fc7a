//! Tasks: work to do, assigned to a member; browser automations collect their evidence.

use std::sync::Arc;

use compliance_domain::TaskId;
use compliance_domain::access::{Action, Family};
use compliance_domain::audit::Redaction;
use compliance_domain::etag::IfMatch;
use compliance_domain::task::{NewTask, SKIPS_THE_APPROVAL, Task, TaskChanges, TaskPatch};
use compliance_ports::{BulkWrite, Clock, MemberRepository, Page, RepoError, TaskQuery, TaskRepository};

use crate::access::{Reach, only_own, require};
use crate::assignees::require_active_members;
use crate::audit::{AuditTrail, Author, Subject};
use crate::bulk::{self, ActiveMembers, BulkOperation};
use crate::{AppError, CommentService, Ports, Principal};

/// Tasks: their assignees, status and due dates; their review lifecycle is in
/// `crate::task_lifecycle`.
pub struct TaskService {
    pub(crate) tasks: Arc<dyn TaskRepository>,
    members: Arc<dyn MemberRepository>,
    pub(crate) clock: Arc<dyn Clock>,
    /// Removes the bytes of the attachments deleted with a task.
    comments: Arc<CommentService>,
    pub(crate) audit: Arc<AuditTrail>,
}

/// Tasks in the audit trail: descriptions are rich text, shown by length.
pub(crate) const TASK: Subject<Task> = Subject {
    resource_type: "task",
    id: |task| task.id.to_string(),
    render: |renderer, task| renderer.task(task),
    redaction: Redaction { secret: &[], rich_text: &["description"] },
    evidence: Some(compliance_domain::evidence::of_task),
};

impl TaskService {
    pub(crate) fn new(ports: &Ports, comments: Arc<CommentService>, audit: Arc<AuditTrail>) -> Self {
        Self { tasks: ports.tasks.clone(), members: ports.members.clone(), clock: ports.clock.clone(), comments, audit }
    }

    /// A page of the caller's organization's tasks, newest first.
    /// Only the caller's own tasks (assigned to them or awaiting their approval) when the
    /// caller's role reads only those.
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
        if reach == Reach::Own && !is_own(&task, caller) {
            return Err(only_own(caller, Action::Read, "tasks assigned to them"));
        }
        Ok(task)
    }

    /// A new task; its assignee must be an active member of the organization.
    pub async fn create_task(&self, caller: &Principal, input: NewTask) -> Result<Task, AppError> {
        require(caller, Family::Tasks, Action::Write)?;
        // Decided after the input is valid and its members exist: an approver who does not exist
        // is the 400 naming `approverId`, not a conflict about an approval nobody could give.
        let skips = skips_the_approval(&input);
        let created = Task::create(caller.organization_id.clone(), input, self.clock.now())?;
        require_active_members(self.members.as_ref(), &caller.organization_id, created.named_members()).await?;
        skips?;
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
        require_active_members(self.members.as_ref(), &caller.organization_id, patch.named_members()).await?;
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

    /// Applies a bulk request's operations (see [`crate::bulk`]): when `atomic`, all validated
    /// first and then written in one transaction, or nothing and [`AppError::BulkFailed`]; else
    /// one by one through the single writes, each with its own result. Answers each operation's
    /// task, in order (for a delete, the task as it was).
    pub async fn bulk_tasks(
        &self,
        caller: &Principal,
        operations: Vec<BulkOperation<NewTask, TaskChanges, TaskId>>,
        atomic: bool,
    ) -> Result<Vec<Result<Task, AppError>>, AppError> {
        require(caller, Family::Tasks, Action::Write)?;
        bulk::check_count(operations.len())?;
        if !atomic {
            let mut results = Vec::with_capacity(operations.len());
            for operation in operations {
                results.push(match operation {
                    BulkOperation::Create(input) => self.create_task(caller, input).await,
                    BulkOperation::Update(id, changes) => {
                        self.update_task(caller, &id, changes, &IfMatch::Absent).await
                    }
                    BulkOperation::Delete(id) => self.delete_task(caller, &id, &IfMatch::Absent).await,
                    BulkOperation::Unreadable(error) => Err(error),
                });
            }
            return Ok(results);
        }
        let (org, now) = (&caller.organization_id, self.clock.now());
        let mut members = ActiveMembers::new(self.members.as_ref(), org);
        let (mut writes, mut failed) = (Vec::with_capacity(operations.len()), Vec::new());
        for (index, operation) in operations.into_iter().enumerate() {
            let write = match operation {
                BulkOperation::Create(input) => {
                    // As a single create: the conflict only once the input and its members hold.
                    let skips = skips_the_approval(&input);
                    match Task::create(org.clone(), input, now) {
                        Ok(task) => {
                            members.require_all(task.named_members()).await.and(skips).map(|()| BulkWrite::Create(task))
                        }
                        Err(error) => Err(error.into()),
                    }
                }
                BulkOperation::Update(id, changes) => match TaskPatch::new(changes) {
                    Ok(patch) => {
                        members.require_all(patch.named_members()).await.map(|()| BulkWrite::Update(id, patch))
                    }
                    Err(error) => Err(error.into()),
                },
                BulkOperation::Delete(id) => Ok(BulkWrite::Delete(id)),
                BulkOperation::Unreadable(error) => Err(error),
            };
            match write {
                Ok(write) => writes.push((index, write)),
                Err(error) => failed.push((index, error)),
            }
        }
        if !failed.is_empty() {
            // Nothing is written, but the answer also names the valid operations' missing records.
            for (index, write) in &writes {
                if let BulkWrite::Update(id, _) | BulkWrite::Delete(id) = write
                    && let Err(RepoError::NotFound) = self.tasks.get_task(org, id).await
                {
                    failed.push((*index, AppError::NotFound("task")));
                }
            }
            failed.sort_by_key(|(index, _)| *index);
            return Err(AppError::BulkFailed(failed));
        }
        let writes: Vec<_> = writes.into_iter().map(|(_, write)| write).collect();
        let actions = bulk::action_of(["task.created", "task.updated", "task.deleted"]);
        let audit = self.audit.change_by(Author::of(caller), actions, &TASK);
        let applied = self
            .tasks
            .apply_task_bulk(org, &writes, now, &audit)
            .await
            .map_err(|error| bulk::store_failure(error, "task"))?;
        self.comments.remove_attachments(&applied.attachments).await;
        Ok(applied.records.into_iter().map(Ok).collect())
    }
}

/// A task created `done` with an approver would skip the approval: a conflict, as a `PATCH`.
fn skips_the_approval(input: &NewTask) -> Result<(), AppError> {
    match input.skips_the_approval() {
        true => Err(AppError::Conflict(SKIPS_THE_APPROVAL.into())),
        false => Ok(()),
    }
}

/// An `Own` reach's tasks: those assigned to the caller, and those awaiting their approval.
pub(crate) fn is_own(task: &Task, caller: &Principal) -> bool {
    [&task.assignee_id, &task.approver_id].into_iter().any(|member| member.as_ref() == Some(&caller.member_id))
}

pub(crate) fn not_found(error: compliance_ports::RepoError) -> AppError {
    AppError::from_repo(error, "task")
}
