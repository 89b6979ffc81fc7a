//! A task's review: submitting it for its approver, approving it (it is done, and a recurring
//! task's due date moves to its next period) or rejecting it (back to work, or failed).
//!
//! These are the state rules; who may act is the use case's to decide (`app::tasks`). Each
//! answers a conflict, naming the task's current state, when the task is not in the state the
//! transition starts from.

use serde::Deserialize;

use crate::task::{REASON_MAX, Task, TaskStatus};
use crate::validation::{ValidationErrors, required, text};
use crate::{Timestamp, required_non_null};

crate::string_enum! {
    /// Where a rejected task goes: back to work (`in_progress`) or `failed`.
    TaskRejectionStatus { InProgress = "in_progress", Failed = "failed" }
}

/// The body of `POST /v1/tasks/{id}/reject`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskRejection {
    /// Why, for the assignee (1 to 2,000 characters).
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::rejection_reason, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub reason: Option<String>,
    /// `in_progress` (the default): the work is to be redone; `failed`: it showed a failure.
    #[cfg_attr(feature = "openapi", schema(value_type = TaskRejectionStatus))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub status: Option<TaskRejectionStatus>,
}

/// A validated rejection: the reason and where the task goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    reason: String,
    status: TaskStatus,
}

impl TryFrom<TaskRejection> for Rejection {
    type Error = ValidationErrors;
    fn try_from(input: TaskRejection) -> Result<Self, ValidationErrors> {
        let reason = text("reason", required("reason", input.reason)?, 1, REASON_MAX)?;
        let status = match input.status.unwrap_or(TaskRejectionStatus::InProgress) {
            TaskRejectionStatus::InProgress => TaskStatus::InProgress,
            TaskRejectionStatus::Failed => TaskStatus::Failed,
        };
        Ok(Self { reason, status })
    }
}

impl Task {
    /// `done` now: `lastCompletedAt` is `now`, and a recurring task's `dueAt` moves to its next
    /// period ([`Frequency::next_due`](crate::frequency::Frequency::next_due)). The task stays
    /// `done` until its next round of work starts.
    pub fn complete(&mut self, now: Timestamp) {
        self.status = TaskStatus::Done;
        self.last_completed_at = Some(now);
        if let Some(frequency) = self.frequency {
            self.due_at = Some(frequency.next_due(self.due_at, now));
        }
    }

    /// To `in_review`, for its approver: from `todo`, `in_progress` or `failed`, or from `done`
    /// for a recurring task (its next round). Clears the last rejection's reason.
    pub fn submit(&mut self, now: Timestamp) -> Result<(), String> {
        if self.approver_id.is_none() {
            return Err("the task has no approver: set approverId, or mark it done directly (PATCH status done)".into());
        }
        let recurring_round = self.status == TaskStatus::Done && self.frequency.is_some();
        if !matches!(self.status, TaskStatus::Todo | TaskStatus::InProgress | TaskStatus::Failed) && !recurring_round {
            return Err(format!(
                "the task is {}: only a todo, in_progress or failed task (or a done recurring one) can be submitted",
                self.status
            ));
        }
        self.status = TaskStatus::InReview;
        self.rejection_reason = None;
        self.updated_at = self.later(now);
        Ok(())
    }

    /// From `in_review` to `done` ([`Task::complete`]).
    pub fn approve(&mut self, now: Timestamp) -> Result<(), String> {
        self.require_in_review()?;
        let now = self.later(now);
        self.complete(now);
        self.updated_at = now;
        Ok(())
    }

    /// From `in_review` back to `in_progress`, or to `failed`, with the reason.
    pub fn reject(&mut self, rejection: &Rejection, now: Timestamp) -> Result<(), String> {
        self.require_in_review()?;
        self.status = rejection.status;
        self.rejection_reason = Some(rejection.reason.clone());
        self.updated_at = self.later(now);
        Ok(())
    }

    fn require_in_review(&self) -> Result<(), String> {
        match self.status {
            TaskStatus::InReview => Ok(()),
            other => Err(format!("the task is {other}, not in_review: submit it first")),
        }
    }
}

