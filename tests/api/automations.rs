//! `/v1/browser/automations` and their runs: CRUD and validation, runs in a real headless Chromium
//! against pages served on loopback (allow-listed with `AUTOMATION_ALLOWED_HOSTS=127.0.0.1`), signed
//! screenshot links, one run at a time, schedules, and tenant isolation
//! (docs/devices-and-automations.md, shared/spec/rest-api.md).

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::checks::{assert_id, assert_later, assert_timestamp, missing_id, str_of, tick};
use crate::client::Client;
use crate::fake_fleet::closed_port;
use crate::harness::{TestServer, poll_every};
use crate::tenant::Tenant;

api_tests!(
    create_with_every_field_and_read_it_back with LOOPBACK,
    list_by_task_is_a_bare_array_oldest_first with LOOPBACK,
    update_changes_the_given_fields_and_the_next_run with LOOPBACK,
    delete_answers_the_automation_and_then_404 with LOOPBACK,
    invalid_bodies_are_400_naming_the_field with LOOPBACK,
    a_manual_run_completes_with_a_signed_png_screenshot with LOOPBACK,
    a_page_answering_404_fails_the_run with LOOPBACK,
    an_unreachable_host_fails_the_run with LOOPBACK,
    a_second_run_while_one_is_going_is_409 with LOOPBACK,
    a_schedule_fires_runs with LOOPBACK,
    another_organization_sees_nothing with LOOPBACK,
    a_step_script_logs_in_and_passes with LOOPBACK,
    an_expectation_that_does_not_hold_fails_the_verdict_with_the_reason with LOOPBACK,
    a_page_that_never_loads_fails_the_run_at_its_timeout with QUICK_TIMEOUT,
    an_unknown_step_is_400_naming_the_line,
    runs_come_in_pages with LOOPBACK,
    schedules_firing_too_often_are_refused,
    a_host_granted_to_one_organization_is_opened_for_it_only,
);

/// Loopback pages may be opened (the test pages are served there).
/// Local pages allowed, and schedules as frequent as every second (the default minimum is 60 s).
const LOOPBACK: crate::harness::Env =
    &[("AUTOMATION_ALLOWED_HOSTS", "127.0.0.1"), ("AUTOMATION_MIN_INTERVAL_SECONDS", "1")];

/// Loopback pages, and a run timeout of two seconds.
const QUICK_TIMEOUT: crate::harness::Env =
    &[("AUTOMATION_ALLOWED_HOSTS", "127.0.0.1"), ("AUTOMATION_RUN_TIMEOUT_SECONDS", "2")];

const AUTOMATIONS: &str = "/v1/browser/automations";
const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];
/// How long a run may take before the test gives up (the server bounds a run at 30 s).
const RUN_DEADLINE: Duration = Duration::from_secs(45);
/// How often the runs are read while waiting for one.
const RUN_POLL: Duration = Duration::from_millis(250);

const PAGE: &str = "<!doctype html><html><head><title>Status</title></head>\
                    <body><h1>All systems operational</h1><p>Checked by the tests.</p></body></html>";

/// Pages on loopback: `/ok` (200), `/missing` (404) and `/slow` (200 after 5 s).
async fn pages() -> MockServer {
    let server = MockServer::start().await;
    let html = |status: u16| ResponseTemplate::new(status).set_body_raw(PAGE.as_bytes().to_vec(), "text/html");
    Mock::given(method("GET")).and(path("/ok")).respond_with(html(200)).mount(&server).await;
    Mock::given(method("GET")).and(path("/missing")).respond_with(html(404)).mount(&server).await;
    Mock::given(method("GET"))
        .and(path("/slow"))
        .respond_with(html(200).set_delay(Duration::from_secs(5)))
        .mount(&server)
        .await;
    server
}

/// The requests `pages` received on `page`.
async fn hits(pages: &MockServer, page: &str) -> usize {
    pages.received_requests().await.unwrap_or_default().iter().filter(|r| r.url.path() == page).count()
}

async fn task(tenant: &Tenant) -> String {
    let task = crate::tasks::create(&tenant.api, "Check the status page").await;
    str_of(&task, "id").to_owned()
}

fn automation_path(id: &str) -> String {
    format!("{AUTOMATIONS}/{id}")
}

fn runs_path(id: &str) -> String {
    format!("{AUTOMATIONS}/{id}/runs")
}

/// Creates an automation of `task` opening `url`; the 201 body.
async fn create(client: &Client, task: &str, url: &str) -> Value {
    let body = json!({"taskId": task, "name": "Status page", "targetUrl": url,
                      "instruction": "screenshot"});
    client.post(AUTOMATIONS, body).await.ok(201)
}

/// `admin allow-host --for automations` lets one organization's automations open an internal
/// host (the loopback test pages here, with no `AUTOMATION_ALLOWED_HOSTS`): its run completes;
/// another organization's automation is refused, and a webhooks grant is not an automations one.
async fn a_host_granted_to_one_organization_is_opened_for_it_only(server: &TestServer) {
    let pages = pages().await;
    let url = format!("{}/ok", pages.uri());
    let (a, b) = (server.tenant().await, server.tenant().await);
    let body = |task: &str| json!({"taskId": task, "name": "Intranet", "targetUrl": url, "instruction": "screenshot"});
    let (task_a, task_b) = (task(&a).await, task(&b).await);
    a.api.post(AUTOMATIONS, body(&task_a)).await.invalid("targetUrl");
    server.admin().run(&["allow-host", "--org", &a.org_id, "--for", "webhooks", "--host", "127.0.0.1"]).await;
    a.api.post(AUTOMATIONS, body(&task_a)).await.invalid("targetUrl");

    server.admin().run(&["allow-host", "--org", &a.org_id, "--for", "automations", "--host", "127.0.0.1"]).await;
    let automation = a.api.post(AUTOMATIONS, body(&task_a)).await.ok(201);
    let id = str_of(&automation, "id").to_owned();
    let run = a.api.post(&runs_path(&id), json!({})).await.ok(202);
    let done = finished(&a.api, &id, str_of(&run, "id")).await;
    assert_eq!(done["status"], "completed", "the runner opened the granted host: {done}");
    assert!(hits(&pages, "/ok").await >= 1, "the page was opened");

    b.api.post(AUTOMATIONS, body(&task_b)).await.invalid("targetUrl");
}

