//! Check runs, their results and the findings they open and resolve; the claims that share queued
//! runs between server instances.

use async_trait::async_trait;
use compliance_domain::audit::AuditDraft;
use compliance_domain::check_result::{CheckResult, CheckedResource, ReadFailure};
use compliance_domain::check_run::{CheckRun, CheckRunStatus, OutcomeCounts};
use compliance_domain::evidence::Observation;
use compliance_domain::finding::{Finding, FindingChanges, FindingException, FindingStatus, OrganizationDeadlines};
use compliance_domain::integration::{Connection, ConnectionStatus};
use compliance_domain::task::Task;
use compliance_domain::{CheckRunId, ConnectionId, FindingId, OrganizationId, Timestamp};
use compliance_ports::{
    AuditOf, CheckRunFilter, CheckRunQuery, CheckRunRepository, CheckRunSort, Cursor, FindingFilter, FindingQuery,
    FindingSort, Page, PageRequest, RepoError, SortValue,
};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError, QueryResult};
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::Store;
use crate::audit::AuditQueue;
use crate::connections::ConnectionRow;
use crate::db::{AnyConnection, ConnRef, db_run, write_transaction};
use crate::error::{TxError, repo_error};
use crate::evidence::record_observation;
use crate::locks::Locked;
use crate::paging::{
    Condition, ListBackend, SortColumn, SortColumns, and, any_of, lower, read_page, sort_columns, text_in, time_range,
};
use crate::prepared::insert_rows;
use crate::rows::{id, instant, naive, optional_id, optional_instant, optional_naive, value};
use crate::schema::{check_results, check_runs, connections, findings};

const QUEUED: &str = CheckRunStatus::Queued.as_str();
const RUNNING: &str = CheckRunStatus::Running.as_str();
const ACTIVE: &str = ConnectionStatus::Active.as_str();
const EXCEPTED: &str = FindingStatus::Excepted.as_str();

/// How many of the oldest waiting runs one `claim_check_run` tries: each it loses went to another
/// instance, or waits for its connection's held run.
const CLAIM_CANDIDATES: i64 = 8;

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = check_runs, treat_none_as_null = true)]
struct RunRow {
    id: String,
    organization_id: String,
    connection_id: String,
    provider: String,
    trigger_kind: String,
    status: String,
    requested_by: Option<String>,
    period: Option<i64>,
    queued_at: PrimitiveDateTime,
    started_at: Option<PrimitiveDateTime>,
    finished_at: Option<PrimitiveDateTime>,
    lease_until: Option<PrimitiveDateTime>,
    attempts: i32,
    error: Option<String>,
    passed: i32,
    failed: i32,
    errors: i32,
    not_applicable: i32,
    population_digest: Option<String>,
    source: String,
}

