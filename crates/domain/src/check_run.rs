//! A run of one connection's checks: queued (by a person or the schedule), claimed by one server
//! instance under a lease, and finished with every result it saw, or failed. A run whose instance
//! stopped (SIGTERM, a crash) is claimed again once its lease lapses, up to [`MAX_ATTEMPTS`]
//! times, and never left `running` (docs/checks.md, "Runs").

use std::time::Duration;

use serde::Serialize;

use crate::check::CheckOutcome;
use crate::check_result::{CheckResult, population_digest};
use crate::{CheckRunId, ConnectionId, OrganizationId, Timestamp, UserId};

/// How often a run is claimed before it is failed as interrupted.
pub const MAX_ATTEMPTS: u32 = 3;

crate::string_enum! {
    /// Where a run stands.
    CheckRunStatus { Queued = "queued", Running = "running", Finished = "finished", Failed = "failed" }
}

crate::string_enum! {
    /// Who asked for a run.
    CheckRunTrigger { Manual = "manual", Scheduled = "scheduled" }
}

crate::string_enum! {
    /// Where a run's results came from: this service's own checks reading the provider, or a
    /// findings file of Prowler a member imported.
    CheckRunSource { Checks = "checks", Prowler = "prowler" }
}

/// How many results of a run had each outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct OutcomeCounts {
    /// Resources that passed.
    pub pass: u32,
    /// Resources that failed.
    pub fail: u32,
    /// Resources (or whole accounts) that could not be read.
    pub error: u32,
    /// Resources a check does not apply to.
    pub not_applicable: u32,
}

impl OutcomeCounts {
    /// The counts of `results`.
    pub fn of(results: &[CheckResult]) -> Self {
        let mut counts = Self::default();
        for result in results {
            let slot = match result.outcome {
                CheckOutcome::Pass => &mut counts.pass,
                CheckOutcome::Fail => &mut counts.fail,
                CheckOutcome::Error => &mut counts.error,
                CheckOutcome::NotApplicable => &mut counts.not_applicable,
            };
            *slot = slot.saturating_add(1);
        }
        counts
    }
}

/// One run of a connection's checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRun {
    /// `chr_…`.
    pub id: CheckRunId,
    /// The organization whose connection it reads.
    pub organization_id: OrganizationId,
    /// The connection read.
    pub connection_id: ConnectionId,
    /// The connection's provider slug.
    pub provider: String,
    /// Who asked for it.
    pub trigger: CheckRunTrigger,
    /// Where its results came from.
    pub source: CheckRunSource,
    /// Where it stands.
    pub status: CheckRunStatus,
    /// The member who asked, for a manual run.
    pub requested_by: Option<UserId>,
    /// For a scheduled run, the number of its period (whole periods since the Unix epoch): one
    /// scheduled run per connection and period, however many instances schedule.
    pub period: Option<i64>,
    /// When it was queued.
    pub queued_at: Timestamp,
    /// When it was last claimed.
    pub started_at: Option<Timestamp>,
    /// When it finished or failed.
    pub finished_at: Option<Timestamp>,
    /// Until when the instance that claimed it holds it; a lapsed lease lets another claim it.
    pub lease_until: Option<Timestamp>,
    /// How often it was claimed (more than once after an interruption).
    pub attempts: u32,
    /// Why it failed as a whole (the connection was disconnected, its credentials are gone, it
    /// was interrupted too often); an unreadable resource is an `error` result, not this.
    pub error: Option<String>,
    /// Its results' outcomes, counted.
    pub counts: OutcomeCounts,
    /// The SHA-256 of its population ([`population_digest`]), once finished.
    pub population_digest: Option<String>,
}

impl CheckRun {
    /// A run a member asked for, queued now.
    pub fn manual(
        organization_id: OrganizationId,
        connection_id: ConnectionId,
        provider: String,
        requested_by: UserId,
        now: Timestamp,
    ) -> Self {
        Self::queued(organization_id, connection_id, provider, CheckRunTrigger::Manual, Some(requested_by), None, now)
    }

    /// The scheduled run of `period` for a connection.
    pub fn scheduled(
        organization_id: OrganizationId,
        connection_id: ConnectionId,
        provider: String,
        period: i64,
        now: Timestamp,
    ) -> Self {
        Self::queued(organization_id, connection_id, provider, CheckRunTrigger::Scheduled, None, Some(period), now)
    }

