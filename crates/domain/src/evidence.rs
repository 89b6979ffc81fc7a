//! What a change proves about a control's evidence source, decided from the typed record before
//! and after it. The use case's audit subject names the rule of its kind of record
//! (`of_task`, `of_policy`, `of_connection`, `of_automation`, `of_run`); the draft of the change's
//! audit entry carries the [`Observation`], and the store records one evidence item per control
//! linked to the source, in the change's own transaction. So evidence is written when it happens,
//! and deleting or changing a source later does not rewrite the past.

use serde_json::{Value, json};

use crate::automation::{AutomationRun, BrowserAutomation, RunStatus, VerdictOutcome};
use crate::check::CheckOutcome;
use crate::check_result::CheckResult;
use crate::control::{EvidenceOutcome, SourceKind};
use crate::integration::Connection;
use crate::policy::{Policy, PolicyStatus};
use crate::task::{Task, TaskStatus};

/// What a change shows about a source, before the controls linked to it are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// The source's kind.
    pub kind: SourceKind,
    /// The source's id.
    pub source_id: String,
    /// Whether it proves or fails, or (for a policy) the signatures still to compare.
    pub proof: Proof,
    /// What it found, for the evidence list: `{reason, …}`.
    pub detail: Value,
    /// The automation run, for a run's evidence.
    pub run_id: Option<String>,
}

/// What an observation proves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proof {
    /// The source proves the control, or fails it.
    Outcome(EvidenceOutcome),
    /// A published policy that must be signed proves the control once every active member of the
    /// organization has signed its current version: these users have. Short of that, a new
    /// version fails (the last version's pass no longer holds), and one more signature proves
    /// nothing yet.
    Signatures {
        /// The users who signed the current version.
        signed: Vec<String>,
        /// Whether the change published a new version (whose signatures start over).
        new_version: bool,
    },
}

/// Why a new version that not everyone signed yet fails its controls.
const AWAITS_SIGNATURES: &str = "a new version was published: it awaits every active member's signature";

impl Observation {
    /// Whether [`decide`](Self::decide) needs the users of the organization's active members.
    pub fn needs_active_members(&self) -> bool {
        matches!(self.proof, Proof::Signatures { .. })
    }

    /// The outcome to record and its detail, given the users of the organization's active members
    /// (read only when [`needs_active_members`](Self::needs_active_members)); `None` when the
    /// change proves nothing yet.
    pub fn decide(&self, active: &[String]) -> Option<(EvidenceOutcome, Value)> {
        match &self.proof {
            Proof::Outcome(outcome) => Some((*outcome, self.detail.clone())),
            Proof::Signatures { signed, .. } if signed_by_all(signed, active) => {
                Some((EvidenceOutcome::Pass, self.detail.clone()))
            }
            Proof::Signatures { new_version: true, .. } => {
                let mut detail = self.detail.clone();
                detail["reason"] = AWAITS_SIGNATURES.into();
                Some((EvidenceOutcome::Fail, detail))
            }
            Proof::Signatures { new_version: false, .. } => None,
        }
    }
}

/// Whether every user of `active` is among `signed` (a set: an organization of thousands of
/// members would otherwise compare every pair).
fn signed_by_all(signed: &[String], active: &[String]) -> bool {
    let signed: std::collections::HashSet<&str> = signed.iter().map(String::as_str).collect();
    active.iter().all(|user| signed.contains(user.as_str()))
}

/// A task proves its controls when its status becomes `done`, and fails them when it becomes
/// `failed` (by a `PATCH` or the approval alike); deleted, it fails them. `action` is only shown.
pub fn of_task(action: &str, before: Option<&Task>, after: Option<&Task>) -> Option<Observation> {
    let Some(task) = after else { return before.map(|task| gone(SourceKind::Task, task.id.as_str(), "task")) };
    if before.map(|before| before.status) == Some(task.status) {
        return None;
    }
    let (outcome, reason) = match task.status {
        TaskStatus::Done => (EvidenceOutcome::Pass, "the task was done"),
        TaskStatus::Failed => (EvidenceOutcome::Fail, "the task failed"),
        _ => return None,
    };
    Some(Observation {
        kind: SourceKind::Task,
        source_id: task.id.to_string(),
        proof: Proof::Outcome(outcome),
        detail: json!({"reason": reason, "action": action}),
        run_id: None,
    })
}