/// The schemas of this module's inputs, as the validation checks them.
#[cfg(feature = "openapi")]
mod schemas {
    crate::openapi::text_fields! {
        rejection_reason = text(1, crate::task::REASON_MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frequency::Frequency;
    use crate::task::{NewTask, TaskChanges, TaskPatch};
    use crate::{MemberId, OrganizationId};

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap()
    }

    fn task(approver: bool) -> Task {
        let input = NewTask {
            title: Some("Review access".into()),
            approver_id: approver.then(MemberId::generate),
            frequency: Some(Frequency::Quarterly),
            due_at: Some(at("2026-03-31T00:00:00Z")),
            ..NewTask::default()
        };
        Task::create(OrganizationId::generate(), input, at("2026-01-01T00:00:00Z")).unwrap()
    }

    #[test]
    fn submit_approve_completes_and_moves_a_recurring_due_date() {
        let mut task = task(true);
        task.submit(at("2026-03-01T00:00:00Z")).unwrap();
        assert_eq!(task.status, TaskStatus::InReview);
        task.approve(at("2026-03-02T00:00:00Z")).unwrap();
        assert_eq!(task.status, TaskStatus::Done);
        assert_eq!(task.last_completed_at, Some(at("2026-03-02T00:00:00Z")));
        assert_eq!(task.due_at, Some(at("2026-06-30T00:00:00Z")));
        // the next round starts from done
        task.submit(at("2026-06-01T00:00:00Z")).unwrap();
    }

    #[test]
    fn wrong_states_name_the_current_one() {
        let mut task = task(true);
        assert!(task.approve(at("2026-03-01T00:00:00Z")).unwrap_err().contains("todo"));
        let mut bare = self::task(false);
        assert!(bare.submit(at("2026-03-01T00:00:00Z")).unwrap_err().contains("no approver"));
        task.status = TaskStatus::NotRelevant;
        assert!(task.submit(at("2026-03-01T00:00:00Z")).unwrap_err().contains("not_relevant"));
    }

    #[test]
    fn reject_returns_to_work_or_fails() {
        let mut task = task(true);
        task.submit(at("2026-03-01T00:00:00Z")).unwrap();
        let rejection = Rejection::try_from(TaskRejection {
            reason: Some("Missing evidence".into()),
            status: Some(TaskRejectionStatus::Failed),
        })
        .unwrap();
        task.reject(&rejection, at("2026-03-02T00:00:00Z")).unwrap();
        assert_eq!((task.status, task.rejection_reason.as_deref()), (TaskStatus::Failed, Some("Missing evidence")));
        assert!(Rejection::try_from(TaskRejection::default()).is_err());
    }

    #[test]
    fn patch_may_not_skip_the_approval_nor_swap_the_approver_in_review() {
        let mut task = task(true);
        let done = TaskPatch::new(TaskChanges { status: Some(TaskStatus::Done), ..TaskChanges::default() }).unwrap();
        assert!(task.patched(&done, at("2026-03-01T00:00:00Z")).is_err());
        task.submit(at("2026-03-01T00:00:00Z")).unwrap();
        let swap = TaskPatch::new(TaskChanges { approver_id: Some(None), ..TaskChanges::default() }).unwrap();
        assert!(task.patched(&swap, at("2026-03-02T00:00:00Z")).is_err());
        let review = TaskChanges { status: Some(TaskStatus::InReview), ..TaskChanges::default() };
        assert!(TaskPatch::new(review).is_err());
    }

    #[test]
    fn without_an_approver_patching_done_completes() {
        let task = task(false);
        let done = TaskPatch::new(TaskChanges { status: Some(TaskStatus::Done), ..TaskChanges::default() }).unwrap();
        let after = task.patched(&done, at("2026-04-02T00:00:00Z")).unwrap();
        assert_eq!(after.last_completed_at, Some(at("2026-04-02T00:00:00Z")));
        assert_eq!(after.due_at, Some(at("2026-06-30T00:00:00Z")));
    }
}
