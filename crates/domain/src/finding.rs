//! Findings: every resource a check failed, from its first failure until a later run passes it.
//! A run's results are reconciled with the connection's findings here ([`reconcile`]): a failure
//! opens one (or opens a resolved one again), a pass resolves it; an `error` or `not_applicable`
//! result changes nothing, since a resource that could not be read was neither fixed nor broken.
//! An exception accepts a finding's risk until it expires; the resource counts as passing until
//! then (docs/checks.md, "Findings").

use std::collections::HashMap;

use serde::Deserialize;

use crate::check::{CheckOutcome, CheckSeverity};
use crate::check_result::{CheckResult, CheckedResource};
use crate::task::{DESCRIPTION_MAX, NewTask, TITLE_MAX, Task};
use crate::validation::{FieldError, ValidationErrors};
use crate::{CheckRunId, ConnectionId, FindingId, MemberId, OrganizationId, TaskId, Timestamp, UserId};

crate::string_enum! {
    /// Where a finding stands.
    FindingStatus { Open = "open", Resolved = "resolved", Excepted = "excepted" }
}

/// An accepted risk: the finding counts as passing until `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingException {
    /// Why the risk is accepted.
    pub reason: String,
    /// When the acceptance ends and the finding is open again (if its resource still fails).
    pub expires_at: Timestamp,
    /// Who accepted it.
    pub granted_by: UserId,
    /// When.
    pub granted_at: Timestamp,
}

/// A resource a check failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// `fnd_…`.
    pub id: FindingId,
    /// The organization.
    pub organization_id: OrganizationId,
    /// The connection whose run found it.
    pub connection_id: ConnectionId,
    /// The check that failed.
    pub check_id: String,
    /// The resource that failed it.
    pub resource: CheckedResource,
    /// The check's severity.
    pub severity: CheckSeverity,
    /// Open, resolved or excepted.
    pub status: FindingStatus,
    /// The last failing result's detail.
    pub detail: String,
    /// The first failure (of this finding's whole life, across reopenings).
    pub first_seen_at: Timestamp,
    /// The last run that failed it.
    pub last_seen_at: Timestamp,
    /// When a run last passed it, while resolved.
    pub resolved_at: Option<Timestamp>,
    /// When it should be fixed by, from the organization's deadline for its severity.
    pub due_at: Timestamp,
    /// The run that last changed it.
    pub last_run_id: CheckRunId,
    /// The accepted risk, while excepted.
    pub exception: Option<FindingException>,
    /// The task made to fix it, if one was.
    pub task_id: Option<TaskId>,
    /// When it last changed (a run, an exception, a task).
    pub updated_at: Timestamp,
}

/// How long a finding of each severity may stay open: its `dueAt` is its opening plus this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FindingDeadlines {
    /// Days for a critical finding.
    pub critical_days: u32,
    /// Days for a high one.
    pub high_days: u32,
    /// Days for a medium one.
    pub medium_days: u32,
    /// Days for a low one.
    pub low_days: u32,
}

impl Default for FindingDeadlines {
    /// 7, 30, 90 and 180 days: the windows vulnerability-management policies commonly set.
    fn default() -> Self {
        Self { critical_days: 7, high_days: 30, medium_days: 90, low_days: 180 }
    }
}

/// The body of `POST /v1/findings/{id}/task`: who fixes the finding and by when. The title,
/// description and due date default to the finding's own (its check and resource, the failure and
/// how to fix it, its `dueAt`).
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewFindingTask {
    /// 1 to 255 characters; "Fix" with the check's title and the resource's name when omitted.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 255))]
    pub title: Option<String>,
    /// Up to 10,000 characters; the finding's resource, failure and remediation when omitted.
    #[cfg_attr(feature = "openapi", schema(max_length = 10000))]
    pub description: Option<String>,
    /// The member responsible for it: an active member of the organization.
    pub assignee_id: Option<MemberId>,
    /// The member who approves it: an active member of the organization.
    pub approver_id: Option<MemberId>,
    /// When it is due (RFC 3339); the finding's `dueAt` when omitted.
    pub due_at: Option<Timestamp>,
}

