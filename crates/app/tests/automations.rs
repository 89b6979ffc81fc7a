//! Browser automations and the worker that runs them: schedules fire when due and only then,
//! each due schedule and each pending run is claimed by one instance, runs that hang or outlive
//! their instance are failed, and screenshot links expire. The worker is driven tick by tick
//! against the fake clock; only the run timeout reads tokio's clock, paused in that test.

use compliance_domain::etag::IfMatch;
use std::sync::Arc;

use compliance_app::{AppError, AutomationSettings, AutomationWorker, Principal, RunView};
use compliance_domain::Timestamp;
use compliance_domain::automation::{
    AutomationChanges, AutomationRun, BrowserAutomation, Executor, NewAutomation, RunStatus, RunTrigger, StepOutcome,
    VerdictOutcome,
};
use compliance_domain::task::NewTask;
use compliance_ports::{CaptureError, Clock, PageRequest};

use crate::support::browser::PNG;
use crate::support::{BrowserPage, World, query};

/// Daily at 03:00 UTC: from the start of the fake clock (a Monday noon) the next firing is
/// Tuesday 03:00.
const DAILY: &str = "0 3 * * *";

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

async fn automation(world: &World, caller: &Principal, schedule: Option<&str>) -> BrowserAutomation {
    automation_doing(world, caller, schedule, "screenshot").await
}

pub(crate) async fn automation_doing(
    world: &World,
    caller: &Principal,
    schedule: Option<&str>,
    instruction: &str,
) -> BrowserAutomation {
    let task = NewTask { title: Some("Check the status page".into()), ..NewTask::default() };
    let task = world.app.tasks.create_task(caller, task).await.unwrap();
    let input = NewAutomation {
        task_id: Some(task.id.to_string()),
        name: Some("Status page".into()),
        target_url: Some("https://status.example.com/".into()),
        instruction: Some(instruction.into()),
        schedule: schedule.map(Into::into),
        ..NewAutomation::default()
    };
    world.app.automations.create(caller, input).await.unwrap()
}

pub(crate) fn worker(world: &mut World) -> Arc<AutomationWorker> {
    Arc::new(world.app.take_worker().unwrap())
}

pub(crate) fn runs(world: &World) -> Vec<AutomationRun> {
    world.automations.all_runs()
}

/// The automation's runs as the service lists them, newest first, on one page.
async fn all_runs(world: &World, caller: &Principal, automation: &BrowserAutomation) -> Vec<RunView> {
    world
        .app
        .automations
        .runs(caller, &automation.id, &compliance_ports::ListQuery::unfiltered(PageRequest::first(100)))
        .await
        .unwrap()
        .items
}

#[tokio::test]
async fn a_schedule_runs_nothing_before_it_is_due_and_once_when_it_is() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation(&world, &tenant.owner, Some(DAILY)).await;
    assert_eq!(automation.next_run_at, Some(at("2030-06-04T03:00:00Z")));
    let worker = worker(&mut world);

    world.clock.set(at("2030-06-04T02:59:59Z"));
    worker.tick().await;
    assert_eq!(runs(&world), [], "one second early: nothing runs");
    assert_eq!(world.browser.captures(), 0);

    world.clock.set(at("2030-06-04T03:00:00Z"));
    worker.tick().await;
    let [run] = runs(&world).try_into().unwrap();
    assert_eq!((run.trigger, run.status), (RunTrigger::Schedule, RunStatus::Completed));
    assert_eq!(run.screenshot_key.as_deref(), Some(run.screenshot_blob_key().as_str()));
    assert_eq!(world.blobs.bytes(&run.screenshot_blob_key()).as_deref(), Some(PNG));
    let moved = world.automations.automation(&automation.id).next_run_at;
    assert_eq!(moved, Some(at("2030-06-05T03:00:00Z")), "the schedule moves to its next firing");

    worker.tick().await;
    assert_eq!(runs(&world).len(), 1, "a claimed firing does not fire again");
    assert_eq!(world.browser.captures(), 1);
}