/// A policy's standing, recorded when a change decides it: a published policy proves its controls
/// once every active member signed its current version (or when it requires no signature), and
/// is recorded again on a new version, a signature, a change of the signing rule or leaving the
/// archive; moving out of `published`, being archived or deleted fails them. An edit of its
/// owner or text proves nothing new. `action` is only shown.
pub fn of_policy(action: &str, before: Option<&Policy>, after: Option<&Policy>) -> Option<Observation> {
    let Some(policy) = after else {
        return before.map(|policy| gone(SourceKind::Policy, policy.id.as_str(), "policy"));
    };
    // A new policy was never in force, so only a policy created published proves something.
    if before.is_none() && (policy.status != PolicyStatus::Published || policy.is_archived) {
        return None;
    }
    let status_changed = differs(before, policy, |p| p.status);
    let observation = |proof, reason: &str| Observation {
        kind: SourceKind::Policy,
        source_id: policy.id.to_string(),
        proof,
        detail: json!({"reason": reason, "version": policy.current_version, "action": action}),
        run_id: None,
    };
    let fail = |reason: &str| Some(observation(Proof::Outcome(EvidenceOutcome::Fail), reason));
    // Archived, a policy is out of force whatever its status.
    if policy.is_archived {
        return if differs(before, policy, |p| p.is_archived) { fail("the policy was archived") } else { None };
    }
    match policy.status {
        PolicyStatus::Published => {
            let new_version = differs(before, policy, |p| p.current_version);
            let decides = new_version
                || status_changed
                || differs(before, policy, |p| p.signed_by.clone())
                || differs(before, policy, |p| p.is_required_to_sign)
                || differs(before, policy, |p| p.is_archived);
            if !decides {
                return None;
            }
            Some(match policy.is_required_to_sign {
                true => observation(
                    Proof::Signatures {
                        signed: policy.signed_by.iter().map(ToString::to_string).collect(),
                        new_version,
                    },
                    "the policy is published and every active member signed its current version",
                ),
                false => observation(
                    Proof::Outcome(EvidenceOutcome::Pass),
                    "the policy is published and requires no signature",
                ),
            })
        }
        PolicyStatus::NeedsReview if status_changed => fail("the policy's review is due"),
        other if status_changed => fail(&format!("the policy is no longer published (it is {other})")),
        _ => None,
    }
}

/// A check of a connection proves its controls when the provider accepted the credentials and
/// fails them otherwise; disconnected or deleted, it fails them.
pub fn of_connection(before: Option<&Connection>, after: Option<&Connection>) -> Option<Observation> {
    let Some(connection) = after else {
        return before.map(|c| gone(SourceKind::Connection, c.id.as_str(), "connection"));
    };
    if connection.is_disconnected() && before.is_some_and(|before| !before.is_disconnected()) {
        return Some(gone(SourceKind::Connection, connection.id.as_str(), "connection"));
    }
    if before.map(|before| before.last_checked_at) == Some(connection.last_checked_at)
        || connection.last_checked_at.is_none()
    {
        return None;
    }
    let error = connection.last_error.as_deref();
    let outcome = if error.is_none() { EvidenceOutcome::Pass } else { EvidenceOutcome::Fail };
    Some(Observation {
        kind: SourceKind::Connection,
        source_id: connection.id.to_string(),
        proof: Proof::Outcome(outcome),
        detail: json!({
            "reason": error.unwrap_or("the provider's verify request succeeded"),
            "ok": error.is_none(),
            "connectionStatus": connection.status,
            "checkedAt": connection.last_checked_at,
        }),
        run_id: None,
    })
}

/// A deleted automation fails its controls.
pub fn of_automation(before: Option<&BrowserAutomation>, after: Option<&BrowserAutomation>) -> Option<Observation> {
    match (before, after) {
        (Some(automation), None) => Some(gone(SourceKind::Automation, automation.id.as_str(), "automation")),
        _ => None,
    }
}

