//! Tasks: work items that comments and browser automations point at, with a review lifecycle
//! (see [`crate::task_lifecycle`]) and, for recurring work, a frequency and a due date.

use serde::Deserialize;

use crate::frequency::Frequency;
use crate::validation::{ValidationErrors, map_present, required, set, text};
use crate::{FindingId, MemberId, OrganizationId, TaskId, Timestamp, nullable, required_non_null};

crate::string_enum! {
    /// Where the task stands. `in_review` is reached only by submitting the task.
    TaskStatus {
        Todo = "todo", InProgress = "in_progress", InReview = "in_review", Done = "done", Failed = "failed",
        NotRelevant = "not_relevant"
    }
}

/// The longest title, in characters.
pub const TITLE_MAX: usize = 255;
/// The longest description, in characters.
pub const DESCRIPTION_MAX: usize = 10_000;
/// The longest rejection reason, in characters.
pub const REASON_MAX: usize = 2_000;

/// A task: work assigned to a member, with a status and a due date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// The task's id.
    pub id: TaskId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// 1 to [`TITLE_MAX`] characters.
    pub title: String,
    /// Up to [`DESCRIPTION_MAX`] characters.
    pub description: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// The member responsible for it, if any.
    pub assignee_id: Option<MemberId>,
    /// The member who approves it when it is submitted; without one it is marked done directly.
    pub approver_id: Option<MemberId>,
    /// How often it recurs; `None` for one-off work.
    pub frequency: Option<Frequency>,
    /// When it is due, if it has a date.
    pub due_at: Option<Timestamp>,
    /// When it last became `done` (read-only).
    pub last_completed_at: Option<Timestamp>,
    /// Why its approver last rejected it; cleared when it is submitted again (read-only).
    pub rejection_reason: Option<String>,
    /// The finding it was made to fix (`POST /v1/findings/{id}/task`), if any (read-only).
    pub finding_id: Option<FindingId>,
    /// The library template it was made from by an adoption, if any (read-only).
    pub library: Option<crate::library::LibraryOrigin>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// The body of a create.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewTask {
    /// Required: 1 to 255 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::title, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub title: Option<String>,
    /// Up to 10,000 characters; empty when omitted.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::description))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub description: Option<String>,
    /// `todo` when omitted; never `in_review` (submit the task), nor `done` with an approver.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::settable_status))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub status: Option<TaskStatus>,
    /// The member responsible for it: an active member of the organization.
    pub assignee_id: Option<MemberId>,
    /// The member who approves it: an active member of the organization.
    pub approver_id: Option<MemberId>,
    /// How often it recurs; `null` (the default) for one-off work.
    pub frequency: Option<Frequency>,
    /// When it is due (RFC 3339), or `null`.
    pub due_at: Option<Timestamp>,
}

impl NewTask {
    /// Whether the body asks for a task that is `done` and has an approver: it would skip the
    /// approval (a conflict, as `PATCH` to `done` is).
    pub fn skips_the_approval(&self) -> bool {
        self.status == Some(TaskStatus::Done) && self.approver_id.is_some()
    }
}

/// The body of a PATCH: only present fields change; `null` clears a nullable field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskChanges {
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::title))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub title: Option<String>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::description))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub description: Option<String>,
    /// Absent: unchanged; `null` is refused. Never `in_review` (submit the task); `done` only for
    /// a task without an approver.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::settable_status))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub status: Option<TaskStatus>,
    /// Absent: unchanged; `null`: cleared.
    #[serde(default, deserialize_with = "nullable")]
    pub assignee_id: Option<Option<MemberId>>,
    /// Absent: unchanged; `null`: cleared. Not while the task is in review.
    #[serde(default, deserialize_with = "nullable")]
    pub approver_id: Option<Option<MemberId>>,
    /// Absent: unchanged; `null`: one-off work.
    #[serde(default, deserialize_with = "nullable")]
    pub frequency: Option<Option<Frequency>>,
    /// Absent: unchanged; `null`: cleared.
    #[serde(default, deserialize_with = "nullable")]
    pub due_at: Option<Option<Timestamp>>,
}

/// Validated changes to a task.
#[derive(Debug, Clone)]
pub struct TaskPatch(TaskChanges);

impl TaskPatch {
    /// Validates `changes`; the first wrong field is the error.
    pub fn new(changes: TaskChanges) -> Result<Self, ValidationErrors> {
        if changes.status == Some(TaskStatus::InReview) {
            return Err(only_by_submitting());
        }
        Ok(Self(TaskChanges {
            title: map_present(changes.title, |t| text("title", t, 1, TITLE_MAX))?,
            description: map_present(changes.description, |d| text("description", d, 0, DESCRIPTION_MAX))?,
            ..changes
        }))
    }

    /// The validated changes, field by field (`None`: unchanged).
    pub fn changes(&self) -> &TaskChanges {
        &self.0
    }

    /// Whether no field is to change.
    pub fn is_empty(&self) -> bool {
        self.0 == TaskChanges::default()
    }

