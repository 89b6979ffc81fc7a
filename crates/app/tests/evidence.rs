//! Evidence as the use cases decide it: each change of an evidence source (a task, a policy, a
//! connection, an automation and its runs) hands the store an audit draft carrying what the change
//! proves (`AuditDraft.evidence`, decided by `compliance_domain::evidence` from the record before
//! and after). The stores in memory make the draft as the real store does and keep it
//! (`World::drafts`), so each source's pass, fail, "stale" and "gone" is checked here through the
//! use cases and the fake clock; which controls get the evidence is the store's (its own tests).

use std::sync::Arc;

use compliance_app::{AutomationSettings, Principal};
use compliance_credentials::TokenError;
use compliance_domain::automation::AutomationChanges;
use compliance_domain::control::{EvidenceOutcome, SourceKind};
use compliance_domain::etag::IfMatch;
use compliance_domain::evidence::{Observation, Proof};
use compliance_domain::policy::{NewPolicy, Policy, PolicyChanges, PolicyStatus};
use compliance_domain::task::{NewTask, Task, TaskChanges, TaskStatus};
use compliance_domain::task_lifecycle::{TaskRejection, TaskRejectionStatus};
use compliance_ports::{Clock as _, ProviderRequestError};
use serde_json::json;

use crate::automations::{MFA_CHECK, automation_doing, runs, worker};
use crate::integrations::{connect_acme, connect_tokens};
use crate::support::integrations::{Asked, tokens};
use crate::support::{BrowserPage, Tenant, World};

/// The observation the last change of record `id` carried; the test fails if it carried none.
fn observed(world: &World, id: &str) -> Observation {
    let draft = world.drafts.last_of(id);
    draft.evidence.unwrap_or_else(|| panic!("`{}` of {id} carried no observation", draft.action))
}

/// Asserts that `seen` is of source `kind` `id`, proves `outcome`, and says `reason`.
fn assert_outcome(seen: &Observation, kind: SourceKind, id: &str, outcome: EvidenceOutcome, reason: &str) {
    assert_eq!((seen.kind, seen.source_id.as_str()), (kind, id), "{seen:?}");
    assert_eq!(seen.proof, Proof::Outcome(outcome), "{seen:?}");
    assert_eq!(seen.detail["reason"], reason, "{seen:?}");
}

/// Asserts that the last change of `id` was `action` and carried no observation.
fn assert_proves_nothing(world: &World, id: &str, action: &str) {
    let draft = world.drafts.last_of(id);
    assert_eq!(draft.action, action);
    assert_eq!(draft.evidence, None, "`{action}` proves nothing: {:?}", draft.evidence);
}

// Tasks: a status that becomes `done` passes, `failed` fails; deleted, a task fails.

async fn task(world: &World, tenant: &Tenant, input: NewTask) -> Task {
    let input = NewTask { title: Some("Review access".into()), ..input };
    world.app.tasks.create_task(&tenant.owner, input).await.unwrap()
}

fn approved_by(approver: &Principal) -> NewTask {
    NewTask { approver_id: Some(approver.member_id.clone()), ..NewTask::default() }
}

async fn set_status(world: &World, tenant: &Tenant, task: &Task, status: TaskStatus) -> Task {
    let changes = TaskChanges { status: Some(status), ..TaskChanges::default() };
    world.app.tasks.update_task(&tenant.owner, &task.id, changes, &IfMatch::Absent).await.unwrap()
}

#[tokio::test]
async fn a_task_marked_done_passes_by_a_patch_and_by_the_approval() {
    let world = World::new();
    let tenant = world.tenant().await;
    let patched = task(&world, &tenant, NewTask::default()).await;
    assert_proves_nothing(&world, patched.id.as_str(), "task.created");
    set_status(&world, &tenant, &patched, TaskStatus::Done).await;
    let seen = observed(&world, patched.id.as_str());
    assert_outcome(&seen, SourceKind::Task, patched.id.as_str(), EvidenceOutcome::Pass, "the task was done");
    assert_eq!(seen.detail["action"], "task.updated");

    let approver = world.member(&tenant.org, "admin").await;
    let reviewed = task(&world, &tenant, approved_by(&approver)).await;
    world.app.tasks.submit_task(&tenant.owner, &reviewed.id, &IfMatch::Absent).await.unwrap();
    assert_proves_nothing(&world, reviewed.id.as_str(), "task.submitted");
    world.app.tasks.approve_task(&approver, &reviewed.id, &IfMatch::Absent).await.unwrap();
    let seen = observed(&world, reviewed.id.as_str());
    assert_outcome(&seen, SourceKind::Task, reviewed.id.as_str(), EvidenceOutcome::Pass, "the task was done");
    assert_eq!(seen.detail["action"], "task.approved");
}

