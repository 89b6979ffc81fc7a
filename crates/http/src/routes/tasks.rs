//! `/v1/tasks`: list, create, read, change and delete the organization's tasks.

use actix_web::{HttpResponse, web};
use compliance_app::Settings;
use compliance_domain::frequency::Frequency;
use compliance_domain::task::TaskStatus;
use compliance_domain::task::{NewTask, TaskChanges};
use compliance_domain::task_lifecycle::TaskRejection;
use compliance_domain::{Id, TaskId};
use compliance_ports::{DueRange, ListName, TaskFilter, TaskQuery, TaskSort};
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::{IntoParams, ToSchema};

use crate::body::JsonBody;
use crate::bulk::{self, BULK_BODY_LIMIT, BulkQuery, BulkRequest, BulkResults};
use crate::conditional::{self, IfMatchHeader, IfNoneMatchHeader};
use crate::envelope::auth_type_schema;
use crate::export::{BATCH_ROWS, Export, ExportFormat, FormatQuery, stream_list};
use crate::list_cache::{ListKey, items};
use crate::list_query::{AssigneeFilter, ListParams, QueryShape, SortField, SortParam, TimeParams};
use crate::paging::PageQuery;
use crate::router::Routes;
use crate::wire::{AuthTypeStyle, AuthenticatedUser, TaskDto, auth_type};
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(list_tasks, __path_list_tasks);
    routes.add(create_task, __path_create_task);
    routes.add(export_tasks, __path_export_tasks);
    routes.add(bulk_tasks, __path_bulk_tasks).body_limit(BULK_BODY_LIMIT);
    routes.add(get_task, __path_get_task);
    routes.add(update_task, __path_update_task);
    routes.add(delete_task, __path_delete_task);
    routes.add(submit_task, __path_submit_task);
    routes.add(approve_task, __path_approve_task);
    routes.add(reject_task, __path_reject_task);
}

/// `{data, count, nextCursor, authType, authenticatedUser}` of tasks.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct TaskList<'a> {
    #[schema(value_type = Vec<TaskDto>)]
    data: &'a RawValue,
    /// The total number of matching rows (across all pages).
    count: u64,
    /// Where the next page starts (pass it as `cursor`); absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    next_cursor: Option<&'a str>,
    #[schema(schema_with = auth_type_schema)]
    auth_type: &'static str,
    authenticated_user: AuthenticatedUser<'a>,
}

/// A task with how the request authenticated; `authenticatedUser` for sessions only.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct TaskWithAuth<'a> {
    #[serde(flatten)]
    task: TaskDto<'a>,
    #[schema(schema_with = auth_type_schema)]
    auth_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = AuthenticatedUser, required = false)]
    authenticated_user: Option<AuthenticatedUser<'a>>,
}

/// What a delete answers: the message and what the task was.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct TaskDeleted<'a> {
    /// `Task deleted successfully`
    message: &'static str,
    deleted_task: DeletedTask<'a>,
    #[schema(schema_with = auth_type_schema)]
    auth_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = AuthenticatedUser, required = false)]
    authenticated_user: Option<AuthenticatedUser<'a>>,
}

#[derive(Serialize, ToSchema)]
struct DeletedTask<'a> {
    id: &'a TaskId,
    title: &'a str,
}

#[utoipa::path(
    get,
    path = "/v1/tasks",
    tag = "tasks",
    operation_id = "listTasks",
    summary = "List the organization's tasks",
    params(
        ("status" = Option<Vec<TaskStatus>>, Query, description = "Any of these statuses (repeat the parameter)."),
        ("assigneeId" = Option<Vec<AssigneeFilter>>, Query, description = "Assigned to any of these members (`mem_…`); `none` for unassigned."),
        ("approverId" = Option<Vec<AssigneeFilter>>, Query, description = "Approved by any of these members (`mem_…`); `none` for tasks without an approver."),
        ("frequency" = Option<Vec<Frequency>>, Query, description = "Recurring with any of these frequencies (repeat the parameter)."),
        DueParams,
        TimeParams,
        SortParam<TaskSort>,
        PageQuery,
    ),
    responses((status = 200, description = "The matching tasks, in the order asked (newest first by default).", body = TaskList)),
)]
async fn list_tasks(
    state: web::Data<AppState>,
    caller: Authenticated,
    params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let (query, shape) = task_query(params, state.settings())?;
    let principal = caller.0.clone();
    let key = ListKey::new(&principal, ListName::Tasks, &shape, &query.page);
    let load = |app: std::sync::Arc<compliance_app::App>| async move { app.tasks.list_tasks(&principal, &query).await };
    let page = state.list_page(&caller, key, load, |page| items(page, TaskDto::from)).await?;
    Ok(HttpResponse::Ok().json(TaskList {
        data: page.data(),
        count: page.count(),
        next_cursor: page.next_cursor(),
        auth_type: auth_type(&caller, AuthTypeStyle::Standard),
        authenticated_user: AuthenticatedUser::of(&caller),
    }))
}

