//! Two `compliance-server serve` processes on one database, as two instances of one deployment:
//! each runs an automation worker, and a due schedule is claimed by a compare-and-swap on its
//! `nextRunAt`, so exactly one instance adds the run of each firing (docs/devices-and-automations.md,
//! "How runs run"); and an `Idempotency-Key` is kept in the database, so a request retried on
//! the other instance is the same request (docs/api.md, "Idempotency keys").
//! Two instances may share one SQLite file too: their writes wait for each other.

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::checks::str_of;
use crate::client::Response;
use crate::client::{Auth, Client};
use crate::harness::{Backend, PATIENCE, Sibling, TestServer, poll_every, poll_until, random_hex};

const AUTOMATIONS: &str = "/v1/browser/automations";
/// Same for both instances, so a screenshot link one of them signs opens on the other.
const SIGNING_KEY: &str = "two-instances-share-this-url-signing-key-0123456789";
/// Every other second: the firings are at even seconds.
const SCHEDULE: &str = "*/2 * * * * *";
/// The schedule is left enabled until this many of its runs completed (so both instances raced
/// for at least as many firings).
const COMPLETED_RUNS: usize = 3;
/// How long a run may take before the test gives up (the server bounds a run at 30 s).
const RUN_DEADLINE: Duration = Duration::from_secs(60);

const PAGE: &str = "<!doctype html><html><head><title>Status</title></head>\
                    <body><h1>All systems operational</h1></body></html>";

/// The environment of both instances: loopback pages allowed, schedules as frequent as every
/// second, one URL signing key, and workers polling every 100 ms (instead of 1 s) so that both
/// race for every firing as soon as it is due.
fn env() -> Vec<(String, String)> {
    [
        ("AUTOMATION_ALLOWED_HOSTS", "127.0.0.1"),
        ("AUTOMATION_MIN_INTERVAL_SECONDS", "1"),
        ("AUTOMATION_POLL_MILLIS", "100"),
        ("URL_SIGNING_KEY", SIGNING_KEY),
    ]
    .iter()
    .map(|&(name, value)| (name.to_owned(), value.to_owned()))
    .collect()
}

// PostgreSQL only: the schedule race is the deployment of many instances, which is PostgreSQL's
// (two instances on one SQLite file are tested for plain writes below).
#[tokio::test]
async fn two_instances_run_a_schedule_exactly_once_per_firing() {
    crate::harness::run_with_owned_env(Backend::Postgres, env(), |server| async move {
        let sibling = server.start_sibling(&env()).await;
        two_instances(&server, sibling).await;
    })
    .await;
}

#[tokio::test]
async fn one_idempotency_key_is_one_request_on_either_instance() {
    crate::harness::run_with_owned_env(Backend::Postgres, Vec::new(), |server| async move {
        let sibling = server.start_sibling(&[]).await;
        one_key_on_two_instances(&server, sibling).await;
    })
    .await;
}