/// Every field of an Automation is there with its type.
#[track_caller]
fn assert_automation(automation: &Value) {
    assert_id(&automation["id"], "aut_");
    assert_id(&automation["taskId"], "tsk_");
    for key in ["name", "targetUrl", "instruction"] {
        assert!(automation[key].is_string(), "`{key}` in {automation}");
    }
    assert!(automation["isEnabled"].is_boolean(), "{automation}");
    assert!(["steps", "agent"].contains(&str_of(automation, "executor")), "executor in {automation}");
    for key in ["description", "schedule"] {
        assert!(automation[key].is_string() || automation[key].is_null(), "`{key}` in {automation}");
    }
    if !automation["nextRunAt"].is_null() {
        assert_timestamp(&automation["nextRunAt"]);
    }
    assert_timestamp(&automation["createdAt"]);
    assert_timestamp(&automation["updatedAt"]);
}

/// Every field of a Run is there with its type.
#[track_caller]
fn assert_run(run: &Value, automation: &str) {
    assert_id(&run["id"], "run_");
    assert_eq!(run["automationId"], automation, "{run}");
    let status = str_of(run, "status");
    assert!(["pending", "running", "completed", "failed"].contains(&status), "status in {run}");
    assert!(["manual", "schedule"].contains(&str_of(run, "trigger")), "trigger in {run}");
    assert_timestamp(&run["createdAt"]);
    for key in ["startedAt", "completedAt"] {
        if !run[key].is_null() {
            assert_timestamp(&run[key]);
        }
    }
    assert!(run["durationMs"].is_null() || run["durationMs"].is_i64(), "durationMs in {run}");
    for key in ["screenshotUrl", "error"] {
        assert!(run[key].is_null() || run[key].is_string(), "`{key}` in {run}");
    }
    let verdict = &run["verdict"];
    assert!(
        verdict.is_null()
            || (["passed", "failed"].contains(&str_of(verdict, "outcome")) && verdict["reason"].is_string()),
        "verdict in {run}"
    );
    assert_eq!(verdict.is_null(), status != "completed", "a verdict exactly for completed runs: {run}");
    let steps = run["steps"].as_array().unwrap_or_else(|| panic!("steps in {run}"));
    for (index, step) in steps.iter().enumerate() {
        assert_eq!(step["index"], index, "{step}");
        assert!(step["action"].is_string() && step["detail"].is_string(), "{step}");
        assert!(["ok", "failed"].contains(&str_of(step, "outcome")), "{step}");
        assert!(step["durationMs"].is_i64(), "{step}");
        for key in ["target", "screenshotUrl"] {
            assert!(step[key].is_null() || step[key].is_string(), "`{key}` in {step}");
        }
    }
}

/// Polls the runs of `automation` until one satisfies `done`; that run.
async fn wait_for_run(client: &Client, automation: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let runs = || async { client.get(&runs_path(automation)).await.ok(200) };
    let found = poll_every(RUN_POLL, RUN_DEADLINE, || async {
        let runs = runs().await;
        let list = runs.as_array().unwrap_or_else(|| panic!("runs are not a bare array: {runs}"));
        list.iter().find(|run| done(run)).cloned()
    })
    .await;
    match found {
        Some(run) => run,
        None => panic!("no run {what} within {RUN_DEADLINE:?}: {}", runs().await),
    }
}

/// The run `run` once it has finished (completed or failed).
async fn finished(client: &Client, automation: &str, run: &str) -> Value {
    wait_for_run(client, automation, &format!("{run} finished"), |r| {
        r["id"] == run && matches!(r["status"].as_str(), Some("completed" | "failed"))
    })
    .await
}

/// Waits until `automation` has no pending or running run, so no browser outlives the test.
async fn settle(client: &Client, automation: &str) {
    let idle = poll_every(RUN_POLL, RUN_DEADLINE, || async {
        let runs = client.get(&runs_path(automation)).await.ok(200);
        let busy =
            runs.as_array().into_iter().flatten().any(|r| matches!(r["status"].as_str(), Some("pending" | "running")));
        (!busy).then_some(())
    })
    .await;
    assert!(idle.is_some(), "runs of {automation} still pending or running after {RUN_DEADLINE:?}");
}

/// `(width, height)` from a PNG's IHDR chunk.
#[track_caller]
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(bytes.len() > 24, "a PNG of {} bytes", bytes.len());
    assert_eq!(bytes[..8], PNG_SIGNATURE, "not a PNG signature: {:?}", &bytes[..8]);
    assert_eq!(&bytes[12..16], b"IHDR", "the first chunk is not IHDR");
    let be = |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    (be(16), be(20))
}

/// `url` with the query parameter `name` replaced by `value`.
fn with_param(url: &str, name: &str, value: &str) -> String {
    let mut parsed = url::Url::parse(url).unwrap_or_else(|err| panic!("{url}: {err}"));
    let pairs: Vec<(String, String)> = parsed
        .query_pairs()
        .map(|(k, v)| (k.clone().into_owned(), if k == name { value.to_owned() } else { v.into_owned() }))
        .collect();
    parsed.query_pairs_mut().clear().extend_pairs(pairs);
    parsed.to_string()
}

// ---------------------------------------------------------------------------------------------
// CRUD and validation.