fn count(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn uncount(n: i32) -> u32 {
    u32::try_from(n).unwrap_or_default()
}

impl From<&CheckRun> for RunRow {
    fn from(r: &CheckRun) -> Self {
        Self {
            id: r.id.to_string(),
            organization_id: r.organization_id.to_string(),
            connection_id: r.connection_id.to_string(),
            provider: r.provider.clone(),
            trigger_kind: r.trigger.to_string(),
            status: r.status.to_string(),
            requested_by: r.requested_by.as_ref().map(ToString::to_string),
            period: r.period,
            queued_at: naive(r.queued_at),
            started_at: optional_naive(r.started_at),
            finished_at: optional_naive(r.finished_at),
            lease_until: optional_naive(r.lease_until),
            attempts: count(r.attempts),
            error: r.error.clone(),
            passed: count(r.counts.pass),
            failed: count(r.counts.fail),
            errors: count(r.counts.error),
            not_applicable: count(r.counts.not_applicable),
            population_digest: r.population_digest.clone(),
            source: r.source.to_string(),
        }
    }
}

impl TryFrom<RunRow> for CheckRun {
    type Error = RepoError;
    fn try_from(r: RunRow) -> Result<Self, RepoError> {
        Ok(Self {
            id: id("check_runs", r.id)?,
            organization_id: id("check_runs", r.organization_id)?,
            connection_id: id("check_runs", r.connection_id)?,
            provider: r.provider,
            trigger: value("check_runs", &r.trigger_kind)?,
            source: value("check_runs", &r.source)?,
            status: value("check_runs", &r.status)?,
            requested_by: optional_id("check_runs", r.requested_by)?,
            period: r.period,
            queued_at: instant(r.queued_at),
            started_at: optional_instant(r.started_at),
            finished_at: optional_instant(r.finished_at),
            lease_until: optional_instant(r.lease_until),
            attempts: uncount(r.attempts),
            error: r.error,
            counts: OutcomeCounts {
                pass: uncount(r.passed),
                fail: uncount(r.failed),
                error: uncount(r.errors),
                not_applicable: uncount(r.not_applicable),
            },
            population_digest: r.population_digest,
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = check_results)]
struct ResultRow {
    run_id: String,
    position: i32,
    organization_id: String,
    check_id: String,
    resource_type: String,
    resource_id: String,
    resource_name: String,
    region: Option<String>,
    outcome: String,
    detail: String,
    failure_code: Option<String>,
    failure_message: Option<String>,
    failure_action: Option<String>,
}

impl ResultRow {
    fn of(run: &CheckRun, position: usize, r: &CheckResult) -> Self {
        let failure = r.failure.as_ref();
        Self {
            run_id: run.id.to_string(),
            position: i32::try_from(position).unwrap_or(i32::MAX),
            organization_id: run.organization_id.to_string(),
            check_id: r.check_id.clone(),
            resource_type: r.resource.kind.clone(),
            resource_id: r.resource.id.clone(),
            resource_name: r.resource.name.clone(),
            region: r.resource.region.clone(),
            outcome: r.outcome.to_string(),
            detail: r.detail.clone(),
            failure_code: failure.map(|f| f.code.clone()),
            failure_message: failure.map(|f| f.message.clone()),
            failure_action: failure.map(|f| f.action.clone()),
        }
    }
}

impl TryFrom<ResultRow> for CheckResult {
    type Error = RepoError;
    fn try_from(r: ResultRow) -> Result<Self, RepoError> {
        let failure = match (r.failure_code, r.failure_message, r.failure_action) {
            (Some(code), Some(message), Some(action)) => Some(ReadFailure { code, message, action }),
            _ => None,
        };
        Ok(Self {
            check_id: r.check_id,
            resource: CheckedResource {
                kind: r.resource_type,
                id: r.resource_id,
                name: r.resource_name,
                region: r.region,
            },
            outcome: value("check_results", &r.outcome)?,
            detail: r.detail,
            failure,
        })
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = findings, treat_none_as_null = true)]
pub(crate) struct FindingRow {
    id: String,
    organization_id: String,
    connection_id: String,
    check_id: String,
    resource_type: String,
    resource_id: String,
    resource_name: String,
    region: String,
    severity: String,
    status: String,
    detail: String,
    first_seen_at: PrimitiveDateTime,
    last_seen_at: PrimitiveDateTime,
    resolved_at: Option<PrimitiveDateTime>,
    due_at: PrimitiveDateTime,
    last_run_id: String,
    exception_reason: Option<String>,
    exception_expires_at: Option<PrimitiveDateTime>,
    exception_by: Option<String>,
    exception_at: Option<PrimitiveDateTime>,
    task_id: Option<String>,
    updated_at: PrimitiveDateTime,
}

impl From<&Finding> for FindingRow {
    fn from(f: &Finding) -> Self {
        let exception = f.exception.as_ref();
        Self {
            id: f.id.to_string(),
            organization_id: f.organization_id.to_string(),
            connection_id: f.connection_id.to_string(),
            check_id: f.check_id.clone(),
            resource_type: f.resource.kind.clone(),
            resource_id: f.resource.id.clone(),
            resource_name: f.resource.name.clone(),
            region: f.resource.region.clone().unwrap_or_default(),
            severity: f.severity.to_string(),
            status: f.status.to_string(),
            detail: f.detail.clone(),
            first_seen_at: naive(f.first_seen_at),
            last_seen_at: naive(f.last_seen_at),
            resolved_at: optional_naive(f.resolved_at),
            due_at: naive(f.due_at),
            last_run_id: f.last_run_id.to_string(),
            exception_reason: exception.map(|e| e.reason.clone()),
            exception_expires_at: exception.map(|e| naive(e.expires_at)),
            exception_by: exception.map(|e| e.granted_by.to_string()),
            exception_at: exception.map(|e| naive(e.granted_at)),
            task_id: f.task_id.as_ref().map(ToString::to_string),
            updated_at: naive(f.updated_at),
        }
    }
}

impl TryFrom<FindingRow> for Finding {
    type Error = RepoError;
    fn try_from(r: FindingRow) -> Result<Self, RepoError> {
        let exception = match (r.exception_reason, r.exception_expires_at, r.exception_by, r.exception_at) {
            (Some(reason), Some(expires_at), Some(by), Some(at)) => Some(FindingException {
                reason,
                expires_at: instant(expires_at),
                granted_by: id("findings", by)?,
                granted_at: instant(at),
            }),
            _ => None,
        };
        Ok(Self {
            id: id("findings", r.id)?,
            organization_id: id("findings", r.organization_id)?,
            connection_id: id("findings", r.connection_id)?,
            check_id: r.check_id,
            resource: CheckedResource {
                kind: r.resource_type,
                id: r.resource_id,
                name: r.resource_name,
                region: Some(r.region).filter(|region| !region.is_empty()),
            },
            severity: value("findings", &r.severity)?,
            status: value("findings", &r.status)?,
            detail: r.detail,
            first_seen_at: instant(r.first_seen_at),
            last_seen_at: instant(r.last_seen_at),
            resolved_at: optional_instant(r.resolved_at),
            due_at: instant(r.due_at),
            last_run_id: id("findings", r.last_run_id)?,
            exception,
            task_id: optional_id("findings", r.task_id)?,
            updated_at: instant(r.updated_at),
        })
    }
}

/// The organization's runs that match every filter of `query`.
fn runs_matching<DB: ListBackend>(
    matching: check_runs::BoxedQuery<'static, DB>,
    org: &str,
    query: &CheckRunQuery,
) -> check_runs::BoxedQuery<'static, DB> {
    let CheckRunFilter { connection, status, trigger } = &query.filter;
    let conditions = [
        text_in(check_runs::connection_id, connection),
        text_in(check_runs::status, status),
        text_in(check_runs::trigger_kind, trigger),
        time_range(&query.times, check_runs::queued_at, None::<check_runs::queued_at>),
    ];
    let mut matching = matching.filter(check_runs::organization_id.eq(DB::text(org.to_owned())));
    for condition in conditions.into_iter().flatten() {
        matching = matching.filter(condition);
    }
    matching
}

fn run_order<DB: ListBackend>(query: &CheckRunQuery) -> SortColumns<check_runs::table, DB> {
    let column = |field| match field {
        CheckRunSort::QueuedAt => SortColumn::time(check_runs::queued_at),
    };
    sort_columns(&query.sort_keys(CheckRunSort::QueuedAt), column, check_runs::id)
}

/// The organization's findings that match every filter of `query`.
fn findings_matching<DB: ListBackend>(
    matching: findings::BoxedQuery<'static, DB>,
    org: &str,
    query: &FindingQuery,
) -> findings::BoxedQuery<'static, DB> {
    let FindingFilter { status, severity, check, connection } = &query.filter;
    let conditions = [
        text_in(findings::status, status),
        text_in(findings::severity, severity),
        text_in(findings::check_id, check),
        text_in(findings::connection_id, connection),
        time_range(&query.times, findings::first_seen_at, Some(findings::updated_at)),
        finding_search(query),
    ];
    let mut matching = matching.filter(findings::organization_id.eq(DB::text(org.to_owned())));
    for condition in conditions.into_iter().flatten() {
        matching = matching.filter(condition);
    }
    matching
}

/// `q`: every word, without case, in the resource's name or id, the check's id or the detail.
/// Findings are short records of our own words, so a substring match serves; no relevance order.
fn finding_search<DB: ListBackend>(query: &FindingQuery) -> Option<Condition<findings::table, DB>> {
    let words = &query.search.as_ref()?.words;
    if words.is_empty() {
        // A `q` of no words matches nothing, as every list's search.
        return Some(Box::new(diesel::dsl::sql::<diesel::sql_types::Bool>("1 = 0")));
    }
    let word_matches = |word: &String| -> Option<Condition<findings::table, DB>> {
        any_of([
            DB::contains(Box::new(lower(findings::resource_name)), word),
            DB::contains(Box::new(lower(findings::resource_id)), word),
            DB::contains(Box::new(lower(findings::check_id)), word),
            DB::contains(Box::new(lower(findings::detail)), word),
        ])
    };
    words.iter().map(word_matches).fold(None, and)
}

fn finding_order<DB: ListBackend>(query: &FindingQuery) -> SortColumns<findings::table, DB> {
    let column = |field| match field {
        FindingSort::LastSeenAt => SortColumn::time(findings::last_seen_at),
        FindingSort::FirstSeenAt => SortColumn::time(findings::first_seen_at),
        FindingSort::DueAt => SortColumn::time(findings::due_at),
    };
    sort_columns(&query.sort_keys(FindingSort::LastSeenAt), column, findings::id)
}

fn finding_sort_value(finding: &Finding, field: FindingSort) -> SortValue {
    SortValue::Time(match field {
        FindingSort::LastSeenAt => finding.last_seen_at,
        FindingSort::FirstSeenAt => finding.first_seen_at,
        FindingSort::DueAt => finding.due_at,
    })
}

/// A second running run of one connection violates check_runs_one_running: the claim lost.
fn lost_claim(error: &DieselError) -> bool {
    matches!(error, DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _))
}

