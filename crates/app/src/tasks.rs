//! Tasks: work to do, assigned to a member; browser automations collect their evidence.

use std::sync::Arc;

use compliance_domain::TaskId;
use compliance_domain::access::{Action, Family};
use compliance_domain::audit::Redaction;
use compliance_domain::etag::IfMatch;
use compliance_domain::task::{NewTask, SKIPS_THE_APPROVAL, Task, TaskChanges, TaskPatch};
use compliance_ports::{Clock, MemberRepository, Page, TaskQuery, TaskRepository};

use crate::access::{Reach, only_own, require};
use crate::assignees::require_active_members;
use crate::audit::{AuditTrail, Provenance, Subject};
use crate::bulk::{self, ActiveMembers, BulkOperation, Steps};
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
        let (org, now) = (&caller.organization_id, self.clock.now());
        let members = &ActiveMembers::new(self.members.as_ref(), org);
        let actions = bulk::action_of(["task.created", "task.updated", "task.deleted"]);
        let audit = self.audit.change_by(Provenance::of(caller), actions, &TASK);
        let steps = Steps {
            what: "task",
            create: Box::new(move |input| Box::pin(self.create_task(caller, input))),
            update: Box::new(move |(id, changes)| {
                Box::pin(async move { self.update_task(caller, &id, changes, &IfMatch::Absent).await })
            }),
            delete: Box::new(move |id| Box::pin(async move { self.delete_task(caller, &id, &IfMatch::Absent).await })),
            check_create: Box::new(move |input| {
                Box::pin(async move {
                    // As a single create: the conflict only once the input and its members hold.
                    let skips = skips_the_approval(&input);
                    let task = Task::create(org.clone(), input, now)?;
                    members.require_all(task.named_members()).await?;
                    skips.map(|()| task)
                })
            }),
            check_update: Box::new(move |changes| {
                Box::pin(async move {
                    let patch = TaskPatch::new(changes)?;
                    members.require_all(patch.named_members()).await?;
                    Ok(patch)
                })
            }),
            find: Box::new(move |id| Box::pin(async move { self.tasks.get_task(org, &id).await.map_err(not_found) })),
            write: Box::new(move |writes| {
                Box::pin(async move { self.tasks.apply_task_bulk(org, &writes, now, &audit).await })
            }),
        };
        bulk::apply(operations, atomic, &self.comments, steps).await
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
