//! Browser automations and their runs, and the claims that share scheduled and pending work between
//! server instances.

use async_trait::async_trait;
use compliance_domain::automation::{
    AutomationRun, BrowserAutomation, RunStatus, RunStep, StepOutcome, Verdict, VerdictOutcome,
};
use compliance_domain::etag::IfMatch;
use compliance_domain::schedule::Schedule;
use compliance_domain::{AutomationId, AutomationRunId, OrganizationId, TaskId, Timestamp};
use compliance_ports::{
    AUTOMATION_SECRET_OWNER_KIND, AuditOf, AutomationRepository, Page, RepoError, RunFilter, RunQuery, RunSort,
    SortValue,
};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::Store;
use crate::audit::AuditQueue;
use crate::db::{AnyConnection, db_run, write_transaction};
use crate::error::{TxError, corrupt, repo_error};
use crate::locks::lock_organization;
use crate::paging::{ListBackend, SortColumn, SortColumns, read_page, sort_columns, text_in, time_range};
use crate::rows::{id, optional_id, optional_instant, optional_naive, value};
use crate::schema::{automation_runs, browser_automations, vault_secrets};
use crate::search;
use crate::vault::children_pattern;

const PENDING: &str = RunStatus::Pending.as_str();
const RUNNING: &str = RunStatus::Running.as_str();
const FAILED: &str = RunStatus::Failed.as_str();
const COMPLETED: &str = RunStatus::Completed.as_str();

/// How many of the oldest pending runs one `claim_pending` tries before it gives up: each one it
/// loses went to another worker.
const CLAIM_CANDIDATES: i64 = 4;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = browser_automations)]
struct AutomationRow {
    id: String,
    organization_id: String,
    task_id: String,
    name: String,
    description: Option<String>,
    target_url: String,
    instruction: String,
    schedule: Option<String>,
    is_enabled: bool,
    next_run_at: Option<PrimitiveDateTime>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
    created_by: Option<String>,
    connection_id: Option<String>,
    post_result_to_task: bool,
    /// A JSON array of origins.
    allowed_origins: String,
}

/// What `update` replaces; `None` writes NULL (a cleared schedule must be stored as such).
#[derive(AsChangeset)]
#[diesel(table_name = browser_automations, treat_none_as_null = true)]
struct AutomationChanges<'a> {
    name: &'a str,
    description: Option<&'a str>,
    target_url: &'a str,
    instruction: &'a str,
    schedule: Option<&'a str>,
    is_enabled: bool,
    next_run_at: Option<PrimitiveDateTime>,
    updated_at: PrimitiveDateTime,
    connection_id: Option<&'a str>,
    post_result_to_task: bool,
    allowed_origins: String,
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = automation_runs)]
struct RunRow {
    id: String,
    organization_id: String,
    automation_id: String,
    status: String,
    trigger_kind: String,
    created_at: PrimitiveDateTime,
    started_at: Option<PrimitiveDateTime>,
    completed_at: Option<PrimitiveDateTime>,
    duration_ms: Option<i64>,
    screenshot_key: Option<String>,
    error: Option<String>,
    verdict_outcome: Option<String>,
    verdict_reason: Option<String>,
    /// A JSON array of [`StoredStep`].
    steps: String,
}

/// A step as the `steps` column holds it.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredStep {
    index: u32,
    action: String,
    target: Option<String>,
    outcome: String,
    detail: String,
    duration_ms: i64,
    screenshot_key: Option<String>,
}

fn origins_json(origins: &[String]) -> String {
    serde_json::to_string(origins).unwrap_or_else(|_| "[]".to_owned())
}

fn steps_json(steps: &[RunStep]) -> String {
    let stored: Vec<StoredStep> = steps
        .iter()
        .map(|s| StoredStep {
            index: s.index,
            action: s.action.clone(),
            target: s.target.clone(),
            outcome: s.outcome.as_str().to_owned(),
            detail: s.detail.clone(),
            duration_ms: s.duration_ms,
            screenshot_key: s.screenshot_key.clone(),
        })
        .collect();
    serde_json::to_string(&stored).unwrap_or_else(|_| "[]".to_owned())
}

fn steps_from_json(json: &str) -> Result<Vec<RunStep>, RepoError> {
    let stored: Vec<StoredStep> = serde_json::from_str(json).map_err(|e| corrupt("automation_runs", e))?;
    stored
        .into_iter()
        .map(|s| {
            Ok(RunStep {
                index: s.index,
                action: s.action,
                target: s.target,
                outcome: value::<StepOutcome>("automation_runs", &s.outcome)?,
                detail: s.detail,
                duration_ms: s.duration_ms,
                screenshot_key: s.screenshot_key,
            })
        })
        .collect()
}

