//! Tasks: the [`TaskRepository`] on both backends, and the row the `tasks` table holds.

use async_trait::async_trait;
use compliance_domain::comment::{Attachment, CommentEntityType};
use compliance_domain::etag::IfMatch;
use compliance_domain::task::{Task, TaskPatch};
use compliance_domain::{MemberId, OrganizationId, TaskId, Timestamp};
use compliance_ports::{
    AuditOf, BulkApplied, BulkError, BulkWrite, Deleted, DueRange, ListName, Page, RepoError, SortValue, TASK_CHANGED,
    TaskFilter, TaskQuery, TaskRepository, TaskSort,
};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::Store;
use crate::audit::AuditQueue;
use crate::bulk::{self, Failures, Statements};
use crate::comments::{attachments_on, comments_on};
use crate::db::{AnyConnection, ConnRef, db_run, write_transaction};
use crate::error::{TxError, repo_error};
use crate::list_counts::KeptCount;
use crate::locks::Locked;
use crate::paging::{
    Condition, ListBackend, SortColumn, SortColumns, and, any_of, assigned, read_page, sort_columns, text_in,
    time_range,
};
use crate::prepared::{Prepared, insert_rows};
use crate::rows::{
    AttachmentRow, id, instant, library_origin, naive, optional_id, optional_instant, optional_naive, value,
};
use crate::schema::tasks;
use crate::search;

