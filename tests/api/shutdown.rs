//! SIGTERM under load: the server stops accepting, finishes the writes in flight and exits 0;
//! every write it acknowledged is in the database exactly as sent, none is half-applied, and
//! requests after the signal are refused rather than left hanging.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::checks::{data, str_of};
use crate::client::Auth;
use crate::harness::{Backend, Env, TestServer, poll_until, run_with_env};

api_tests!(sigterm_finishes_acknowledged_writes_and_refuses_new_ones with ENV);

/// Logs at info, to see the shutdown lines (the harness turns the rate limit off, so that every
/// writer is served).
const ENV: Env = &[("SHUTDOWN_TIMEOUT_SECONDS", "20"), ("RUST_LOG", "info")];

const WRITERS: usize = 4;
/// Writes acknowledged before the signal is sent.
const WRITES_BEFORE_SIGNAL: usize = 40;
/// Generous bounds: nothing here is a timing assertion, only "did not hang".
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
const EXIT_WITHIN: Duration = Duration::from_secs(40);

#[tokio::test]
async fn sigint_stops_gracefully_too() {
    run_with_env(Backend::Sqlite, ENV, |server| async move {
        server.tenant().await.api.get("/v1/risks").await.ok(200);
        server.signal("INT");
        let status = server.wait_exit(EXIT_WITHIN).await;
        assert!(status.success(), "exit status after SIGINT: {status}; stderr:\n{}", server.stderr());
        assert_shutdown_logged(&server.stderr(), "SIGINT");
    })
    .await;
}

/// What one writer sent, and what the server acknowledged.
#[derive(Debug, Default)]
struct Writes {
    /// Index of each create attempt and the id of the risk when it was answered 201.
    creates: Vec<(usize, Option<String>)>,
    /// Index of each PATCH attempt and whether it was answered 200.
    patches: Vec<(usize, bool)>,
    /// The error that ended the writer (the server went away).
    ended_by: Option<String>,
}

fn created_title(writer: usize, n: usize) -> String {
    format!("w{writer}-{n}")
}

fn created_description(writer: usize, n: usize) -> String {
    format!("created by writer {writer} as number {n}")
}

fn patch_body(writer: usize, n: usize) -> Value {
    json!({"title": format!("p{writer}-{n}"), "description": format!("patched by writer {writer} as number {n}")})
}

/// Sends creates and PATCHes of its own risk until a request fails at the connection level.
async fn write_until_refused(
    http: reqwest::Client,
    base_url: String,
    key: String,
    writer: usize,
    target: String,
    acknowledged: Arc<AtomicUsize>,
) -> Writes {
    let mut writes = Writes::default();
    for n in 0.. {
        let body = json!({"title": created_title(writer, n), "description": created_description(writer, n),
                          "category": "technology"});
        let sent = http.post(format!("{base_url}/v1/risks")).header("X-API-Key", &key).json(&body).send().await;
        match answer(sent).await {
            Ok((StatusCode::CREATED, risk)) => {
                assert_eq!(risk["title"], body["title"], "the 201 of {body}: {risk}");
                writes.creates.push((n, Some(str_of(&risk, "id").to_owned())));
                acknowledged.fetch_add(1, Ordering::Relaxed);
            }
            Ok(_) => writes.creates.push((n, None)),
            Err(error) => {
                writes.creates.push((n, None));
                writes.ended_by = Some(error);
                return writes;
            }
        }
        let body = patch_body(writer, n);
        let sent =
            http.patch(format!("{base_url}/v1/risks/{target}")).header("X-API-Key", &key).json(&body).send().await;
        match answer(sent).await {
            Ok((StatusCode::OK, risk)) => {
                assert_eq!((&risk["title"], &risk["description"]), (&body["title"], &body["description"]));
                writes.patches.push((n, true));
                acknowledged.fetch_add(1, Ordering::Relaxed);
            }
            Ok(_) => writes.patches.push((n, false)),
            Err(error) => {
                writes.patches.push((n, false));
                writes.ended_by = Some(error);
                return writes;
            }
        }
    }
    writes
}