async fn create_with_every_field_and_read_it_back(server: &TestServer) {
    let tenant = server.tenant().await;
    let task = task(&tenant).await;
    let body = json!({
        "taskId": task,
        "name": "Status page – Zoë",
        "targetUrl": "http://127.0.0.1:9/status?x=1",
        "instruction": "Open the status page and check that every system is operational.",
        "description": "Weekly evidence for the availability control.",
        "schedule": "0 3 1 1 *",
    });
    let created = tenant.api.post(AUTOMATIONS, body.clone()).await.ok(201);
    assert_automation(&created);
    for (key, value) in body.as_object().into_iter().flatten() {
        assert_eq!(&created[key], value, "{key} in {created}");
    }
    assert_eq!(created["executor"], "agent", "free text is for the agent: {created}");
    assert_eq!(created["isEnabled"], true, "{created}");
    // 03:00 UTC on the next 1 January.
    let next = str_of(&created, "nextRunAt");
    assert_eq!(&next[4..19], "-01-01T03:00:00", "nextRunAt {next} for `0 3 1 1 *`");
    assert_later(&created["nextRunAt"], &created["createdAt"]);

    let path = automation_path(str_of(&created, "id"));
    assert_eq!(tenant.api.get(&path).await.ok(200), created);
    assert_eq!(tenant.session.get(&path).await.ok(200), created);

    // The optional fields left out are null; a session creates as well.
    let minimal = json!({"taskId": task, "name": "n", "targetUrl": "https://example.com/", "instruction": "i"});
    let created = tenant.session.post(AUTOMATIONS, minimal).await.ok(201);
    assert_automation(&created);
    assert_eq!(
        (&created["description"], &created["schedule"], &created["nextRunAt"], &created["isEnabled"]),
        (&Value::Null, &Value::Null, &Value::Null, &json!(true)),
        "{created}"
    );
    let with_nulls = json!({"taskId": task, "name": "n", "targetUrl": "https://example.com/", "instruction": "i",
                            "description": null, "schedule": null});
    let created = tenant.api.post(AUTOMATIONS, with_nulls).await.ok(201);
    assert_eq!((&created["description"], &created["schedule"]), (&Value::Null, &Value::Null), "{created}");

    tenant.api.get(&automation_path(&missing_id("aut_"))).await.problem(404);
    tenant.api.get(&automation_path("not-an-id")).await.problem(404);
}

async fn list_by_task_is_a_bare_array_oldest_first(server: &TestServer) {
    let tenant = server.tenant().await;
    let (task_a, task_b) = (task(&tenant).await, task(&tenant).await);
    let list_path = |task: &str| format!("{AUTOMATIONS}/task/{task}");
    assert_eq!(tenant.api.get(&list_path(&task_a)).await.ok(200), json!([]));

    let first = create(&tenant.api, &task_a, "https://example.com/one").await;
    tick().await;
    let second = create(&tenant.api, &task_a, "https://example.com/two").await;
    let elsewhere = create(&tenant.api, &task_b, "https://example.com/three").await;

    for client in [&tenant.api, &tenant.session] {
        let list = client.get(&list_path(&task_a)).await.ok(200);
        assert_eq!(list, json!([first, second]), "oldest first, only the task's");
        let list = client.get(&list_path(&task_b)).await.ok(200);
        assert_eq!(list, json!([elsewhere]));
    }
    tenant.api.get(&list_path(&missing_id("tsk_"))).await.problem(404);
}

async fn update_changes_the_given_fields_and_the_next_run(server: &TestServer) {
    let tenant = server.tenant().await;
    let task = task(&tenant).await;
    let body = json!({"taskId": task, "name": "Before", "targetUrl": "https://example.com/a", "instruction": "i",
                      "description": "d", "schedule": "0 3 1 1 *"});
    let created = tenant.api.post(AUTOMATIONS, body).await.ok(201);
    let path = automation_path(str_of(&created, "id"));
    assert!(created["nextRunAt"].is_string(), "{created}");

    tick().await;
    let changes = json!({"name": "After", "targetUrl": "https://example.org/b", "instruction": "Look again.",
                         "description": "New description."});
    let updated = tenant.api.patch(&path, changes.clone()).await.ok(200);
    assert_automation(&updated);
    for (key, value) in changes.as_object().into_iter().flatten() {
        assert_eq!(&updated[key], value, "{key} in {updated}");
    }
    for key in ["id", "taskId", "isEnabled", "schedule", "nextRunAt", "createdAt"] {
        assert_eq!(updated[key], created[key], "{key} must not change");
    }
    assert_later(&updated["updatedAt"], &created["updatedAt"]);
    assert_eq!(tenant.api.get(&path).await.ok(200), updated);

    // Disabling keeps the schedule but there is no next run; enabling brings it back.
    let disabled = tenant.session.patch(&path, json!({"isEnabled": false})).await.ok(200);
    assert_eq!((&disabled["isEnabled"], &disabled["nextRunAt"]), (&json!(false), &Value::Null), "{disabled}");
    assert_eq!(disabled["schedule"], "0 3 1 1 *", "{disabled}");
    let enabled = tenant.api.patch(&path, json!({"isEnabled": true})).await.ok(200);
    assert_eq!(enabled["isEnabled"], true, "{enabled}");
    assert_eq!(enabled["nextRunAt"], created["nextRunAt"], "{enabled}");

    // Another schedule moves the next run; `schedule: null` clears both.
    let hourly = tenant.api.patch(&path, json!({"schedule": "@hourly"})).await.ok(200);
    assert_eq!(hourly["schedule"], "@hourly", "{hourly}");
    let next = str_of(&hourly, "nextRunAt");
    assert_eq!(&next[13..19], ":00:00", "nextRunAt {next} for @hourly");
    let cleared = tenant.api.patch(&path, json!({"schedule": null, "description": null})).await.ok(200);
    assert_eq!(
        (&cleared["schedule"], &cleared["nextRunAt"], &cleared["description"]),
        (&Value::Null, &Value::Null, &Value::Null),
        "{cleared}"
    );
    assert_eq!(cleared["name"], "After");

    let unchanged = tenant.api.patch(&path, json!({})).await.ok(200);
    assert_eq!(unchanged, cleared, "an empty PATCH changes nothing");
    tenant.api.patch(&automation_path(&missing_id("aut_")), json!({"name": "x"})).await.problem(404);
}

