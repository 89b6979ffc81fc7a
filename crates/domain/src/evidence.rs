//! What an audit entry proves: the single place every change passes through (the store's
//! audit-chain append) asks [`observe`] of each entry, and records one evidence item per control
//! linked to the source it names, in the change's own transaction. So evidence is written when
//! it happens, and deleting or changing a source later does not rewrite the past.

use serde_json::{Value, json};

use crate::control::{EvidenceOutcome, SourceKind};

/// What an entry shows about a source, before the controls linked to it are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// The source's kind.
    pub kind: SourceKind,
    /// The source's id.
    pub source_id: String,
    /// Whether it proves or fails, or (for a policy) the signatures the store must check.
    pub proof: Proof,
    /// What it found, for the evidence list: `{reason, …}`.
    pub detail: Value,
    /// The automation run, for a run's evidence.
    pub run_id: Option<String>,
}

/// What an observation proves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proof {
    /// The source proves the control.
    Outcome(EvidenceOutcome),
    /// A published policy proves the control once every active member of the organization has
    /// signed its current version: these users have; the store compares them with the members.
    SignedBy(Vec<String>),
}

/// What the entry `resource_type`/`action` with `changes` and `data` (the record as the API shows
/// it after the change) proves, if anything:
/// - `automation.run_finished`: the run's verdict (`completed` with a passed verdict passes;
///   a failed verdict or a run that could not be carried out fails);
/// - `connection.checked`: the check's result (`lastError` null passes);
/// - a task entry whose status changed to `done` passes, to `failed` fails (`task.updated`, and
///   the lifecycle's `task.approved` alike);
/// - a policy entry that decides a published policy's standing (a new version, a signature, the
///   signing rule, its status) passes once every active member signed its current version (or it
///   requires no signature); a new version not yet signed by all, an entry that moved it out of
///   `published` (`needs_review`, …) or one that archived it fails;
/// - deleting a policy, task or automation, or disconnecting a connection, fails: it can prove
///   nothing any more.
pub fn observe(resource_type: &str, action: &str, changes: &Value, data: Option<&Value>) -> Option<Observation> {
    let data = data?;
    let field = |name: &str| data.get(name).and_then(Value::as_str);
    let status_changed = changes.get("status").is_some();
    let deleted = action.ends_with(".deleted");
    match resource_type {
        "automation" if action == "automation.run_finished" => {
            let run_id = field("runId")?.to_owned();
            let verdict = data.get("verdict").filter(|v| !v.is_null());
            let passed = field("status") == Some("completed")
                && verdict.and_then(|v| v.get("outcome")).and_then(Value::as_str) == Some("passed");
            let reason = match verdict.and_then(|v| v.get("reason")).and_then(Value::as_str) {
                Some(reason) => reason.to_owned(),
                None => field("error").unwrap_or("the run could not be carried out").to_owned(),
            };
            let outcome = if passed { EvidenceOutcome::Pass } else { EvidenceOutcome::Fail };
            Some(Observation {
                kind: SourceKind::Automation,
                source_id: field("automationId").or(field("id"))?.to_owned(),
                proof: Proof::Outcome(outcome),
                detail: json!({"reason": reason, "runStatus": field("status"), "verdict": verdict}),
                run_id: Some(run_id),
            })
        }
        "automation" if action == "automation.deleted" => gone(SourceKind::Automation, field("id")?, "automation"),
        "connection" if action == "connection.checked" => {
            let error = field("lastError");
            let outcome = if error.is_none() { EvidenceOutcome::Pass } else { EvidenceOutcome::Fail };
            Some(Observation {
                kind: SourceKind::Connection,
                source_id: field("id")?.to_owned(),
                proof: Proof::Outcome(outcome),
                detail: json!({
                    "reason": error.unwrap_or("the provider's verify request succeeded"),
                    "ok": error.is_none(),
                    "connectionStatus": field("status"),
                    "checkedAt": data.get("lastCheckedAt"),
                }),
                run_id: None,
            })
        }
        "connection" if deleted || action == "connection.disconnected" => {
            gone(SourceKind::Connection, field("id")?, "connection")
        }
        "task" if deleted => gone(SourceKind::Task, field("id")?, "task"),
        "task" if status_changed => {
            let outcome = match field("status")? {
                "done" => EvidenceOutcome::Pass,
                "failed" => EvidenceOutcome::Fail,
                _ => return None,
            };
            let reason = if outcome == EvidenceOutcome::Pass { "the task was done" } else { "the task failed" };
            Some(Observation {
                kind: SourceKind::Task,
                source_id: field("id")?.to_owned(),
                proof: Proof::Outcome(outcome),
                detail: json!({"reason": reason, "action": action}),
                run_id: None,
            })
        }
        "policy" if deleted => gone(SourceKind::Policy, field("id")?, "policy"),
        "policy" => {
            let id = field("id")?.to_owned();
            let version = data.get("currentVersion").cloned().unwrap_or(Value::Null);
            let changed = |name: &str| changes.get(name).is_some();
            let fail = |reason: &str| {
                Some(Observation {
                    kind: SourceKind::Policy,
                    source_id: id.clone(),
                    proof: Proof::Outcome(EvidenceOutcome::Fail),
                    detail: json!({"reason": reason, "version": version, "action": action}),
                    run_id: None,
                })
            };
            // Archived, a policy is out of force whatever its status.
            if data.get("isArchived").and_then(Value::as_bool) == Some(true) {
                return if changed("isArchived") { fail("the policy was archived") } else { None };
            }
            match field("status")? {
                // Only what decides it is recorded again: a new version (whose signatures start
                // over), a signature, the signing rule, leaving the archive. An edit of its
                // owner or department proves nothing new.
                "published" => {
                    let decides = matches!(action, "policy.published" | "policy.signed")
                        || ["status", "signedBy", "isRequiredToSign", "isArchived"].iter().any(|name| changed(name));
                    if !decides {
                        return None;
                    }
                    let required = data.get("isRequiredToSign").and_then(Value::as_bool).unwrap_or(true);
                    let proof = if required {
                        let signed = data.get("signedBy").and_then(Value::as_array).cloned().unwrap_or_default();
                        Proof::SignedBy(signed.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                    } else {
                        Proof::Outcome(EvidenceOutcome::Pass)
                    };
                    let reason = if required {
                        "the policy is published and every active member signed its current version"
                    } else {
                        "the policy is published and requires no signature"
                    };
                    let detail = json!({"reason": reason, "version": version, "action": action});
                    Some(Observation { kind: SourceKind::Policy, source_id: id, proof, detail, run_id: None })
                }
                "needs_review" if status_changed => fail("the policy's review is due"),
                other if status_changed => fail(&format!("the policy is no longer published (it is {other})")),
                _ => None,
            }
        }
        _ => None,
    }
}

fn gone(kind: SourceKind, id: &str, what: &str) -> Option<Observation> {
    Some(Observation {
        kind,
        source_id: id.to_owned(),
        proof: Proof::Outcome(EvidenceOutcome::Fail),
        detail: json!({"reason": format!("the {what} was deleted")}),
        run_id: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_run_passes_only_with_a_passed_verdict() {
        let data = json!({"automationId": "aut_1", "runId": "run_1", "status": "completed",
            "verdict": {"outcome": "passed", "reason": "MFA is on"}});
        let seen = observe("automation", "automation.run_finished", &json!({}), Some(&data)).unwrap();
        assert_eq!((seen.kind, seen.proof), (SourceKind::Automation, Proof::Outcome(EvidenceOutcome::Pass)));
        assert_eq!(seen.run_id.as_deref(), Some("run_1"));
        let failed = json!({"automationId": "aut_1", "runId": "run_2", "status": "failed", "error": "timeout"});
        let seen = observe("automation", "automation.run_finished", &json!({}), Some(&failed)).unwrap();
        assert_eq!(seen.proof, Proof::Outcome(EvidenceOutcome::Fail));
        assert_eq!(seen.detail["reason"], "timeout");
        assert_eq!(observe("automation", "automation.run_started", &json!({}), Some(&data)), None);
    }

    #[test]
    fn tasks_prove_when_their_status_becomes_done_or_failed() {
        let done = json!({"id": "tsk_1", "status": "done"});
        let changed = json!({"status": {"from": "todo", "to": "done"}});
        let seen = observe("task", "task.approved", &changed, Some(&done)).unwrap();
        assert_eq!(seen.proof, Proof::Outcome(EvidenceOutcome::Pass));
        assert_eq!(observe("task", "task.updated", &json!({"title": {}}), Some(&done)), None);
        let failed = json!({"id": "tsk_1", "status": "failed"});
        assert_eq!(
            observe("task", "task.rejected", &changed, Some(&failed)).unwrap().proof,
            Proof::Outcome(EvidenceOutcome::Fail)
        );
    }

    #[test]
    fn policies_and_checks_and_deletions() {
        let policy = json!({"id": "pol_1", "status": "published", "isRequiredToSign": true, "signedBy": ["usr_a"]});
        let seen = observe("policy", "policy.signed", &json!({}), Some(&policy)).unwrap();
        assert_eq!(seen.proof, Proof::SignedBy(vec!["usr_a".into()]));
        let check = json!({"id": "con_1", "status": "error", "lastError": "401 from the provider"});
        let seen = observe("connection", "connection.checked", &json!({}), Some(&check)).unwrap();
        assert_eq!(seen.proof, Proof::Outcome(EvidenceOutcome::Fail));
        let edit = json!({"description": {"from": 3, "to": 9}});
        assert_eq!(observe("policy", "policy.updated", &edit, Some(&policy)), None, "an edit decides nothing");
        let version = observe("policy", "policy.published", &json!({}), Some(&policy)).unwrap();
        assert!(matches!(version.proof, Proof::SignedBy(_)), "the store fails it unless all signed");
        let archived = json!({"id": "pol_1", "status": "published", "isArchived": true});
        let seen =
            observe("policy", "policy.updated", &json!({"isArchived": {"from": false, "to": true}}), Some(&archived));
        assert_eq!(seen.unwrap().proof, Proof::Outcome(EvidenceOutcome::Fail));
        let draft = json!({"id": "pol_1", "status": "draft"});
        let seen =
            observe("policy", "policy.updated", &json!({"status": {"from": "published", "to": "draft"}}), Some(&draft));
        assert_eq!(seen.unwrap().proof, Proof::Outcome(EvidenceOutcome::Fail));
        let gone = observe("task", "task.deleted", &json!({}), Some(&json!({"id": "tsk_9"}))).unwrap();
        assert_eq!((gone.source_id.as_str(), gone.proof), ("tsk_9", Proof::Outcome(EvidenceOutcome::Fail)));
    }
}