impl Finding {
    /// The task that fixes this finding, linked to it (`finding_id`): what `input` names, the
    /// rest from the finding, its check's title and remediation (`check_title` is the check's id
    /// for a check outside the catalog).
    pub fn task(
        &self,
        check_title: &str,
        remediation: &str,
        input: NewFindingTask,
        now: Timestamp,
    ) -> Result<Task, ValidationErrors> {
        let title =
            input.title.unwrap_or_else(|| cut(&format!("Fix {check_title}: {}", self.resource.name), TITLE_MAX));
        let description = input.description.unwrap_or_else(|| self.task_description(remediation));
        let body = NewTask {
            title: Some(title),
            description: Some(description),
            status: None,
            assignee_id: input.assignee_id,
            approver_id: input.approver_id,
            frequency: None,
            due_at: Some(input.due_at.unwrap_or(self.due_at)),
        };
        let mut task = Task::create(self.organization_id.clone(), body, now)?;
        task.finding_id = Some(self.id.clone());
        Ok(task)
    }

    /// What failed, where, and how to fix it, within a task's description.
    fn task_description(&self, remediation: &str) -> String {
        let r = &self.resource;
        let region = r.region.as_deref().map(|region| format!(" in {region}")).unwrap_or_default();
        let text = format!(
            "Finding {} of check {}: {} {} ({}){region}.\n\n{}\n\nHow to fix it:\n{remediation}",
            self.id, self.check_id, r.kind, r.name, r.id, self.detail,
        );
        cut(&text, DESCRIPTION_MAX)
    }
}

/// `text`, at most `max` characters.
fn cut(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// An organization's finding deadlines as kept: `updated_at` is `None` while the defaults hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrganizationDeadlines {
    /// Whose they are.
    pub organization_id: OrganizationId,
    /// The days per severity.
    pub deadlines: FindingDeadlines,
    /// When an owner or admin last set them; `None`: never (the defaults).
    pub updated_at: Option<Timestamp>,
}

/// The most days an organization may give a finding of any severity: a year.
pub const DEADLINE_DAYS_MAX: u32 = 365;

/// The body of `PUT /v1/findings/deadlines`: the days of every severity, all four named, so that
/// what is in force is always what was last written whole.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewFindingDeadlines {
    /// Days a critical finding may stay open: 1 to 365.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 365))]
    #[serde(deserialize_with = "crate::whole_number")]
    pub critical_days: i64,
    /// Days for a high one: 1 to 365.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 365))]
    #[serde(deserialize_with = "crate::whole_number")]
    pub high_days: i64,
    /// Days for a medium one: 1 to 365.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 365))]
    #[serde(deserialize_with = "crate::whole_number")]
    pub medium_days: i64,
    /// Days for a low one: 1 to 365.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 365))]
    #[serde(deserialize_with = "crate::whole_number")]
    pub low_days: i64,
}

impl FindingDeadlines {
    /// The organization's deadlines from a body, every one 1 to [`DEADLINE_DAYS_MAX`] days. No
    /// order between severities is imposed: a policy may give a low finding less time than a
    /// medium one, and that is its owners' call.
    pub fn new(input: &NewFindingDeadlines) -> Result<Self, ValidationErrors> {
        let days = |field: &'static str, value: i64| {
            u32::try_from(value)
                .ok()
                .filter(|days| (1..=DEADLINE_DAYS_MAX).contains(days))
                .ok_or_else(|| FieldError::new(field, format!("must be 1 to {DEADLINE_DAYS_MAX} days")))
        };
        let all = [
            days("criticalDays", input.critical_days),
            days("highDays", input.high_days),
            days("mediumDays", input.medium_days),
            days("lowDays", input.low_days),
        ];
        let errors: Vec<FieldError> = all.iter().filter_map(|day| day.as_ref().err().cloned()).collect();
        ValidationErrors::into_result(errors)?;
        let [critical_days, high_days, medium_days, low_days] = all.map(|day| day.unwrap_or_default());
        Ok(Self { critical_days, high_days, medium_days, low_days })
    }

    /// When a finding of `severity` opened at `opened` is due.
    pub fn due(&self, severity: CheckSeverity, opened: Timestamp) -> Timestamp {
        let days = match severity {
            CheckSeverity::Critical => self.critical_days,
            CheckSeverity::High => self.high_days,
            CheckSeverity::Medium => self.medium_days,
            CheckSeverity::Low => self.low_days,
        };
        opened.plus(time::Duration::days(i64::from(days)))
    }
}