/// What `finish_run` stores.
#[derive(AsChangeset)]
#[diesel(table_name = automation_runs, treat_none_as_null = true)]
struct RunOutcome<'a> {
    status: &'a str,
    started_at: Option<PrimitiveDateTime>,
    completed_at: Option<PrimitiveDateTime>,
    duration_ms: Option<i64>,
    screenshot_key: Option<&'a str>,
    error: Option<&'a str>,
    verdict_outcome: Option<&'a str>,
    verdict_reason: Option<&'a str>,
    steps: String,
}

impl From<&BrowserAutomation> for AutomationRow {
    fn from(a: &BrowserAutomation) -> Self {
        Self {
            id: a.id.to_string(),
            organization_id: a.organization_id.to_string(),
            task_id: a.task_id.to_string(),
            name: a.name.clone(),
            description: a.description.clone(),
            target_url: a.target_url.clone(),
            instruction: a.instruction.clone(),
            schedule: a.schedule.as_ref().map(|s| s.as_str().to_owned()),
            is_enabled: a.is_enabled,
            next_run_at: optional_naive(a.next_run_at),
            created_at: a.created_at.to_utc_naive(),
            updated_at: a.updated_at.to_utc_naive(),
            created_by: a.created_by.as_ref().map(ToString::to_string),
            connection_id: a.connection_id.as_ref().map(ToString::to_string),
            post_result_to_task: a.post_result_to_task,
            allowed_origins: origins_json(&a.allowed_origins),
        }
    }
}

impl<'a> From<&'a BrowserAutomation> for AutomationChanges<'a> {
    fn from(a: &'a BrowserAutomation) -> Self {
        Self {
            name: &a.name,
            description: a.description.as_deref(),
            target_url: &a.target_url,
            instruction: &a.instruction,
            schedule: a.schedule.as_ref().map(Schedule::as_str),
            is_enabled: a.is_enabled,
            next_run_at: optional_naive(a.next_run_at),
            updated_at: a.updated_at.to_utc_naive(),
            connection_id: a.connection_id.as_ref().map(|c| c.as_str()),
            post_result_to_task: a.post_result_to_task,
            allowed_origins: origins_json(&a.allowed_origins),
        }
    }
}

impl TryFrom<AutomationRow> for BrowserAutomation {
    type Error = RepoError;
    fn try_from(r: AutomationRow) -> Result<Self, RepoError> {
        Ok(Self {
            id: id("browser_automations", r.id)?,
            organization_id: id("browser_automations", r.organization_id)?,
            task_id: id("browser_automations", r.task_id)?,
            name: r.name,
            description: r.description,
            target_url: r.target_url,
            instruction: r.instruction,
            schedule: r
                .schedule
                .map(|s| Schedule::parse(&s).map_err(|e| corrupt("browser_automations", e)))
                .transpose()?,
            is_enabled: r.is_enabled,
            next_run_at: optional_instant(r.next_run_at),
            created_at: Timestamp::from_utc_naive(r.created_at),
            updated_at: Timestamp::from_utc_naive(r.updated_at),
            created_by: optional_id("browser_automations", r.created_by)?,
            connection_id: optional_id("browser_automations", r.connection_id)?,
            post_result_to_task: r.post_result_to_task,
            allowed_origins: serde_json::from_str(&r.allowed_origins).map_err(|e| corrupt("browser_automations", e))?,
        })
    }
}

impl From<&AutomationRun> for RunRow {
    fn from(r: &AutomationRun) -> Self {
        Self {
            id: r.id.to_string(),
            organization_id: r.organization_id.to_string(),
            automation_id: r.automation_id.to_string(),
            status: r.status.as_str().to_owned(),
            trigger_kind: r.trigger.as_str().to_owned(),
            created_at: r.created_at.to_utc_naive(),
            started_at: optional_naive(r.started_at),
            completed_at: optional_naive(r.completed_at),
            duration_ms: r.duration_ms,
            screenshot_key: r.screenshot_key.clone(),
            error: r.error.clone(),
            verdict_outcome: r.verdict.as_ref().map(|v| v.outcome.as_str().to_owned()),
            verdict_reason: r.verdict.as_ref().map(|v| v.reason.clone()),
            steps: steps_json(&r.steps),
        }
    }
}