/// A finished run proves its automation's controls with a passed verdict, and fails them with a
/// failed verdict or when it could not be carried out.
pub fn of_run(before: Option<&AutomationRun>, after: Option<&AutomationRun>) -> Option<Observation> {
    let run = after?;
    if run.completed_at.is_none() || before.is_some_and(|before| before.completed_at.is_some()) {
        return None;
    }
    let verdict = run.verdict.as_ref();
    let passed = run.status == RunStatus::Completed && verdict.is_some_and(|v| v.outcome == VerdictOutcome::Passed);
    let reason = match (verdict, &run.error) {
        (Some(verdict), _) => verdict.reason.clone(),
        (None, Some(error)) => error.clone(),
        (None, None) => "the run could not be carried out".to_owned(),
    };
    Some(Observation {
        kind: SourceKind::Automation,
        source_id: run.automation_id.to_string(),
        proof: Proof::Outcome(if passed { EvidenceOutcome::Pass } else { EvidenceOutcome::Fail }),
        detail: json!({"reason": reason, "runStatus": run.status, "verdict": verdict}),
        run_id: Some(run.id.to_string()),
    })
}

/// The most resources an evidence item of a check names (its run's results name them all).
const NAMED_MAX: usize = 20;

/// A finished run's check proves the controls linked to it when every resource it saw passed (or
/// is excepted: its risk accepted), and fails them naming the failing resources. A check that
/// could not read a resource (an `error` result) records nothing: its population is not known, so
/// the control keeps its last evidence (which goes stale) rather than a pass or fail it did not earn.
pub fn of_check(
    source_id: String,
    run_id: &str,
    results: &[&CheckResult],
    excepted: impl Fn(&CheckResult) -> bool,
) -> Option<Observation> {
    if results.iter().any(|r| r.outcome == CheckOutcome::Error) {
        return None;
    }
    // Every resource it saw was not applicable (a region not enabled, a feature the plan lacks,
    // a review Prowler left to a person): the check judged nothing, so it proves nothing.
    if !results.is_empty() && results.iter().all(|r| r.outcome == CheckOutcome::NotApplicable) {
        return None;
    }
    let failing: Vec<&&CheckResult> = results.iter().filter(|r| r.outcome == CheckOutcome::Fail).collect();
    let (accepted, failed): (Vec<&&CheckResult>, Vec<&&CheckResult>) = failing.into_iter().partition(|r| excepted(r));
    let names = |of: &[&&CheckResult]| of.iter().take(NAMED_MAX).map(|r| r.resource.name.clone()).collect::<Vec<_>>();
    let reason = match (failed.len(), accepted.len()) {
        (0, 0) => format!("every resource passed ({} seen)", results.len()),
        (0, n) => format!("every resource passed or is excepted ({} seen, {n} excepted)", results.len()),
        (n, _) => format!("{n} of {} resources failed: {}", results.len(), names(&failed).join(", ")),
    };
    Some(Observation {
        kind: SourceKind::Check,
        source_id,
        proof: Proof::Outcome(if failed.is_empty() { EvidenceOutcome::Pass } else { EvidenceOutcome::Fail }),
        detail: json!({
            "reason": reason, "checkRunId": run_id, "resources": results.len(),
            "failing": names(&failed), "excepted": names(&accepted),
        }),
        run_id: None,
    })
}

/// Whether `field` of the record differs after the change (a new record differs in everything).
fn differs<R, T: PartialEq>(before: Option<&R>, after: &R, field: impl Fn(&R) -> T) -> bool {
    before.map(&field) != Some(field(after))
}