/// Each round sends one keyed create four times at once, twice to each instance: exactly one runs,
/// the others are replays of its answer or refused as in flight (409); once it is done, both
/// instances replay it byte for byte, and the key with another body is a 422 on either.
async fn one_key_on_two_instances(server: &TestServer, mut sibling: Sibling) {
    const ROUNDS: usize = 4;
    let tenant = server.tenant().await;
    let key = server.admin().create_api_key(&tenant.org_id, &tenant.owner.id).await;
    let key = str_of(&key, "key").to_owned();
    let a = server.client(Auth::ApiKey(key.clone()), None);
    let b = sibling.client(Auth::ApiKey(key), None);
    let replayed = |answer: &Response| answer.header("Idempotent-Replayed").as_deref() == Some("true");
    for round in 0..ROUNDS {
        let idempotency_key = format!("two-instances-{round}-{}", random_hex(6));
        let body = json!({"title": format!("Raced {round}"), "description": "d", "category": "technology"});
        let mut requests = tokio::task::JoinSet::new();
        for instance in [&a, &b, &a, &b] {
            let (client, body) = (instance.with_header("Idempotency-Key", &idempotency_key), body.clone());
            requests.spawn(async move { client.post("/v1/risks", body).await });
        }
        let answers = requests.join_all().await;
        for answer in &answers {
            assert!(matches!(answer.status, 201 | 409), "round {round}: {}: {}", answer.status, answer.body);
            if answer.status == 409 {
                assert_eq!(answer.body["type"], "/problems/idempotency-in-flight", "{}", answer.body);
            }
        }
        let created: Vec<&Response> = answers.iter().filter(|answer| answer.status == 201).collect();
        assert_eq!(created.iter().filter(|answer| !replayed(answer)).count(), 1, "round {round}: one ran");
        let first = created.iter().find(|answer| !replayed(answer)).expect("the one that ran");
        assert!(created.iter().all(|answer| answer.bytes == first.bytes), "round {round}: one answer");
        for instance in [&a, &b] {
            let client = instance.with_header("Idempotency-Key", &idempotency_key);
            let again = poll_until(PATIENCE, || async {
                let answer = client.post("/v1/risks", body.clone()).await;
                (answer.status != 409).then_some(answer)
            })
            .await
            .expect("the request was still in flight after the deadline");
            assert!(replayed(&again) && again.status == 201, "round {round}: a replay: {}", again.body);
            assert_eq!(again.bytes, first.bytes, "round {round}: replayed byte for byte on either instance");
            let other = client
                .post(
                    "/v1/risks",
                    json!({"title": "Another", "description": "d",
                                                       "category": "technology"}),
                )
                .await;
            assert_eq!((other.status, &other.body["type"]), (422, &json!("/problems/idempotency-key-reused")));
        }
    }
    let count = a.get("/v1/risks").await.ok(200)["count"].as_u64();
    assert_eq!(count, Some(ROUNDS as u64), "one risk per key");
    assert!(sibling.healthy().await, "B is no longer healthy; stderr:\n{}", sibling.stderr());
}

fn runs_path(id: &str) -> String {
    format!("{AUTOMATIONS}/{id}/runs")
}

fn instant(ts: &Value) -> OffsetDateTime {
    let ts = ts.as_str().unwrap_or_else(|| panic!("timestamp {ts} is not a string"));
    OffsetDateTime::parse(ts, &Rfc3339).unwrap_or_else(|err| panic!("timestamp {ts:?}: {err}"))
}

/// Seconds since the epoch, with the fraction.
fn seconds(at: OffsetDateTime) -> f64 {
    (at.unix_timestamp_nanos() as f64) / 1e9
}

async fn runs(client: &Client, automation: &str) -> Vec<Value> {
    let runs = client.get(&runs_path(automation)).await.ok(200);
    runs.as_array().unwrap_or_else(|| panic!("runs are not a bare array: {runs}")).clone()
}

fn completed(runs: &[Value]) -> usize {
    runs.iter().filter(|r| r["status"] == "completed").count()
}

/// Waits until `automation` has no pending or running run; its runs then.
async fn settled(client: &Client, automation: &str) -> Vec<Value> {
    let list = poll_every(Duration::from_millis(250), RUN_DEADLINE, || async {
        let list = runs(client, automation).await;
        (!list.iter().any(|r| matches!(r["status"].as_str(), Some("pending" | "running")))).then_some(list)
    });
    match list.await {
        Some(list) => list,
        None => panic!("runs still going after {RUN_DEADLINE:?}: {:?}", runs(client, automation).await),
    }
}

/// The first firing of [`SCHEDULE`] (an even second) after `at`, in seconds since the epoch.
fn firing_after(at: OffsetDateTime) -> i64 {
    (at.unix_timestamp() / 2 + 1) * 2
}

