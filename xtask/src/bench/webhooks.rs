//! The webhook delivery case: [`EVENTS`] changes of one organization, each delivered to
//! [`ENDPOINTS`] endpoints of a local [`Receiver`] that answers at once, by two server instances
//! sharing one database. Then the same again while one endpoint answers 500 for [`OUTAGE`].
//!
//! What it measures: deliveries per second (first to last delivery the receiver took), each
//! instance's share (its `webhook_delivery_attempts_total`), the instances' peak RSS, and in the
//! outage the healthy endpoints' rate and how long the failing one took to catch up. What it
//! checks, against the store's own record of the deliveries: every delivery taken exactly once,
//! in the order of its endpoint's queue (which follows the audit log's sealed order), every one
//! signed with its endpoint's secret.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;

use super::Backend;
use super::measure::rss_mib;
use super::receiver::{Received, Receiver};
use super::seal;
use crate::service::{Request, Server, Store, Tenant, admin, json_string};

/// The case's name, as `--case` selects it.
pub const NAME: &str = "webhook delivery";
pub const ENDPOINTS: usize = 10;
/// Changes per phase; each is one delivery to every endpoint.
pub const EVENTS: usize = 2_000;
/// Server instances sharing the deliveries.
pub const INSTANCES: usize = 2;
/// How long the failing endpoint answers 500 in the second phase.
pub const OUTAGE: Duration = Duration::from_secs(10);
/// Risks per bulk request that makes the changes.
const BULK: usize = 500;
/// A phase that takes longer has failed.
const DEADLINE: Duration = Duration::from_secs(300);
const POLL: Duration = Duration::from_millis(20);
/// The instances retry a failed delivery after half a second, then at most every second: with the
/// default backoff (5 s, doubling) the catch-up time would measure the backoff, not the worker.
const ENV: &[(&str, &str)] = &[("WEBHOOK_RETRY_BASE_MILLIS", "500"), ("WEBHOOK_RETRY_MAX_SECONDS", "1")];

/// One backend's figures.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    pub backend: Backend,
    pub steady: Phase,
    pub outage: Phase,
    /// The larger of the instances' peak resident sets.
    pub peak_rss_mib: f64,
}

/// One phase: [`EVENTS`] × [`ENDPOINTS`] deliveries.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Phase {
    pub deliveries: usize,
    /// From the first delivery the receiver took to the last.
    pub seconds: f64,
    pub per_second: f64,
    /// Deliveries each instance made (its own counter).
    pub per_instance: Vec<u64>,
    /// The healthy endpoints' deliveries per second and endpoint.
    pub per_endpoint_per_second: f64,
    /// From the end of the outage to the failing endpoint's last delivery; none without an outage.
    pub caught_up_after_s: Option<f64>,
    /// What broke exactly-once, order or signing; empty when nothing did.
    pub problems: Vec<String>,
}

/// The case on `store`, a database of its own (the instances' workers would deliver any other
/// organization's events too).
pub fn run(binary: &Path, backend: Backend, store: &Store, scratch: &Path, out: &Path) -> Result<Figures> {
    println!("\n==> {NAME}: {} changes to {ENDPOINTS} endpoints, {INSTANCES} instances ({})", EVENTS, backend.name());
    let receiver = Receiver::start()?;
    let mut servers = Vec::new();
    for n in 0..INSTANCES {
        let log = out.join(format!("{}-webhooks-{n}-server.log", backend.name()));
        // One data directory: the instances must share the vault key that seals the secrets.
        let mut server = Server::spawn(binary, store.url(), &scratch.join("webhooks"), &log, ENV)?;
        server.wait_until_ok(&Request::get("/health"), POLL, &log)?;
        servers.push(server);
    }
    let tenant = Tenant::create(binary, store.url(), "webhooks")?;
    let org = tenant.organization_id.as_str();
    admin(binary, store.url(), &["allow-host", "--org", org, "--for", "webhooks", "--host", "127.0.0.1"])?;
    let mut secrets = HashMap::new();
    for endpoint in 0..ENDPOINTS {
        let url = format!("http://{}/hook/{endpoint}", receiver.address);
        let body = serde_json::json!({ "url": url, "events": ["risk.created"] }).to_string();
        let created =
            Request::post("/v1/webhooks", &body).with_key(&tenant.api_key).expect(&servers[0].address, 201)?;
        secrets.insert(json_string(&created, "id")?, (endpoint, json_string(&created, "secret")?));
    }
    let mut taken = Vec::new();
    let steady = phase(&servers, &receiver, &tenant, store, &secrets, &mut taken, None)?;
    let outage = phase(&servers, &receiver, &tenant, store, &secrets, &mut taken, Some(OUTAGE))?;
    let peaks = servers.iter().map(|s| rss_mib(s.pid()).map(|(_, peak)| peak)).collect::<Result<Vec<f64>>>()?;
    let peak_rss_mib = peaks.iter().copied().fold(0.0, f64::max);
    // The first instance also took the bulk requests that made the changes.
    println!("    {}: peak RSS by instance {peaks:.1?} MiB (the first made the changes)", backend.name());
    Ok(Figures { backend, steady, outage, peak_rss_mib })
}