async fn delete_answers_the_automation_and_then_404(server: &TestServer) {
    let tenant = server.tenant().await;
    let task = task(&tenant).await;
    let created = create(&tenant.api, &task, "https://example.com/").await;
    let id = str_of(&created, "id");
    let path = automation_path(id);

    let deleted = tenant.api.delete(&path).await.ok(200);
    assert_eq!(deleted["message"], "Automation deleted", "{deleted}");
    assert_eq!(deleted["deletedAutomation"], created, "{deleted}");
    tenant.api.get(&path).await.problem(404);
    tenant.api.patch(&path, json!({"name": "Back"})).await.problem(404);
    tenant.api.delete(&path).await.problem(404);
    tenant.api.get(&runs_path(id)).await.problem(404);
    tenant.api.post(&runs_path(id), json!({})).await.problem(404);
    assert_eq!(tenant.api.get(&format!("{AUTOMATIONS}/task/{task}")).await.ok(200), json!([]));

    let created = create(&tenant.session, &task, "https://example.com/").await;
    let path = automation_path(str_of(&created, "id"));
    assert_eq!(tenant.session.delete(&path).await.ok(200)["deletedAutomation"], created);
    tenant.session.get(&path).await.problem(404);
}

async fn invalid_bodies_are_400_naming_the_field(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let task = task(&tenant).await;
    let foreign_task = crate::tasks::create(&other.api, "Theirs").await;
    let risk = crate::risks::create(&tenant.api, "A risk").await;
    let risk_id = str_of(&risk, "id").to_owned();

    let valid = json!({"taskId": task, "name": "n", "targetUrl": "https://example.com/", "instruction": "i"});
    let with = |key: &str, value: Value| {
        let mut body = valid.clone();
        body[key] = value;
        body
    };
    let without = |key: &str| {
        let mut body = valid.clone();
        body.as_object_mut().unwrap().remove(key);
        body
    };
    let cases = [
        ("taskId", without("taskId")),
        ("name", without("name")),
        ("targetUrl", without("targetUrl")),
        ("instruction", without("instruction")),
        ("taskId", with("taskId", json!(foreign_task["id"]))),
        ("taskId", with("taskId", json!(risk_id))),
        ("taskId", with("taskId", json!(missing_id("tsk_")))),
        ("taskId", with("taskId", json!(null))),
        ("name", with("name", json!(""))),
        ("name", with("name", json!("x".repeat(256)))),
        ("instruction", with("instruction", json!(""))),
        ("instruction", with("instruction", json!("x".repeat(10_001)))),
        ("description", with("description", json!("x".repeat(2_001)))),
        ("targetUrl", with("targetUrl", json!("ftp://example.com/file"))),
        ("targetUrl", with("targetUrl", json!("example.com/page"))),
        ("targetUrl", with("targetUrl", json!("javascript:alert(1)"))),
        ("targetUrl", with("targetUrl", json!("http://10.0.0.1/"))),
        ("targetUrl", with("targetUrl", json!("http://169.254.169.254/latest/meta-data/"))),
        ("targetUrl", with("targetUrl", json!("http://192.168.1.1/"))),
        ("schedule", with("schedule", json!("61 * * * *"))),
        ("schedule", with("schedule", json!("* * *"))),
        ("schedule", with("schedule", json!("every day"))),
    ];
    for (field, body) in cases {
        tenant.api.post(AUTOMATIONS, body).await.invalid(field);
    }
    assert_eq!(tenant.api.get(&format!("{AUTOMATIONS}/task/{task}")).await.ok(200), json!([]), "nothing was created");

    // The same rules on update, and a failed update changes nothing.
    let created = create(&tenant.api, &task, "https://example.com/").await;
    let path = automation_path(str_of(&created, "id"));
    let cases = [
        ("name", json!("")),
        ("name", json!(null)),
        ("instruction", json!(null)),
        ("targetUrl", json!(null)),
        ("targetUrl", json!("ftp://example.com/")),
        ("targetUrl", json!("http://10.0.0.1/")),
        ("targetUrl", json!("http://169.254.169.254/")),
        ("schedule", json!("61 * * * *")),
        ("isEnabled", json!("yes")),
        ("isEnabled", json!(null)),
    ];
    for (field, value) in cases {
        tenant.api.patch(&path, json!({field: value})).await.invalid(field);
    }
    assert_eq!(tenant.api.get(&path).await.ok(200), created, "failed updates change nothing");
}

// ---------------------------------------------------------------------------------------------
// Runs in Chromium.