/// The status and JSON body, or why there is no answer. A request that hangs fails the test.
async fn answer(sent: reqwest::Result<reqwest::Response>) -> Result<(StatusCode, Value), String> {
    let response = sent.map_err(|error| {
        assert!(!error.is_timeout(), "a request hung instead of being answered or refused: {error:?}");
        format!("{error:?}")
    })?;
    let status = response.status();
    let body = response.bytes().await.map_err(|error| {
        assert!(!error.is_timeout(), "a response body hung: {error:?}");
        format!("{error:?}")
    })?;
    Ok((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
}

async fn sigterm_finishes_acknowledged_writes_and_refuses_new_ones(server: &TestServer) {
    let tenant = server.tenant().await;
    let key = server.admin().create_api_key(&tenant.org_id, &tenant.owner.id).await;
    let key = str_of(&key, "key").to_owned();
    let mut targets = Vec::new();
    for writer in 0..WRITERS {
        let body = json!({"title": format!("target {writer}"), "description": "original", "category": "people"});
        targets.push(str_of(&tenant.api.post("/v1/risks", body).await.ok(201), "id").to_owned());
    }

    let acknowledged = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let http = reqwest::Client::builder().timeout(REQUEST_TIMEOUT).build().expect("reqwest client");
            let task = write_until_refused(
                http,
                server.base_url().to_owned(),
                key.clone(),
                writer,
                targets[writer].clone(),
                Arc::clone(&acknowledged),
            );
            tokio::spawn(task)
        })
        .collect();
    let through = poll_until(Duration::from_secs(30), || async {
        (acknowledged.load(Ordering::Relaxed) >= WRITES_BEFORE_SIGNAL).then_some(())
    });
    assert!(through.await.is_some(), "the writers got fewer than {WRITES_BEFORE_SIGNAL} writes through in 30 s");

    server.terminate();
    let signalled = Instant::now();
    // New connections from now on: answered while the signal is on its way, then refused.
    let refused = probe_until_refused(server.base_url()).await;
    let mut all = Vec::new();
    for writer in writers {
        let writes = tokio::time::timeout(EXIT_WITHIN, writer)
            .await
            .expect("a writer was still being served long after SIGTERM")
            .expect("a writer task panicked");
        assert!(writes.ended_by.is_some(), "a writer stopped without the server going away");
        all.push(writes);
    }
    let status = server.wait_exit(EXIT_WITHIN).await;
    eprintln!(
        "shutdown of pid {}: {} writes acknowledged; exit {:?} after SIGTERM; new connections refused after {refused:?}",
        server.pid(),
        acknowledged.load(Ordering::Relaxed),
        signalled.elapsed()
    );
    assert!(status.success(), "exit status after SIGTERM: {status}; stderr:\n{}", server.stderr());
    assert_shutdown_logged(&server.stderr(), "SIGTERM");
    let after_exit = reqwest::Client::new().get(format!("{}/health", server.base_url())).send().await;
    assert!(after_exit.as_ref().is_err_and(reqwest::Error::is_connect), "after exit: {after_exit:?}");

    // A new instance on the same database sees exactly what was acknowledged, and nothing half-done.
    let restarted = server.start_sibling(&owned(ENV)).await;
    let api = restarted.client(Auth::ApiKey(key), None);
    let listed = api.get("/v1/risks").await.ok(200);
    let mut by_title: HashMap<String, Vec<&Value>> = HashMap::new();
    for risk in data(&listed) {
        by_title.entry(str_of(risk, "title").to_owned()).or_default().push(risk);
    }
    for (writer, writes) in all.iter().enumerate() {
        check_creates(writer, writes, &by_title, &api).await;
        check_patches(writer, writes, &api.get(&format!("/v1/risks/{}", targets[writer])).await.ok(200));
    }
    let expected: usize = WRITERS + by_title.keys().filter(|title| title.starts_with('w')).count();
    assert_eq!(data(&listed).len(), expected, "risks nobody created: {listed}");
}