/// What a run changes in its connection's findings.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FindingChanges {
    /// Findings seen for the first time.
    pub opened: Vec<Finding>,
    /// Resolved findings that failed again.
    pub reopened: Vec<Finding>,
    /// Findings a pass resolved.
    pub resolved: Vec<Finding>,
    /// Open or excepted findings that failed again (their `lastSeenAt` and detail move).
    pub seen_again: Vec<Finding>,
    /// Excepted findings that failed again after their exception ended: open again.
    pub exception_expired: Vec<Finding>,
    /// The `updatedAt` each changed finding (all but the opened) was read with: the store writes
    /// a change only over that state, so an exception granted meanwhile is never undone.
    pub read_at: HashMap<FindingId, Timestamp>,
}

impl FindingChanges {
    /// Every finding to write.
    pub fn all(&self) -> impl Iterator<Item = &Finding> {
        self.opened.iter().chain(self.updated())
    }

    /// The findings that existed before the run, as it changed them.
    pub fn updated(&self) -> impl Iterator<Item = &Finding> {
        self.reopened.iter().chain(&self.resolved).chain(&self.seen_again).chain(&self.exception_expired)
    }
}

/// Why a finding whose resource a check no longer sees is resolved.
pub const NO_LONGER_SEEN: &str = "the resource is no longer in the check's population (removed, or out of its period)";

/// What identifies a finding's resource across runs.
type ResourceKey<'a> = (&'a str, &'a str, &'a str, Option<&'a str>);

fn key_of<'a>(check_id: &'a str, resource: &'a CheckedResource) -> ResourceKey<'a> {
    (check_id, resource.kind.as_str(), resource.id.as_str(), resource.region.as_deref())
}

/// The run context [`reconcile`] stamps on what it changes.
#[derive(Debug, Clone)]
pub struct RunContext<'a> {
    /// The organization.
    pub organization_id: &'a OrganizationId,
    /// The connection.
    pub connection_id: &'a ConnectionId,
    /// The run.
    pub run_id: &'a CheckRunId,
    /// When it finished.
    pub now: Timestamp,
    /// The organization's deadlines.
    pub deadlines: FindingDeadlines,
}

