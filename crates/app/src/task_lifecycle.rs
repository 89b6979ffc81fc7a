//! A task's review: submitting it for its approver, approving or rejecting it.
//!
//! Who may act is decided here from docs/api.md's matrix and the record: reading tasks lets a
//! member take part (an employee's own tasks are those assigned to them or awaiting their
//! approval); submitting takes write access or being the task's assignee, and not being its
//! approver; approving and rejecting take being its approver. An API key additionally needs a
//! scope covering `tasks:write`. The state rules are the domain's (`domain::task_lifecycle`).

use compliance_domain::TaskId;
use compliance_domain::access::{Action, Family};
use compliance_domain::etag::IfMatch;
use compliance_domain::task::Task;
use compliance_domain::task_lifecycle::{Rejection, TaskRejection};
use compliance_ports::TASK_CHANGED;

use crate::access::{Reach, only_own, require, require_scope};
use crate::tasks::{TASK, is_own, not_found};
use crate::{AppError, Principal, TaskService};

/// How often a transition reads the task again when another request changed it between the
/// read and the write ([`TASK_CHANGED`]).
const ATTEMPTS: usize = 5;

impl TaskService {
    /// Submits the task for its approver (`in_review`): by an owner or admin, or by its
    /// assignee; never by its approver.
    pub async fn submit_task(&self, caller: &Principal, id: &TaskId, if_match: &IfMatch) -> Result<Task, AppError> {
        self.transition(caller, id, if_match, "task.submitted", |task, now| {
            let may_write = require(caller, Family::Tasks, Action::Write).is_ok();
            if !may_write && task.assignee_id.as_ref() != Some(&caller.member_id) {
                return Err(only_own(caller, Action::Write, "submit tasks assigned to them"));
            }
            if task.approver_id.as_ref() == Some(&caller.member_id) {
                return Err(AppError::Conflict("the approver may not submit a task for their own approval".into()));
            }
            task.submit(now).map_err(AppError::Conflict)
        })
        .await
    }

    /// Approves the task in review: only its approver. It is `done`, and a recurring task's
    /// `dueAt` moves to its next period.
    pub async fn approve_task(&self, caller: &Principal, id: &TaskId, if_match: &IfMatch) -> Result<Task, AppError> {
        self.transition(caller, id, if_match, "task.approved", |task, now| {
            require_approver(caller, task)?;
            task.approve(now).map_err(AppError::Conflict)
        })
        .await
    }

    /// Rejects the task in review, with the reason: back to `in_progress`, or `failed`. Only its
    /// approver.
    pub async fn reject_task(
        &self,
        caller: &Principal,
        id: &TaskId,
        input: TaskRejection,
        if_match: &IfMatch,
    ) -> Result<Task, AppError> {
        let rejection = Rejection::try_from(input)?;
        self.transition(caller, id, if_match, "task.rejected", |task, now| {
            require_approver(caller, task)?;
            task.reject(&rejection, now).map_err(AppError::Conflict)
        })
        .await
    }

    /// Reads the task, lets `change` decide and apply the transition, and writes it with its
    /// audit entry while the task is still as read; again when another request changed it in
    /// between. `If-Match` is checked against the task as read, and the write holds it.
    async fn transition(
        &self,
        caller: &Principal,
        id: &TaskId,
        if_match: &IfMatch,
        action: &'static str,
        change: impl Fn(&mut Task, compliance_domain::Timestamp) -> Result<(), AppError>,
    ) -> Result<Task, AppError> {
        let reach = require(caller, Family::Tasks, Action::Read)?;
        require_scope(caller, Family::Tasks, Action::Write)?;
        for _ in 0..ATTEMPTS {
            let before = self.tasks.get_task(&caller.organization_id, id).await.map_err(not_found)?;
            if reach == Reach::Own && !is_own(&before, caller) {
                return Err(only_own(caller, Action::Read, "tasks assigned to them"));
            }
            if_match.check(&before.etag())?;
            let mut after = before.clone();
            change(&mut after, self.clock.now())?;
            let audit = self.audit.change(caller, action, &TASK);
            match self.tasks.save_task(&before, &after, &audit).await.map_err(not_found) {
                Err(AppError::Conflict(why)) if why == TASK_CHANGED => continue,
                written => return written.map(|()| after),
            }
        }
        Err(AppError::Conflict(TASK_CHANGED.into()))
    }
}

fn require_approver(caller: &Principal, task: &Task) -> Result<(), AppError> {
    if task.approver_id.as_ref() == Some(&caller.member_id) {
        Ok(())
    } else {
        Err(AppError::Denied("only the task's approver (approverId) may approve or reject it".into()))
    }
}