impl<'a> From<&'a AutomationRun> for RunOutcome<'a> {
    fn from(r: &'a AutomationRun) -> Self {
        Self {
            status: r.status.as_str(),
            started_at: optional_naive(r.started_at),
            completed_at: optional_naive(r.completed_at),
            duration_ms: r.duration_ms,
            screenshot_key: r.screenshot_key.as_deref(),
            error: r.error.as_deref(),
            verdict_outcome: r.verdict.as_ref().map(|v| v.outcome.as_str()),
            verdict_reason: r.verdict.as_ref().map(|v| v.reason.as_str()),
            steps: steps_json(&r.steps),
        }
    }
}

impl TryFrom<RunRow> for AutomationRun {
    type Error = RepoError;
    fn try_from(r: RunRow) -> Result<Self, RepoError> {
        Ok(Self {
            id: id("automation_runs", r.id)?,
            organization_id: id("automation_runs", r.organization_id)?,
            automation_id: id("automation_runs", r.automation_id)?,
            status: value("automation_runs", &r.status)?,
            trigger: value("automation_runs", &r.trigger_kind)?,
            created_at: Timestamp::from_utc_naive(r.created_at),
            started_at: optional_instant(r.started_at),
            completed_at: optional_instant(r.completed_at),
            duration_ms: r.duration_ms,
            screenshot_key: r.screenshot_key,
            error: r.error,
            verdict: match (r.verdict_outcome, r.verdict_reason) {
                (Some(outcome), reason) => Some(Verdict {
                    outcome: value::<VerdictOutcome>("automation_runs", &outcome)?,
                    reason: reason.unwrap_or_default(),
                }),
                (None, _) => None,
            },
            steps: steps_from_json(&r.steps)?,
        })
    }
}

/// A second pending or running run of one automation violates automation_runs_one_active.
fn run_insert_error(error: DieselError) -> RepoError {
    match error {
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => {
            RepoError::Conflict("the automation already has a pending or running run".into())
        }
        other => repo_error(other),
    }
}

/// The automation's runs that match every filter of `query`.
fn runs_matching<DB: ListBackend>(
    matching: automation_runs::BoxedQuery<'static, DB>,
    org: &str,
    automation: &str,
    query: &RunQuery,
) -> automation_runs::BoxedQuery<'static, DB> {
    let RunFilter { status, trigger } = &query.filter;
    let conditions = [
        text_in(automation_runs::status, status),
        text_in(automation_runs::trigger_kind, trigger),
        time_range(&query.times, automation_runs::created_at, None::<automation_runs::created_at>),
        search::filter(&search::RUNS, org, query.search.as_ref()),
    ];
    let mut matching = matching
        .filter(automation_runs::organization_id.eq(DB::text(org.to_owned())))
        .filter(automation_runs::automation_id.eq(DB::text(automation.to_owned())));
    for condition in conditions.into_iter().flatten() {
        matching = matching.filter(condition);
    }
    matching
}

/// The columns `query` orders runs by, the id last.
fn run_order<DB: ListBackend>(query: &RunQuery) -> SortColumns<automation_runs::table, DB> {
    let column = |field| match field {
        RunSort::CreatedAt => SortColumn::time(automation_runs::created_at),
        RunSort::Status => SortColumn::text(automation_runs::status),
    };
    sort_columns(&query.sort_keys(RunSort::CreatedAt), column, automation_runs::id)
}

/// A run's value of a sort field, as its cursor holds it.
fn run_sort_value(run: &AutomationRun, field: RunSort) -> SortValue {
    match field {
        RunSort::CreatedAt => SortValue::Time(run.created_at),
        RunSort::Status => SortValue::Text(run.status.to_string()),
    }
}