/// The columns of a tasks export: every field of a record as the list shows it.
const TASK_COLUMNS: &[&str] = &[
    "id",
    "organizationId",
    "title",
    "description",
    "status",
    "assigneeId",
    "approverId",
    "frequency",
    "dueAt",
    "lastCompletedAt",
    "rejectionReason",
    "findingId",
    "libraryId",
    "libraryVersion",
    "createdAt",
    "updatedAt",
];

#[utoipa::path(
    get,
    path = "/v1/tasks/export",
    tag = "tasks",
    operation_id = "exportTasks",
    summary = "Export the organization's tasks as CSV or JSON Lines",
    description = "Every record the list would show with the same parameters, streamed as one file.",
    params(
        ("status" = Option<Vec<TaskStatus>>, Query, description = "Any of these statuses (repeat the parameter)."),
        ("assigneeId" = Option<Vec<AssigneeFilter>>, Query, description = "Assigned to any of these members (`mem_…`); `none` for unassigned."),
        ("approverId" = Option<Vec<AssigneeFilter>>, Query, description = "Approved by any of these members (`mem_…`); `none` for tasks without an approver."),
        ("frequency" = Option<Vec<Frequency>>, Query, description = "Recurring with any of these frequencies (repeat the parameter)."),
        DueParams,
        TimeParams,
        SortParam<TaskSort>,
        FormatQuery,
    ),
    responses((status = 200, description = "The tasks, as an attachment.", content(
        (String = "text/csv"),
        (String = "application/x-ndjson"),
    ))),
)]
async fn export_tasks(
    state: web::Data<AppState>,
    caller: Authenticated,
    mut params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let format = ExportFormat::take(&mut params)?;
    let (query, _) = task_query(params, state.settings())?;
    let principal = caller.0;
    let row = |task: &_| serde_json::to_value(TaskDto::from(task));
    let export = Export { format, name: "tasks", columns: TASK_COLUMNS, row };
    stream_list(state, export, move |app, after| {
        let (principal, query) = (principal.clone(), query.batch(BATCH_ROWS, after));
        async move { app.tasks.list_tasks(&principal, &query).await }
    })
    .await
}

impl SortField for TaskSort {
    const FIELDS: &'static [(&'static str, Self)] = &[
        ("createdAt", Self::CreatedAt),
        ("updatedAt", Self::UpdatedAt),
        ("title", Self::Title),
        ("status", Self::Status),
        ("dueAt", Self::DueAt),
    ];
}

/// `dueAfter` / `dueBefore`: the range of `dueAt` a task's list keeps.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code, reason = "read by task_query; this struct documents them")]
struct DueParams {
    /// Due at or after this time (RFC 3339); a task without `dueAt` is in no range.
    #[param(rename = "dueAfter")]
    due_after: Option<compliance_domain::Timestamp>,
    /// Due before this time (RFC 3339).
    #[param(rename = "dueBefore")]
    due_before: Option<compliance_domain::Timestamp>,
}

/// The query of `GET /v1/tasks` (and of its export): its filters, then what every list shares.
pub(crate) fn task_query(mut params: ListParams, settings: &Settings) -> Result<(TaskQuery, QueryShape), ApiError> {
    let shape = params.shape("tasks");
    let filter = TaskFilter {
        status: params.enums("status")?,
        assignee: params.assignees("assigneeId")?,
        approver: params.assignees("approverId")?,
        frequency: params.enums("frequency")?,
        due: DueRange { after: params.time("dueAfter")?, before: params.time("dueBefore")? },
    };
    Ok((params.finish(filter, true, &shape, settings)?, shape))
}