/// Makes [`EVENTS`] changes and waits until every endpoint took each; `outage` makes endpoint 0
/// answer 500 for that long from the first change on. `taken` holds every delivery taken so far.
fn phase(
    servers: &[Server],
    receiver: &Receiver,
    tenant: &Tenant,
    store: &Store,
    secrets: &HashMap<String, (usize, String)>,
    taken: &mut Vec<Received>,
    outage: Option<Duration>,
) -> Result<Phase> {
    let deliveries = EVENTS * ENDPOINTS;
    let before = servers.iter().map(succeeded_attempts).collect::<Result<Vec<_>>>()?;
    let target = receiver.taken() + deliveries;
    let outage_end = outage.map(|length| Instant::now() + length);
    if let Some(end) = outage_end {
        receiver.fail_until(0, end);
    }
    let started = Instant::now();
    for batch in 0..EVENTS / BULK {
        let operations: Vec<serde_json::Value> = (0..BULK)
            .map(|n| {
                let title = format!("Webhook risk {}", batch * BULK + n);
                serde_json::json!({ "op": "create", "body": { "title": title, "description": "A change.", "category": "other" } })
            })
            .collect();
        let body = serde_json::json!({ "operations": operations }).to_string();
        Request::post("/v1/risks/bulk", &body).with_key(&tenant.api_key).expect_success(&servers[0].address)?;
    }
    while receiver.taken() < target {
        if started.elapsed() > DEADLINE {
            bail!("{NAME}: {} of {deliveries} deliveries after {DEADLINE:?}", receiver.taken() + deliveries - target);
        }
        std::thread::sleep(POLL);
    }
    let received = receiver.drain();
    let after = servers.iter().map(succeeded_attempts).collect::<Result<Vec<_>>>()?;
    let per_instance: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    let ok: Vec<&Received> = received.iter().filter(|r| r.status == 200).collect();
    let span = |of: &[&Received]| match (of.first(), of.last()) {
        (Some(first), Some(last)) => last.at.duration_since(first.at).as_secs_f64(),
        _ => 0.0,
    };
    let seconds = span(&ok);
    let healthy: Vec<&Received> = ok.iter().copied().filter(|r| outage.is_none() || r.endpoint != 0).collect();
    let healthy_endpoints = if outage.is_some() { ENDPOINTS - 1 } else { ENDPOINTS };
    let per_endpoint_per_second = healthy.len() as f64 / span(&healthy).max(f64::EPSILON) / healthy_endpoints as f64;
    let caught_up_after_s = outage_end.and_then(|end| {
        let last = ok.iter().filter(|r| r.endpoint == 0).map(|r| r.at).max()?;
        Some(last.saturating_duration_since(end).as_secs_f64())
    });
    let (count, failed_attempts) = (ok.len(), received.len() - ok.len());
    taken.extend(received.into_iter().filter(|r| r.status == 200));
    let problems = problems(store, &tenant.organization_id, secrets, taken)?;
    let result = Phase {
        deliveries: count,
        seconds,
        per_second: count as f64 / seconds.max(f64::EPSILON),
        per_instance,
        per_endpoint_per_second,
        caught_up_after_s,
        problems,
    };
    println!(
        "    {} deliveries in {:.2} s = {:.0}/s ({:.0}/s per instance; by instance {:?}); \
         {:.0}/s per healthy endpoint; {failed_attempts} answered 500{}; {}",
        result.deliveries,
        result.seconds,
        result.per_second,
        result.per_second / INSTANCES as f64,
        result.per_instance,
        result.per_endpoint_per_second,
        result
            .caught_up_after_s
            .map_or_else(String::new, |s| format!("; the failing endpoint caught up {s:.2} s after")),
        if result.problems.is_empty() {
            "exactly once, in order, signed".to_owned()
        } else {
            result.problems.join("; ")
        },
    );
    Ok(result)
}