    fn queued(
        organization_id: OrganizationId,
        connection_id: ConnectionId,
        provider: String,
        trigger: CheckRunTrigger,
        requested_by: Option<UserId>,
        period: Option<i64>,
        now: Timestamp,
    ) -> Self {
        Self {
            id: CheckRunId::generate(),
            organization_id,
            connection_id,
            provider,
            trigger,
            source: CheckRunSource::Checks,
            status: CheckRunStatus::Queued,
            requested_by,
            period,
            queued_at: now,
            started_at: None,
            finished_at: None,
            lease_until: None,
            attempts: 0,
            error: None,
            counts: OutcomeCounts::default(),
            population_digest: None,
        }
    }

    /// The run of a Prowler findings file a member imports, started now: a manual run that is
    /// never queued nor claimed, stored once [`CheckRun::finished`] with the file's results.
    pub fn imported(
        organization_id: OrganizationId,
        connection_id: ConnectionId,
        provider: String,
        requested_by: UserId,
        now: Timestamp,
    ) -> Self {
        let queued = Self::queued(
            organization_id,
            connection_id,
            provider,
            CheckRunTrigger::Manual,
            Some(requested_by),
            None,
            now,
        );
        Self { source: CheckRunSource::Prowler, started_at: Some(now), attempts: 1, ..queued }
    }

    /// This run finished with `results`.
    pub fn finished(&self, results: &[CheckResult], now: Timestamp) -> Self {
        Self {
            status: CheckRunStatus::Finished,
            finished_at: Some(now),
            lease_until: None,
            counts: OutcomeCounts::of(results),
            population_digest: Some(population_digest(results)),
            ..self.clone()
        }
    }

    /// This run failed as a whole, for `why`.
    pub fn failed(&self, why: impl Into<String>, now: Timestamp) -> Self {
        Self {
            status: CheckRunStatus::Failed,
            finished_at: Some(now),
            lease_until: None,
            error: Some(why.into()),
            ..self.clone()
        }
    }

    /// Whether it is done (finished or failed).
    pub fn is_done(&self) -> bool {
        matches!(self.status, CheckRunStatus::Finished | CheckRunStatus::Failed)
    }
}

/// The number of the period of length `every` that `now` falls in, counted from the Unix epoch.
pub fn period_of(now: Timestamp, every: Duration) -> i64 {
    let length = i64::try_from(every.as_secs()).unwrap_or(i64::MAX).max(1);
    now.as_unix_seconds().div_euclid(length)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test fails loudly")]

    use super::*;
    use crate::check_result::CheckedResource;

    fn result(id: &str, outcome: CheckOutcome) -> CheckResult {
        let resource =
            CheckedResource { kind: "github.repository".into(), id: id.into(), name: id.into(), region: None };
        CheckResult::judged("github.repo.dependabot", resource, outcome, "")
    }

    #[test]
    fn a_finished_run_counts_its_outcomes_and_keeps_the_populations_digest() {
        let now = Timestamp::parse("2026-12-07T10:00:00Z").unwrap();
        let run = CheckRun::manual(
            OrganizationId::generate(),
            ConnectionId::generate(),
            "github".into(),
            UserId::generate(),
            now,
        );
        let results =
            [result("a/x", CheckOutcome::Pass), result("a/y", CheckOutcome::Fail), result("a/z", CheckOutcome::Fail)];
        let done = run.finished(&results, now);
        assert_eq!(done.status, CheckRunStatus::Finished);
        assert_eq!(done.counts, OutcomeCounts { pass: 1, fail: 2, error: 0, not_applicable: 0 });
        assert_eq!(done.population_digest.as_deref(), Some(population_digest(&results).as_str()));
        assert!(done.is_done() && !run.is_done());
    }

    #[test]
    fn periods_are_whole_lengths_since_the_epoch() {
        let day = Duration::from_secs(86_400);
        let late = Timestamp::parse("2026-12-07T23:59:59Z").unwrap();
        let early = Timestamp::parse("2026-12-07T00:00:00Z").unwrap();
        let next = Timestamp::parse("2026-12-08T00:00:00Z").unwrap();
        assert_eq!(period_of(early, day), period_of(late, day));
        assert_eq!(period_of(next, day), period_of(late, day) + 1);
    }
}