#[tokio::test]
async fn a_task_that_failed_fails_by_a_patch_and_by_a_rejection() {
    let world = World::new();
    let tenant = world.tenant().await;
    let patched = task(&world, &tenant, NewTask::default()).await;
    set_status(&world, &tenant, &patched, TaskStatus::Failed).await;
    let seen = observed(&world, patched.id.as_str());
    assert_outcome(&seen, SourceKind::Task, patched.id.as_str(), EvidenceOutcome::Fail, "the task failed");

    let approver = world.member(&tenant.org, "admin").await;
    let reviewed = task(&world, &tenant, approved_by(&approver)).await;
    world.app.tasks.submit_task(&tenant.owner, &reviewed.id, &IfMatch::Absent).await.unwrap();
    let rejection = TaskRejection {
        reason: Some("the review found stale accounts".into()),
        status: Some(TaskRejectionStatus::Failed),
    };
    world.app.tasks.reject_task(&approver, &reviewed.id, rejection, &IfMatch::Absent).await.unwrap();
    let seen = observed(&world, reviewed.id.as_str());
    assert_outcome(&seen, SourceKind::Task, reviewed.id.as_str(), EvidenceOutcome::Fail, "the task failed");
    assert_eq!(seen.detail["action"], "task.rejected");
}

#[tokio::test]
async fn an_edit_of_a_task_that_changes_no_status_proves_nothing() {
    let world = World::new();
    let tenant = world.tenant().await;
    let done = task(&world, &tenant, NewTask::default()).await;
    set_status(&world, &tenant, &done, TaskStatus::Done).await;
    let changes = TaskChanges { title: Some("Review access quarterly".into()), ..TaskChanges::default() };
    world.app.tasks.update_task(&tenant.owner, &done.id, changes, &IfMatch::Absent).await.unwrap();
    assert_proves_nothing(&world, done.id.as_str(), "task.updated");
    assert_eq!(world.drafts.observations(done.id.as_str()).len(), 1, "only the move to done proved anything");
}

#[tokio::test]
async fn a_deleted_task_fails() {
    let world = World::new();
    let tenant = world.tenant().await;
    let done = task(&world, &tenant, NewTask { status: Some(TaskStatus::Done), ..NewTask::default() }).await;
    let created = observed(&world, done.id.as_str());
    assert_eq!(created.proof, Proof::Outcome(EvidenceOutcome::Pass), "created done, it passes");
    world.app.tasks.delete_task(&tenant.owner, &done.id, &IfMatch::Absent).await.unwrap();
    assert_eq!(world.drafts.last_of(done.id.as_str()).action, "task.deleted");
    let seen = observed(&world, done.id.as_str());
    assert_outcome(&seen, SourceKind::Task, done.id.as_str(), EvidenceOutcome::Fail, "the task was deleted");
}

// Policies: published, a policy passes (once signed by everyone, when it must be signed); its
// review falling due, archived or deleted, it fails.

async fn published_policy(world: &World, tenant: &Tenant, input: serde_json::Value) -> Policy {
    let mut input = input;
    input["name"] = "Access control".into();
    input["content"] = json!([{"type": "paragraph", "content": [{"type": "text", "text": "Least privilege."}]}]);
    input["status"] = "published".into();
    let input: NewPolicy = serde_json::from_value(input).unwrap();
    world.app.policies.create_policy(&tenant.owner, input).await.unwrap()
}

