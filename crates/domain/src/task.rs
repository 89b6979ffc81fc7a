//! Tasks: work items that comments and browser automations point at.

use serde::Deserialize;

use crate::validation::{ValidationErrors, map_present, required, set, text};
use crate::{MemberId, OrganizationId, TaskId, Timestamp, nullable, required_non_null};

crate::string_enum! {
    /// Where the task stands.
    TaskStatus { Todo = "todo", InProgress = "in_progress", Done = "done", NotRelevant = "not_relevant" }
}

/// The longest title, in characters.
pub const TITLE_MAX: usize = 255;
/// The longest description, in characters.
pub const DESCRIPTION_MAX: usize = 10_000;

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
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::task_title, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub title: Option<String>,
    /// Up to 10,000 characters; empty when omitted.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::task_description))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub description: Option<String>,
    /// `todo` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = TaskStatus))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub status: Option<TaskStatus>,
    /// The member responsible for it: an active member of the organization.
    pub assignee_id: Option<MemberId>,
}

/// The body of a PATCH: only present fields change; `null` clears a nullable field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskChanges {
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::task_title))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub title: Option<String>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::task_description))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub description: Option<String>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = TaskStatus))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub status: Option<TaskStatus>,
    /// Absent: unchanged; `null`: cleared.
    #[serde(default, deserialize_with = "nullable")]
    pub assignee_id: Option<Option<MemberId>>,
}

/// Validated changes to a task.
#[derive(Debug, Clone)]
pub struct TaskPatch(TaskChanges);

impl TaskPatch {
    /// Validates `changes`; the first wrong field is the error.
    pub fn new(changes: TaskChanges) -> Result<Self, ValidationErrors> {
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

    /// The member the patch assigns, if it assigns one.
    pub fn assignee(&self) -> Option<&MemberId> {
        self.0.assignee_id.as_ref().and_then(Option::as_ref)
    }
}

impl Task {
    /// The entity tag of this state of the record ([`ETag::of`](crate::etag::ETag::of) its id and `updatedAt`).
    pub fn etag(&self) -> crate::etag::ETag {
        crate::etag::ETag::of(self.id.as_str(), self.updated_at)
    }
}

impl Task {
    /// A new task of the organization, validated.
    pub fn create(organization_id: OrganizationId, input: NewTask, now: Timestamp) -> Result<Self, ValidationErrors> {
        Ok(Self {
            id: TaskId::generate(),
            organization_id,
            title: text("title", required("title", input.title)?, 1, TITLE_MAX)?,
            description: text("description", input.description.unwrap_or_default(), 0, DESCRIPTION_MAX)?,
            status: input.status.unwrap_or(TaskStatus::Todo),
            assignee_id: input.assignee_id,
            created_at: now,
            updated_at: now,
        })
    }

    /// Applies a validated patch; an empty patch changes nothing, not even `updated_at`.
    pub fn apply(&mut self, patch: &TaskPatch, now: Timestamp) {
        if patch.is_empty() {
            return;
        }
        set(&mut self.title, &patch.0.title);
        set(&mut self.description, &patch.0.description);
        set(&mut self.status, &patch.0.status);
        set(&mut self.assignee_id, &patch.0.assignee_id);
        self.updated_at = now;
    }
}
