//! A database outage answers 503 with `Retry-After`, promptly, while liveness stays up; once the
//! database is back, the service recovers by itself.
//!
//! PostgreSQL only: its database can be dropped (or its server stopped) under the running server,
//! whereas an SQLite file stays readable through the connections the server already holds, so
//! there is no black-box way to take it away.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::checks::str_of;
use crate::client::Client;
use crate::cluster::Cluster;
use crate::harness::{Backend, PATIENCE, TestServer, poll_every, poll_until, run, run_on_postgres_at};

#[tokio::test]
async fn postgres_outage_is_503_with_retry_after() {
    run(Backend::Postgres, |server| async move { outage_is_503_with_retry_after(&server).await }).await;
}

async fn outage_is_503_with_retry_after(server: &TestServer) {
    let tenant = server.tenant().await;
    tenant.api.get("/v1/risks").await.ok(200);
    server.cut_database().await;

    let started = Instant::now();
    for response in [server.anonymous().get("/ready").await, tenant.api.get("/v1/risks").await] {
        let retry_after = response.retry_after.clone();
        response.problem(503);
        assert!(retry_after.is_some_and(|v| v.parse::<u32>().is_ok()), "503 without a numeric Retry-After");
    }
    assert!(started.elapsed() < Duration::from_secs(10), "the 503s took {:?}", started.elapsed());
    assert_eq!(server.anonymous().get("/health").await.status, 200, "liveness does not need the database");
}

/// PostgreSQL stopped under the running server (its own throwaway cluster), then started again on
/// the same port: meanwhile every request is answered promptly with 503 and a numeric
/// `Retry-After` (liveness stays 200), and afterwards the service recovers by itself, with the
/// writes from before the outage intact. `fast` tells the clients the server is shutting down;
/// `immediate` kills the backends as a crash would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_fast_stop_then_restart_recovers_by_itself() {
    stop_and_restart("fast").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_crash_then_restart_recovers_by_itself() {
    stop_and_restart("immediate").await;
}

/// Each answer must come within this, outage or not (the pool waits 2 s, connects 3 s at most).
const ANSWER_WITHIN: Duration = Duration::from_secs(10);
const RECOVER_WITHIN: Duration = Duration::from_secs(20);
/// Lanes of background traffic, each a loop of rounds: a create, a list and a readiness probe.
const LANES: usize = 2;
const REQUESTS_PER_ROUND: usize = 3;

async fn stop_and_restart(mode: &'static str) {
    let cluster = Arc::new(Cluster::start().await);
    let inside = Arc::clone(&cluster);
    run_on_postgres_at(&cluster.admin_url(), Vec::new(), move |server| async move {
        recovers_by_itself(&server, &inside, mode).await;
    })
    .await;
}

/// One request of the background traffic.
#[derive(Debug)]
struct Sample {
    lane: usize,
    what: &'static str,
    started: Instant,
    took: Duration,
    status: u16,
    retry_after: Option<String>,
    /// A risk created (201): its id and title.
    created: Option<(String, String)>,
}

