//! A framework's status and the controls' statuses are computed from a fixed number of statements,
//! whatever the number of controls, their evidence sources and their evidence: the use cases run
//! over the real store, on SQLite and on PostgreSQL (a fresh database made from `DATABASE_URL`, as
//! the store's contract suite does), and `Store::statements` counts what each one sends. Two
//! organizations of one database are measured, one with 5 controls and one with 200; each of its
//! controls has two linked tasks (one done, so with evidence), is mapped to its own requirement
//! of a framework, and every tenth has an uploaded file. Nothing else uses the store meanwhile
//! (no worker is started), so the count around a call is that call's.

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use compliance_embedded::app::{App, Credentials, Principal};
use compliance_embedded::domain::Timestamp;
use compliance_embedded::domain::comment::NewAttachment;
use compliance_embedded::domain::control::{ControlStatus, NewControl, NewEvidenceSource};
use compliance_embedded::domain::etag::IfMatch;
use compliance_embedded::domain::framework::{NewFramework, NewRequirement};
use compliance_embedded::domain::framework_status::{NewRequirementMapping, RequirementStatus};
use compliance_embedded::domain::task::{NewTask, TaskChanges, TaskStatus};
use compliance_embedded::domain::{ControlId, FrameworkId};
use compliance_embedded::ports::{ControlFilter, PageRequest};
use compliance_embedded::{DatabaseUrl, Store};
use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};

/// One organization's framework and controls, made through the use cases.
struct Measured {
    caller: Principal,
    framework: FrameworkId,
    control: ControlId,
    /// A moment after everything was made, for the reads `asOf` a past moment.
    made: Timestamp,
}

async fn organization(app: &App, name: &str, controls: usize) -> Measured {
    let made =
        app.admin.bootstrap((name.into(), None), (format!("owner@{name}.test"), "Owner".into()), None).await.unwrap();
    let caller = app
        .auth
        .authenticate(Credentials::ApiKey { key: made.api_key.secret.clone(), organization: None })
        .await
        .unwrap();
    let requirements = (0..controls)
        .map(|n| NewRequirement {
            identifier: Some(format!("R-{n}")),
            title: Some(format!("Requirement {n}")),
            ..NewRequirement::default()
        })
        .collect();
    let input =
        NewFramework { name: Some("Baseline".into()), version: Some("1".into()), requirements: Some(requirements) };
    let framework = app.frameworks.create_framework(&caller, input).await.unwrap();
    let mut first = None;
    for (n, requirement) in framework.requirements.iter().enumerate() {
        let input = NewControl { name: Some(format!("Control {n}")), ..NewControl::default() };
        let control = app.controls.create_control(&caller, input).await.unwrap().control;
        for title in ["Restore drill", "Access review"] {
            let task = NewTask { title: Some(format!("{title} {n}")), ..NewTask::default() };
            let task = app.tasks.create_task(&caller, task).await.unwrap();
            let link = NewEvidenceSource { source_id: Some(task.id.to_string()) };
            app.controls.add_evidence_source(&caller, &control.id, link).await.unwrap();
            if title == "Restore drill" {
                let done = TaskChanges { status: Some(TaskStatus::Done), ..TaskChanges::default() };
                app.tasks.update_task(&caller, &task.id, done, &IfMatch::Absent).await.unwrap();
            }
        }
        if n % 10 == 0 {
            let file = NewAttachment {
                file_name: Some("report.txt".into()),
                file_type: Some("text/plain".into()),
                file_data: Some("cmVwb3J0".into()),
                ..NewAttachment::default()
            };
            app.controls.upload_evidence(&caller, &control.id, file).await.unwrap();
        }
        let mapping = NewRequirementMapping { requirement_id: Some(requirement.id.to_string()) };
        app.control_requirements.map_requirement(&caller, &control.id, mapping).await.unwrap();
        first.get_or_insert(control.id);
    }
    Measured { caller, framework: framework.framework.id, control: first.unwrap(), made: Timestamp::now() }
}

