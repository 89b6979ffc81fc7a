//! Tasks: work items that comments and browser automations point at.

use serde::Deserialize;

use crate::validation::{ValidationErrors, map_present, required, set, text};
use crate::{MemberId, OrganizationId, TaskId, Timestamp, nullable, required_non_null};

crate::string_enum! {
    TaskStatus { Todo = "todo", InProgress = "in_progress", Done = "done", NotRelevant = "not_relevant" }
}

pub const TITLE_MAX: usize = 255;
pub const DESCRIPTION_MAX: usize = 10_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub id: TaskId,
    pub organization_id: OrganizationId,
    pub title: String,
    pub description: String,
    pub status: TaskStatus,
    pub assignee_id: Option<MemberId>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewTask {
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::task_title, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub title: Option<String>,
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::task_description))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub description: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = TaskStatus))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub status: Option<TaskStatus>,
    pub assignee_id: Option<MemberId>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskChanges {
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::task_title))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub title: Option<String>,
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::task_description))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub description: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = TaskStatus))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub status: Option<TaskStatus>,
    #[serde(default, deserialize_with = "nullable")]
    pub assignee_id: Option<Option<MemberId>>,
}

/// Validated changes to a task.
#[derive(Debug, Clone)]
pub struct TaskPatch(TaskChanges);

impl TaskPatch {
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

    pub fn is_empty(&self) -> bool {
        self.0 == TaskChanges::default()
    }

    /// The member the patch assigns, if it assigns one.
    pub fn assignee(&self) -> Option<&MemberId> {
        self.0.assignee_id.as_ref().and_then(Option::as_ref)
    }
}

impl Task {
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