    /// The members the patch names as assignee or approver.
    pub fn named_members(&self) -> impl Iterator<Item = (&'static str, &MemberId)> {
        let assignee = self.0.assignee_id.as_ref().and_then(Option::as_ref).map(|m| ("assigneeId", m));
        assignee.into_iter().chain(self.0.approver_id.as_ref().and_then(Option::as_ref).map(|m| ("approverId", m)))
    }
}

impl Task {
    /// The entity tag of this state of the record ([`ETag::of`](crate::etag::ETag::of) its id and `updatedAt`).
    pub fn etag(&self) -> crate::etag::ETag {
        crate::etag::ETag::of(self.id.as_str(), self.updated_at)
    }

    /// The members named as assignee or approver.
    pub fn named_members(&self) -> impl Iterator<Item = (&'static str, &MemberId)> {
        let assignee = self.assignee_id.as_ref().map(|m| ("assigneeId", m));
        assignee.into_iter().chain(self.approver_id.as_ref().map(|m| ("approverId", m)))
    }
}

impl Task {
    /// A new task of the organization, validated. Created `done`, it is completed at once (see
    /// [`Task::complete`]); the use case refuses that for a task with an approver
    /// ([`NewTask::skips_the_approval`]).
    pub fn create(organization_id: OrganizationId, input: NewTask, now: Timestamp) -> Result<Self, ValidationErrors> {
        let status = input.status.unwrap_or(TaskStatus::Todo);
        if status == TaskStatus::InReview {
            return Err(only_by_submitting());
        }
        let mut task = Self {
            id: TaskId::generate(),
            organization_id,
            title: text("title", required("title", input.title)?, 1, TITLE_MAX)?,
            description: text("description", input.description.unwrap_or_default(), 0, DESCRIPTION_MAX)?,
            status: TaskStatus::Todo,
            assignee_id: input.assignee_id,
            approver_id: input.approver_id,
            frequency: input.frequency,
            due_at: input.due_at,
            last_completed_at: None,
            rejection_reason: None,
            library: None,
            finding_id: None,
            created_at: now,
            updated_at: now,
        };
        match status {
            TaskStatus::Done => task.complete(now),
            other => task.status = other,
        }
        Ok(task)
    }

    /// The task after a validated patch, or why the patch does not fit the task's state (a
    /// conflict): `done` only without an approver, and the approver stays while the task is in
    /// review. Moving to `done` completes the task ([`Task::complete`]); an empty patch changes
    /// nothing, not even `updated_at`.
    pub fn patched(&self, patch: &TaskPatch, now: Timestamp) -> Result<Task, String> {
        let mut after = self.clone();
        if patch.is_empty() {
            return Ok(after);
        }
        let c = &patch.0;
        set(&mut after.title, &c.title);
        set(&mut after.description, &c.description);
        set(&mut after.status, &c.status);
        set(&mut after.assignee_id, &c.assignee_id);
        set(&mut after.approver_id, &c.approver_id);
        set(&mut after.frequency, &c.frequency);
        set(&mut after.due_at, &c.due_at);
        if after.status == TaskStatus::InReview && after.approver_id != self.approver_id {
            return Err("the task is in_review: its approver cannot change until the review ends (approve or \
                        reject it, or withdraw it with PATCH status in_progress)"
                .into());
        }
        let now = self.later(now);
        if after.status == TaskStatus::Done && self.status != TaskStatus::Done {
            if after.approver_id.is_some() {
                return Err(SKIPS_THE_APPROVAL.into());
            }
            after.complete(now);
        }
        after.updated_at = now;
        Ok(after)
    }

    /// Applies a validated patch in place ([`Task::patched`]); on a conflict nothing changes.
    pub fn apply(&mut self, patch: &TaskPatch, now: Timestamp) -> Result<(), String> {
        *self = self.patched(patch, now)?;
        Ok(())
    }

    /// A change's time: `now`, or just after the task's last change if the clock says otherwise,
    /// so that `updatedAt` (and with it the entity tag) moves with every change.
    pub fn later(&self, now: Timestamp) -> Timestamp {
        if now > self.updated_at { now } else { self.updated_at.plus(time::Duration::microseconds(1)) }
    }
}

/// Why a task with an approver cannot be marked done directly.
pub const SKIPS_THE_APPROVAL: &str =
    "the task has an approver: submit it (POST /v1/tasks/{id}/submit) for them to approve";

fn only_by_submitting() -> ValidationErrors {
    ValidationErrors::field("status", "may not be in_review: submit the task (POST /v1/tasks/{id}/submit)")
}

/// The schemas of this module's inputs, as the validation checks them.
#[cfg(feature = "openapi")]
mod schemas {
    use utoipa::openapi::schema::{Object, ObjectBuilder, Type};

    crate::openapi::text_fields! {
        title = text(1, super::TITLE_MAX);
        description = text(0, super::DESCRIPTION_MAX);
    }

    /// The statuses a client may set on a task: every one but `in_review`, which only
    /// `POST /v1/tasks/{id}/submit` reaches.
    pub fn settable_status() -> Object {
        use super::TaskStatus;
        let settable = TaskStatus::ALL.iter().copied().filter(|status| *status != TaskStatus::InReview);
        ObjectBuilder::new().schema_type(Type::String).enum_values(Some(settable.map(TaskStatus::as_str))).build()
    }
}