/// Every acknowledged create is there as sent; an unacknowledged one is there as sent or absent;
/// none is there twice.
async fn check_creates(
    writer: usize,
    writes: &Writes,
    by_title: &HashMap<String, Vec<&Value>>,
    api: &crate::client::Client,
) {
    for (n, acknowledged) in &writes.creates {
        let title = created_title(writer, *n);
        let found = by_title.get(&title).map_or(&[][..], Vec::as_slice);
        assert!(found.len() <= 1, "`{title}` was created {} times", found.len());
        if let Some(id) = acknowledged {
            assert_eq!(found.len(), 1, "acknowledged create `{title}` ({id}) is missing");
            assert_eq!(found[0]["id"], id.as_str());
        }
        if let Some(risk) = found.first() {
            let risk = api.get(&format!("/v1/risks/{}", str_of(risk, "id"))).await.ok(200);
            assert_eq!(risk["description"], created_description(writer, *n), "{risk}");
            assert_eq!(risk["category"], "technology", "{risk}");
        }
    }
    let last = writes.creates.last().map_or(0, |(n, _)| *n);
    let prefix = format!("w{writer}-");
    for title in by_title.keys().filter_map(|t| t.strip_prefix(&prefix)) {
        let n: usize = title.parse().unwrap_or(usize::MAX);
        assert!(n <= last, "w{writer}-{title} exists but was never sent");
    }
}

/// The target risk holds one whole PATCH: the last acknowledged one or the one sent after it.
fn check_patches(writer: usize, writes: &Writes, risk: &Value) {
    let last_acknowledged = writes.patches.iter().rev().find(|(_, ok)| *ok).map(|(n, _)| *n);
    let last_sent = writes.patches.last().map(|(n, _)| *n);
    let applied = (0..=last_sent.unwrap_or(0)).find(|n| {
        let body = patch_body(writer, *n);
        risk["title"] == body["title"] && risk["description"] == body["description"]
    });
    match (applied, last_acknowledged) {
        (Some(n), Some(acknowledged)) => {
            assert!(n >= acknowledged, "the acknowledged PATCH {acknowledged} was undone by {n}: {risk}")
        }
        (Some(_), None) => {}
        (None, None) => assert_eq!(
            (&risk["title"], &risk["description"]),
            (&json!(format!("target {writer}")), &json!("original")),
            "half a PATCH: {risk}"
        ),
        (None, Some(acknowledged)) => panic!("PATCH {acknowledged} was acknowledged but the risk holds {risk}"),
    }
}

/// Fresh connections every 20 ms until one is refused; each must be answered or refused promptly.
async fn probe_until_refused(base_url: &str) -> Duration {
    let started = Instant::now();
    loop {
        let http = reqwest::Client::builder().pool_max_idle_per_host(0).timeout(REQUEST_TIMEOUT).build();
        let probe = http.expect("reqwest client").get(format!("{base_url}/health")).send().await;
        match probe {
            Ok(_) => {}
            Err(error) if error.is_timeout() => panic!("a new connection hung after SIGTERM: {error:?}"),
            Err(_) => return started.elapsed(),
        }
        assert!(started.elapsed() < EXIT_WITHIN, "new connections were still served {EXIT_WITHIN:?} after SIGTERM");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn assert_shutdown_logged(stderr: &str, signal: &str) {
    let started = stderr.lines().find(|line| line.contains("shutting down: no new connections"));
    assert!(started.is_some_and(|line| line.contains(signal)), "no shutdown line naming {signal} in:\n{stderr}");
    assert!(stderr.contains("shutdown complete"), "no `shutdown complete` line in:\n{stderr}");
}

fn owned(env: Env) -> Vec<(String, String)> {
    env.iter().map(|&(name, value)| (name.to_owned(), value.to_owned())).collect()
}