async fn a_manual_run_completes_with_a_signed_png_screenshot(server: &TestServer) {
    let pages = pages().await;
    let tenant = server.tenant().await;
    let task = task(&tenant).await;
    let automation = create(&tenant.api, &task, &format!("{}/ok", pages.uri())).await;
    let id = str_of(&automation, "id");
    assert_eq!(tenant.api.get(&runs_path(id)).await.ok(200), json!([]));

    let run = tenant.api.post(&runs_path(id), json!({})).await.ok(202);
    assert_run(&run, id);
    assert_eq!((&run["status"], &run["trigger"]), (&json!("pending"), &json!("manual")), "{run}");
    for key in ["startedAt", "completedAt", "durationMs", "screenshotUrl", "error"] {
        assert_eq!(run[key], Value::Null, "`{key}` of a pending run: {run}");
    }

    let done = finished(&tenant.api, id, str_of(&run, "id")).await;
    assert_run(&done, id);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["trigger"], "manual", "{done}");
    // The caller started it, the worker finished it: both in the automation's history.
    let log = tenant.api.get(&format!("/v1/audit-log?resourceId={id}&action=automation.run_")).await.ok(200);
    let entries: Vec<&Value> = log["data"].as_array().unwrap().iter().collect();
    let actions: Vec<&str> = entries.iter().map(|e| str_of(e, "action")).collect();
    assert_eq!(actions, ["automation.run_finished", "automation.run_started"], "{log}");
    assert_eq!(entries[1]["actor"]["type"], "apiKey", "{log}");
    assert_eq!(entries[1]["changes"]["runId"]["to"], run["id"], "{log}");
    assert_eq!(entries[0]["actor"], json!({"type": "system", "id": "automation-worker"}), "{log}");
    assert_eq!(entries[0]["changes"]["status"], json!({"from": "running", "to": "completed"}), "{log}");
    assert_eq!(done["error"], Value::Null, "{done}");
    assert_eq!(done["createdAt"], run["createdAt"], "{done}");
    assert_timestamp(&done["startedAt"]);
    assert_timestamp(&done["completedAt"]);
    assert_later(&done["completedAt"], &done["startedAt"]);
    assert!(done["durationMs"].as_i64().is_some_and(|ms| ms > 0), "durationMs in {done}");
    assert!(hits(&pages, "/ok").await >= 1, "Chromium never asked for the page");
    assert_eq!(
        done["verdict"],
        json!({"outcome": "passed", "reason": "all 1 steps were carried out (the list has no expect step)"})
    );

    let url = str_of(&done, "screenshotUrl").to_owned();
    assert!(url.starts_with(&format!("{}/", server.base_url())), "screenshotUrl {url} is not on PUBLIC_URL");
    // The signed link is the credential: it works without any.
    let shot = server.anonymous().get_url(&url).await;
    assert_eq!(shot.status, 200, "GET {url}: {}", shot.body);
    assert_eq!(shot.content_type, "image/png", "GET {url}");
    assert_eq!(shot.header("content-security-policy").as_deref(), Some("sandbox"), "GET {url}");
    assert_eq!(png_size(&shot.bytes), (1280, 800), "the screenshot's size");
    assert_eq!(tenant.api.get_url(&url).await.bytes, shot.bytes);

    // The runs list is a bare array of the same run, with a link.
    let runs = tenant.session.get(&runs_path(id)).await.ok(200);
    let list = runs.as_array().expect("a bare array");
    assert_eq!(list.len(), 1, "{runs}");
    assert_eq!(list[0]["id"], done["id"]);
    assert!(list[0]["screenshotUrl"].is_string(), "{runs}");

    // A tampered link is refused.
    let parsed = url::Url::parse(&url).unwrap();
    let signature = parsed.query_pairs().find(|(k, _)| k == "signature").map(|(_, v)| v.into_owned());
    let signature = signature.unwrap_or_else(|| panic!("no signature in {url}"));
    let flipped = {
        let mut chars: Vec<char> = signature.chars().collect();
        let last = chars.len() - 1;
        // Another hex digit (case-insensitively): `a` → `A` would decode to the same bytes.
        chars[last] = if chars[last] == '0' { '1' } else { '0' };
        chars.into_iter().collect::<String>()
    };
    let expires = parsed.query_pairs().find(|(k, _)| k == "expires").map(|(_, v)| v.into_owned()).unwrap();
    let later = (expires.parse::<i64>().unwrap() + 3600).to_string();
    let tampered = [
        with_param(&url, "signature", &flipped),
        with_param(&url, "signature", ""),
        with_param(&url, "expires", &later),
        with_param(&url, "org", &missing_id("org_")),
        with_param(&url, "expires", "1"),
        url.split('?').next().unwrap().to_owned(),
    ];
    for link in tampered {
        server.anonymous().get_url(&link).await.problem(403);
    }

    // Deleting the automation takes its runs and the screenshot's bytes with it; the copy attached
    // to the evidence comment on the task (`att_…`) is the comment's and stays.
    let (attachments, blobs_before): (Vec<_>, Vec<_>) =
        server.blob_files().into_iter().partition(|f| f.contains("/att_"));
    assert_eq!(attachments.len(), 1, "the completed run posted its screenshot to the task");
    assert!(!blobs_before.is_empty(), "no screenshot in BLOB_DIR");
    tenant.api.delete(&automation_path(id)).await.ok(200);
    let left: Vec<_> = server.blob_files().into_iter().filter(|f| blobs_before.contains(f)).collect();
    assert!(left.is_empty(), "the screenshot outlived its automation: {left:?}");
    assert!(server.blob_files().contains(&attachments[0]), "the evidence comment lost its attachment");
    let gone = server.anonymous().get_url(&url).await;
    assert!(matches!(gone.status, 403 | 404), "the screenshot of a deleted run: {} {}", gone.status, gone.body);
}

async fn a_page_answering_404_fails_the_run(server: &TestServer) {
    let pages = pages().await;
    let tenant = server.tenant().await;
    let task = task(&tenant).await;
    let automation = create(&tenant.api, &task, &format!("{}/missing", pages.uri())).await;
    let id = str_of(&automation, "id");
    let run = tenant.api.post(&runs_path(id), json!({})).await.ok(202);
    let done = finished(&tenant.api, id, str_of(&run, "id")).await;
    assert_run(&done, id);
    assert_eq!(done["status"], "failed", "{done}");
    let error = str_of(&done, "error");
    assert!(error.contains("404"), "the error does not name the status: {error:?}");
    assert_timestamp(&done["completedAt"]);
    assert!(hits(&pages, "/missing").await >= 1, "Chromium never asked for the page");
}

async fn an_unreachable_host_fails_the_run(server: &TestServer) {
    let tenant = server.tenant().await;
    let task = task(&tenant).await;
    let automation = create(&tenant.api, &task, &format!("http://127.0.0.1:{}/", closed_port())).await;
    let id = str_of(&automation, "id");
    let run = tenant.api.post(&runs_path(id), json!({})).await.ok(202);
    let done = finished(&tenant.api, id, str_of(&run, "id")).await;
    assert_run(&done, id);
    assert_eq!(done["status"], "failed", "{done}");
    let error = str_of(&done, "error");
    assert!(error.contains("could not be reached"), "the error is not about reaching the host: {error:?}");
    assert_timestamp(&done["completedAt"]);
}