/// The changes a run's `results` make to `existing` (every finding of the connection). `read`
/// names the checks the run read: an open or excepted finding of one of them that could read its
/// whole population (no `error` result) and no longer saw the resource is resolved. `severity`
/// gives each check's severity (the catalog's, or an imported check's). `results` hold one result
/// per resource (see `check_result::normalize`).
pub fn reconcile(
    existing: &[Finding],
    results: &[CheckResult],
    read: &[String],
    severity: impl Fn(&str) -> CheckSeverity,
    run: &RunContext<'_>,
) -> FindingChanges {
    let known: HashMap<ResourceKey<'_>, &Finding> =
        existing.iter().map(|finding| (key_of(&finding.check_id, &finding.resource), finding)).collect();
    let mut changes = FindingChanges::default();
    let mut seen_keys: std::collections::HashSet<ResourceKey<'_>> = std::collections::HashSet::new();
    let mut unreadable: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for result in results {
        seen_keys.insert(key_of(&result.check_id, &result.resource));
        if result.outcome == CheckOutcome::Error {
            unreadable.insert(read_as(&result.check_id));
        }
    }
    for result in results {
        let found = known.get(&key_of(&result.check_id, &result.resource)).copied();
        match (result.outcome, found) {
            (CheckOutcome::Fail, None) => changes.opened.push(open(result, severity(&result.check_id), run)),
            (CheckOutcome::Fail, Some(finding)) if finding.status == FindingStatus::Resolved => {
                changes.reopened.push(Finding {
                    status: FindingStatus::Open,
                    resolved_at: None,
                    due_at: run.deadlines.due(finding.severity, run.now),
                    ..seen(finding, result, run)
                });
            }
            (CheckOutcome::Fail, Some(finding)) => {
                let again = seen(finding, result, run);
                match finding.status == FindingStatus::Excepted && again.status == FindingStatus::Open {
                    true => changes.exception_expired.push(again),
                    false => changes.seen_again.push(again),
                }
            }
            (CheckOutcome::Pass, Some(finding)) if finding.status != FindingStatus::Resolved => {
                changes.resolved.push(resolved(finding, None, run));
            }
            _ => {}
        }
    }
    let gone = existing.iter().filter(|finding| {
        let reader = read_as(&finding.check_id);
        finding.status != FindingStatus::Resolved
            && read.iter().any(|check| check == reader)
            && !unreadable.contains(reader)
            && !seen_keys.contains(&key_of(&finding.check_id, &finding.resource))
    });
    for finding in gone {
        changes.resolved.push(resolved(finding, Some(NO_LONGER_SEEN), run));
    }
    changes.read_at = changes
        .updated()
        .filter_map(|after| {
            existing.iter().find(|before| before.id == after.id).map(|before| (after.id.clone(), before.updated_at))
        })
        .collect();
    changes
}

/// The check whose reading reports `check_id` (a FleetDM policy's is `fleetdm.policies`): a
/// policy deleted in Fleet is no longer seen, and its findings resolve like any resource's.
fn read_as(check_id: &str) -> &str {
    crate::check::reading(check_id).map_or(check_id, |check| check.id.as_str())
}

/// `finding` resolved by this run: a pass, or (`why`) its resource no longer seen.
fn resolved(finding: &Finding, why: Option<&str>, run: &RunContext<'_>) -> Finding {
    Finding {
        status: FindingStatus::Resolved,
        resolved_at: Some(run.now),
        exception: None,
        detail: why.map_or_else(|| finding.detail.clone(), str::to_owned),
        updated_at: run.now,
        last_run_id: run.run_id.clone(),
        ..finding.clone()
    }
}

fn open(result: &CheckResult, severity: CheckSeverity, run: &RunContext<'_>) -> Finding {
    Finding {
        id: FindingId::generate(),
        organization_id: run.organization_id.clone(),
        connection_id: run.connection_id.clone(),
        check_id: result.check_id.clone(),
        resource: result.resource.clone(),
        severity,
        status: FindingStatus::Open,
        detail: result.detail.clone(),
        first_seen_at: run.now,
        last_seen_at: run.now,
        resolved_at: None,
        due_at: run.deadlines.due(severity, run.now),
        last_run_id: run.run_id.clone(),
        exception: None,
        task_id: None,
        updated_at: run.now,
    }
}

/// `finding` failed again in this run; an exception that lapsed makes it open.
fn seen(finding: &Finding, result: &CheckResult, run: &RunContext<'_>) -> Finding {
    let lapsed = finding.exception.as_ref().is_some_and(|e| e.expires_at <= run.now);
    Finding {
        detail: result.detail.clone(),
        resource: result.resource.clone(),
        last_seen_at: run.now,
        last_run_id: run.run_id.clone(),
        status: if lapsed { FindingStatus::Open } else { finding.status },
        exception: if lapsed { None } else { finding.exception.clone() },
        updated_at: run.now,
        ..finding.clone()
    }
}