#[async_trait]
impl TaskRepository for Store {
    async fn list_tasks(&self, org: &OrganizationId, query: &TaskQuery) -> Result<Page<Task>, RepoError> {
        let (org, matching) = (org.to_string(), query.clone());
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<(TaskRow, i64)>, _) = read_page!(
            &mut conn,
            &query.page,
            tasks_matching(tasks::table.into_boxed(), &org, None, &matching),
            (TaskRow::as_select(), search::relevance(&search::TASKS, &org, &matching)),
            search::order(&search::TASKS, &org, &matching, task_order(&matching)),
            tasks_kept_count(&org, &matching),
        )
        .map_err(repo_error)?;
        let items = rows
            .into_iter()
            .map(|(row, relevance)| Ok((Task::try_from(row)?, relevance)))
            .collect::<Result<Vec<_>, RepoError>>()?;
        let keys = query.sort_keys(TaskSort::CreatedAt);
        let page = Page::from_rows(items, &query.page, total, |(item, relevance)| {
            let values = keys.iter().map(|key| task_sort_value(item, key.field)).collect();
            search::cursor(query, *relevance, values, item.id.to_string())
        });
        Ok(page.map(|(item, _)| item))
    }

    async fn list_tasks_assigned(
        &self,
        org: &OrganizationId,
        assignee: &MemberId,
        query: &TaskQuery,
    ) -> Result<Page<Task>, RepoError> {
        let (org, matching) = (org.to_string(), query.clone());
        let assignee = assignee.to_string();
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<(TaskRow, i64)>, _) = read_page!(
            &mut conn,
            &query.page,
            tasks_matching(tasks::table.into_boxed(), &org, Some(&assignee), &matching),
            (TaskRow::as_select(), search::relevance(&search::TASKS, &org, &matching)),
            search::order(&search::TASKS, &org, &matching, task_order(&matching)),
            // Counted: their own are the tasks assigned to them or awaiting their approval.
            None,
        )
        .map_err(repo_error)?;
        let items = rows
            .into_iter()
            .map(|(row, relevance)| Ok((Task::try_from(row)?, relevance)))
            .collect::<Result<Vec<_>, RepoError>>()?;
        let keys = query.sort_keys(TaskSort::CreatedAt);
        let page = Page::from_rows(items, &query.page, total, |(item, relevance)| {
            let values = keys.iter().map(|key| task_sort_value(item, key.field)).collect();
            search::cursor(query, *relevance, values, item.id.to_string())
        });
        Ok(page.map(|(item, _)| item))
    }

    async fn get_task(&self, org: &OrganizationId, id: &TaskId) -> Result<Task, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: TaskRow = db_run!(&mut conn, |c| {
            tasks::table
                .filter(tasks::organization_id.eq(org.as_str()))
                .filter(tasks::id.eq(id.as_str()))
                .select(TaskRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn insert_task(&self, task: &Task, audit: &AuditOf<'_, Task>) -> Result<(), RepoError> {
        let row = TaskRow::from(task);
        let mut conn = self.pools.write().await?;
        write_transaction!(&mut conn, async |c| {
            Prepared(diesel::insert_into(tasks::table).values(&row)).execute(c).await?;
            c.append(audit(None, Some(task))).await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    /// A read of the task as it was that locks its row (`crate::locks::Locked`), as every write of
    /// the task does; then `Task::apply` decides the new row
    /// (completing a task moved to `done`), written whole by one prepared `UPDATE … RETURNING *`.
    async fn update_task(
        &self,
        org: &OrganizationId,
        id: &TaskId,
        patch: &TaskPatch,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Task>,
    ) -> Result<Task, RepoError> {
        let mut conn = self.pools.write().await?;
        let the_task =
            || tasks::table.filter(tasks::organization_id.eq(org.as_str())).filter(tasks::id.eq(id.as_str()));
        let result: Result<Task, TxError> = write_transaction!(&mut conn, async |c| {
            let before: Task = Locked(the_task().select(TaskRow::as_select())).get_result(c).await?.try_into()?;
            if_match.check(&before.etag())?;
            let row = patched_row(&before, patch, now)?;
            let after: Task = Prepared(diesel::update(the_task()).set(&row).returning(TaskRow::as_returning()))
                .get_result(c)
                .await?
                .try_into()?;
            c.append(audit(Some(&before), Some(&after))).await?;
            Ok(after)
        });
        result.map_err(RepoError::from)
    }

    async fn delete_task(
        &self,
        org: &OrganizationId,
        id: &TaskId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Task>,
    ) -> Result<Deleted<Task>, RepoError> {
        let mut conn = self.pools.write().await?;
        let entity = CommentEntityType::Task.as_str();
        let result: Result<(Task, Vec<AttachmentRow>), TxError> = write_transaction!(&mut conn, async |c| {
            let attachments: Vec<AttachmentRow> = diesel::delete(attachments_on(org.as_str(), entity, id.as_str()))
                .returning(AttachmentRow::as_returning())
                .get_results(c)
                .await?;
            diesel::delete(comments_on(org.as_str(), entity, id.as_str())).execute(c).await?;
            let task = tasks::table.filter(tasks::organization_id.eq(org.as_str())).filter(tasks::id.eq(id.as_str()));
            let deleted: Task =
                diesel::delete(task).returning(TaskRow::as_returning()).get_result(c).await?.try_into()?;
            // The deleted row is the record as it was: a stale `If-Match` rolls the delete back.
            if_match.check(&deleted.etag())?;
            c.append(audit(Some(&deleted), None)).await?;
            Ok((deleted, attachments))
        });
        let (record, attachments) = result.map_err(RepoError::from)?;
        let attachments = attachments.into_iter().map(Attachment::try_from).collect::<Result<_, _>>()?;
        Ok(Deleted { record, attachments })
    }

    /// The writes in one transaction (see the store's `bulk::apply_in`).
    async fn apply_task_bulk(
        &self,
        org: &OrganizationId,
        writes: &[BulkWrite<Task, TaskId, TaskPatch>],
        now: Timestamp,
        audit: &AuditOf<'_, Task>,
    ) -> Result<BulkApplied<Task>, BulkError> {
        let mut conn = self.pools.write().await.map_err(RepoError::from)?;
        let (org, entity) = (org.as_str(), CommentEntityType::Task.as_str());
        let the_task = |org: &str, id: &TaskId| {
            tasks::table.filter(tasks::organization_id.eq(org.to_owned())).filter(tasks::id.eq(id.to_string()))
        };
        let mut failures = Failures::default();
        let result = write_transaction!(&mut conn, async |c| {
            bulk::apply_in(
                c,
                org,
                writes,
                audit,
                &mut failures,
                Statements {
                    table: "tasks",
                    id: TaskId::as_str,
                    is_empty: TaskPatch::is_empty,
                    read: &|c, org, id| {
                        Box::pin(async move {
                            let task: Task =
                                the_task(org, id).select(TaskRow::as_select()).first(c).await?.try_into()?;
                            Ok(task)
                        })
                    },
                    update: &|c, org, before, patch| {
                        Box::pin(async move {
                            let row = patched_row(before, patch, now)?;
                            let update =
                                diesel::update(the_task(org, &before.id)).set(&row).returning(TaskRow::as_returning());
                            let after: Task = Prepared(update).get_result(c).await?.try_into()?;
                            Ok(after)
                        })
                    },
                    delete: &|c, org, id| {
                        Box::pin(async move {
                            let attachments: Vec<AttachmentRow> =
                                diesel::delete(attachments_on(org, entity, id.as_str()))
                                    .returning(AttachmentRow::as_returning())
                                    .get_results(c)
                                    .await?;
                            diesel::delete(comments_on(org, entity, id.as_str())).execute(c).await?;
                            let deleted: Task = diesel::delete(the_task(org, id))
                                .returning(TaskRow::as_returning())
                                .get_result(c)
                                .await?
                                .try_into()?;
                            Ok((deleted, attachments))
                        })
                    },
                    insert: &|c, rows| Box::pin(insert_task_rows(c.any(), rows)),
                    row: |record| TaskRow::from(record),
                },
            )
            .await
        });
        failures.answer(result)
    }

    async fn save_task(&self, before: &Task, after: &Task, audit: &AuditOf<'_, Task>) -> Result<(), RepoError> {
        let (org, id) = (before.organization_id.as_str(), before.id.as_str());
        let row = TaskRow::from(after);
        let mut conn = self.pools.write().await?;
        let the_task = || tasks::table.filter(tasks::organization_id.eq(org)).filter(tasks::id.eq(id));
        let saved: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            let stored: PrimitiveDateTime = Locked(the_task().select(tasks::updated_at)).get_result(c).await?;
            if stored != naive(before.updated_at) {
                return Err(TxError::Repo(RepoError::Conflict(TASK_CHANGED.into())));
            }
            Prepared(diesel::update(the_task()).set(&row)).execute(c).await?;
            c.append(audit(Some(before), Some(after))).await?;
            Ok(())
        });
        saved.map_err(RepoError::from)
    }
}

/// The row of `before` after `patch` (`Task::apply`); a patch that does not fit the task's state
/// is a `Conflict`.
fn patched_row(before: &Task, patch: &TaskPatch, now: Timestamp) -> Result<TaskRow, TxError> {
    let after = before.patched(patch, now).map_err(|why| TxError::Repo(RepoError::Conflict(why)))?;
    Ok(TaskRow::from(&after))
}

/// The organization's tasks (only those `member` is the assignee or the approver of, when given)
/// that match every filter of `query`.
fn tasks_matching<DB: ListBackend>(
    matching: tasks::BoxedQuery<'static, DB>,
    org: &str,
    member: Option<&str>,
    query: &TaskQuery,
) -> tasks::BoxedQuery<'static, DB> {
    let TaskFilter { status, assignee: assignees, approver: approvers, frequency, due } = &query.filter;
    let own = member.map(|member| -> Condition<tasks::table, DB> {
        let assignee = tasks::assignee_id.assume_not_null().eq(DB::text(member.to_owned()));
        Box::new(assignee.or(tasks::approver_id.assume_not_null().eq(DB::text(member.to_owned()))))
    });
    let frequencies = any_of(frequency.iter().map(|frequency| -> Condition<tasks::table, DB> {
        Box::new(tasks::frequency.assume_not_null().eq(DB::text(frequency.to_string())))
    }));
    let conditions = [
        own,
        text_in(tasks::status, status),
        assigned(tasks::assignee_id, assignees),
        assigned(tasks::approver_id, approvers),
        frequencies,
        due_range(due),
        time_range(&query.times, tasks::created_at, Some(tasks::updated_at)),
        search::filter(&search::TASKS, org, query.search.as_ref()),
    ];
    let mut matching = matching.filter(tasks::organization_id.eq(DB::text(org.to_owned())));
    for condition in conditions.into_iter().flatten() {
        matching = matching.filter(condition);
    }
    matching
}

/// The count the database keeps for `query` (`crate::list_counts`): the list's size, or,
/// filtered by nothing but `status` and `assigneeId`, the sum of those groups.
fn tasks_kept_count(org: &str, query: &TaskQuery) -> Option<KeptCount> {
    let TaskFilter { status, assignee, .. } = &query.filter;
    // Every other field the filter has (approver, frequency, due dates) stays empty: only these
    // two are kept.
    let kept_part = TaskFilter { status: status.clone(), assignee: assignee.clone(), ..TaskFilter::default() };
    KeptCount::whole(org, ListName::Tasks, query)
        .or_else(|| KeptCount::by_status_and_assignee(org, ListName::Tasks, query, kept_part, status, assignee))
}

/// `dueAfter` (`>=`) / `dueBefore` (`<`) on `due_at`; a task without a due date is in no range.
fn due_range<DB: ListBackend>(due: &DueRange) -> Option<Condition<tasks::table, DB>> {
    let at = |time: &Option<Timestamp>| time.map(|t| DB::time::<tasks::table>(naive(t)));
    let after =
        at(&due.after).map(|t| -> Condition<tasks::table, DB> { Box::new(tasks::due_at.assume_not_null().ge(t)) });
    let before =
        at(&due.before).map(|t| -> Condition<tasks::table, DB> { Box::new(tasks::due_at.assume_not_null().lt(t)) });
    and(after, before)
}

diesel::define_sql_function! {
    /// `coalesce(due_at, end of time)`: the due date tasks sort by, on both backends.
    fn coalesce(x: diesel::sql_types::Nullable<diesel::sql_types::Timestamp>, y: diesel::sql_types::Timestamp) -> diesel::sql_types::Timestamp;
}

/// Where a task without a due date sorts by `dueAt`: at the end of time (last ascending, first
/// descending), so that the order stays total and the keyset cursor has a value to hold.
fn undated() -> Timestamp {
    Timestamp::from_unix_micros(253_402_300_799_999_999).unwrap_or_else(|_| Timestamp::now())
}

/// The columns `query` orders tasks by, the id last.
fn task_order<DB: ListBackend>(query: &TaskQuery) -> SortColumns<tasks::table, DB> {
    let column = |field| match field {
        TaskSort::CreatedAt => SortColumn::time(tasks::created_at),
        TaskSort::UpdatedAt => SortColumn::time(tasks::updated_at),
        TaskSort::Title => SortColumn::text(tasks::title),
        TaskSort::Status => SortColumn::text(tasks::status),
        TaskSort::DueAt => SortColumn::time(coalesce(tasks::due_at, DB::time::<tasks::table>(naive(undated())))),
    };
    sort_columns(&query.sort_keys(TaskSort::CreatedAt), column, tasks::id)
}

/// A task's value of a sort field, as its cursor holds it.
fn task_sort_value(task: &Task, field: TaskSort) -> SortValue {
    match field {
        TaskSort::CreatedAt => SortValue::Time(task.created_at),
        TaskSort::UpdatedAt => SortValue::Time(task.updated_at),
        TaskSort::Title => SortValue::Text(task.title.clone()),
        TaskSort::Status => SortValue::Text(task.status.to_string()),
        TaskSort::DueAt => SortValue::Time(task.due_at.unwrap_or_else(undated)),
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = tasks, treat_none_as_null = true)]
pub struct TaskRow {
    id: String,
    organization_id: String,
    title: String,
    description: String,
    status: String,
    assignee_id: Option<String>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
    approver_id: Option<String>,
    frequency: Option<String>,
    due_at: Option<PrimitiveDateTime>,
    last_completed_at: Option<PrimitiveDateTime>,
    rejection_reason: Option<String>,
    finding_id: Option<String>,
    library_id: Option<String>,
    library_version: Option<i32>,
}

impl From<&Task> for TaskRow {
    fn from(t: &Task) -> Self {
        Self {
            id: t.id.to_string(),
            organization_id: t.organization_id.to_string(),
            title: t.title.clone(),
            description: t.description.clone(),
            status: t.status.to_string(),
            assignee_id: t.assignee_id.as_ref().map(ToString::to_string),
            created_at: naive(t.created_at),
            updated_at: naive(t.updated_at),
            approver_id: t.approver_id.as_ref().map(ToString::to_string),
            frequency: t.frequency.map(|f| f.to_string()),
            due_at: optional_naive(t.due_at),
            last_completed_at: optional_naive(t.last_completed_at),
            rejection_reason: t.rejection_reason.clone(),
            finding_id: t.finding_id.as_ref().map(ToString::to_string),
            library_id: t.library.as_ref().map(|l| l.id.clone()),
            library_version: t.library.as_ref().map(|l| i32::try_from(l.version).unwrap_or(i32::MAX)),
        }
    }
}

impl TryFrom<TaskRow> for Task {
    type Error = RepoError;
    fn try_from(r: TaskRow) -> Result<Self, RepoError> {
        const T: &str = "tasks";
        Ok(Self {
            id: id(T, r.id)?,
            organization_id: id(T, r.organization_id)?,
            title: r.title,
            description: r.description,
            status: value(T, &r.status)?,
            assignee_id: optional_id(T, r.assignee_id)?,
            approver_id: optional_id(T, r.approver_id)?,
            frequency: r.frequency.as_deref().map(|f| value(T, f)).transpose()?,
            due_at: optional_instant(r.due_at),
            last_completed_at: optional_instant(r.last_completed_at),
            rejection_reason: r.rejection_reason,
            finding_id: optional_id(T, r.finding_id)?,
            library: library_origin(r.library_id, r.library_version),
            created_at: instant(r.created_at),
            updated_at: instant(r.updated_at),
        })
    }
}

/// A bulk request's created tasks, together ([`insert_rows!`]).
async fn insert_task_rows(conn: ConnRef<'_>, rows: &[TaskRow]) -> QueryResult<()> {
    insert_rows!(conn, tasks::table, rows)
}