#[tokio::test]
async fn a_new_draft_policy_proves_nothing() {
    let world = World::new();
    let tenant = world.tenant().await;
    let input = json!({"name": "Access control", "content": [{"type": "paragraph", "content": [{"type": "text", "text": "x"}]}]});
    let policy = world.app.policies.create_policy(&tenant.owner, serde_json::from_value(input).unwrap()).await.unwrap();
    assert_eq!(policy.status, PolicyStatus::Draft);
    assert_eq!(world.drafts.last_of(policy.id.as_str()).action, "policy.created");
    assert!(world.drafts.observations(policy.id.as_str()).is_empty(), "never in force, so nothing failed");
}

#[tokio::test]
async fn a_published_policy_that_needs_no_signature_passes() {
    let world = World::new();
    let tenant = world.tenant().await;
    let policy = published_policy(&world, &tenant, json!({"isRequiredToSign": false})).await;
    assert_eq!(policy.status, PolicyStatus::Published);
    assert_eq!(world.drafts.last_of(policy.id.as_str()).action, "policy.published");
    let seen = observed(&world, policy.id.as_str());
    let reason = "the policy is published and requires no signature";
    assert_outcome(&seen, SourceKind::Policy, policy.id.as_str(), EvidenceOutcome::Pass, reason);
    assert_eq!(seen.detail["version"], 1);
}

#[tokio::test]
async fn a_published_policy_to_be_signed_compares_signatures_from_each_new_version() {
    let world = World::new();
    let tenant = world.tenant().await;
    let policy = published_policy(&world, &tenant, json!({})).await;
    assert!(policy.is_required_to_sign, "the default");
    let published = observed(&world, policy.id.as_str());
    assert_eq!((published.kind, published.source_id.as_str()), (SourceKind::Policy, policy.id.as_str()));
    assert_eq!(published.proof, Proof::Signatures { signed: Vec::new(), new_version: true });
    let owner = tenant.owner.user_id.to_string();
    let (outcome, detail) = published.decide(std::slice::from_ref(&owner)).unwrap();
    assert_eq!(outcome, EvidenceOutcome::Fail, "a new version nobody signed fails: {detail}");

    world.app.policies.sign_policy(&tenant.owner, &policy.id).await.unwrap();
    assert_eq!(world.drafts.last_of(policy.id.as_str()).action, "policy.signed");
    let signed = observed(&world, policy.id.as_str());
    assert_eq!(signed.proof, Proof::Signatures { signed: vec![owner.clone()], new_version: false });
    let other = world.member(&tenant.org, "employee").await.user_id.to_string();
    assert_eq!(signed.decide(&[owner.clone(), other]), None, "one more signature proves nothing yet");
    assert_eq!(signed.decide(&[owner]).map(|(outcome, _)| outcome), Some(EvidenceOutcome::Pass), "all signed");

    let again = world.drafts.all().len();
    world.app.policies.sign_policy(&tenant.owner, &policy.id).await.unwrap();
    assert_eq!(world.drafts.all().len(), again, "signing again writes nothing");
}

#[tokio::test]
async fn a_policy_whose_review_falls_due_by_the_clock_fails() {
    let world = World::new();
    let tenant = world.tenant().await;
    let review_date = world.clock.now().plus(time::Duration::days(30));
    let policy = published_policy(&world, &tenant, json!({"isRequiredToSign": false, "reviewDate": review_date})).await;
    let reviews = world.another_instance().take_policy_review_worker().unwrap();

    world.clock.set(review_date.plus(-time::Duration::seconds(1)));
    assert_eq!(reviews.tick().await.unwrap(), 0, "a second early");
    assert_eq!(world.drafts.last_of(policy.id.as_str()).action, "policy.published");

    world.clock.set(review_date);
    assert_eq!(reviews.tick().await.unwrap(), 1);
    assert_eq!(world.policies.status(&policy.id), PolicyStatus::NeedsReview);
    let draft = world.drafts.last_of(policy.id.as_str());
    assert_eq!((draft.action.as_str(), draft.created_at), ("policy.review_requested", review_date));
    let seen = observed(&world, policy.id.as_str());
    assert_outcome(&seen, SourceKind::Policy, policy.id.as_str(), EvidenceOutcome::Fail, "the policy's review is due");
}