#[utoipa::path(
    post,
    path = "/v1/tasks",
    tag = "tasks",
    operation_id = "createTask",
    summary = "Create a task",
    request_body = NewTask,
    responses(
        (status = 201, description = "The new task.", body = TaskWithAuth, headers(("ETag" = String, description = "The entity tag of the new state."))),
        (status = 409, description = "A task created `done` with an approver would skip the approval: create it, then submit it.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn create_task(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(input): JsonBody<NewTask>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0.clone();
    let task = state.run(|app| async move { app.tasks.create_task(&principal, input).await }).await?;
    Ok(conditional::tagged(
        HttpResponse::Created(),
        &task.etag(),
        &TaskWithAuth {
            task: TaskDto::from(&task),
            auth_type: auth_type(&caller, AuthTypeStyle::Standard),
            authenticated_user: AuthenticatedUser::for_session(&caller),
        },
    ))
}

#[utoipa::path(
    get,
    path = "/v1/tasks/{id}",
    tag = "tasks",
    operation_id = "getTask",
    summary = "Get one task",
    params(("id" = TaskId, Path), IfNoneMatchHeader),
    responses((status = 200, description = "The task.", body = TaskDto)),
)]
async fn get_task(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_none_match: IfNoneMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, task_id(&id)?);
    let task = state.run(|app| async move { app.tasks.get_task(&principal, &id).await }).await?;
    Ok(conditional::read(&if_none_match, &task.etag(), &TaskDto::from(&task)))
}

#[utoipa::path(
    patch,
    path = "/v1/tasks/{id}",
    tag = "tasks",
    operation_id = "updateTask",
    summary = "Change a task: only the fields sent change",
    params(("id" = TaskId, Path), IfMatchHeader),
    request_body = TaskChanges,
    responses(
        (status = 200, description = "The changed task.", body = TaskWithAuth),
        (status = 409, description = "The change is not allowed in the task's state: `done` on a task with an approver (submit it for review instead), or a new approver while it is `in_review`.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn update_task(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
    JsonBody(changes): JsonBody<TaskChanges>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), task_id(&id)?);
    let task =
        state.run(|app| async move { app.tasks.update_task(&principal, &id, changes, &if_match.0).await }).await?;
    Ok(conditional::tagged(
        HttpResponse::Ok(),
        &task.etag(),
        &TaskWithAuth {
            task: TaskDto::from(&task),
            auth_type: auth_type(&caller, AuthTypeStyle::Standard),
            authenticated_user: AuthenticatedUser::for_session(&caller),
        },
    ))
}

#[utoipa::path(
    delete,
    path = "/v1/tasks/{id}",
    tag = "tasks",
    operation_id = "deleteTask",
    summary = "Delete a task",
    params(("id" = TaskId, Path), IfMatchHeader),
    responses((status = 200, description = "What was deleted.", body = TaskDeleted)),
)]
async fn delete_task(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), task_id(&id)?);
    let task = state.run(|app| async move { app.tasks.delete_task(&principal, &id, &if_match.0).await }).await?;
    Ok(HttpResponse::Ok().json(TaskDeleted {
        message: "Task deleted successfully",
        deleted_task: DeletedTask { id: &task.id, title: &task.title },
        auth_type: auth_type(&caller, AuthTypeStyle::Standard),
        authenticated_user: AuthenticatedUser::for_session(&caller),
    }))
}