async fn two_instances(server: &TestServer, mut sibling: Sibling) {
    let pages = MockServer::start().await;
    let html = ResponseTemplate::new(200).set_body_raw(PAGE.as_bytes().to_vec(), "text/html");
    Mock::given(method("GET")).and(path("/ok")).respond_with(html).mount(&pages).await;

    // One organization, one API key, a client of it on each instance.
    let tenant = server.tenant().await;
    let key = server.admin().create_api_key(&tenant.org_id, &tenant.owner.id).await;
    let key = str_of(&key, "key").to_owned();
    let a = server.client(Auth::ApiKey(key.clone()), None);
    let b = sibling.client(Auth::ApiKey(key), None);

    let task = crate::tasks::create(&a, "Check the status page").await;
    let body = json!({"taskId": task["id"], "name": "Every other second", "instruction": "screenshot",
                      "targetUrl": format!("{}/ok", pages.uri()), "schedule": SCHEDULE});
    let automation = a.post(AUTOMATIONS, body).await.ok(201);
    let id = str_of(&automation, "id").to_owned();
    assert_eq!(b.get(&format!("{AUTOMATIONS}/{id}")).await.ok(200), automation, "B reads what A wrote");

    let enough = poll_every(Duration::from_millis(250), RUN_DEADLINE, || async {
        (completed(&runs(&a, &id).await) >= COMPLETED_RUNS).then_some(())
    });
    assert!(enough.await.is_some(), "fewer than {COMPLETED_RUNS} runs completed within {RUN_DEADLINE:?}");
    let disabled = b.patch(&format!("{AUTOMATIONS}/{id}"), json!({"isEnabled": false})).await.ok(200);
    assert_eq!((&disabled["isEnabled"], &disabled["nextRunAt"]), (&json!(false), &Value::Null), "{disabled}");
    // Taken after the PATCH answered, so every claim it did not stop committed before it.
    let disabled_at = OffsetDateTime::now_utc();

    let list = settled(&a, &id).await;
    // A disabled schedule stays quiet on both instances. The witness that its next firings have
    // passed: another automation on the same schedule, made now. Its `nextRunAt` starts at its
    // first firing (no earlier than the disabled schedule's next one would have been) and moves
    // past a firing only when a worker looks for due schedules at or after it: once it moved past
    // the second firing, a worker that would still fire the disabled schedule has had its chance.
    let body = json!({"taskId": task["id"], "name": "Witness", "instruction": "screenshot",
                      "targetUrl": format!("{}/ok", pages.uri()), "schedule": SCHEDULE});
    let witness = a.post(AUTOMATIONS, body).await.ok(201);
    let first = instant(&witness["nextRunAt"]).unix_timestamp();
    assert!(first >= firing_after(disabled_at), "{witness}");
    let witness = str_of(&witness, "id").to_owned();
    let passed = first + 2;
    let looked = poll_every(Duration::from_millis(250), RUN_DEADLINE, || async {
        let read = b.get(&format!("{AUTOMATIONS}/{witness}")).await.ok(200);
        (instant(&read["nextRunAt"]).unix_timestamp() > passed).then_some(())
    });
    assert!(looked.await.is_some(), "no worker claimed a firing of the witness within {RUN_DEADLINE:?}");
    assert_eq!(runs(&b, &id).await.len(), list.len(), "a disabled schedule fired: {:?}", runs(&b, &id).await);
    b.patch(&format!("{AUTOMATIONS}/{witness}"), json!({"isEnabled": false})).await.ok(200);
    settled(&a, &witness).await;

    let created = seconds(instant(&automation["createdAt"]));
    let until = seconds(disabled_at);
    let mut by_firing: BTreeMap<i64, Vec<&Value>> = BTreeMap::new();
    for run in &list {
        assert_eq!(run["trigger"], "schedule", "only the schedule started runs: {run}");
        let at = seconds(instant(&run["createdAt"]));
        assert!(at >= created && at <= until, "run created outside the window {created}..{until}: {run}");
        // A firing at the even second F is claimed at some t ≥ F and moves nextRunAt to the first
        // firing after t, so the runs of distinct firings fall into distinct two-second buckets.
        by_firing.entry((at / 2.0).floor() as i64).or_default().push(run);
    }
    let twice: Vec<_> = by_firing.values().filter(|runs| runs.len() > 1).collect();
    assert!(twice.is_empty(), "runs added twice for one firing: {twice:?}");
    let firings = (until / 2.0).floor() as i64 - (created / 2.0).floor() as i64;
    assert!(list.len() as i64 <= firings, "{} runs for {firings} firings: {list:?}", list.len());
    let completed = completed(&list);
    assert!(completed >= COMPLETED_RUNS, "{completed} of {} runs completed: {list:?}", list.len());

    // A run started by hand on B completes, whichever instance executes it, and its screenshot
    // link opens on either instance.
    let run = b.post(&runs_path(&id), json!({})).await.ok(202);
    assert_eq!((&run["status"], &run["trigger"]), (&json!("pending"), &json!("manual")), "{run}");
    let list = settled(&b, &id).await;
    let done = list.iter().find(|r| r["id"] == run["id"]).unwrap_or_else(|| panic!("{run} is gone: {list:?}"));
    assert_eq!(done["status"], "completed", "{done}");
    let link = str_of(done, "screenshotUrl").to_owned();
    let tail = link.strip_prefix(sibling.base_url()).unwrap_or_else(|| panic!("{link} is not on B's PUBLIC_URL"));
    for url in [link.clone(), format!("{}{tail}", server.base_url())] {
        let shot = server.anonymous().get_url(&url).await;
        assert_eq!((shot.status, shot.content_type.as_str()), (200, "image/png"), "GET {url}: {}", shot.body);
    }

    assert!(server.healthy().await, "A is no longer healthy; stderr:\n{}", server.stderr());
    assert!(sibling.healthy().await, "B is no longer healthy; stderr:\n{}", sibling.stderr());
}