/// What the instance's `/metrics` says it delivered.
fn succeeded_attempts(server: &Server) -> Result<u64> {
    let metrics = Request::get("/metrics").expect(&server.address, 200)?;
    let line =
        metrics.lines().find_map(|line| line.strip_prefix("webhook_delivery_attempts_total{outcome=\"succeeded\"} "));
    line.and_then(|n| n.trim().parse().ok()).context("no webhook_delivery_attempts_total in /metrics")
}

/// Compares what the receiver took with the store's deliveries: per endpoint, the same ids in
/// the same (ordinal) order, each once; every delivery succeeded; ordinals follow the audit seqs;
/// every signature is the endpoint's.
fn problems(
    store: &Store,
    organization: &str,
    secrets: &HashMap<String, (usize, String)>,
    taken: &[Received],
) -> Result<Vec<String>> {
    let rows = seal::query(
        store,
        &format!(
            "SELECT webhook_id, id, event_seq, status FROM webhook_deliveries \
             WHERE organization_id = '{organization}' ORDER BY webhook_id, ordinal"
        ),
    )?;
    let mut expected: Vec<Vec<String>> = vec![Vec::new(); ENDPOINTS];
    let mut problems = Vec::new();
    let mut last_seq: HashMap<usize, i64> = HashMap::new();
    for line in rows.lines().filter(|line| !line.trim().is_empty()) {
        let fields: Vec<&str> = line.trim().split('|').collect();
        let [webhook, id, seq, status] = fields[..] else { bail!("a delivery row of {line:?}") };
        let &(endpoint, _) =
            secrets.get(webhook).with_context(|| format!("a delivery of unknown webhook {webhook}"))?;
        let seq: i64 = seq.parse().with_context(|| format!("the event seq of {line:?}"))?;
        if last_seq.insert(endpoint, seq).is_some_and(|previous| previous >= seq) {
            problems.push(format!("endpoint {endpoint}: delivery {id} queued out of the log's order"));
        }
        if status != "succeeded" {
            problems.push(format!("endpoint {endpoint}: delivery {id} is {status}"));
        }
        expected[endpoint].push(id.to_owned());
    }
    let mut got: Vec<Vec<&str>> = vec![Vec::new(); ENDPOINTS];
    let keys: HashMap<usize, Vec<u8>> = secrets
        .values()
        .map(|(endpoint, secret)| Ok((*endpoint, STANDARD.decode(secret.trim_start_matches("whsec_"))?)))
        .collect::<Result<_>>()?;
    for received in taken {
        let Some(got) = got.get_mut(received.endpoint) else {
            problems.push(format!("a delivery to an unknown path (endpoint {})", received.endpoint));
            continue;
        };
        got.push(&received.id);
        if !signed(&keys[&received.endpoint], received) {
            problems.push(format!(
                "endpoint {}: delivery {} is not signed with its secret",
                received.endpoint, received.id
            ));
        }
    }
    for (endpoint, (expected, got)) in expected.iter().zip(&got).enumerate() {
        if expected.len() != got.len() {
            problems.push(format!("endpoint {endpoint}: {} deliveries taken, {} made", got.len(), expected.len()));
        } else if let Some(at) = expected.iter().zip(got).position(|(e, g)| e != g) {
            problems.push(format!(
                "endpoint {endpoint}: delivery {at} came out of order ({} for {})",
                got[at], expected[at]
            ));
        }
    }
    problems.truncate(10);
    Ok(problems)
}

/// Whether one of the `v1,…` signatures is the HMAC-SHA256 of `{id}.{timestamp}.{body}` (Standard
/// Webhooks) under `key`. Written here rather than calling the server's signer
/// (`compliance_app::webhook_signing`), so that a mistake there is not repeated in the check.
fn signed(key: &[u8], received: &Received) -> bool {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else { return false };
    mac.update(format!("{}.{}.", received.id, received.timestamp).as_bytes());
    mac.update(&received.body);
    let expected = STANDARD.encode(mac.finalize().into_bytes());
    received.signature.split(' ').any(|signature| signature.strip_prefix("v1,") == Some(expected.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Standard Webhooks reference libraries' example.
    #[test]
    fn checks_signatures_as_the_reference_implementation_makes_them() -> Result<()> {
        let key = STANDARD.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")?;
        let mut received = Received {
            endpoint: 0,
            id: "msg_p5jXN8AQM9LWM0D4loKWxJek".to_owned(),
            timestamp: "1614265330".to_owned(),
            signature: "v1,bm9ldmVu v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=".to_owned(),
            body: br#"{"test": 2432232314}"#.to_vec(),
            status: 200,
            at: Instant::now(),
        };
        assert!(signed(&key, &received));
        received.body.push(b' ');
        assert!(!signed(&key, &received), "a changed body");
        Ok(())
    }
}
