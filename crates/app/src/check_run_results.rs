//! What a run's results change, stored with the run in one transaction: the findings they open
//! and resolve (reconciled with the connection's findings), an entry for each change, and one
//! observation per check for the controls linked to it. Shared by the worker's runs and the
//! imports of Prowler's files, so that both change findings and evidence the same way.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use compliance_domain::audit::AuditDraft;
use compliance_domain::check::{CheckSeverity, reading};
use compliance_domain::check_result::CheckResult;
use compliance_domain::check_run::CheckRun;
use compliance_domain::control::check_source_id;
use compliance_domain::evidence::{Observation, of_check};
use compliance_domain::finding::{Finding, FindingChanges, RunContext, reconcile};
use compliance_ports::{CheckRunRepository, Clock, RepoError};

use crate::audit::{AuditTrail, CHECK_RUN, FINDING, Provenance};

/// How often a run's results are reconciled anew when a finding changed while they were stored.
const STORE_ATTEMPTS: u32 = 3;

/// How a run reaches its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// A run the worker claimed: stored finished only while its claim still holds it.
    Claimed,
    /// The run of an imported file, finished when made: inserted whole.
    Imported,
}

/// Stores runs with what their results change.
pub(crate) struct RunResults {
    runs: Arc<dyn CheckRunRepository>,
    clock: Arc<dyn Clock>,
    audit: Arc<AuditTrail>,
}

impl RunResults {
    pub(crate) fn new(runs: Arc<dyn CheckRunRepository>, clock: Arc<dyn Clock>, audit: Arc<AuditTrail>) -> Self {
        Self { runs, clock, audit }
    }

    /// Stores `run`, finished now, with `results` (answering it as stored), `read` being the
    /// checks that read their whole population. A finding changed meanwhile (an exception granted
    /// while the run read) makes it read the findings again and reconcile anew, a few times.
    /// `severity` gives a check's severity (the catalog's, or an imported check's own); every
    /// entry is `provenance`'s.
    pub(crate) async fn store(
        &self,
        ending: Ending,
        run: &CheckRun,
        results: &[CheckResult],
        read: &[String],
        severity: &(dyn Fn(&str) -> CheckSeverity + Sync),
        provenance: &Provenance,
    ) -> Result<CheckRun, RepoError> {
        let mut attempt = 1;
        loop {
            match self.store_once(ending, run, results, read, severity, provenance).await {
                Err(RepoError::Conflict(_)) if attempt < STORE_ATTEMPTS => attempt += 1,
                other => return other,
            }
        }
    }

    async fn store_once(
        &self,
        ending: Ending,
        run: &CheckRun,
        results: &[CheckResult],
        read: &[String],
        severity: &(dyn Fn(&str) -> CheckSeverity + Sync),
        provenance: &Provenance,
    ) -> Result<CheckRun, RepoError> {
        let existing = self.runs.connection_findings(&run.organization_id, &run.connection_id).await?;
        let deadlines = self.runs.finding_deadlines(&run.organization_id).await?.deadlines;
        let now = self.clock.now();
        let context = RunContext {
            organization_id: &run.organization_id,
            connection_id: &run.connection_id,
            run_id: &run.id,
            now,
            deadlines,
        };
        let changes = reconcile(&existing, results, read, severity, &context);
        let entries = self.finding_entries(provenance, &existing, &changes);
        let evidence = evidence_of(run, results, read, &existing, &changes, now);
        let audit = self.audit.change_by(provenance.clone(), |_, _| "check_run.finished", &CHECK_RUN);
        let finished = run.finished(results, now);
        match ending {
            Ending::Claimed => {
                self.runs.finish_check_run(&finished, results, &changes, entries, &evidence, &audit).await
            }
            Ending::Imported => {
                self.runs.record_imported_run(&finished, results, &changes, entries, &evidence, &audit).await
            }
        }?;
        Ok(finished)
    }

    /// One entry for each finding opened, opened again or resolved (one seen failing again is
    /// no news).
    fn finding_entries(
        &self,
        provenance: &Provenance,
        existing: &[Finding],
        changes: &FindingChanges,
    ) -> Vec<AuditDraft> {
        let before: HashMap<&compliance_domain::FindingId, &Finding> = existing.iter().map(|f| (&f.id, f)).collect();
        let entry = |action: &'static str, after: &Finding| {
            let audit = self.audit.change_by(provenance.clone(), move |_, _| action, &FINDING);
            audit(before.get(&after.id).copied(), Some(after))
        };
        let opened = changes.opened.iter().map(|f| entry("finding.opened", f));
        let reopened = changes.reopened.iter().map(|f| entry("finding.reopened", f));
        let resolved = changes.resolved.iter().map(|f| entry("finding.resolved", f));
        let expired = changes.exception_expired.iter().map(|f| entry("finding.exception_expired", f));
        opened.chain(reopened).chain(resolved).chain(expired).collect()
    }
}

/// One observation per check the run read, for the controls linked to it: pass when every resource
/// passed or its finding is excepted (or it saw none), fail naming the failing ones, nothing from
/// a check that could not read (`compliance_domain::evidence::of_check`).
fn evidence_of(
    run: &CheckRun,
    results: &[CheckResult],
    read: &[String],
    existing: &[Finding],
    changes: &FindingChanges,
    now: compliance_domain::Timestamp,
) -> Vec<Observation> {
    let excepted: HashSet<(&str, &str, &str)> = existing
        .iter()
        .chain(changes.all())
        .filter(|finding| finding.excepted_at(now))
        .map(|f| (f.check_id.as_str(), f.resource.kind.as_str(), f.resource.id.as_str()))
        .collect();
    let mut by_check: BTreeMap<&str, Vec<&CheckResult>> =
        read.iter().map(|check| (check.as_str(), Vec::new())).collect();
    for result in results {
        by_check.entry(result.check_id.as_str()).or_default().push(result);
        // A FleetDM policy's result also counts for `fleetdm.policies`, the check that reads
        // every policy: a control linked to it is proven by all of them.
        if let Some(reader) = reading(&result.check_id).filter(|reader| reader.id != result.check_id) {
            by_check.entry(reader.id.as_str()).or_default().push(result);
        }
    }
    by_check
        .into_iter()
        .filter_map(|(check_id, results)| {
            let source = check_source_id(&run.connection_id, check_id);
            of_check(source, run.id.as_str(), &results, |r| {
                excepted.contains(&(r.check_id.as_str(), r.resource.kind.as_str(), r.resource.id.as_str()))
            })
        })
        .collect()
}

/// A check's severity: the catalog's (a FleetDM policy's is `fleetdm.policies`'), or `medium`
/// for a check it does not hold.
pub(crate) fn catalog_severity(check_id: &str) -> CheckSeverity {
    reading(check_id).map_or(CheckSeverity::Medium, |check| check.severity)
}