#[tokio::test]
async fn an_archived_policy_fails_and_an_edit_of_its_name_proves_nothing() {
    let world = World::new();
    let tenant = world.tenant().await;
    let policy = published_policy(&world, &tenant, json!({"isRequiredToSign": false})).await;
    let policies = &world.app.policies;
    let renamed = PolicyChanges { name: Some("Access control (2030)".into()), ..PolicyChanges::default() };
    policies.update_policy(&tenant.owner, &policy.id, renamed, &IfMatch::Absent).await.unwrap();
    assert_proves_nothing(&world, policy.id.as_str(), "policy.updated");

    let archive = PolicyChanges { is_archived: Some(true), ..PolicyChanges::default() };
    let archived = policies.update_policy(&tenant.owner, &policy.id, archive, &IfMatch::Absent).await.unwrap();
    assert!(archived.is_archived);
    let seen = observed(&world, policy.id.as_str());
    assert_outcome(&seen, SourceKind::Policy, policy.id.as_str(), EvidenceOutcome::Fail, "the policy was archived");
}

#[tokio::test]
async fn a_deleted_policy_fails() {
    let world = World::new();
    let tenant = world.tenant().await;
    let policy = published_policy(&world, &tenant, json!({"isRequiredToSign": false})).await;
    world.app.policies.delete_policy(&tenant.owner, &policy.id, &IfMatch::Absent).await.unwrap();
    assert_eq!(world.drafts.last_of(policy.id.as_str()).action, "policy.deleted");
    let seen = observed(&world, policy.id.as_str());
    assert_outcome(&seen, SourceKind::Policy, policy.id.as_str(), EvidenceOutcome::Fail, "the policy was deleted");
}

// Connections: a check passes when the provider accepts the credentials and fails when it
// refuses them, an expired token it will not refresh included; disconnected, a connection fails.

#[tokio::test]
async fn a_check_the_provider_accepts_passes() {
    let world = World::new();
    let tenant = world.tenant().await;
    let id = connect_acme(&world, &tenant).await;
    assert_proves_nothing(&world, &id, "connection.created");
    world.clock.advance(time::Duration::minutes(1));
    world.app.integrations.check_connection(&tenant.owner, &id).await.unwrap();
    assert_eq!(world.drafts.last_of(&id).action, "connection.checked");
    let seen = observed(&world, &id);
    let reason = "the provider's verify request succeeded";
    assert_outcome(&seen, SourceKind::Connection, &id, EvidenceOutcome::Pass, reason);
    assert_eq!((seen.detail["ok"].clone(), seen.detail["connectionStatus"].clone()), (json!(true), json!("active")));
}

#[tokio::test]
async fn a_check_the_provider_refuses_fails() {
    let world = World::new();
    let tenant = world.tenant().await;
    let id = connect_acme(&world, &tenant).await;
    world.provider.verify_with(Ok(401));
    world.app.integrations.check_connection(&tenant.owner, &id).await.unwrap();
    let seen = observed(&world, &id);
    let reason = "the provider refused the credentials (HTTP 401)";
    assert_outcome(&seen, SourceKind::Connection, &id, EvidenceOutcome::Fail, reason);
    assert_eq!(seen.detail["ok"], false);

    world.clock.advance(time::Duration::minutes(1));
    world.provider.verify_with(Err(ProviderRequestError::Unreachable));
    world.app.integrations.check_connection(&tenant.owner, &id).await.unwrap();
    let reason = "the provider could not be reached";
    assert_outcome(&observed(&world, &id), SourceKind::Connection, &id, EvidenceOutcome::Fail, reason);
}