async fn a_second_run_while_one_is_going_is_409(server: &TestServer) {
    let pages = pages().await;
    let tenant = server.tenant().await;
    let task = task(&tenant).await;
    let automation = create(&tenant.api, &task, &format!("{}/slow", pages.uri())).await;
    let id = str_of(&automation, "id");

    let first = tenant.api.post(&runs_path(id), json!({})).await.ok(202);
    // The page takes 5 s to answer, so the first run is pending or running for a while yet.
    let second = tenant.api.post(&runs_path(id), json!({})).await;
    let refused = second.problem(409);
    assert!(refused["detail"].is_string());
    // Refused while running too, not only while pending.
    wait_for_run(&tenant.api, id, "running", |r| r["id"] == first["id"] && r["status"] == "running").await;
    tenant.session.post(&runs_path(id), json!({})).await.problem(409);

    let done = finished(&tenant.api, id, str_of(&first, "id")).await;
    assert_eq!(done["status"], "completed", "{done}");
    let runs = tenant.api.get(&runs_path(id)).await.ok(200);
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "refused runs leave no trace: {runs}");

    // Once it is over, another run may start.
    let again = tenant.api.post(&runs_path(id), json!({})).await.ok(202);
    let runs = tenant.api.get(&runs_path(id)).await.ok(200);
    assert_eq!(runs[0]["id"], again["id"], "newest first: {runs}");
    assert_eq!(runs[1]["id"], first["id"], "newest first: {runs}");
    settle(&tenant.api, id).await;
}