#[tokio::test]
async fn a_disabled_schedule_runs_nothing_and_enabling_does_not_catch_up() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation(&world, &tenant.owner, Some(DAILY)).await;
    let worker = worker(&mut world);
    let switch = |on: bool| AutomationChanges { is_enabled: Some(on), ..AutomationChanges::default() };

    let disabled =
        world.app.automations.update(&tenant.owner, &automation.id, switch(false), &IfMatch::Absent).await.unwrap();
    assert_eq!(disabled.next_run_at, None);
    world.clock.advance(time::Duration::days(7));
    worker.tick().await;
    assert_eq!(runs(&world), [], "a week of firings while disabled: nothing runs");

    // 2030-06-10T12:00: the missed firings are not made up for; the next one is tomorrow's.
    let enabled =
        world.app.automations.update(&tenant.owner, &automation.id, switch(true), &IfMatch::Absent).await.unwrap();
    assert_eq!(enabled.next_run_at, Some(at("2030-06-11T03:00:00Z")));
    worker.tick().await;
    assert_eq!(runs(&world), []);
    assert_eq!(world.browser.captures(), 0);
}

#[tokio::test]
async fn an_automation_without_a_schedule_runs_only_when_started_one_run_at_a_time() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation(&world, &tenant.owner, None).await;
    assert_eq!(automation.next_run_at, None);
    let worker = worker(&mut world);
    world.clock.advance(time::Duration::days(400));
    worker.tick().await;
    assert_eq!(runs(&world), []);

    let started = world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();
    assert_eq!((started.run.status, started.run.trigger), (RunStatus::Pending, RunTrigger::Manual));
    let second = world.app.automations.start_run(&tenant.owner, &automation.id).await;
    assert!(matches!(second, Err(AppError::Conflict(_))), "while one is pending: {second:?}");
    worker.tick().await;
    let [run] = runs(&world).try_into().unwrap();
    assert_eq!((run.id, run.status), (started.run.id, RunStatus::Completed));
    world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();
}

#[tokio::test]
async fn a_schedule_due_while_a_run_is_pending_moves_on_without_a_second_run() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation(&world, &tenant.owner, Some(DAILY)).await;
    let worker = worker(&mut world);
    let manual = world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();

    world.clock.set(at("2030-06-04T03:00:00Z"));
    worker.tick().await;
    let [run] = runs(&world).try_into().unwrap();
    assert_eq!((run.id, run.status), (manual.run.id, RunStatus::Completed), "only the manual run ran");
    let next = world.automations.automation(&automation.id).next_run_at;
    assert_eq!(next, Some(at("2030-06-05T03:00:00Z")), "the firing is spent, not left due");
}

#[tokio::test]
async fn two_instances_that_see_a_schedule_due_start_it_once() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation(&world, &tenant.owner, Some(DAILY)).await;
    let first = worker(&mut world);
    let second = Arc::new(world.another_instance().take_worker().unwrap());
    // Both read the schedule as due before either claims it.
    world.automations.hold_due_for(2);
    world.clock.set(at("2030-06-04T03:00:00Z"));

    tokio::join!(first.tick(), second.tick());
    let [run] = runs(&world).try_into().unwrap();
    assert_eq!((run.trigger, run.status), (RunTrigger::Schedule, RunStatus::Completed));
    assert_eq!(world.browser.captures(), 1, "the page was opened once");
    assert_eq!(world.automations.automation(&automation.id).next_run_at, Some(at("2030-06-05T03:00:00Z")));
}

#[tokio::test]
async fn a_pending_run_is_taken_by_one_instance_and_the_other_finds_nothing() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation(&world, &tenant.owner, None).await;
    let first = worker(&mut world);
    let second = Arc::new(world.another_instance().take_worker().unwrap());
    world.browser.set(BrowserPage::Waits);
    world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();

    let running = tokio::spawn(async move { first.tick().await });
    world.browser.started().await;
    second.tick().await;
    assert_eq!(world.browser.captures(), 1, "the second instance found no run to take");
    assert_eq!(runs(&world)[0].status, RunStatus::Running);

    world.browser.release();
    running.await.unwrap();
    assert_eq!(runs(&world)[0].status, RunStatus::Completed);
    assert_eq!(world.browser.captures(), 1);
}

