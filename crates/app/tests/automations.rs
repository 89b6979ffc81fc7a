//! Browser automations and the worker that runs them: schedules fire when due and only then,
//! each due schedule and each pending run is claimed by one instance, runs that hang or outlive
//! their instance are failed, and screenshot links expire. The worker is driven tick by tick
//! against the fake clock; only the run timeout reads tokio's clock, paused in that test.

use std::sync::Arc;

use compliance_app::{AppError, AutomationSettings, AutomationWorker, Principal};
use compliance_domain::Timestamp;
use compliance_domain::automation::{
    AutomationChanges, AutomationRun, BrowserAutomation, NewAutomation, RunStatus, RunTrigger,
};
use compliance_domain::task::NewTask;
use compliance_ports::{CaptureError, Clock};

use crate::support::browser::PNG;
use crate::support::{BrowserPage, World, query};

/// Daily at 03:00 UTC: from the start of the fake clock (a Monday noon) the next firing is
/// Tuesday 03:00.
const DAILY: &str = "0 3 * * *";

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

async fn automation(world: &World, caller: &Principal, schedule: Option<&str>) -> BrowserAutomation {
    let task = NewTask { title: Some("Check the status page".into()), ..NewTask::default() };
    let task = world.app.tasks.create_task(caller, task).await.unwrap();
    let input = NewAutomation {
        task_id: Some(task.id.to_string()),
        name: Some("Status page".into()),
        target_url: Some("https://status.example.com/".into()),
        instruction: Some("Take a screenshot.".into()),
        schedule: schedule.map(Into::into),
        ..NewAutomation::default()
    };
    world.app.automations.create(caller, input).await.unwrap()
}

fn worker(world: &mut World) -> Arc<AutomationWorker> {
    Arc::new(world.app.take_worker().unwrap())
}

fn runs(world: &World) -> Vec<AutomationRun> {
    world.automations.all_runs()
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

    let disabled = world.app.automations.update(&tenant.owner, &automation.id, switch(false)).await.unwrap();
    assert_eq!(disabled.next_run_at, None);
    world.clock.advance(time::Duration::days(7));
    worker.tick().await;
    assert_eq!(runs(&world), [], "a week of firings while disabled: nothing runs");

    // 2030-06-10T12:00: the missed firings are not made up for; the next one is tomorrow's.
    let enabled = world.app.automations.update(&tenant.owner, &automation.id, switch(true)).await.unwrap();
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

    let [view] = world.app.automations.runs(&tenant.owner, &automation.id).await.unwrap().try_into().unwrap();
    let url = view.screenshot_url.unwrap();
    let run = view.run.id.to_string();
    assert!(url.starts_with(&format!("https://compliance.test/v1/browser/runs/{run}/screenshot?")), "{url}");
    let (org, expires, signature) =
        (query(&url, "org"), query(&url, "expires").parse().unwrap(), query(&url, "signature"));
    let open = || world.app.automations.screenshot(&org, &run, expires, &signature);
    assert_eq!(open().await.unwrap(), PNG);
    let as_attachment = world.app.comments.download(&org, &run, expires, &signature).await;
    assert!(matches!(as_attachment, Err(AppError::Forbidden(_))), "a screenshot link is no attachment link");

    world.clock.advance(time::Duration::seconds(15 * 60));
    assert_eq!(open().await.unwrap(), PNG, "valid through its expiry second");
    world.clock.advance(time::Duration::seconds(1));
    assert!(matches!(open().await, Err(AppError::Forbidden(_))), "expired");
}