impl Finding {
    /// Whether its resource counts as passing at `at`: an unexpired exception.
    pub fn excepted_at(&self, at: Timestamp) -> bool {
        self.status == FindingStatus::Excepted && self.exception.as_ref().is_some_and(|e| e.expires_at > at)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test fails loudly")]

    use super::*;

    fn resource(id: &str) -> CheckedResource {
        CheckedResource { kind: "aws.iam.user".into(), id: id.into(), name: id.into(), region: None }
    }

    fn result(id: &str, outcome: CheckOutcome) -> CheckResult {
        CheckResult::judged("aws.iam.user-console-mfa", resource(id), outcome, format!("{id}: {outcome}"))
    }

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap()
    }

    struct Fixture {
        org: OrganizationId,
        connection: ConnectionId,
        run: CheckRunId,
    }

    impl Fixture {
        fn new() -> Self {
            Self { org: OrganizationId::generate(), connection: ConnectionId::generate(), run: CheckRunId::generate() }
        }
        fn context(&self, now: &str) -> RunContext<'_> {
            RunContext {
                organization_id: &self.org,
                connection_id: &self.connection,
                run_id: &self.run,
                now: at(now),
                deadlines: FindingDeadlines::default(),
            }
        }
    }

    fn high(_: &str) -> CheckSeverity {
        CheckSeverity::High
    }

    fn read() -> Vec<String> {
        vec!["aws.iam.user-console-mfa".to_owned()]
    }

    #[test]
    fn a_failure_opens_a_pass_resolves_and_a_new_failure_reopens_with_a_new_due_date() {
        let fixture = Fixture::new();
        let first = reconcile(
            &[],
            &[result("alice", CheckOutcome::Fail), result("bob", CheckOutcome::Pass)],
            &read(),
            high,
            &fixture.context("2026-12-01T00:00:00Z"),
        );
        assert_eq!(first.opened.len(), 1);
        let alice = &first.opened[0];
        assert_eq!((alice.resource.id.as_str(), alice.status), ("alice", FindingStatus::Open));
        assert_eq!(alice.due_at, at("2026-12-31T00:00:00Z"));

        let second = reconcile(
            &first.opened,
            &[result("alice", CheckOutcome::Pass)],
            &read(),
            high,
            &fixture.context("2026-12-02T00:00:00Z"),
        );
        assert_eq!(second.resolved.len(), 1);
        assert_eq!(second.resolved[0].resolved_at, Some(at("2026-12-02T00:00:00Z")));

        let third = reconcile(
            &second.resolved,
            &[result("alice", CheckOutcome::Fail)],
            &read(),
            high,
            &fixture.context("2026-12-05T00:00:00Z"),
        );
        let reopened = &third.reopened[0];
        assert_eq!((reopened.id.clone(), reopened.status), (alice.id.clone(), FindingStatus::Open));
        assert_eq!(reopened.first_seen_at, at("2026-12-01T00:00:00Z"));
        assert_eq!(reopened.due_at, at("2027-01-04T00:00:00Z"));
        assert_eq!(reopened.resolved_at, None);
    }

    #[test]
    fn errors_and_not_applicable_change_nothing() {
        let fixture = Fixture::new();
        let opened = reconcile(
            &[],
            &[result("alice", CheckOutcome::Fail)],
            &read(),
            high,
            &fixture.context("2026-12-01T00:00:00Z"),
        )
        .opened;
        let later = [result("alice", CheckOutcome::Error), result("carol", CheckOutcome::NotApplicable)];
        assert_eq!(
            reconcile(&opened, &later, &read(), high, &fixture.context("2026-12-02T00:00:00Z")),
            FindingChanges::default()
        );
    }

    #[test]
    fn an_exception_holds_until_it_expires_then_a_failure_opens_the_finding_again() {
        let fixture = Fixture::new();
        let mut finding = reconcile(
            &[],
            &[result("alice", CheckOutcome::Fail)],
            &read(),
            high,
            &fixture.context("2026-12-01T00:00:00Z"),
        )
        .opened
        .remove(0);
        finding.status = FindingStatus::Excepted;
        finding.exception = Some(FindingException {
            reason: "a service account; MFA is enforced by the identity provider".into(),
            expires_at: at("2026-12-10T00:00:00Z"),
            granted_by: UserId::generate(),
            granted_at: at("2026-12-01T00:00:00Z"),
        });
        assert!(finding.excepted_at(at("2026-12-09T00:00:00Z")));
        let before = reconcile(
            std::slice::from_ref(&finding),
            &[result("alice", CheckOutcome::Fail)],
            &read(),
            high,
            &fixture.context("2026-12-09T00:00:00Z"),
        );
        assert_eq!(before.seen_again[0].status, FindingStatus::Excepted);
        let after = reconcile(
            std::slice::from_ref(&finding),
            &[result("alice", CheckOutcome::Fail)],
            &read(),
            high,
            &fixture.context("2026-12-10T00:00:00Z"),
        );
        assert!(after.seen_again.is_empty());
        assert_eq!(after.exception_expired[0].status, FindingStatus::Open);
        assert_eq!(after.exception_expired[0].exception, None);
        assert_eq!(after.read_at.get(&finding.id), Some(&finding.updated_at), "written only over what was read");
        assert!(!finding.excepted_at(at("2026-12-10T00:00:00Z")));
    }

    #[test]
    fn a_resource_no_longer_seen_is_resolved_only_when_its_check_read_its_whole_population() {
        let fixture = Fixture::new();
        let day = |d: &str| fixture.context(d);
        let opened =
            reconcile(&[], &[result("alice", CheckOutcome::Fail)], &read(), high, &day("2026-12-01T00:00:00Z")).opened;
        let gone =
            reconcile(&opened, &[result("bob", CheckOutcome::Pass)], &read(), high, &day("2026-12-02T00:00:00Z"));
        assert_eq!(gone.resolved.len(), 1);
        assert_eq!(
            (gone.resolved[0].status, gone.resolved[0].detail.as_str()),
            (FindingStatus::Resolved, NO_LONGER_SEEN)
        );
        let unreadable = [result("bob", CheckOutcome::Error)];
        assert!(reconcile(&opened, &unreadable, &read(), high, &day("2026-12-02T00:00:00Z")).resolved.is_empty());
        let not_read = reconcile(&opened, &[], &[], high, &day("2026-12-02T00:00:00Z"));
        assert!(not_read.resolved.is_empty(), "a check the run did not read resolves nothing");
    }

    #[test]
    fn a_fleet_policy_no_longer_seen_resolves_when_fleetdm_policies_was_read_whole() {
        let fixture = Fixture::new();
        let day = |d: &str| fixture.context(d);
        let policy = |outcome| CheckResult::judged("fleetdm.policy.7", resource("laptop"), outcome, "Disk encryption");
        let read = vec![crate::check::FLEET_POLICIES.to_owned()];
        let opened = reconcile(&[], &[policy(CheckOutcome::Fail)], &read, high, &day("2026-12-01T00:00:00Z")).opened;
        assert_eq!(opened.len(), 1);
        // Policy 7 deleted in Fleet: the hosts answer other policies only.
        let other = CheckResult::judged("fleetdm.policy.9", resource("laptop"), CheckOutcome::Pass, "Screen lock");
        let gone = reconcile(&opened, std::slice::from_ref(&other), &read, high, &day("2026-12-02T00:00:00Z"));
        assert_eq!(gone.resolved.len(), 1, "{gone:?}");
        // FleetDM could not be read: nothing resolves.
        let label = CheckResult::error(
            crate::check::FLEET_POLICIES,
            resource("label"),
            crate::check_result::ReadFailure::new(
                "timeout",
                "FleetDM did not answer in time",
                "GET /api/v1/fleet/hosts",
            ),
        );
        assert!(reconcile(&opened, &[label], &read, high, &day("2026-12-02T00:00:00Z")).resolved.is_empty());
    }
}