#[tokio::test]
async fn a_check_after_the_token_expired_whose_refresh_is_refused_fails() {
    let world = World::new();
    let tenant = world.tenant().await;
    let expires = world.clock.now().plus(time::Duration::hours(1));
    let id = connect_tokens(&world, &tenant, tokens("at-1", Some("rt-1"), Some(expires))).await;
    world.app.integrations.check_connection(&tenant.owner, &id).await.unwrap();
    let fresh = observed(&world, &id);
    assert_eq!(fresh.proof, Proof::Outcome(EvidenceOutcome::Pass), "while the token is valid: {fresh:?}");

    world.clock.set(expires.plus(time::Duration::minutes(1)));
    world.provider.refresh_with(Err(TokenError::InvalidGrant));
    let report = world.app.integrations.check_connection(&tenant.owner, &id).await.unwrap();
    assert!(!report.check.ok);
    assert_eq!(world.provider.asked().last(), Some(&Asked::Refresh { refresh_token: "rt-1".into() }));
    let seen = observed(&world, &id);
    let reason = "the connection must be authorised again";
    assert_outcome(&seen, SourceKind::Connection, &id, EvidenceOutcome::Fail, reason);
    assert_eq!(seen.detail["connectionStatus"], "needs_reauth");
    assert_eq!(world.drafts.observations(&id).len(), 2, "the check while fresh, the one after expiry");
}

#[tokio::test]
async fn a_disconnected_connection_fails() {
    let world = World::new();
    let tenant = world.tenant().await;
    let id = connect_acme(&world, &tenant).await;
    world.app.integrations.disconnect_connection(&tenant.owner, &id, &IfMatch::Absent).await.unwrap();
    assert_eq!(world.drafts.last_of(&id).action, "connection.disconnected");
    let seen = observed(&world, &id);
    assert_outcome(&seen, SourceKind::Connection, &id, EvidenceOutcome::Fail, "the connection was deleted");
}

// Automations and their runs: a finished run passes with a passed verdict and fails otherwise;
// a run not finished yet proves nothing; a deleted automation fails, an edit proves nothing.

#[tokio::test]
async fn a_deleted_automation_fails_and_an_edit_proves_nothing() {
    let world = World::new();
    let tenant = world.tenant().await;
    let automation = automation_doing(&world, &tenant.owner, None, MFA_CHECK).await;
    let id = automation.id.to_string();
    assert_proves_nothing(&world, &id, "automation.created");
    let renamed = AutomationChanges { name: Some("MFA is enforced".into()), ..AutomationChanges::default() };
    world.app.automations.update(&tenant.owner, &automation.id, renamed, &IfMatch::Absent).await.unwrap();
    assert_proves_nothing(&world, &id, "automation.updated");

    world.app.automations.delete(&tenant.owner, &automation.id, &IfMatch::Absent).await.unwrap();
    assert_eq!(world.drafts.last_of(&id).action, "automation.deleted");
    let seen = observed(&world, &id);
    assert_outcome(&seen, SourceKind::Automation, &id, EvidenceOutcome::Fail, "the automation was deleted");
    assert_eq!(seen.run_id, None);
}

/// Runs a new automation doing `instruction` once with the worker: its id, and the observation
/// of its run.
async fn run_once(world: &mut World, tenant: &Tenant, instruction: &str) -> (String, Observation) {
    let automation = automation_doing(world, &tenant.owner, None, instruction).await;
    let worker = worker(world);
    world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();
    worker.tick().await;
    let [run] = runs(world).try_into().unwrap();
    let id = automation.id.to_string();
    assert_eq!(world.drafts.last_of(&id).action, "automation.run_finished");
    let seen = observed(world, &id);
    assert_eq!(seen.run_id, Some(run.id.to_string()));
    (id, seen)
}

#[tokio::test]
async fn a_run_with_a_passed_verdict_passes() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    world.browser.show("Security: MFA is enforced for all members");
    let (id, seen) = run_once(&mut world, &tenant, MFA_CHECK).await;
    assert_outcome(&seen, SourceKind::Automation, &id, EvidenceOutcome::Pass, "all 2 expectations held");
    assert_eq!(seen.detail["runStatus"], "completed");
}

#[tokio::test]
async fn a_run_with_a_failed_verdict_fails() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    world.browser.show("Security: MFA is optional");
    let (id, seen) = run_once(&mut world, &tenant, MFA_CHECK).await;
    let reason = "step 1 (expect text \"MFA is enforced\"): the page does not show the text";
    assert_outcome(&seen, SourceKind::Automation, &id, EvidenceOutcome::Fail, reason);
    assert_eq!(seen.detail["runStatus"], "completed", "carried out, and what it found failed");
}