async fn a_schedule_fires_runs(server: &TestServer) {
    let pages = pages().await;
    let tenant = server.tenant().await;
    let task = task(&tenant).await;
    let body = json!({"taskId": task, "name": "Every second", "targetUrl": format!("{}/ok", pages.uri()),
                      "instruction": "screenshot", "schedule": "*/1 * * * * *"});
    let automation = tenant.api.post(AUTOMATIONS, body).await.ok(201);
    let id = str_of(&automation, "id");
    assert_timestamp(&automation["nextRunAt"]);

    let started = Instant::now();
    let done = wait_for_run(&tenant.api, id, "fired by the schedule and completed", |r| {
        r["trigger"] == "schedule" && r["status"] == "completed"
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(15), "the first scheduled run took {:?}", started.elapsed());
    let by_worker = format!("/v1/audit-log?resourceId={id}&action=automation.run_started&actorId=automation-worker");
    let started_entries = tenant.api.get(&by_worker).await.ok(200);
    let entry = started_entries["data"].as_array().unwrap().iter().find(|e| e["changes"]["runId"]["to"] == done["id"]);
    let entry =
        entry.unwrap_or_else(|| panic!("the worker's start of {} is in the log: {started_entries}", done["id"]));
    assert_eq!(entry["changes"]["trigger"]["to"], "schedule", "{entry}");
    assert_run(&done, id);
    assert!(done["screenshotUrl"].is_string(), "{done}");
    let later = tenant.api.get(&automation_path(id)).await.ok(200);
    assert_later(&later["nextRunAt"], &automation["nextRunAt"]);

    // That a disabled schedule fires nothing is the worker's rule, tested with a fake clock in
    // crates/app/tests/automations.rs; here the switch reaches the automation.
    let disabled = tenant.api.patch(&automation_path(id), json!({"isEnabled": false})).await.ok(200);
    assert_eq!(disabled["nextRunAt"], Value::Null, "{disabled}");
    settle(&tenant.api, id).await;
}

async fn another_organization_sees_nothing(server: &TestServer) {
    let pages = pages().await;
    let a = server.tenant().await;
    let b = server.tenant().await;
    let task = task(&a).await;
    let automation = create(&a.api, &task, &format!("{}/ok", pages.uri())).await;
    let id = str_of(&automation, "id");
    let run = a.api.post(&runs_path(id), json!({})).await.ok(202);
    let done = finished(&a.api, id, str_of(&run, "id")).await;

    let path = automation_path(id);
    for client in [&b.api, &b.session] {
        client.get(&path).await.problem(404);
        client.patch(&path, json!({"name": "Mine now"})).await.problem(404);
        client.delete(&path).await.problem(404);
        client.get(&runs_path(id)).await.problem(404);
        client.post(&runs_path(id), json!({})).await.problem(404);
        client.get(&format!("{AUTOMATIONS}/task/{task}")).await.problem(404);
        let body = json!({"taskId": task, "name": "n", "targetUrl": "https://example.com/", "instruction": "i"});
        client.post(AUTOMATIONS, body).await.invalid("taskId");
    }
    // B's session naming A's organization is refused.
    b.session.with_org(Some(&a.org_id)).get(&path).await.problem(403);

    // A's automation and its run are untouched.
    let after = a.api.get(&path).await.ok(200);
    assert_eq!(after, automation);
    let runs = a.api.get(&runs_path(id)).await.ok(200);
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(runs[0]["id"], done["id"]);
    assert_eq!(a.api.get(&format!("{AUTOMATIONS}/task/{task}")).await.ok(200), json!([automation]));
}

/// By default a schedule may fire at most once a minute: more often is a 400 naming `schedule`,
/// on create and on update.
async fn schedules_firing_too_often_are_refused(server: &TestServer) {
    let tenant = server.tenant().await;
    let task = task(&tenant).await;
    let body = |schedule: &str| {
        json!({"taskId": task, "name": "Often", "targetUrl": "https://example.com/", "instruction": "Look",
               "schedule": schedule})
    };
    for schedule in ["*/1 * * * * *", "*/30 * * * * *"] {
        let refused = tenant.api.post(AUTOMATIONS, body(schedule)).await;
        assert_eq!(refused.status, 400, "{schedule}: {}", refused.body);
        assert_eq!(refused.body["errors"][0]["field"], "schedule", "{}", refused.body);
    }
    let created = tenant.api.post(AUTOMATIONS, body("* * * * *")).await.ok(201);
    let path = format!("{AUTOMATIONS}/{}", created["id"].as_str().unwrap());
    let refused = tenant.api.patch(&path, json!({"schedule": "*/5 * * * * *"})).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(tenant.api.get(&path).await.ok(200)["schedule"], "* * * * *", "unchanged");
}

// ---------------------------------------------------------------------------------------------
// Step lists.

/// The password the login form accepts. The script types it with plain `type` for now.
const PASSWORD: &str = "hunter2-Zoe";

const LOGIN: &str = "<!doctype html><html><head><title>Sign in</title></head><body>\
    <form method='post' action='/session'>\
    <label for='email'>Email</label> <input id='email' name='email' type='email'>\
    <label>Password <input name='password' type='password'></label>\
    <button type='submit'>Sign in</button></form></body></html>";

const SETTINGS: &str = "<!doctype html><html><head><title>Settings</title></head><body>\
    <h1>Security settings</h1><p>Two-factor authentication: enforced for all members</p></body></html>";

const OPTIONAL: &str = "<!doctype html><html><head><title>Settings</title></head><body>\
    <h1>Security settings</h1><p>Two-factor authentication: optional</p></body></html>";

/// A site on loopback: `/login` posts to `/session`, which with the right password sets a session
/// cookie and sends the browser to `/settings` (behind the cookie, else back to `/login`);
/// `/optional` is a settings page where MFA is not enforced; `/hang` never answers in time.
async fn site() -> MockServer {
    let server = MockServer::start().await;
    let html = |body: &str| ResponseTemplate::new(200).set_body_raw(body.as_bytes().to_vec(), "text/html");
    let see = |to: &str| ResponseTemplate::new(303).insert_header("Location", to);
    Mock::given(method("GET")).and(path("/login")).respond_with(html(LOGIN)).mount(&server).await;
    Mock::given(method("POST"))
        .and(path("/session"))
        .and(body_string_contains(format!("password={PASSWORD}")))
        .respond_with(see("/settings").insert_header("Set-Cookie", "session=valid; Path=/; HttpOnly"))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST")).and(path("/session")).respond_with(html(LOGIN)).mount(&server).await;
    Mock::given(method("GET"))
        .and(path("/settings"))
        .and(header("cookie", "session=valid"))
        .respond_with(html(SETTINGS))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET")).and(path("/settings")).respond_with(see("/login")).mount(&server).await;
    Mock::given(method("GET")).and(path("/optional")).respond_with(html(OPTIONAL)).mount(&server).await;
    Mock::given(method("GET"))
        .and(path("/hang"))
        .respond_with(html(SETTINGS).set_delay(Duration::from_secs(60)))
        .mount(&server)
        .await;
    server
}

/// Creates an automation of a new task opening `url` and carrying out `instruction`, runs it, and
/// returns the finished run.
/// Creates a step automation, stores `secrets` for it, runs it and waits for the outcome.
async fn run_script(tenant: &Tenant, url: &str, instruction: &str, secrets: &[(&str, &str)]) -> (Value, Value) {
    let task = task(tenant).await;
    let body = json!({"taskId": task, "name": "MFA evidence", "targetUrl": url, "instruction": instruction});
    let automation = tenant.api.post(AUTOMATIONS, body).await.ok(201);
    assert_eq!(automation["executor"], "steps", "{automation}");
    let id = str_of(&automation, "id").to_owned();
    for (name, value) in secrets {
        tenant.api.put(&format!("{AUTOMATIONS}/{id}/secrets/{name}"), json!({"value": value})).await.ok(201);
    }
    let run = tenant.api.post(&runs_path(&id), json!({})).await.ok(202);
    let done = finished(&tenant.api, &id, str_of(&run, "id")).await;
    assert_run(&done, &id);
    (automation, done)
}

async fn a_step_script_logs_in_and_passes(server: &TestServer) {
    let site = site().await;
    let tenant = server.tenant().await;
    let script = String::from(
        "1. type \"ada@example.com\" into \"Email\"\n\
         2. type secret \"PASSWORD\" into \"password\"\n\
         3. click \"Sign in\"\n\
         4. wait for \"Security settings\"\n\
         5. expect url contains \"/settings\"\n\
         6. expect text \"Two-factor authentication: enforced for all members\"\n\
         7. expect no text \"optional\"",
    );
    let secrets = [("PASSWORD", PASSWORD)];
    let (_, done) = run_script(&tenant, &format!("{}/login", site.uri()), &script, &secrets).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["verdict"], json!({"outcome": "passed", "reason": "all 3 expectations held"}), "{done}");
    let steps = done["steps"].as_array().unwrap();
    let summary: Vec<(&str, &str, &str)> =
        steps.iter().map(|s| (str_of(s, "action"), s["target"].as_str().unwrap_or(""), str_of(s, "outcome"))).collect();
    assert_eq!(
        summary,
        [
            ("type", "Email", "ok"),
            ("type secret", "password", "ok"),
            ("click", "Sign in", "ok"),
            ("wait for", "Security settings", "ok"),
            ("expect url contains", "/settings", "ok"),
            ("expect text", "Two-factor authentication: enforced for all members", "ok"),
            ("expect no text", "optional", "ok"),
        ]
    );
    assert!(!done.to_string().contains(PASSWORD), "the secret appears in the run: {done}");
    let posted = site.received_requests().await.unwrap_or_default();
    assert!(
        posted.iter().any(|r| r.url.path() == "/settings" && r.headers.get("cookie").is_some()),
        "the browser never reached the settings behind the login"
    );

    // A screenshot after each step that changed the page (type, type, click), none after looking.
    let shots: Vec<bool> = steps.iter().map(|s| s["screenshotUrl"].is_string()).collect();
    assert_eq!(shots, [true, true, true, false, false, false, false], "{done}");
    let after_click = str_of(&steps[2], "screenshotUrl");
    let shot = server.anonymous().get_url(after_click).await;
    assert_eq!((shot.status, shot.content_type.as_str()), (200, "image/png"), "GET {after_click}");
    assert_eq!(png_size(&shot.bytes), (1280, 800));
    let before_click = server.anonymous().get_url(str_of(&steps[0], "screenshotUrl")).await;
    assert_ne!(before_click.bytes, shot.bytes, "the login form and the settings page look different");
    // A step's link is signed for that step only.
    server.anonymous().get_url(&with_param(after_click, "step", "0")).await.problem(403);
}