#[tokio::test]
async fn a_run_left_running_past_the_stale_cutoff_is_failed_and_its_late_outcome_dropped() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation(&world, &tenant.owner, None).await;
    let stopped = worker(&mut world);
    let survivor = Arc::new(world.another_instance().take_worker().unwrap());
    world.browser.set(BrowserPage::Waits);
    world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();
    let running = tokio::spawn(async move { stopped.tick().await });
    world.browser.started().await;

    // Twice the longest a run may take (30 s + 60 s to launch), or STALE_AFTER if longer: 10 min.
    let cutoff = AutomationSettings::default().stale_cutoff();
    assert_eq!(cutoff, std::time::Duration::from_secs(600));
    world.clock.advance(time::Duration::try_from(cutoff).unwrap());
    survivor.tick().await;
    assert_eq!(runs(&world)[0].status, RunStatus::Running, "at the cutoff it may still be running");
    world.clock.advance(time::Duration::seconds(1));
    survivor.tick().await;
    let failed = &runs(&world)[0];
    assert_eq!(failed.status, RunStatus::Failed);
    assert!(failed.error.as_deref().unwrap().contains("interrupted"), "{:?}", failed.error);

    // The browser of the "stopped" instance answers after all: its outcome has no run to go to.
    world.browser.release();
    running.await.unwrap();
    assert_eq!(runs(&world)[0].status, RunStatus::Failed, "the stale verdict stands");
    assert_eq!(world.blobs.keys(), Vec::<String>::new(), "the late screenshot is removed again");
}

#[tokio::test(start_paused = true)]
async fn a_page_that_never_loads_fails_the_run_at_its_time_limit() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation(&world, &tenant.owner, None).await;
    let worker = worker(&mut world);
    world.browser.set(BrowserPage::Hangs);
    world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();

    let before = tokio::time::Instant::now();
    worker.tick().await;
    let limit = AutomationSettings::default().run_limit();
    assert!(before.elapsed() >= limit, "gave up after {:?} of (paused) time", before.elapsed());
    let run = &runs(&world)[0];
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.error.as_deref(), Some("the run did not finish within 90 seconds"));
    assert_eq!((run.screenshot_key.as_deref(), world.blobs.keys().len()), (None, 0));
}

#[tokio::test]
async fn a_page_that_fails_fails_the_run_with_the_reason() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation(&world, &tenant.owner, None).await;
    let worker = worker(&mut world);
    world.browser.set(BrowserPage::Fails(CaptureError::HttpStatus(404)));
    world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();
    world.clock.advance(time::Duration::seconds(3));
    worker.tick().await;
    let run = &runs(&world)[0];
    assert_eq!((run.status, run.error.as_deref()), (RunStatus::Failed, Some("the page answered HTTP 404")));
    assert_eq!(run.started_at, Some(world.clock.now()), "started by the worker's clock");
}

#[tokio::test]
async fn a_screenshot_link_expires_and_opens_nothing_else() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation(&world, &tenant.owner, None).await;
    let worker = worker(&mut world);
    world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();
    worker.tick().await;

    let [view] = all_runs(&world, &tenant.owner, &automation).await.try_into().unwrap();
    let url = view.screenshot_url.unwrap();
    let run = view.run.id.to_string();
    assert!(url.starts_with(&format!("https://compliance.test/v1/browser/runs/{run}/screenshot?")), "{url}");
    let (org, expires, signature) =
        (query(&url, "org"), query(&url, "expires").parse().unwrap(), query(&url, "signature"));
    let open = || world.app.automations.screenshot(&org, &run, None, expires, &signature);
    assert_eq!(open().await.unwrap(), PNG);
    let as_attachment = world.app.comments.download(&org, &run, expires, &signature).await;
    assert!(matches!(as_attachment, Err(AppError::Forbidden(_))), "a screenshot link is no attachment link");

    world.clock.advance(time::Duration::seconds(15 * 60));
    assert_eq!(open().await.unwrap(), PNG, "valid through its expiry second");
    world.clock.advance(time::Duration::seconds(1));
    assert!(matches!(open().await, Err(AppError::Forbidden(_))), "expired");
}

pub(crate) const MFA_CHECK: &str = "expect text \"MFA is enforced\"\nexpect no text \"MFA is optional\"\nscreenshot";

#[tokio::test]
async fn a_step_list_passes_when_every_expectation_holds_and_records_each_step() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation_doing(&world, &tenant.owner, None, MFA_CHECK).await;
    assert_eq!(automation.executor(), Executor::Steps);
    let worker = worker(&mut world);
    world.browser.show("Security: MFA is enforced for all members");
    world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();
    worker.tick().await;

    let [run] = runs(&world).try_into().unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    let verdict = run.verdict.clone().unwrap();
    assert_eq!((verdict.outcome, verdict.reason.as_str()), (VerdictOutcome::Passed, "all 2 expectations held"));
    let actions: Vec<(&str, StepOutcome)> = run.steps.iter().map(|s| (s.action.as_str(), s.outcome)).collect();
    assert_eq!(
        actions,
        [("expect text", StepOutcome::Ok), ("expect no text", StepOutcome::Ok), ("screenshot", StepOutcome::Ok)]
    );
    // Only the step that may change the page keeps a screenshot.
    let shots: Vec<Option<String>> = run.steps.iter().map(|s| s.screenshot_key.clone()).collect();
    assert_eq!(shots, [None, None, Some(run.step_screenshot_blob_key(2))]);
    assert_eq!(world.blobs.bytes(&run.step_screenshot_blob_key(2)).as_deref(), Some(PNG));
}