fn gone(kind: SourceKind, id: &str, what: &str) -> Observation {
    Observation {
        kind,
        source_id: id.to_owned(),
        proof: Proof::Outcome(EvidenceOutcome::Fail),
        detail: json!({"reason": format!("the {what} was deleted")}),
        run_id: None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::automation::{RunTrigger, Verdict};
    use crate::integration::CheckOutcome;
    use crate::policy::NewPolicy;
    use crate::task::NewTask;
    use crate::{AutomationId, AutomationRunId, OrganizationId, Timestamp, UserId};

    fn task(status: TaskStatus) -> Task {
        let input = NewTask { title: Some("Review access".into()), status: Some(status), ..NewTask::default() };
        Task::create(OrganizationId::generate(), input, Timestamp::now()).unwrap()
    }

    fn published_policy() -> Policy {
        let input: NewPolicy = serde_json::from_value(json!({
            "name": "Access control", "content": [{"type": "paragraph", "content": [{"type": "text", "text": "x"}]}]
        }))
        .unwrap();
        let mut policy = Policy::create(OrganizationId::generate(), input, Timestamp::now()).unwrap();
        policy.publish(&UserId::generate(), None, Timestamp::now());
        policy
    }

    fn outcome(seen: Option<Observation>) -> Option<EvidenceOutcome> {
        seen.and_then(|seen| seen.decide(&[]).map(|(outcome, _)| outcome))
    }

    #[test]
    fn tasks_prove_when_their_status_becomes_done_or_failed() {
        let todo = task(TaskStatus::Todo);
        let done = Task { status: TaskStatus::Done, ..todo.clone() };
        let seen = of_task("task.approved", Some(&todo), Some(&done)).unwrap();
        assert_eq!((seen.kind, seen.proof.clone()), (SourceKind::Task, Proof::Outcome(EvidenceOutcome::Pass)));
        assert_eq!(seen.detail["action"], "task.approved", "the action is shown, not matched");
        let failed = Task { status: TaskStatus::Failed, ..todo.clone() };
        assert_eq!(outcome(of_task("task.updated", Some(&todo), Some(&failed))), Some(EvidenceOutcome::Fail));
        let retitled = Task { title: "Another".into(), ..done.clone() };
        assert_eq!(of_task("task.updated", Some(&done), Some(&retitled)), None, "the status did not change");
        assert_eq!(
            of_task("task.updated", Some(&todo), Some(&Task { status: TaskStatus::InProgress, ..todo.clone() })),
            None
        );
        assert_eq!(outcome(of_task("task.created", None, Some(&task(TaskStatus::Done)))), Some(EvidenceOutcome::Pass));
        let gone = of_task("task.deleted", Some(&done), None).unwrap();
        assert_eq!((gone.source_id, gone.proof), (done.id.to_string(), Proof::Outcome(EvidenceOutcome::Fail)));
    }

    #[test]
    fn a_published_policy_passes_once_every_active_member_signed() {
        let policy = published_policy();
        let (a, b) = (UserId::generate(), UserId::generate());
        let active = [a.to_string(), b.to_string()];
        let new_version = of_policy("policy.published", None, Some(&policy)).unwrap();
        assert!(new_version.needs_active_members());
        let (fail, detail) = new_version.decide(&active).unwrap();
        assert_eq!(fail, EvidenceOutcome::Fail, "a new version nobody signed fails");
        assert_eq!(detail["reason"], AWAITS_SIGNATURES);

        let mut signed_once = policy.clone();
        signed_once.signed_by = vec![a];
        let one = of_policy("policy.signed", Some(&policy), Some(&signed_once)).unwrap();
        assert_eq!(one.decide(&active), None, "one more signature proves nothing yet");
        let mut signed_by_all = signed_once.clone();
        signed_by_all.signed_by.push(b);
        let all = of_policy("policy.signed", Some(&signed_once), Some(&signed_by_all)).unwrap();
        assert_eq!(all.decide(&active).map(|(outcome, _)| outcome), Some(EvidenceOutcome::Pass));

        let edited = Policy { description: "longer".into(), ..signed_by_all.clone() };
        assert_eq!(of_policy("policy.updated", Some(&signed_by_all), Some(&edited)), None, "an edit decides nothing");
        let unsigned = Policy { is_required_to_sign: false, ..signed_once.clone() };
        assert_eq!(
            outcome(of_policy("policy.updated", Some(&signed_once), Some(&unsigned))),
            Some(EvidenceOutcome::Pass)
        );
    }

    #[test]
    fn a_policy_out_of_force_fails() {
        let policy = published_policy();
        let archived = Policy { is_archived: true, ..policy.clone() };
        assert_eq!(outcome(of_policy("policy.updated", Some(&policy), Some(&archived))), Some(EvidenceOutcome::Fail));
        assert_eq!(of_policy("policy.updated", Some(&archived), Some(&archived)), None, "still archived");
        let due = Policy { status: PolicyStatus::NeedsReview, ..policy.clone() };
        let seen = of_policy("policy.review_due", Some(&policy), Some(&due)).unwrap();
        assert_eq!(seen.detail["reason"], "the policy's review is due");
        let draft = Policy { status: PolicyStatus::Draft, ..policy.clone() };
        assert_eq!(outcome(of_policy("policy.updated", Some(&policy), Some(&draft))), Some(EvidenceOutcome::Fail));
        assert_eq!(outcome(of_policy("policy.deleted", Some(&policy), None)), Some(EvidenceOutcome::Fail));
    }

    #[test]
    fn a_new_policy_proves_something_only_when_created_published() {
        let published = published_policy();
        let draft = Policy { status: PolicyStatus::Draft, ..published.clone() };
        assert_eq!(of_policy("policy.created", None, Some(&draft)), None, "never in force: nothing failed");
        let archived = Policy { is_archived: true, ..published.clone() };
        assert_eq!(of_policy("policy.created", None, Some(&archived)), None);
        assert_eq!(outcome(of_policy("policy.created", None, Some(&published))), Some(EvidenceOutcome::Pass));
    }

    #[test]
    fn a_connection_check_proves_or_fails_and_a_disconnect_fails() {
        let org = OrganizationId::generate();
        let connection = Connection::connected(org, "github".into(), UserId::generate(), None, Timestamp::now());
        assert_eq!(of_connection(None, Some(&connection)), None, "connected, not yet checked");
        let mut passed = connection.clone();
        passed.record_check(CheckOutcome::Passed, Timestamp::now());
        let seen = of_connection(Some(&connection), Some(&passed)).unwrap();
        assert_eq!(seen.proof, Proof::Outcome(EvidenceOutcome::Pass));
        assert_eq!(seen.detail["ok"], true);
        let mut refused = passed.clone();
        refused
            .record_check(CheckOutcome::Refused("HTTP 401".into()), Timestamp::now().plus(time::Duration::seconds(1)));
        let seen = of_connection(Some(&passed), Some(&refused)).unwrap();
        assert_eq!(
            (seen.proof, seen.detail["reason"].as_str()),
            (Proof::Outcome(EvidenceOutcome::Fail), Some("HTTP 401"))
        );
        let mut disconnected = refused.clone();
        disconnected.disconnect(Timestamp::now());
        assert_eq!(outcome(of_connection(Some(&refused), Some(&disconnected))), Some(EvidenceOutcome::Fail));
        assert_eq!(outcome(of_connection(Some(&refused), None)), Some(EvidenceOutcome::Fail));
    }

    #[test]
    fn a_finished_run_passes_only_with_a_passed_verdict() {
        let now = Timestamp::now();
        let running = AutomationRun {
            id: AutomationRunId::generate(),
            organization_id: OrganizationId::generate(),
            automation_id: AutomationId::generate(),
            status: RunStatus::Running,
            trigger: RunTrigger::Manual,
            created_at: now,
            started_at: Some(now),
            completed_at: None,
            duration_ms: None,
            screenshot_key: None,
            error: None,
            verdict: None,
            steps: Vec::new(),
        };
        assert_eq!(of_run(None, Some(&running)), None, "started, not finished");
        let mut passed = running.clone();
        passed.finish(Ok(Verdict::passed("MFA is on")), None, now);
        let seen = of_run(Some(&running), Some(&passed)).unwrap();
        assert_eq!(seen.proof, Proof::Outcome(EvidenceOutcome::Pass));
        assert_eq!((seen.source_id, seen.run_id), (running.automation_id.to_string(), Some(running.id.to_string())));
        let mut failed = running.clone();
        failed.finish(Err("timeout".into()), None, now);
        let seen = of_run(Some(&running), Some(&failed)).unwrap();
        assert_eq!(
            (seen.proof, seen.detail["reason"].as_str()),
            (Proof::Outcome(EvidenceOutcome::Fail), Some("timeout"))
        );
        assert_eq!(of_run(Some(&passed), None), None, "a skipped run proves nothing");
    }

    #[test]
    fn a_check_that_judged_nothing_proves_nothing() {
        use crate::check::CheckOutcome as Outcome;
        use crate::check_result::{CheckResult, CheckedResource};
        let result = |id: &str, outcome: Outcome| {
            let resource = CheckedResource { kind: "aws.region".into(), id: id.into(), name: id.into(), region: None };
            CheckResult::judged("aws.guardduty.enabled", resource, outcome, "")
        };
        let (skipped, other) =
            (result("eu-south-2", Outcome::NotApplicable), result("us-east-1", Outcome::NotApplicable));
        assert!(of_check("con:x".into(), "chr_1", &[&skipped, &other], |_| false).is_none());
        let passed = result("eu-west-1", Outcome::Pass);
        let observed = of_check("con:x".into(), "chr_1", &[&skipped, &passed], |_| false).unwrap();
        assert_eq!(observed.proof, Proof::Outcome(EvidenceOutcome::Pass));
        let none = of_check("con:x".into(), "chr_1", &[], |_| false).unwrap();
        assert_eq!(none.proof, Proof::Outcome(EvidenceOutcome::Pass), "a check that saw no resource passes");
    }
}