#[async_trait]
impl AutomationRepository for Store {
    async fn insert(
        &self,
        automation: &BrowserAutomation,
        audit: &AuditOf<'_, BrowserAutomation>,
    ) -> Result<(), RepoError> {
        let row = AutomationRow::from(automation);
        let org = automation.organization_id.as_str();
        let mut conn = self.pools.write().await?;
        write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            diesel::insert_into(browser_automations::table).values(&row).execute(c).await?;
            c.append(audit(None, Some(automation))).await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    async fn get(&self, org: &OrganizationId, id: &AutomationId) -> Result<BrowserAutomation, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: AutomationRow = db_run!(&mut conn, |c| {
            browser_automations::table
                .filter(browser_automations::organization_id.eq(org.as_str()))
                .filter(browser_automations::id.eq(id.as_str()))
                .select(AutomationRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn list_for_task(&self, org: &OrganizationId, task: &TaskId) -> Result<Vec<BrowserAutomation>, RepoError> {
        let mut conn = self.pools.read().await?;
        let rows: Vec<AutomationRow> = db_run!(&mut conn, |c| {
            browser_automations::table
                .filter(browser_automations::organization_id.eq(org.as_str()))
                .filter(browser_automations::task_id.eq(task.as_str()))
                .order((browser_automations::created_at.asc(), browser_automations::id.asc()))
                .select(AutomationRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        rows.into_iter().map(BrowserAutomation::try_from).collect()
    }

    /// A swap that finds the row changed rolls back and writes no entry.
    async fn update(
        &self,
        automation: &BrowserAutomation,
        previous: &BrowserAutomation,
        audit: &AuditOf<'_, BrowserAutomation>,
    ) -> Result<(), RepoError> {
        let changes = AutomationChanges::from(automation);
        let (org, id) = (automation.organization_id.as_str(), automation.id.as_str());
        let read_at = previous.updated_at.to_utc_naive();
        let read_next = previous.next_run_at.map(Timestamp::to_utc_naive);
        let mut conn = self.pools.write().await?;
        // Compare-and-swap on what was read: `updated_at` catches another PATCH, `next_run_at` a
        // schedule claimed meanwhile (which a stale write would otherwise fire again).
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            let target = browser_automations::table
                .filter(browser_automations::organization_id.eq(org))
                .filter(browser_automations::id.eq(id))
                .filter(browser_automations::updated_at.eq(read_at));
            let updated = match read_next {
                Some(next) => {
                    let target = target.filter(browser_automations::next_run_at.eq(next));
                    diesel::update(target).set(&changes).execute(c).await?
                }
                None => {
                    let target = target.filter(browser_automations::next_run_at.is_null());
                    diesel::update(target).set(&changes).execute(c).await?
                }
            };
            if updated == 0 {
                return Err(TxError::Repo(RepoError::NotFound));
            }
            c.append(audit(Some(previous), Some(automation))).await?;
            Ok(())
        });
        result.map_err(RepoError::from)
    }

    async fn delete(
        &self,
        org: &OrganizationId,
        id: &AutomationId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, BrowserAutomation>,
    ) -> Result<Vec<AutomationRun>, RepoError> {
        let secrets = children_pattern(id.as_str());
        let mut conn = self.pools.write().await?;
        let result: Result<Vec<RunRow>, TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org.as_str()).await?;
            let runs = automation_runs::table
                .filter(automation_runs::organization_id.eq(org.as_str()))
                .filter(automation_runs::automation_id.eq(id.as_str()))
                .order((automation_runs::created_at.desc(), automation_runs::id.desc()))
                .select(RunRow::as_select())
                .load(c)
                .await?;
            diesel::delete(
                automation_runs::table
                    .filter(automation_runs::organization_id.eq(org.as_str()))
                    .filter(automation_runs::automation_id.eq(id.as_str())),
            )
            .execute(c)
            .await?;
            // Its login secrets (vault rows owned by `{id}/{NAME}`) go with it.
            diesel::delete(
                vault_secrets::table
                    .filter(vault_secrets::organization_id.eq(org.as_str()))
                    .filter(vault_secrets::owner_kind.eq(AUTOMATION_SECRET_OWNER_KIND))
                    .filter(vault_secrets::owner_id.like(&secrets).escape('\\')),
            )
            .execute(c)
            .await?;
            let deleted: BrowserAutomation = diesel::delete(
                browser_automations::table
                    .filter(browser_automations::organization_id.eq(org.as_str()))
                    .filter(browser_automations::id.eq(id.as_str())),
            )
            .returning(AutomationRow::as_returning())
            .get_result(c)
            .await?
            .try_into()?;
            // The deleted row is the record as it was: a stale `If-Match` rolls the delete back.
            if_match.check(&deleted.etag())?;
            c.append(audit(Some(&deleted), None)).await?;
            Ok(runs)
        });
        result.map_err(RepoError::from)?.into_iter().map(AutomationRun::try_from).collect()
    }

    async fn insert_run(&self, run: &AutomationRun, audit: &AuditOf<'_, AutomationRun>) -> Result<(), RepoError> {
        let row = RunRow::from(run);
        let org = run.organization_id.as_str();
        let mut conn = self.pools.write().await?;
        let result: Result<(), DieselError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            diesel::insert_into(automation_runs::table).values(&row).execute(c).await?;
            c.append(audit(None, Some(run))).await?;
            Ok(())
        });
        result.map_err(run_insert_error)
    }