#[tokio::test]
async fn an_expectation_that_does_not_hold_fails_the_verdict_naming_it() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation_doing(&world, &tenant.owner, None, MFA_CHECK).await;
    let worker = worker(&mut world);
    world.browser.show("Security: MFA is optional");
    world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();
    worker.tick().await;

    let [run] = runs(&world).try_into().unwrap();
    assert_eq!((run.status, run.error.as_deref()), (RunStatus::Completed, None));
    let verdict = run.verdict.clone().unwrap();
    assert_eq!(verdict.outcome, VerdictOutcome::Failed);
    assert_eq!(verdict.reason, "step 1 (expect text \"MFA is enforced\"): the page does not show the text");
    assert_eq!(run.steps.len(), 1, "the run stops at the first expectation that fails");
    assert_eq!(run.steps[0].outcome, StepOutcome::Failed);
}

#[tokio::test]
async fn free_text_without_a_model_fails_saying_what_it_needs() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation_doing(&world, &tenant.owner, None, "Check that MFA is enforced").await;
    assert_eq!(automation.executor(), Executor::Agent);
    let worker = worker(&mut world);
    world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();
    worker.tick().await;
    let [run] = runs(&world).try_into().unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.error.as_deref(), Some("free-text instructions need AUTOMATION_LLM_URL"));
}

#[tokio::test]
async fn a_bad_step_list_is_refused_naming_the_line_at_create_and_at_update() {
    let world = World::new();
    let tenant = world.tenant().await;
    let task = NewTask { title: Some("MFA".into()), ..NewTask::default() };
    let task = world.app.tasks.create_task(&tenant.owner, task).await.unwrap();
    let input = NewAutomation {
        task_id: Some(task.id.to_string()),
        name: Some("MFA".into()),
        target_url: Some("https://example.com/".into()),
        instruction: Some("go to \"https://example.com/login\"\nclick the button".into()),
        ..NewAutomation::default()
    };
    let Err(AppError::Validation(errors)) = world.app.automations.create(&tenant.owner, input).await else {
        panic!("a bad step list was accepted");
    };
    assert_eq!(errors.0[0].field, "instruction");
    assert!(errors.0[0].message.starts_with("line 2: click \"visible text\""), "{}", errors.0[0].message);

    let automation = automation(&world, &tenant.owner, None).await;
    let changes = AutomationChanges { instruction: Some("screenshot\nexpect txt \"x\"".into()), ..Default::default() };
    let refused = world.app.automations.update(&tenant.owner, &automation.id, changes, &IfMatch::Absent).await;
    assert!(
        matches!(&refused, Err(AppError::Validation(e)) if e.0[0].message.starts_with("line 2: expect")),
        "{refused:?}"
    );
}

#[tokio::test]
async fn runs_come_in_pages_newest_first() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation(&world, &tenant.owner, None).await;
    let worker = worker(&mut world);
    for _ in 0..3 {
        world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();
        worker.tick().await;
        world.clock.advance(time::Duration::seconds(1));
    }
    let all: Vec<_> = all_runs(&world, &tenant.owner, &automation).await.into_iter().map(|v| v.run.id).collect();
    let first = world
        .app
        .automations
        .runs(&tenant.owner, &automation.id, &compliance_ports::ListQuery::unfiltered(PageRequest::first(2)))
        .await
        .unwrap();
    assert_eq!((first.total, first.items.len()), (3, 2));
    let next =
        compliance_ports::ListQuery::unfiltered(PageRequest { after: first.next.clone(), ..PageRequest::first(2) });
    let second = world.app.automations.runs(&tenant.owner, &automation.id, &next).await.unwrap();
    let paged: Vec<_> = first.items.iter().chain(&second.items).map(|v| v.run.id.clone()).collect();
    assert_eq!(paged, all);
    assert_eq!(second.next, None);
}