/// The statements each read sends, by name, and checks that it saw every control. How long each
/// took is printed, not checked.
async fn count(app: &App, store: &Store, org: &Measured, controls: usize) -> Vec<(&'static str, u64)> {
    let (caller, framework, control, past) = (&org.caller, &org.framework, &org.control, Some(org.made));
    let mut counts = Vec::new();
    macro_rules! measure {
        ($name:literal, $call:expr) => {{
            let (before, started) = (store.statements(), std::time::Instant::now());
            let answer = $call.await.unwrap();
            counts.push(($name, store.statements() - before));
            eprintln!("{controls} controls: {} took {:?}", $name, started.elapsed());
            answer
        }};
    }
    let view = measure!("GET /v1/frameworks/{id}", app.frameworks.get_framework(caller, framework));
    assert_eq!(view.status.counts.not_started, controls, "every requirement's control has a task not done");
    assert!(
        view.status.requirements.iter().all(|r| r.status == RequirementStatus::NotStarted && r.controls.len() == 1)
    );
    measure!("GET /v1/frameworks/{id}/status", app.frameworks.framework_status(caller, framework, None));
    let then =
        measure!("GET /v1/frameworks/{id}/status?asOf=", app.frameworks.framework_status(caller, framework, past));
    assert_eq!(then.status.counts.not_started, controls);
    let document = measure!(
        "GET /v1/frameworks/{id}/assessment-results",
        app.frameworks.assessment_results(caller, framework, None)
    );
    let observations = document["assessment-results"]["results"][0]["observations"].as_array().unwrap().len();
    assert_eq!(observations, controls + controls.div_ceil(10), "each done task's evidence, and each file");
    // Uncounted: a page that does not hold the whole list counts its total with one more
    // statement (docs/store.md, "Lists"), which has nothing to do with the statuses.
    let page = PageRequest::first(100).uncounted();
    let listed = measure!("GET /v1/controls", app.controls.list_controls(caller, &ControlFilter::default(), &page));
    assert_eq!(listed.items.len(), controls.min(100));
    assert!(listed.items.iter().all(|c| c.status.status == ControlStatus::NotStarted && c.status.sources.len() >= 2));
    measure!("GET /v1/controls/{id}?asOf=", app.controls.get_control(caller, control, past));
    counts
}

async fn statements_do_not_grow_with_the_controls(url: DatabaseUrl, dir: &Path) {
    let (app, store) = compliance_embedded::open(&url, dir).await.unwrap();
    let few = organization(&app, "few", 5).await;
    let many = organization(&app, "many", 200).await;
    let (few_counts, many_counts) = (count(&app, &store, &few, 5).await, count(&app, &store, &many, 200).await);
    for ((read, five), (_, two_hundred)) in few_counts.iter().zip(&many_counts) {
        eprintln!("{:?}: {read}: {five} statements with 5 controls, {two_hundred} with 200", url);
    }
    assert_eq!(few_counts, many_counts, "statements per read with 5 controls and with 200");
    store.close();
}

fn temporary_dir() -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("compliance-statements-{}-{}", std::process::id(), rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite() {
    let dir = temporary_dir();
    statements_do_not_grow_with_the_controls(DatabaseUrl::Sqlite(dir.join("compliance.db")), &dir).await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres() {
    let admin = std::env::var("DATABASE_URL")
        .ok()
        .filter(|url| url.starts_with("postgres"))
        .expect("set DATABASE_URL=postgres://… to run the PostgreSQL measure; `cargo xtask ci` does this");
    let name = format!("statements_{}", rand::random::<u64>());
    let mut conn = AsyncPgConnection::establish(&admin).await.expect("connect to the admin database");
    conn.batch_execute(&format!("CREATE DATABASE {name}")).await.expect("create the test database");
    let url = match admin.rsplit_once('/') {
        Some((server, _)) => format!("{server}/{name}"),
        None => panic!("DATABASE_URL has no database name"),
    };
    let dir = temporary_dir();
    statements_do_not_grow_with_the_controls(DatabaseUrl::Postgres(url), &dir).await;
    std::fs::remove_dir_all(&dir).unwrap();
    conn.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await.unwrap();
}