#[utoipa::path(
    post,
    path = "/v1/tasks/bulk",
    tag = "tasks",
    operation_id = "bulkTasks",
    summary = "Create, change and delete up to 500 tasks in one request",
    description = "Each operation's body is the body `POST /v1/tasks` (create) or `PATCH /v1/tasks/{id}` (update) \
                   takes. By default all or nothing: every operation is checked, then all are applied in one \
                   transaction, or none and a 400 lists each failing operation by index. With `atomic=false` they \
                   are applied one by one and each answers its own result.",
    params(BulkQuery),
    request_body = BulkRequest,
    responses(
        (status = 200, description = "Each operation's result, in order: 201 created, 200 updated or deleted (the task as it was), or its problem (only with `atomic=false`).", body = BulkResults<'static, TaskDto<'static>>),
        (status = 400, description = "The request is invalid, or (atomic) operations failed and none was applied; `operations` lists the failing ones.", body = crate::error::BulkFailed, content_type = "application/problem+json"),
    ),
)]
async fn bulk_tasks(
    state: web::Data<AppState>,
    caller: Authenticated,
    query: web::Query<BulkQuery>,
    JsonBody(request): JsonBody<BulkRequest>,
) -> Result<HttpResponse, ApiError> {
    let atomic = query.atomic()?;
    let (ops, operations) = bulk::read(request, "task");
    let principal = caller.0;
    let results = state.run(|app| async move { app.tasks.bulk_tasks(&principal, operations, atomic).await }).await?;
    Ok(bulk::answer(&ops, &bulk::api_results(results), TaskDto::from))
}

#[utoipa::path(
    post,
    path = "/v1/tasks/{id}/submit",
    tag = "tasks",
    operation_id = "submitTask",
    summary = "Submit the task for its approver",
    description = "By an owner or admin, or by the task's assignee; never by its approver. The task needs an \
                   approver (else 409) and must be `todo`, `in_progress` or `failed`, or `done` when it recurs \
                   (its next round); it becomes `in_review`. No body.",
    params(("id" = TaskId, Path), IfMatchHeader),
    responses(
        (status = 200, description = "The task, in review.", body = TaskWithAuth),
        (status = 409, description = "No approver, the caller is the approver, or the task's state (named) does not allow it.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn submit_task(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), task_id(&id)?);
    let task = state.run(|app| async move { app.tasks.submit_task(&principal, &id, &if_match.0).await }).await?;
    Ok(transitioned(&task, &caller))
}

#[utoipa::path(
    post,
    path = "/v1/tasks/{id}/approve",
    tag = "tasks",
    operation_id = "approveTask",
    summary = "Approve the task in review: it is done",
    description = "Only the task's approver (`approverId`). Sets `lastCompletedAt`; a recurring task's `dueAt` \
                   moves to its next period and the task stays `done` until its next round. No body.",
    params(("id" = TaskId, Path), IfMatchHeader),
    responses(
        (status = 200, description = "The task, done.", body = TaskWithAuth),
        (status = 409, description = "The task is not `in_review` (its state is named).", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn approve_task(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), task_id(&id)?);
    let task = state.run(|app| async move { app.tasks.approve_task(&principal, &id, &if_match.0).await }).await?;
    Ok(transitioned(&task, &caller))
}

#[utoipa::path(
    post,
    path = "/v1/tasks/{id}/reject",
    tag = "tasks",
    operation_id = "rejectTask",
    summary = "Reject the task in review, with the reason",
    description = "Only the task's approver (`approverId`). The task goes back to `in_progress` (the default) or to \
                   `failed`, with `rejectionReason`.",
    params(("id" = TaskId, Path), IfMatchHeader),
    request_body = TaskRejection,
    responses(
        (status = 200, description = "The task, rejected.", body = TaskWithAuth),
        (status = 409, description = "The task is not `in_review` (its state is named).", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn reject_task(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
    JsonBody(input): JsonBody<TaskRejection>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), task_id(&id)?);
    let task = state.run(|app| async move { app.tasks.reject_task(&principal, &id, input, &if_match.0).await }).await?;
    Ok(transitioned(&task, &caller))
}

/// A transition's answer: the task with how the request authenticated, and its new `ETag`.
fn transitioned(task: &compliance_domain::task::Task, caller: &Authenticated) -> HttpResponse {
    conditional::tagged(
        HttpResponse::Ok(),
        &task.etag(),
        &TaskWithAuth {
            task: TaskDto::from(task),
            auth_type: auth_type(caller, AuthTypeStyle::Standard),
            authenticated_user: AuthenticatedUser::for_session(caller),
        },
    )
}

/// A malformed id names no task: 404, as a missing one.
fn task_id(id: &str) -> Result<TaskId, ApiError> {
    Id::parse(id).map_err(|_| ApiError::not_found("task"))
}