#[tokio::test]
async fn runs_past_the_retention_are_removed_with_every_screenshot() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation(&world, &tenant.owner, None).await;
    let worker = worker(&mut world);
    world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();
    worker.tick().await;
    let [old] = runs(&world).try_into().unwrap();
    // The copy attached to the evidence comment on the task is the comment's, not the run's.
    let run_blobs =
        |world: &World| -> Vec<String> { world.blobs.keys().into_iter().filter(|k| !k.contains("/att_")).collect() };
    assert_eq!(run_blobs(&world).len(), 2, "the step's screenshot and the final one");

    world.clock.advance(time::Duration::days(60));
    world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();
    worker.tick().await;
    assert_eq!(runs(&world).len(), 2);

    // 90 days after the first run, and more than the sweep's hour after the last sweep.
    world.clock.advance(time::Duration::days(30));
    worker.tick().await;
    assert_eq!(runs(&world).len(), 2, "exactly 90 days old: kept");
    world.clock.advance(time::Duration::hours(1));
    worker.tick().await;
    let [kept] = runs(&world).try_into().unwrap();
    assert_ne!(kept.id, old.id);
    let mut expected: Vec<String> = kept.blob_keys().map(str::to_owned).collect();
    expected.sort();
    assert_eq!(run_blobs(&world), expected, "the old run's screenshots are gone, the kept run's stay");
}

#[tokio::test]
async fn a_step_screenshot_link_opens_that_step_only() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let automation = automation_doing(&world, &tenant.owner, None, "screenshot\nscreenshot").await;
    let worker = worker(&mut world);
    world.app.automations.start_run(&tenant.owner, &automation.id).await.unwrap();
    worker.tick().await;

    let [view] = all_runs(&world, &tenant.owner, &automation).await.try_into().unwrap();
    let run = view.run.id.to_string();
    let url = view.step_screenshot_urls[1].clone().unwrap();
    assert!(url.starts_with(&format!("https://compliance.test/v1/browser/runs/{run}/screenshot?step=1&")), "{url}");
    let (org, expires, signature) =
        (query(&url, "org"), query(&url, "expires").parse().unwrap(), query(&url, "signature"));
    let open = |step| world.app.automations.screenshot(&org, &run, step, expires, &signature);
    assert_eq!(open(Some(1)).await.unwrap(), PNG);
    assert!(matches!(open(Some(0)).await, Err(AppError::Forbidden(_))), "not another step's");
    assert!(matches!(open(None).await, Err(AppError::Forbidden(_))), "not the run's");
}

#[tokio::test]
async fn one_organizations_runs_take_at_most_its_bound_of_browsers_and_others_run_past_them() {
    let mut world = World::new();
    assert_eq!(
        (AutomationSettings::default().concurrency, AutomationSettings::default().runs_per_organization),
        (2, 1),
        "two browsers, one run of an organization at a time"
    );
    let (busy, other) = (world.tenant().await, world.tenant().await);
    let first = automation(&world, &busy.owner, None).await;
    let second = automation(&world, &busy.owner, None).await;
    let theirs = automation(&world, &other.owner, None).await;
    let worker = worker(&mut world);
    world.browser.set(BrowserPage::Waits);
    for (caller, automation) in [(&busy.owner, &first), (&busy.owner, &second), (&other.owner, &theirs)] {
        world.clock.advance(time::Duration::seconds(1));
        world.app.automations.start_run(caller, &automation.id).await.unwrap();
    }

    let ticking = tokio::spawn({
        let worker = worker.clone();
        async move { worker.tick().await }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while world.browser.captures() < 2 {
        assert!(std::time::Instant::now() < deadline, "two runs started");
        tokio::task::yield_now().await;
    }
    let running = |org: &compliance_domain::OrganizationId| {
        runs(&world).iter().filter(|r| &r.organization_id == org && r.status == RunStatus::Running).count()
    };
    assert_eq!((running(&busy.org), running(&other.org)), (1, 1), "the younger run of another organization went first");

    world.browser.set(BrowserPage::Loads);
    // Each release lets one waiting page load (a release before it waits is kept, once).
    while !ticking.is_finished() {
        assert!(std::time::Instant::now() < deadline, "the runs finished");
        world.browser.release();
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    ticking.await.unwrap();
    assert!(runs(&world).iter().all(|r| r.status == RunStatus::Completed), "all three ran");
    assert_eq!(world.browser.captures(), 3);
}