#[async_trait]
impl CheckRunRepository for Store {
    async fn queue_check_run(&self, run: &CheckRun, audit: &AuditOf<'_, CheckRun>) -> Result<(), RepoError> {
        let row = RunRow::from(run);
        let mut conn = self.pools.write().await?;
        let result: Result<(), DieselError> = write_transaction!(&mut conn, async |c| {
            diesel::insert_into(check_runs::table).values(&row).execute(c).await?;
            c.append(audit(None, Some(run))).await?;
            Ok(())
        });
        result.map_err(|error| match lost_claim(&error) {
            true => RepoError::Conflict("a run of this connection is already queued: it runs soon".into()),
            false => repo_error(error),
        })
    }

    async fn due_connections(
        &self,
        providers: &[&str],
        period: i64,
        limit: usize,
    ) -> Result<Vec<Connection>, RepoError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut conn = self.pools.read().await?;
        let rows: Vec<ConnectionRow> = db_run!(&mut conn, |c| {
            let scheduled = check_runs::table
                .filter(check_runs::connection_id.eq(connections::id))
                .filter(check_runs::period.eq(period))
                .select(check_runs::id);
            connections::table
                .filter(connections::status.eq(ACTIVE))
                .filter(connections::provider.eq_any(providers))
                .filter(diesel::dsl::not(diesel::dsl::exists(scheduled)))
                .order((connections::created_at.asc(), connections::id.asc()))
                .limit(limit)
                .select(ConnectionRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        rows.into_iter().map(Connection::try_from).collect()
    }

    async fn queue_scheduled(&self, runs: &[CheckRun]) -> Result<usize, RepoError> {
        let rows: Vec<RunRow> = runs.iter().map(RunRow::from).collect();
        let mut conn = self.pools.write().await?;
        let result: Result<usize, DieselError> = write_transaction!(&mut conn, async |c| {
            let mut queued = 0;
            for row in &rows {
                queued +=
                    diesel::insert_into(check_runs::table).values(row).on_conflict_do_nothing().execute(c).await?;
            }
            Ok(queued)
        });
        result.map_err(repo_error)
    }

    async fn claim_check_run(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        skip_orgs: &[OrganizationId],
        skip_providers: &[String],
    ) -> Result<Option<CheckRun>, RepoError> {
        let (now, lease_until) = (naive(now), naive(lease_until));
        let skip: Vec<&str> = skip_orgs.iter().map(OrganizationId::as_str).collect();
        let waiting =
            || check_runs::status.eq(QUEUED).or(check_runs::status.eq(RUNNING).and(check_runs::lease_until.lt(now)));
        let candidates: Vec<String> = {
            let mut conn = self.pools.read().await?;
            db_run!(&mut conn, |c| {
                check_runs::table
                    .filter(waiting())
                    // The connection has no other run held under a live lease: the candidates are
                    // runs that can start, so one tenant's runs waiting for their connection's
                    // never fill the window.
                    .filter(
                        diesel::dsl::sql::<diesel::sql_types::Bool>(
                            "NOT EXISTS (SELECT 1 FROM check_runs AS held WHERE held.connection_id = \
                             check_runs.connection_id AND held.id <> check_runs.id AND held.status = 'running' \
                             AND held.lease_until >= ",
                        )
                        .bind::<diesel::sql_types::Timestamp, _>(now)
                        .sql(")"),
                    )
                    .filter(check_runs::organization_id.ne_all(&skip))
                    .filter(check_runs::provider.ne_all(skip_providers))
                    .order((check_runs::queued_at.asc(), check_runs::id.asc()))
                    .limit(CLAIM_CANDIDATES)
                    .select(check_runs::id)
                    .load(c)
                    .await
            })
            .map_err(repo_error)?
        };
        // Each candidate in its own transaction: the conditional update is the claim, and the
        // unique index of running runs (one per connection) refuses a second run of a connection
        // whose run another instance holds, which rolls back only that attempt.
        for candidate in candidates {
            let mut conn = self.pools.write().await?;
            let claimed: Result<Option<RunRow>, DieselError> = write_transaction!(&mut conn, async |c| {
                diesel::update(check_runs::table.filter(check_runs::id.eq(&candidate)).filter(waiting()))
                    .set((
                        check_runs::status.eq(RUNNING),
                        check_runs::started_at.eq(now),
                        check_runs::lease_until.eq(lease_until),
                        check_runs::attempts.eq(check_runs::attempts + 1),
                    ))
                    .returning(RunRow::as_returning())
                    .get_result(c)
                    .await
                    .optional()
            });
            match claimed {
                Ok(Some(row)) => return row.try_into().map(Some),
                Ok(None) => {}
                Err(error) if lost_claim(&error) => {}
                Err(error) => return Err(repo_error(error)),
            }
        }
        Ok(None)
    }

    async fn connection_findings(
        &self,
        org: &OrganizationId,
        connection: &ConnectionId,
    ) -> Result<Vec<Finding>, RepoError> {
        let mut conn = self.pools.read().await?;
        let rows: Vec<FindingRow> = db_run!(&mut conn, |c| {
            findings::table
                .filter(findings::organization_id.eq(org.as_str()))
                .filter(findings::connection_id.eq(connection.as_str()))
                .select(FindingRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        rows.into_iter().map(Finding::try_from).collect()
    }

    async fn finish_check_run(
        &self,
        run: &CheckRun,
        results: &[CheckResult],
        changes: &FindingChanges,
        finding_entries: Vec<AuditDraft>,
        evidence: &[Observation],
        audit: &AuditOf<'_, CheckRun>,
    ) -> Result<(), RepoError> {
        self.store_done(Done::Claimed, run, results, changes, finding_entries, evidence, audit).await
    }

    async fn fail_check_run(&self, run: &CheckRun, audit: &AuditOf<'_, CheckRun>) -> Result<(), RepoError> {
        self.store_done(Done::Claimed, run, &[], &FindingChanges::default(), Vec::new(), &[], audit).await
    }

    async fn release_check_runs(&self, runs: &[(CheckRunId, u32)]) -> Result<(), RepoError> {
        let mut conn = self.pools.write().await?;
        for (id, attempts) in runs {
            // Only a run this claim still holds: one claimed again elsewhere after its lease lapsed
            // is that instance's.
            db_run!(&mut conn, |c| {
                diesel::update(
                    check_runs::table
                        .filter(check_runs::id.eq(id.as_str()))
                        .filter(check_runs::status.eq(RUNNING))
                        .filter(check_runs::attempts.eq(count(*attempts))),
                )
                .set((
                    check_runs::status.eq(QUEUED),
                    check_runs::lease_until.eq(None::<PrimitiveDateTime>),
                    check_runs::attempts.eq(check_runs::attempts - 1),
                ))
                .execute(c)
                .await
            })
            .map_err(repo_error)?;
        }
        Ok(())
    }

    async fn get_check_run(&self, org: &OrganizationId, id: &CheckRunId) -> Result<CheckRun, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: RunRow = db_run!(&mut conn, |c| {
            check_runs::table
                .filter(check_runs::organization_id.eq(org.as_str()))
                .filter(check_runs::id.eq(id.as_str()))
                .select(RunRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn list_check_runs(&self, org: &OrganizationId, query: &CheckRunQuery) -> Result<Page<CheckRun>, RepoError> {
        let (org, matching) = (org.to_string(), query.clone());
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<RunRow>, _) = read_page!(
            &mut conn,
            &query.page,
            runs_matching(check_runs::table.into_boxed(), &org, &matching),
            RunRow::as_select(),
            run_order(&matching),
            None,
        )
        .map_err(repo_error)?;
        let runs = rows.into_iter().map(CheckRun::try_from).collect::<Result<Vec<_>, RepoError>>()?;
        Ok(Page::from_rows(runs, &query.page, total, |run| Cursor::newest_first(run.queued_at, run.id.to_string())))
    }

    async fn check_results_of(
        &self,
        org: &OrganizationId,
        run: &CheckRunId,
        page: &PageRequest,
    ) -> Result<Page<CheckResult>, RepoError> {
        let after = match &page.after {
            None => -1,
            Some(cursor) => {
                cursor.id.parse::<i32>().map_err(|_| RepoError::Conflict("the cursor is not a result's".into()))?
            }
        };
        let limit = page.rows_to_load();
        let of_run = || {
            check_results::table
                .filter(check_results::organization_id.eq(org.as_str()))
                .filter(check_results::run_id.eq(run.as_str()))
        };
        let mut conn = self.pools.read().await?;
        let rows: Vec<ResultRow> = db_run!(&mut conn, |c| {
            of_run()
                .filter(check_results::position.gt(after))
                .order(check_results::position.asc())
                .limit(limit)
                .select(ResultRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        let total: i64 = db_run!(&mut conn, |c| of_run().count().get_result(c).await).map_err(repo_error)?;
        let rows: Vec<(i32, CheckResult)> = rows
            .into_iter()
            .map(|row| Ok((row.position, CheckResult::try_from(row)?)))
            .collect::<Result<_, RepoError>>()?;
        let total = u64::try_from(total).unwrap_or_default();
        let page = Page::from_rows(rows, page, Some(total), |(position, _)| Cursor {
            values: Vec::new(),
            id: position.to_string(),
        });
        Ok(page.map(|(_, result)| result))
    }

    async fn list_findings(&self, org: &OrganizationId, query: &FindingQuery) -> Result<Page<Finding>, RepoError> {
        let (org, matching) = (org.to_string(), query.clone());
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<FindingRow>, _) = read_page!(
            &mut conn,
            &query.page,
            findings_matching(findings::table.into_boxed(), &org, &matching),
            FindingRow::as_select(),
            finding_order(&matching),
            None,
        )
        .map_err(repo_error)?;
        let items = rows.into_iter().map(Finding::try_from).collect::<Result<Vec<_>, RepoError>>()?;
        let keys = query.sort_keys(FindingSort::LastSeenAt);
        Ok(Page::from_rows(items, &query.page, total, |finding| Cursor {
            values: keys.iter().map(|key| finding_sort_value(finding, key.field)).collect(),
            id: finding.id.to_string(),
        }))
    }

    async fn get_finding(&self, org: &OrganizationId, id: &FindingId) -> Result<Finding, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: FindingRow = db_run!(&mut conn, |c| {
            findings::table
                .filter(findings::organization_id.eq(org.as_str()))
                .filter(findings::id.eq(id.as_str()))
                .select(FindingRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn update_finding(
        &self,
        finding: &Finding,
        read_at: Timestamp,
        audit: &AuditOf<'_, Finding>,
    ) -> Result<(), RepoError> {
        let row = FindingRow::from(finding);
        let read_at = naive(read_at);
        let mut conn = self.pools.write().await?;
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            let the_finding = || {
                findings::table
                    .filter(findings::organization_id.eq(&row.organization_id))
                    .filter(findings::id.eq(&row.id))
                    .filter(findings::updated_at.eq(read_at))
            };
            let before: Option<FindingRow> =
                Locked(the_finding().select(FindingRow::as_select())).get_result(c).await.optional()?;
            let Some(before) = before else { return Err(TxError::Repo(RepoError::NotFound)) };
            diesel::update(the_finding()).set(&row).execute(c).await?;
            c.append(audit(Some(&Finding::try_from(before)?), Some(finding))).await?;
            Ok(())
        });
        result.map_err(RepoError::from)
    }

    async fn record_imported_run(
        &self,
        run: &CheckRun,
        results: &[CheckResult],
        findings: &FindingChanges,
        finding_entries: Vec<AuditDraft>,
        evidence: &[Observation],
        audit: &AuditOf<'_, CheckRun>,
    ) -> Result<(), RepoError> {
        self.store_done(Done::Imported, run, results, findings, finding_entries, evidence, audit).await
    }

    async fn create_finding_task(
        &self,
        finding: &Finding,
        read_at: Timestamp,
        task: &Task,
        task_audit: &AuditOf<'_, Task>,
        finding_audit: &AuditOf<'_, Finding>,
    ) -> Result<(), RepoError> {
        self.insert_finding_task(finding, read_at, task, task_audit, finding_audit).await
    }

    async fn finding_deadlines(&self, org: &OrganizationId) -> Result<OrganizationDeadlines, RepoError> {
        self.read_finding_deadlines(org).await
    }

    async fn put_finding_deadlines(
        &self,
        deadlines: &OrganizationDeadlines,
        audit: &AuditOf<'_, OrganizationDeadlines>,
    ) -> Result<(), RepoError> {
        self.write_finding_deadlines(deadlines, audit).await
    }

    async fn lapsed_exceptions(&self, now: Timestamp, limit: usize) -> Result<Vec<Finding>, RepoError> {
        let (now, limit) = (naive(now), i64::try_from(limit).unwrap_or(i64::MAX));
        let mut conn = self.pools.read().await?;
        let rows: Vec<FindingRow> = db_run!(&mut conn, |c| {
            findings::table
                .filter(findings::status.eq(EXCEPTED))
                .filter(findings::exception_expires_at.le(now))
                .order((findings::exception_expires_at.asc(), findings::id.asc()))
                .limit(limit)
                .select(FindingRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        rows.into_iter().map(Finding::try_from).collect()
    }
}

impl Store {
    /// Stores a run that is done (finished or failed) with what it found, if the claim it was
    /// read with still holds it (`running`, the same `attempts`, locked); else NotFound, nothing written.
    #[expect(clippy::too_many_arguments, reason = "the one transaction's parts, each a port argument")]
    async fn store_done(
        &self,
        how: Done,
        run: &CheckRun,
        results: &[CheckResult],
        changes: &FindingChanges,
        finding_entries: Vec<AuditDraft>,
        evidence: &[Observation],
        audit: &AuditOf<'_, CheckRun>,
    ) -> Result<(), RepoError> {
        let row = RunRow::from(run);
        let done_at = run.finished_at.unwrap_or(run.queued_at);
        let result_rows: Vec<ResultRow> =
            results.iter().enumerate().map(|(position, r)| ResultRow::of(run, position, r)).collect();
        let opened: Vec<FindingRow> = changes.opened.iter().map(FindingRow::from).collect();
        let updated: Vec<(FindingRow, PrimitiveDateTime)> = changes
            .updated()
            .map(|finding| {
                let read_at = changes.read_at.get(&finding.id).copied().unwrap_or(finding.updated_at);
                (FindingRow::from(finding), naive(read_at))
            })
            .collect();
        let mut conn = self.pools.write().await?;
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            let before = match how {
                Done::Claimed => {
                    let held = check_runs::table
                        .filter(check_runs::organization_id.eq(&row.organization_id))
                        .filter(check_runs::id.eq(&row.id))
                        .filter(check_runs::status.eq(RUNNING))
                        .filter(check_runs::attempts.eq(row.attempts));
                    let before: Option<RunRow> =
                        Locked(held.select(RunRow::as_select())).get_result(c).await.optional()?;
                    let Some(before) = before else { return Err(TxError::Repo(RepoError::NotFound)) };
                    diesel::update(held).set(&row).execute(c).await?;
                    Some(CheckRun::try_from(before)?)
                }
                Done::Imported => {
                    diesel::insert_into(check_runs::table).values(&row).execute(c).await?;
                    None
                }
            };
            insert_results(c.any(), &result_rows).await?;
            insert_findings(c.any(), &opened).await?;
            for (finding, read_at) in &updated {
                // Only over the state the run read: an exception or a task link made meanwhile is
                // never undone (the worker reads the findings again and reconciles anew).
                let written = diesel::update(
                    findings::table
                        .filter(findings::organization_id.eq(&finding.organization_id))
                        .filter(findings::id.eq(&finding.id))
                        .filter(findings::updated_at.eq(read_at)),
                )
                .set(finding)
                .execute(c)
                .await?;
                if written == 0 {
                    return Err(TxError::Repo(RepoError::Conflict(
                        "a finding changed while the run was stored".into(),
                    )));
                }
            }
            c.append_many(finding_entries.clone()).await?;
            for observation in evidence {
                record_observation(c.any(), &row.organization_id, done_at, observation).await?;
            }
            c.append(audit(before.as_ref(), Some(run))).await?;
            Ok(())
        });
        result.map_err(RepoError::from)
    }
}

/// How a done run's row is written: over the claim that held it, or inserted whole (the run of an
/// imported file, never queued nor claimed).
#[derive(Clone, Copy)]
enum Done {
    Claimed,
    Imported,
}

async fn insert_results(conn: ConnRef<'_>, rows: &[ResultRow]) -> QueryResult<()> {
    insert_rows!(conn, check_results::table, rows)
}

async fn insert_findings(conn: ConnRef<'_>, rows: &[FindingRow]) -> QueryResult<()> {
    insert_rows!(conn, findings::table, rows)
}