/// Both instances sign with one key; the lease holder seals only when poked by its own writes
/// (its poll is a minute), and gives the lease up 1.5 s after it stops renewing it.
fn sequencer_env() -> Vec<(String, String)> {
    [
        ("AUDIT_SIGNING_KEY", "two-instances-share-this-audit-signing-key-0123456789"),
        ("AUDIT_SEAL_POLL_MILLIS", "60000"),
        ("AUDIT_SEAL_LEASE_MILLIS", "1500"),
    ]
    .iter()
    .map(|&(name, value)| (name.to_owned(), value.to_owned()))
    .collect()
}

/// The sequencer (docs/api.md, "The audit trail"): writes on two instances at once make one
/// gap-free log; entries written on the instance that does not hold the lease wait, committed
/// but unsealed, and when the holder dies without giving the lease up (SIGKILL), the other takes
/// it once it ran out and seals them: nothing a 2xx answered is lost.
#[tokio::test]
async fn two_instances_keep_one_audit_log_and_a_dead_sequencer_loses_nothing() {
    crate::harness::run_with_owned_env(Backend::Postgres, sequencer_env(), |server| async move {
        // The first server took the lease at start; its sibling waits for it.
        let sibling = server.start_sibling(&sequencer_env()).await;
        let tenant = server.tenant().await;
        let key = server.admin().create_api_key(&tenant.org_id, &tenant.owner.id).await;
        let key = str_of(&key, "key").to_owned();
        let a = server.client(Auth::ApiKey(key.clone()), None);
        let b = sibling.client(Auth::ApiKey(key), None);

        let mut writes = tokio::task::JoinSet::new();
        for n in 0..20 {
            let client = if n % 2 == 0 { a.clone() } else { b.clone() };
            writes.spawn(async move {
                let body = json!({"title": format!("Risk {n}"), "description": "x", "category": "technology"});
                client.post("/v1/risks", body).await.ok(201);
            });
        }
        while let Some(written) = writes.join_next().await {
            written.unwrap();
        }
        // Read on the holder: its read pokes it, and it seals what both instances queued.
        let log = audit_log(&a).await;
        let seqs: Vec<i64> = log.iter().map(|entry| entry["seq"].as_i64().unwrap()).collect();
        assert_eq!(seqs, (1..=log.len() as i64).collect::<Vec<_>>(), "one gap-free log");
        assert_eq!(a.get("/v1/audit-log/verify").await.ok(200)["valid"], true);

        for n in 0..3 {
            let body = json!({"title": format!("Late {n}"), "description": "x", "category": "technology"});
            b.post("/v1/risks", body).await.ok(201);
        }
        // B does not hold the lease and A is not poked: committed, not sealed.
        let queued = audit_log(&b).await.iter().filter(|entry| entry["seq"].is_null()).count();
        assert_eq!(queued, 3, "B's last writes wait for the sequencer");

        server.stop().await;
        let sealed = poll_until(PATIENCE, || async {
            let log = audit_log(&b).await;
            log.iter().all(|entry| entry["seq"].is_i64()).then_some(log)
        })
        .await
        .expect("B takes the lease once it ran out and seals the queue");
        let seqs: Vec<i64> = sealed.iter().map(|entry| entry["seq"].as_i64().unwrap()).collect();
        assert_eq!(seqs, (1..=sealed.len() as i64).collect::<Vec<_>>());
        assert_eq!(sealed.len(), log.len() + 3);
        assert_eq!(b.get("/v1/audit-log/verify").await.ok(200)["valid"], true);
    })
    .await;
}