#[tokio::test]
async fn a_run_that_could_not_be_carried_out_fails() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    world.browser.set(BrowserPage::Fails(compliance_ports::CaptureError::HttpStatus(404)));
    let (id, seen) = run_once(&mut world, &tenant, MFA_CHECK).await;
    assert_outcome(&seen, SourceKind::Automation, &id, EvidenceOutcome::Fail, "the page answered HTTP 404");
    assert_eq!((seen.detail["runStatus"].clone(), seen.detail["verdict"].clone()), (json!("failed"), json!(null)));
}

#[tokio::test]
async fn a_run_still_pending_or_running_proves_nothing_until_it_finishes() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation_doing(&world, &tenant.owner, None, MFA_CHECK).await;
    let id = automation.id.to_string();
    let worker = worker(&mut world);
    world.browser.set(BrowserPage::Waits);
    world.browser.show("Security: MFA is enforced for all members");
    world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();
    assert_proves_nothing(&world, &id, "automation.run_started");

    let running = tokio::spawn({
        let worker = worker.clone();
        async move { worker.tick().await }
    });
    world.browser.started().await;
    assert_eq!(runs(&world)[0].status, compliance_domain::automation::RunStatus::Running);
    assert_eq!(world.drafts.observations(&id), [], "a running run proves nothing");

    world.browser.release();
    running.await.unwrap();
    let [seen] = world.drafts.observations(&id).try_into().unwrap();
    assert_outcome(&seen, SourceKind::Automation, &id, EvidenceOutcome::Pass, "all 2 expectations held");
}

/// The error the worker gives a run its instance left running.
const INTERRUPTED: &str = "the run was interrupted (its server stopped); run it again";

#[tokio::test]
async fn a_run_its_instance_left_running_fails_when_another_instance_fails_it_as_stale() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation_doing(&world, &tenant.owner, None, MFA_CHECK).await;
    let id = automation.id.to_string();
    let stopped = worker(&mut world);
    let survivor = Arc::new(world.another_instance().take_worker().unwrap());
    world.browser.set(BrowserPage::Waits);
    world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();
    let running = tokio::spawn(async move { stopped.tick().await });
    world.browser.started().await;

    let cutoff = time::Duration::try_from(AutomationSettings::default().stale_cutoff()).unwrap();
    world.clock.advance(cutoff + time::Duration::seconds(1));
    survivor.tick().await;
    assert_eq!(runs(&world)[0].status, compliance_domain::automation::RunStatus::Failed);
    let finished = world.drafts.last_of(&id);
    assert_eq!(finished.action, "automation.run_finished", "the stale run's failure is audited");
    let [seen] = world.drafts.observations(&id).try_into().unwrap();
    assert_outcome(&seen, SourceKind::Automation, &id, EvidenceOutcome::Fail, INTERRUPTED);

    // The stopped instance's browser answers after all: its outcome is dropped, no second evidence.
    world.browser.release();
    running.await.unwrap();
    assert_eq!(world.drafts.observations(&id).len(), 1);
}

#[tokio::test]
async fn a_scheduled_firing_proves_nothing_until_its_run_finishes() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation_doing(&world, &tenant.owner, Some("0 3 * * *"), MFA_CHECK).await;
    let id = automation.id.to_string();
    let worker = worker(&mut world);
    world.browser.set(BrowserPage::Fails(compliance_ports::CaptureError::HttpStatus(503)));
    world.clock.set(automation.next_run_at.unwrap());
    worker.tick().await;
    let actions: Vec<String> = world.drafts.of(&id).into_iter().map(|d| d.action).collect();
    assert_eq!(actions, ["automation.created", "automation.run_started", "automation.run_finished"]);
    let [seen] = world.drafts.observations(&id).try_into().unwrap();
    assert_outcome(&seen, SourceKind::Automation, &id, EvidenceOutcome::Fail, "the page answered HTTP 503");
}