async fn recovers_by_itself(server: &TestServer, cluster: &Cluster, mode: &str) {
    let tenant = server.tenant().await;
    let mut before = Vec::new();
    for n in 0..5 {
        let risk = crate::risks::create(&tenant.api, &format!("before the outage {n}")).await;
        before.push((str_of(&risk, "id").to_owned(), str_of(&risk, "title").to_owned()));
    }

    let stop = Arc::new(AtomicBool::new(false));
    let samples = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let traffic: Vec<_> = (0..LANES)
        .map(|lane| tokio::spawn(traffic(tenant.api.clone(), server.anonymous(), lane, stop.clone(), samples.clone())))
        .collect();
    rounds_since(&samples, started, 1, "before the outage").await;

    cluster.stop(mode).await;
    let down = Instant::now();
    for response in [
        server.anonymous().get("/ready").await,
        tenant.api.get("/v1/risks").await,
        tenant.api.post("/v1/risks", json!({"title": "t", "description": "d", "category": "people"})).await,
    ] {
        let retry_after = response.retry_after.clone();
        response.problem(503);
        assert!(retry_after.is_some_and(|v| v.parse::<u32>().is_ok()), "503 without a numeric Retry-After");
    }
    assert_eq!(server.anonymous().get("/health").await.status, 200, "liveness does not need the database");
    assert!(down.elapsed() < ANSWER_WITHIN, "the 503s took {:?}", down.elapsed());
    // Let the traffic run into the dead pool (every connection it held is gone) for a few rounds.
    rounds_since(&samples, down, 5, "while PostgreSQL is down").await;

    let restarting = Instant::now();
    cluster.restart().await;
    let up = Instant::now();
    let healthy = poll_every(Duration::from_millis(100), RECOVER_WITHIN, || async {
        let ready = server.anonymous().get("/ready").await.status;
        let listed = tenant.api.get("/v1/risks").await.status;
        (ready == 200 && listed == 200).then_some(())
    });
    assert!(healthy.await.is_some(), "not recovered {RECOVER_WITHIN:?} after PostgreSQL came back");
    let recovered = Instant::now();
    // Traffic after recovery, every answer of which must be a success.
    rounds_since(&samples, recovered, 2, "after recovery").await;
    stop.store(true, Ordering::Relaxed);
    for lane in traffic {
        lane.await.expect("a traffic lane panicked");
    }

    let samples = std::mem::take(&mut *samples.lock().expect("samples"));
    eprintln!(
        "pg_ctl stop -m {mode}: {} requests ({} answered 503), the slowest in {:?}; recovered {:?} after \
         PostgreSQL was back",
        samples.len(),
        samples.iter().filter(|s| s.status == 503).count(),
        samples.iter().map(|s| s.took).max().unwrap_or_default(),
        recovered - up
    );
    let mut created = before;
    for sample in &samples {
        assert!(sample.took < ANSWER_WITHIN, "{} took {:?}", sample.what, sample.took);
        assert!(
            (200..300).contains(&sample.status) || sample.status == 503,
            "{} answered {} (only 2xx or 503 are right around an outage)",
            sample.what,
            sample.status
        );
        if sample.status == 503 {
            let retry_after = sample.retry_after.as_deref().unwrap_or_default();
            assert!(retry_after.parse::<u32>().is_ok(), "{} 503 with Retry-After {retry_after:?}", sample.what);
        }
        let end = sample.started + sample.took;
        if sample.started > down && end < restarting {
            assert_eq!(sample.status, 503, "{} succeeded while PostgreSQL was down", sample.what);
        }
        if sample.started > recovered {
            assert!((200..300).contains(&sample.status), "{} answered {} after recovery", sample.what, sample.status);
        }
        created.extend(sample.created.clone());
    }
    let during = samples.iter().filter(|s| s.started > down && s.started < restarting).count();
    assert!(during > 0, "no traffic while PostgreSQL was down");
    for (id, title) in created {
        let risk = tenant.api.get(&format!("/v1/risks/{id}")).await.ok(200);
        assert_eq!(risk["title"], title.as_str(), "{risk}");
    }
}

/// Waits until every lane of traffic has answered `rounds` whole rounds started after `since`.
async fn rounds_since(samples: &Mutex<Vec<Sample>>, since: Instant, rounds: usize, when: &str) {
    let done = poll_until(PATIENCE, || {
        let samples = samples.lock().expect("samples");
        let slowest = (0..LANES)
            .map(|lane| samples.iter().filter(|s| s.lane == lane && s.started > since).count())
            .min()
            .unwrap_or_default();
        std::future::ready((slowest >= rounds * REQUESTS_PER_ROUND).then_some(()))
    });
    assert!(done.await.is_some(), "the traffic did not make {rounds} rounds {when} within {PATIENCE:?}");
}

/// Creates, lists and probes readiness in a loop until `stop`, recording every answer.
async fn traffic(api: Client, anonymous: Client, lane: usize, stop: Arc<AtomicBool>, samples: Arc<Mutex<Vec<Sample>>>) {
    for n in 0.. {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let title = format!("lane {lane} number {n}");
        let body = json!({"title": title, "description": "d", "category": "people"});
        let started = Instant::now();
        let response = api.post("/v1/risks", body).await;
        let created = (response.status == 201).then(|| (str_of(&response.body, "id").to_owned(), title.clone()));
        let mut sample = Sample {
            lane,
            what: "POST /v1/risks",
            started,
            took: started.elapsed(),
            status: response.status,
            retry_after: response.retry_after,
            created,
        };
        samples.lock().expect("samples").push(sample);
        for (what, client, path) in [("GET /v1/risks", &api, "/v1/risks"), ("GET /ready", &anonymous, "/ready")] {
            let started = Instant::now();
            let response = client.get(path).await;
            sample = Sample {
                lane,
                what,
                started,
                took: started.elapsed(),
                status: response.status,
                retry_after: response.retry_after,
                created: None,
            };
            samples.lock().expect("samples").push(sample);
        }
        // Pacing, so that the traffic leaves the 2 cores some room; no wait for anything.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