async fn an_expectation_that_does_not_hold_fails_the_verdict_with_the_reason(server: &TestServer) {
    let site = site().await;
    let tenant = server.tenant().await;
    let script = "expect text \"Security settings\"\nexpect text \"enforced for all members\"\nscreenshot";
    let (_, done) = run_script(&tenant, &format!("{}/optional", site.uri()), script, &[]).await;
    assert_eq!((&done["status"], &done["error"]), (&json!("completed"), &Value::Null), "{done}");
    assert_eq!(
        done["verdict"],
        json!({"outcome": "failed",
               "reason": "step 2 (expect text \"enforced for all members\"): the page does not show the text"}),
        "{done}"
    );
    let outcomes: Vec<&str> = done["steps"].as_array().unwrap().iter().map(|s| str_of(s, "outcome")).collect();
    assert_eq!(outcomes, ["ok", "failed"], "the run stops at the expectation that failed");
    assert!(done["screenshotUrl"].is_string(), "a completed run keeps its final screenshot: {done}");

    // A button the page does not have is evidence too: the verdict fails naming the step.
    let (_, done) = run_script(&tenant, &format!("{}/optional", site.uri()), "click \"Enforce MFA\"", &[]).await;
    assert_eq!(done["status"], "completed", "{done}");
    let reason = str_of(&done["verdict"], "reason");
    assert!(reason.starts_with("step 1 (click \"Enforce MFA\"): no visible button"), "{reason}");
}

async fn a_page_that_never_loads_fails_the_run_at_its_timeout(server: &TestServer) {
    let site = site().await;
    let tenant = server.tenant().await;
    let hang = format!("{}/hang", site.uri());
    let script = format!("screenshot\ngo to \"{hang}\"\nexpect text \"Security settings\"");
    let started = Instant::now();
    let (_, done) = run_script(&tenant, &format!("{}/optional", site.uri()), &script, &[]).await;
    assert!(started.elapsed() < Duration::from_secs(30), "the run took {:?}", started.elapsed());
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(done["verdict"], Value::Null, "{done}");
    assert_eq!(
        str_of(&done, "error"),
        format!("step 2 (go to \"{hang}\"): the page did not load within 2 seconds"),
        "{done}"
    );
    let outcomes: Vec<&str> = done["steps"].as_array().unwrap().iter().map(|s| str_of(s, "outcome")).collect();
    assert_eq!(outcomes, ["ok", "failed"], "{done}");

    // The target itself never loading fails the run the same way, before any step.
    let (_, done) = run_script(&tenant, &hang, "screenshot", &[]).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(str_of(&done, "error"), "the page did not load within 2 seconds", "{done}");
    assert_eq!(done["steps"], json!([]), "{done}");
}

async fn an_unknown_step_is_400_naming_the_line(server: &TestServer) {
    let tenant = server.tenant().await;
    let task = task(&tenant).await;
    let script = "go to \"https://example.com/login\"\n\nopen \"Settings\"";
    let body = json!({"taskId": task, "name": "n", "targetUrl": "https://example.com/", "instruction": script});
    let refused = tenant.api.post(AUTOMATIONS, body).await.invalid("instruction");
    let message = refused["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("line 3: a step: go to, click"), "{refused}");
    assert_eq!(tenant.api.get(&format!("{AUTOMATIONS}/task/{task}")).await.ok(200), json!([]), "nothing was created");

    let created = create(&tenant.api, &task, "https://example.com/").await;
    assert_eq!(created["executor"], "steps", "{created}");
    let path = automation_path(str_of(&created, "id"));
    let refused = tenant.api.patch(&path, json!({"instruction": "click \"Save\"\nexpect \"saved\""})).await;
    let refused = refused.invalid("instruction");
    assert!(
        refused["errors"][0]["message"].as_str().unwrap_or_default().starts_with("line 2: expect text"),
        "{refused}"
    );
    assert_eq!(tenant.api.get(&path).await.ok(200), created, "unchanged");
    let free = tenant.api.patch(&path, json!({"instruction": "Open Settings and check MFA"})).await.ok(200);
    assert_eq!(free["executor"], "agent", "{free}");
}

async fn runs_come_in_pages(server: &TestServer) {
    let pages = pages().await;
    let tenant = server.tenant().await;
    let task = task(&tenant).await;
    let automation = create(&tenant.api, &task, &format!("{}/ok", pages.uri())).await;
    let id = str_of(&automation, "id");
    let mut started = Vec::new();
    for _ in 0..3 {
        let run = tenant.api.post(&runs_path(id), json!({})).await.ok(202);
        finished(&tenant.api, id, str_of(&run, "id")).await;
        started.insert(0, run["id"].clone());
    }
    let (mut seen, mut cursor, mut pages_read) = (Vec::new(), None::<String>, 0);
    loop {
        let query = cursor.map_or("limit=2".to_owned(), |c| format!("limit=2&cursor={c}"));
        let response = tenant.session.get(&format!("{}?{query}", runs_path(id))).await;
        assert_eq!(response.header("X-Total-Count").as_deref(), Some("3"), "the total, on every page");
        cursor = response.header("X-Next-Cursor");
        let page = response.ok(200);
        seen.extend(page.as_array().unwrap().iter().map(|r| r["id"].clone()));
        pages_read += 1;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!((seen, pages_read), (started, 2), "newest first, two pages");
    tenant.api.get(&format!("{}?limit=0", runs_path(id))).await.invalid("limit");
    tenant.api.get(&format!("{}?cursor=nonsense", runs_path(id))).await.invalid("cursor");
}