    async fn runs(
        &self,
        org: &OrganizationId,
        automation: &AutomationId,
        query: &RunQuery,
    ) -> Result<Page<AutomationRun>, RepoError> {
        let (org, automation, matching) = (org.to_string(), automation.to_string(), query.clone());
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<(RunRow, i64)>, _) = read_page!(
            &mut conn,
            &query.page,
            runs_matching(automation_runs::table.into_boxed(), &org, &automation, &matching),
            (RunRow::as_select(), search::relevance(&search::RUNS, &org, &matching)),
            search::order(&search::RUNS, &org, &matching, run_order(&matching)),
            None,
        )
        .map_err(repo_error)?;
        let runs = rows
            .into_iter()
            .map(|(row, relevance)| Ok((AutomationRun::try_from(row)?, relevance)))
            .collect::<Result<Vec<_>, RepoError>>()?;
        let keys = query.sort_keys(RunSort::CreatedAt);
        let page = Page::from_rows(runs, &query.page, total, |(run, relevance)| {
            let values = keys.iter().map(|key| run_sort_value(run, key.field)).collect();
            search::cursor(query, *relevance, values, run.id.to_string())
        });
        Ok(page.map(|(run, _)| run))
    }

    async fn delete_finished_runs(
        &self,
        created_before: Timestamp,
        limit: usize,
    ) -> Result<Vec<AutomationRun>, RepoError> {
        let cutoff = created_before.to_utc_naive();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut conn = self.pools.write().await?;
        let result: Result<Vec<RunRow>, TxError> = write_transaction!(&mut conn, async |c| {
            let runs: Vec<RunRow> = automation_runs::table
                .filter(automation_runs::status.eq_any([COMPLETED, FAILED]))
                .filter(automation_runs::created_at.lt(cutoff))
                .order((automation_runs::created_at.asc(), automation_runs::id.asc()))
                .limit(limit)
                .select(RunRow::as_select())
                .load(c)
                .await?;
            let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
            diesel::delete(automation_runs::table.filter(automation_runs::id.eq_any(&ids))).execute(c).await?;
            Ok(runs)
        });
        result.map_err(RepoError::from)?.into_iter().map(AutomationRun::try_from).collect()
    }

    async fn get_run(&self, org: &OrganizationId, id: &AutomationRunId) -> Result<AutomationRun, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: RunRow = db_run!(&mut conn, |c| {
            automation_runs::table
                .filter(automation_runs::organization_id.eq(org.as_str()))
                .filter(automation_runs::id.eq(id.as_str()))
                .select(RunRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn due(&self, now: Timestamp, limit: usize) -> Result<Vec<BrowserAutomation>, RepoError> {
        let now = now.to_utc_naive();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut conn = self.pools.read().await?;
        // The filters repeat browser_automations_due's predicate word for word, so it serves them.
        let rows: Vec<AutomationRow> = db_run!(&mut conn, |c| {
            browser_automations::table
                .filter(browser_automations::is_enabled)
                .filter(browser_automations::next_run_at.is_not_null())
                .filter(browser_automations::next_run_at.le(now))
                .order((browser_automations::next_run_at.asc(), browser_automations::id.asc()))
                .limit(limit)
                .select(AutomationRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        // One unreadable row (a schedule a later parser refuses, say) must not stop every other
        // organization's schedules: it is logged and left out.
        let automations = rows.into_iter().filter_map(|row| {
            let id = row.id.clone();
            BrowserAutomation::try_from(row)
                .inspect_err(|error| tracing::error!(%error, automation = %id, "skipping an unreadable automation"))
                .ok()
        });
        Ok(automations.collect())
    }

    async fn claim_due(
        &self,
        automation: &AutomationId,
        previous: Timestamp,
        next: Option<Timestamp>,
        run: &AutomationRun,
        audit: &AuditOf<'_, AutomationRun>,
    ) -> Result<bool, RepoError> {
        let (previous, next) = (previous.to_utc_naive(), optional_naive(next));
        let row = RunRow::from(run);
        let org = run.organization_id.as_str();
        let mut conn = self.pools.write().await?;
        // The conditional update is the claim: of racing instances, the first to update the row
        // wins and the others, re-reading it, find next_run_at moved (and roll back). The run is inserted with ON CONFLICT DO NOTHING, so an active run
        // (automation_runs_one_active) skips it without undoing the advance, even when a manual
        // run is inserted between a check and the insert; the entry says which.
        let result: Result<bool, TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            let claimed = diesel::update(
                browser_automations::table
                    .filter(browser_automations::id.eq(automation.as_str()))
                    .filter(browser_automations::next_run_at.eq(previous)),
            )
            .set(browser_automations::next_run_at.eq(next))
            .execute(c)
            .await?;
            if claimed == 0 {
                return Err(TxError::Repo(RepoError::NotFound));
            }
            let inserted =
                diesel::insert_into(automation_runs::table).values(&row).on_conflict_do_nothing().execute(c).await?;
            let entry = match inserted {
                0 => audit(Some(run), None),
                _ => audit(None, Some(run)),
            };
            c.append(entry).await?;
            Ok(inserted > 0)
        });
        match result.map_err(RepoError::from) {
            Err(RepoError::NotFound) => Ok(false),
            other => other,
        }
    }

    async fn claim_pending(
        &self,
        now: Timestamp,
        skip: &[OrganizationId],
    ) -> Result<Option<(AutomationRun, BrowserAutomation)>, RepoError> {
        let now = now.to_utc_naive();
        let skip: Vec<&str> = skip.iter().map(OrganizationId::as_str).collect();
        let mut conn = self.pools.write().await?;
        // Select the oldest candidates, then take the first one still pending: the conditional
        // update is the claim, and a candidate another worker took first updates nothing.
        let claimed: Option<(RunRow, AutomationRow)> = write_transaction!(&mut conn, async |c| {
            let candidates: Vec<String> = automation_runs::table
                .filter(automation_runs::status.eq(PENDING))
                .filter(automation_runs::organization_id.ne_all(&skip))
                .order((automation_runs::created_at.asc(), automation_runs::id.asc()))
                .limit(CLAIM_CANDIDATES)
                .select(automation_runs::id)
                .load(c)
                .await?;
            for id in candidates {
                let run: Option<RunRow> = diesel::update(
                    automation_runs::table
                        .filter(automation_runs::id.eq(&id))
                        .filter(automation_runs::status.eq(PENDING)),
                )
                .set((automation_runs::status.eq(RUNNING), automation_runs::started_at.eq(now)))
                .returning(RunRow::as_returning())
                .get_result(c)
                .await
                .optional()?;
                if let Some(run) = run {
                    let automation: AutomationRow = browser_automations::table
                        .filter(browser_automations::organization_id.eq(&run.organization_id))
                        .filter(browser_automations::id.eq(&run.automation_id))
                        .select(AutomationRow::as_select())
                        .first(c)
                        .await?;
                    return Ok::<_, DieselError>(Some((run, automation)));
                }
            }
            Ok(None)
        })
        .map_err(repo_error)?;
        claimed.map(|(run, automation)| Ok((run.try_into()?, automation.try_into()?))).transpose()
    }

    async fn finish_run(&self, run: &AutomationRun, audit: &AuditOf<'_, AutomationRun>) -> Result<(), RepoError> {
        let outcome = RunOutcome::from(run);
        let (org, id) = (run.organization_id.as_str(), run.id.as_str());
        let mut conn = self.pools.write().await?;
        // Only a running run finishes: one failed as stale (or deleted) meanwhile stays as it is,
        // and the transaction rolls back, with no entry.
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            let running = automation_runs::table
                .filter(automation_runs::organization_id.eq(org))
                .filter(automation_runs::id.eq(id))
                .filter(automation_runs::status.eq(RUNNING));
            let before: Option<RunRow> = running.select(RunRow::as_select()).first(c).await.optional()?;
            let Some(before) = before else { return Err(TxError::Repo(RepoError::NotFound)) };
            diesel::update(running).set(&outcome).execute(c).await?;
            let before = AutomationRun::try_from(before)?;
            c.append(audit(Some(&before), Some(run))).await?;
            Ok(())
        });
        result.map_err(RepoError::from)
    }

    async fn stale_runs(&self, started_before: Timestamp, limit: usize) -> Result<Vec<AutomationRun>, RepoError> {
        let cutoff = started_before.to_utc_naive();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut conn = self.pools.read().await?;
        let rows: Vec<RunRow> = db_run!(&mut conn, |c| {
            automation_runs::table
                .filter(automation_runs::status.eq(RUNNING))
                .filter(automation_runs::started_at.lt(cutoff))
                .order((automation_runs::started_at.asc(), automation_runs::id.asc()))
                .limit(limit)
                .select(RunRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        rows.into_iter().map(AutomationRun::try_from).collect()
    }
}