/// Two instances on one SQLite file: each has its own writer, so their writes meet in SQLite's
/// file lock. A write that reads its record before changing it must wait for the other instance's
/// write (docs/store.md, "SQLite"), not fail with "database is locked" because the other committed
/// between its read and its write.
#[tokio::test]
async fn writes_on_two_instances_of_one_sqlite_file_wait_for_each_other() {
    const RISKS: usize = 4;
    const PATCHES: usize = 48;
    crate::harness::run_with_owned_env(Backend::Sqlite, Vec::new(), |server| async move {
        let sibling = server.start_sibling(&[]).await;
        let tenant = server.tenant().await;
        let key = server.admin().create_api_key(&tenant.org_id, &tenant.owner.id).await;
        let key = str_of(&key, "key").to_owned();
        let a = server.client(Auth::ApiKey(key.clone()), None);
        let b = sibling.client(Auth::ApiKey(key), None);
        let mut ids = Vec::new();
        for n in 0..RISKS {
            let body = json!({"title": format!("Risk {n}"), "description": "x", "category": "technology"});
            ids.push(str_of(&a.post("/v1/risks", body).await.ok(201), "id").to_owned());
        }

        let mut writes = tokio::task::JoinSet::new();
        for n in 0..PATCHES {
            let client = if n % 2 == 0 { a.clone() } else { b.clone() };
            let path = format!("/v1/risks/{}", ids[n % RISKS]);
            writes.spawn(async move {
                let response = client.patch(&path, json!({"description": format!("patch {n}")})).await;
                (n, response.status, response.body.to_string())
            });
        }
        let mut refused = Vec::new();
        while let Some(written) = writes.join_next().await {
            let (n, status, body) = written.unwrap();
            if status != 200 {
                refused.push(format!("patch {n}: {status} {body}"));
            }
        }
        assert!(refused.is_empty(), "every PATCH applies:\n{}", refused.join("\n"));
        let log = audit_log(&a).await;
        let updates = log.iter().filter(|entry| entry["action"] == "risk.updated").count();
        assert_eq!(updates, PATCHES, "one entry per PATCH");
        assert_eq!(a.get("/v1/audit-log/verify").await.ok(200)["valid"], true);
    })
    .await;
}

/// The organization's entries, oldest first.
async fn audit_log(client: &Client) -> Vec<Value> {
    let body = client.get("/v1/audit-log?limit=200").await.ok(200);
    let mut log = body["data"].as_array().unwrap().clone();
    log.sort_by_key(|entry| entry["seq"].as_i64().unwrap_or(i64::MAX));
    log
}
