//! `/v1/webhooks`: endpoints, secrets, rotation, tests and deliveries. Every delivery is received by
//! a real receiver on loopback (tests/webhook_receiver.py) that verifies its signature with the
//! Standard Webhooks reference library from PyPI, not with our code.

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::client::{Auth, Client};
use crate::harness::{Backend, PATIENCE, Sibling, TestServer, poll_every, random_hex};

/// Loopback receivers, a quick worker and quick retries.
const LOOPBACK: crate::harness::Env =
    &[("WEBHOOK_ALLOWED_HOSTS", "127.0.0.1"), ("WEBHOOK_POLL_MILLIS", "100"), ("WEBHOOK_RETRY_BASE_MILLIS", "200")];
/// [`LOOPBACK`], and a claim that runs out after 2 s (instead of 60 s), so that a delivery cut off
/// by a crash is sent again within the test's patience.
const SHORT_CLAIMS: crate::harness::Env = &[
    ("WEBHOOK_ALLOWED_HOSTS", "127.0.0.1"),
    ("WEBHOOK_POLL_MILLIS", "100"),
    ("WEBHOOK_RETRY_BASE_MILLIS", "200"),
    ("WEBHOOK_CLAIM_LEASE_SECONDS", "2"),
];
/// [`LOOPBACK`], and endpoints disabled after failing for 1 s (instead of 3 days).
const QUICK_DISABLE: crate::harness::Env = &[
    ("WEBHOOK_ALLOWED_HOSTS", "127.0.0.1"),
    ("WEBHOOK_POLL_MILLIS", "100"),
    ("WEBHOOK_RETRY_BASE_MILLIS", "200"),
    ("WEBHOOK_DISABLE_AFTER_SECONDS", "1"),
];
/// [`LOOPBACK`], logging everything down to debug: the more the server says, the more a leaked
/// secret would show.
const VERBOSE: crate::harness::Env = &[
    ("WEBHOOK_ALLOWED_HOSTS", "127.0.0.1"),
    ("WEBHOOK_POLL_MILLIS", "100"),
    ("WEBHOOK_RETRY_BASE_MILLIS", "200"),
    ("RUST_LOG", "debug"),
];

/// A quick worker and quick retries, and no host allowed for every organization.
const NOTHING_ALLOWED: crate::harness::Env = &[("WEBHOOK_POLL_MILLIS", "100"), ("WEBHOOK_RETRY_BASE_MILLIS", "200")];

/// How long a burst of changes may take to reach its endpoints (the suite runs on 2 cores).
const BURST_DEADLINE: Duration = Duration::from_secs(90);

api_tests!(
    a_test_event_arrives_signed_and_is_recorded with LOOPBACK,
    changes_arrive_in_order_after_a_failing_receiver_recovers with LOOPBACK,
    a_rotated_secret_signs_beside_the_new_one with LOOPBACK,
    bad_webhooks_are_400_naming_the_field with LOOPBACK,
    crud_and_another_organization_sees_nothing with LOOPBACK,
    a_429_is_retried_after_its_retry_after with LOOPBACK,
    an_endpoint_failing_past_the_window_is_disabled_with_a_reason with QUICK_DISABLE,
    sigterm_mid_burst_loses_nothing_and_sends_nothing_twice with LOOPBACK,
    a_delivery_cut_off_by_a_crash_is_sent_again_under_its_id with SHORT_CLAIMS,
    no_secret_in_any_answer_record_delivery_or_log with VERBOSE,
    a_bulk_request_sends_an_event_per_operation_in_order with LOOPBACK,
    a_url_is_a_credential_shown_once_then_masked with LOOPBACK,
    a_host_granted_to_one_organization_is_reachable_by_it_only with NOTHING_ALLOWED,
);

// PostgreSQL only: two server processes sharing one database is a PostgreSQL deployment (SQLite
// is embedded in one process).
#[tokio::test]
async fn two_instances_deliver_a_burst_once_each_and_in_order() {
    crate::harness::run_with_owned_env(Backend::Postgres, owned(LOOPBACK), |server| async move {
        let mut sibling = server.start_sibling(&owned(LOOPBACK)).await;
        two_instances_burst(&server, &mut sibling).await;
    })
    .await;
}

/// tests/webhook_receiver.py, running; killed on drop.
struct Receiver {
    url: String,
    secrets: PathBuf,
    http: reqwest::Client,
    _child: Child,
}

impl Receiver {
    async fn start(fail_first: u32) -> Self {
        Self::with(&["--fail-first", &fail_first.to_string()]).await
    }

    /// A receiver started with the options `args` (see tests/webhook_receiver.py).
    async fn with(args: &[&str]) -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/webhook_receiver.py");
        let secrets = std::env::temp_dir().join(format!("webhook-secrets-{}", random_hex(8)));
        let mut child = Command::new("python3")
            .arg(script)
            .arg(&secrets)
            .args(args)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs tests/webhook_receiver.py (`cargo xtask tools` installs standardwebhooks 1.1.0 in target/tools/venv; put its bin first on PATH)");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        tokio::time::timeout(PATIENCE, BufReader::new(stdout).read_line(&mut line))
            .await
            .expect("the receiver prints its port")
            .unwrap();
        let port: u16 = line.trim().parse().unwrap_or_else(|_| panic!("the receiver printed {line:?}, not its port"));
        Self { url: format!("http://127.0.0.1:{port}/hook"), secrets, http: reqwest::Client::new(), _child: child }
    }

    /// From now on the receiver answers 200 to everything.
    async fn heal(&self) {
        assert_eq!(self.http.put(&self.url).send().await.unwrap().status(), 204);
    }

    fn trust(&self, secrets: &[&str]) {
        std::fs::write(&self.secrets, secrets.join("\n")).unwrap();
    }

    async fn received(&self) -> Vec<Value> {
        let answer = self.http.get(&self.url).send().await.unwrap();
        answer.json::<Vec<Value>>().await.unwrap()
    }

    /// How many requests arrived so far.
    async fn count(&self) -> usize {
        let answer = self.http.get(format!("{}?count", self.url)).send().await.unwrap();
        let count = answer.json::<Value>().await.unwrap()["count"].as_u64().unwrap();
        usize::try_from(count).unwrap()
    }

    /// What arrived, once at least `count` requests did.
    async fn wait_for(&self, count: usize) -> Vec<Value> {
        self.wait_for_within(count, PATIENCE).await;
        self.received().await
    }

    /// Waits until at least `count` requests arrived, for at most `within`; fails the test with
    /// how many did otherwise.
    async fn wait_for_within(&self, count: usize, within: Duration) {
        let got =
            poll_every(Duration::from_millis(100), within, || async { (self.count().await >= count).then_some(()) });
        if got.await.is_none() {
            let received = self.received().await;
            let shown: Vec<&Value> = received.iter().rev().take(5).collect();
            panic!(
                "the receiver got {} deliveries, not {count}, within {within:?}; the last ones: {shown:?}",
                received.len()
            );
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.secrets);
    }
}

fn secret_of(answer: &Value) -> String {
    let secret = answer["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{secret}");
    secret
}

async fn a_test_event_arrives_signed_and_is_recorded(server: &TestServer) {
    let tenant = server.tenant().await;
    let receiver = Receiver::start(0).await;
    let created = tenant
        .api
        .post("/v1/webhooks", json!({"url": receiver.url, "events": ["risk.*"], "description": "ops"}))
        .await
        .ok(201);
    let secret = secret_of(&created);
    receiver.trust(&[&secret]);
    let id = created["id"].as_str().unwrap();
    assert_eq!(created["isEnabled"], true);
    let shown = tenant.api.get(&format!("/v1/webhooks/{id}")).await.ok(200);
    assert!(shown.get("secret").is_none(), "the secret is shown once: {shown}");

    let queued = tenant.api.post(&format!("/v1/webhooks/{id}/test"), json!({})).await.ok(202);
    let received = receiver.wait_for(1).await;
    let event = &received[0];
    assert_eq!(event["verifiedWith"], json!([0]), "standardwebhooks verifies the signature: {event}");
    assert_eq!(event["type"], "webhook.test");
    assert_eq!(event["id"], queued["id"], "webhook-id is the delivery's id");
    let body: Value = serde_json::from_str(event["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["data"]["webhookId"], id);
    assert!(body["timestamp"].is_string(), "{body}");

    let path = format!("/v1/webhooks/{id}/deliveries");
    let recorded = poll_every(Duration::from_millis(100), PATIENCE, || async {
        let list = tenant.api.get(&path).await.ok(200);
        (list["data"][0]["status"] == "succeeded").then_some(list)
    })
    .await
    .expect("the delivery is recorded as succeeded");
    let delivery = &recorded["data"][0];
    assert_eq!(delivery["attempts"], 1);
    assert_eq!(delivery["responseStatus"], 200);
    assert_eq!(delivery["responseBody"], "ok");
    assert!(delivery["latencyMs"].as_i64().unwrap() >= 0);

    // A finished delivery can be sent again, under the same id.
    let retry = format!("/v1/webhooks/{id}/deliveries/{}/retry", queued["id"].as_str().unwrap());
    assert_eq!(tenant.api.post(&retry, json!({})).await.ok(202)["status"], "pending");
    let again = receiver.wait_for(2).await;
    assert_eq!(again[1]["id"], queued["id"]);
    assert_eq!(again[1]["verifiedWith"], json!([0]));

    // The secret is in no record and no log line.
    assert!(!recorded.to_string().contains(&secret));
    assert!(!tenant.api.get("/v1/webhooks").await.ok(200).to_string().contains(&secret));
    assert!(!server.stderr().contains(&secret), "the server logged the secret");
}

async fn changes_arrive_in_order_after_a_failing_receiver_recovers(server: &TestServer) {
    let tenant = server.tenant().await;
    let receiver = Receiver::start(2).await;
    let created = tenant.api.post("/v1/webhooks", json!({"url": receiver.url, "events": ["risk.*"]})).await.ok(201);
    receiver.trust(&[&secret_of(&created)]);
    let mut risks = Vec::new();
    for n in 0..5 {
        let risk = tenant
            .api
            .post("/v1/risks", json!({"title": format!("risk {n}"), "description": "d", "category": "other"}))
            .await
            .ok(201);
        risks.push(risk["id"].as_str().unwrap().to_owned());
    }
    // A vendor is not a `risk.*` event.
    tenant.api.post("/v1/vendors", json!({"name": "v", "description": "d"})).await.ok(201);

    let received = receiver.wait_for(7).await;
    let statuses: Vec<i64> = received.iter().map(|r| r["status"].as_i64().unwrap()).collect();
    assert_eq!(statuses, vec![503, 503, 200, 200, 200, 200, 200], "{received:?}");
    // The first event was retried (same id) before any later one was sent.
    assert_eq!(received[0]["id"], received[2]["id"]);
    assert_eq!(received[1]["id"], received[2]["id"]);
    let delivered: Vec<String> = received[2..]
        .iter()
        .map(|r| {
            assert_eq!(r["verifiedWith"], json!([0]), "{r}");
            assert_eq!(r["type"], "risk.created");
            let body: Value = serde_json::from_str(r["body"].as_str().unwrap()).unwrap();
            body["data"]["id"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(delivered, risks, "in commit order");
    // Nothing was sent for the vendor: a risk made after it arrives next. (Events are queued in
    // commit order, so once the witness arrived the vendor's event was passed over. A witness
    // must be a `risk.created`, made after the assertions above read the first seven.)
    let witness = tenant
        .api
        .post("/v1/risks", json!({"title": "witness", "description": "d", "category": "other"}))
        .await
        .ok(201);
    let all = receiver.wait_for(8).await;
    assert_eq!(all.len(), 8, "the vendor is no risk.* event: {all:?}");
    let last: Value = serde_json::from_str(all[7]["body"].as_str().unwrap()).unwrap();
    assert_eq!((&last["type"], &last["data"]["id"]), (&json!("risk.created"), &witness["id"]), "{last}");

    let list = tenant.api.get(&format!("/v1/webhooks/{}/deliveries", created["id"].as_str().unwrap())).await.ok(200);
    let first = list["data"].as_array().unwrap().iter().find(|d| d["id"] == received[0]["id"]).unwrap();
    assert_eq!(first["attempts"], 3, "{first}");
    assert_eq!(first["status"], "succeeded");
}

/// Each operation of a bulk request is a change of its own: its event goes out in the order the
/// audit trail holds it; a refused (atomic) bulk request sends none.
async fn a_bulk_request_sends_an_event_per_operation_in_order(server: &TestServer) {
    let tenant = server.tenant().await;
    let receiver = Receiver::start(0).await;
    hook(&tenant.api, &receiver, json!(["risk.*"])).await;
    let risk = |title: &str| json!({"title": title, "description": "d", "category": "other"});
    let existing = tenant.api.post("/v1/risks", risk("existing")).await.ok(201);
    let operations = json!({"operations": [
        {"op": "create", "body": risk("bulk 1")},
        {"op": "update", "id": existing["id"], "body": {"title": "existing, renamed"}},
        {"op": "create", "body": risk("bulk 2")},
        {"op": "delete", "id": existing["id"]},
    ]});
    let applied = tenant.api.post("/v1/risks/bulk", operations).await.ok(200);
    let refused = json!({"operations": [{"op": "create", "body": risk("never")},
                                         {"op": "delete", "id": existing["id"]}]});
    tenant.api.post("/v1/risks/bulk", refused).await.problem(400);
    let witness = tenant.api.post("/v1/risks", risk("witness")).await.ok(201);

    let events = events_of(&receiver.wait_for(6).await);
    let id = |value: &Value| value.as_str().unwrap().to_owned();
    let created = |index: usize| id(&applied["results"][index]["body"]["id"]);
    let expected = [
        ("risk.created", id(&existing["id"])),
        ("risk.created", created(0)),
        ("risk.updated", id(&existing["id"])),
        ("risk.created", created(2)),
        ("risk.deleted", id(&existing["id"])),
        ("risk.created", id(&witness["id"])),
    ]
    .map(|(event, id)| (event.to_owned(), id));
    assert_eq!(events, expected, "one event per operation, in order, none of the refused request");
    assert_eq!(events, audit_order(&tenant.api).await, "in the audit trail's order");
}

async fn a_rotated_secret_signs_beside_the_new_one(server: &TestServer) {
    let tenant = server.tenant().await;
    let receiver = Receiver::start(0).await;
    let created = tenant.api.post("/v1/webhooks", json!({"url": receiver.url, "events": ["*"]})).await.ok(201);
    let id = created["id"].as_str().unwrap();
    let old = secret_of(&created);
    let rotated = tenant.api.post(&format!("/v1/webhooks/{id}/rotate-secret"), json!({})).await.ok(200);
    let new = secret_of(&rotated);
    assert_ne!(old, new);
    assert!(rotated["previousSecretExpiresAt"].is_string(), "{rotated}");
    receiver.trust(&[&old, &new]);
    tenant.api.post(&format!("/v1/webhooks/{id}/test"), json!({})).await.ok(202);
    let received = receiver.wait_for(1).await;
    assert_eq!(received[0]["verifiedWith"], json!([0, 1]), "both secrets verify: {}", received[0]);
    assert_eq!(received[0]["signatures"].as_str().unwrap().split(' ').count(), 2);
}

async fn bad_webhooks_are_400_naming_the_field(server: &TestServer) {
    let tenant = server.tenant().await;
    let post = |body: Value| {
        let api = tenant.api.clone();
        async move { api.post("/v1/webhooks", body).await }
    };
    post(json!({"url": "http://hooks.example.com/x", "events": ["*"]})).await.invalid("url");
    post(json!({"url": "https://10.1.2.3/x", "events": ["*"]})).await.invalid("url");
    post(json!({"url": "https://localhost/x", "events": ["*"]})).await.invalid("url");
    post(json!({"url": "https://[::1]/x", "events": ["*"]})).await.invalid("url");
    post(json!({"url": "not a url", "events": ["*"]})).await.invalid("url");
    post(json!({"events": ["*"]})).await.invalid("url");
    post(json!({"url": "https://hooks.example.com/x", "events": []})).await.invalid("events");
    post(json!({"url": "https://hooks.example.com/x", "events": ["Risk!"]})).await.invalid("events");
    post(json!({"url": "https://hooks.example.com/x"})).await.invalid("events");
    let created = post(json!({"url": "https://hooks.example.com/x", "events": ["risk.updated"]})).await.ok(201);
    let path = format!("/v1/webhooks/{}", created["id"].as_str().unwrap());
    tenant.api.patch(&path, json!({"url": "https://169.254.169.254/"})).await.invalid("url");
    tenant.api.patch(&path, json!({"events": ["*.x"]})).await.invalid("events");
    tenant.api.get("/v1/webhooks/whk_nope").await.problem(404);
}

async fn crud_and_another_organization_sees_nothing(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let created = tenant
        .api
        .post("/v1/webhooks", json!({"url": "https://hooks.example.com/a", "events": ["risk.*", "vendor.created"]}))
        .await
        .ok(201);
    let id = created["id"].as_str().unwrap();
    let path = format!("/v1/webhooks/{id}");
    let changed =
        tenant.api.patch(&path, json!({"events": ["*"], "isEnabled": false, "description": "paused"})).await.ok(200);
    assert_eq!((changed["isEnabled"].clone(), changed["events"].clone()), (json!(false), json!(["*"])));
    assert_eq!(changed["description"], "paused");
    let list = tenant.api.get("/v1/webhooks").await.ok(200);
    assert_eq!(list["count"], 1);

    // Another organization: every route is a 404 and its list is empty.
    other.api.get(&path).await.problem(404);
    other.api.patch(&path, json!({"isEnabled": true})).await.problem(404);
    other.api.post(&format!("{path}/test"), json!({})).await.problem(404);
    other.api.post(&format!("{path}/rotate-secret"), json!({})).await.problem(404);
    other.api.get(&format!("{path}/deliveries")).await.problem(404);
    other.api.delete(&path).await.problem(404);
    assert_eq!(other.api.get("/v1/webhooks").await.ok(200)["count"], 0);

    assert_eq!(tenant.api.delete(&path).await.status, 204);
    tenant.api.get(&path).await.problem(404);
}

/// Slack and Teams put the key of a webhook in its URL's path: the full URL is shown in the create
/// answer only; every other answer, the audit trail and the events other webhooks get show its
/// origin and `/…`, and deliveries still go to the full URL.
async fn a_url_is_a_credential_shown_once_then_masked(server: &TestServer) {
    let tenant = server.tenant().await;
    let receiver = Receiver::start(0).await;
    let watcher = Receiver::start(0).await;
    let watching = hook(&tenant.api, &watcher, json!(["webhook.*"])).await;
    let secret_url = format!("{}/services/T0/B0/SecretPath42?token=SecretQuery42", receiver.url);
    let origin = receiver.url.trim_end_matches("/hook");
    let masked = format!("{origin}/…");

    // Subscribed to risks only, so that its own `webhook.updated` is not delivered to it before
    // the test event (a test event is sent whatever the subscription).
    let created = tenant.api.post("/v1/webhooks", json!({"url": secret_url, "events": ["risk.*"]})).await.ok(201);
    assert_eq!(created["url"], secret_url.as_str(), "the create answer shows the URL once");
    receiver.trust(&[&secret_of(&created)]);
    let id = created["id"].as_str().unwrap();
    let path = format!("/v1/webhooks/{id}");
    let rotated_url = format!("{}/services/T0/B0/SecretPath43", receiver.url);
    let mut answers = vec![tenant.api.get(&path).await.ok(200)];
    answers.push(tenant.api.patch(&path, json!({"url": rotated_url})).await.ok(200));
    answers.push(tenant.api.get("/v1/webhooks").await.ok(200));
    for answer in &answers[..2] {
        assert_eq!(answer["url"], masked.as_str(), "{answer}");
    }

    // Deliveries go to the full URL, the new one.
    tenant.api.post(&format!("{path}/test"), json!({})).await.ok(202);
    let received = receiver.wait_for(1).await;
    assert_eq!(received[0]["type"], "webhook.test");
    assert_eq!(received[0]["verifiedWith"], json!([0]));

    // The watcher got webhook.created and webhook.updated, with the masked URL only.
    let events = watcher.wait_for(2).await;
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert!(types.contains(&"webhook.created") && types.contains(&"webhook.updated"), "{types:?}");
    answers.extend(events);
    answers.push(tenant.api.get("/v1/audit-log?limit=1000").await.ok(200));
    answers.push(tenant.api.get(&format!("{path}/deliveries")).await.ok(200));
    answers.push(tenant.api.get(&format!("/v1/webhooks/{watching}/deliveries")).await.ok(200));
    let shown = answers.iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
    assert!(shown.contains(&masked), "the masked URL is shown: {shown}");
    let log = server.stop().await;
    for needle in ["SecretPath42", "SecretQuery42", "SecretPath43", "/services/T0"] {
        assert!(!shown.contains(needle), "{needle} is in an answer, audit entry or event: {shown}");
        assert!(!log.contains(needle), "{needle} is in the server log");
    }
}

/// `admin allow-host` lets one organization reach an internal host (127.0.0.1 here, over http)
/// from its webhooks; another organization may not use it, and deliveries to it are sent.
async fn a_host_granted_to_one_organization_is_reachable_by_it_only(server: &TestServer) {
    let (a, b) = (server.tenant().await, server.tenant().await);
    let receiver = Receiver::start(0).await;
    let body = json!({"url": receiver.url, "events": ["*"]});
    a.api.post("/v1/webhooks", body.clone()).await.invalid("url");

    let granted =
        server.admin().run(&["allow-host", "--org", &a.org_id, "--for", "webhooks", "--host", "127.0.0.1"]).await;
    assert_eq!((granted["for"].as_str(), granted["host"].as_str()), (Some("webhooks"), Some("127.0.0.1")), "{granted}");
    let listed = server.admin().run(&["list-allowed-hosts", "--org", &a.org_id]).await;
    assert_eq!(listed["allowedHosts"].as_array().map(Vec::len), Some(1), "{listed}");
    let created = a.api.post("/v1/webhooks", body.clone()).await.ok(201);
    receiver.trust(&[&secret_of(&created)]);
    a.api.post(&format!("/v1/webhooks/{}/test", created["id"].as_str().unwrap()), json!({})).await.ok(202);
    assert_eq!(receiver.wait_for(1).await[0]["verifiedWith"], json!([0]), "sent to the granted host");

    // B may not, for webhooks or automations; nor may A's automations (a grant is for one use).
    b.api.post("/v1/webhooks", body).await.invalid("url");
    let other = server.admin().run(&["list-allowed-hosts", "--org", &b.org_id]).await;
    assert_eq!(other["allowedHosts"], json!([]), "{other}");
    let refused =
        server.admin().try_run(&["allow-host", "--org", &a.org_id, "--for", "everything", "--host", "x"]).await;
    assert!(refused.is_err_and(|error| error.contains("--for")), "an unknown use is refused naming --for");

    let removed =
        server.admin().run(&["disallow-host", "--org", &a.org_id, "--for", "webhooks", "--host", "127.0.0.1"]).await;
    assert_eq!(removed["removed"], true);
    a.api.post("/v1/webhooks", json!({"url": receiver.url, "events": ["*"]})).await.invalid("url");
}

fn owned(env: crate::harness::Env) -> Vec<(String, String)> {
    env.iter().map(|&(name, value)| (name.to_owned(), value.to_owned())).collect()
}

/// A new API key of `tenant`'s owner (to reach another instance with).
async fn api_key(server: &TestServer, tenant: &crate::tenant::Tenant) -> String {
    let key = server.admin().create_api_key(&tenant.org_id, &tenant.owner.id).await;
    key["key"].as_str().unwrap().to_owned()
}

/// Creates a webhook to `receiver` for `events` through `api` and has the receiver trust its
/// secret; the webhook's id.
async fn hook(api: &Client, receiver: &Receiver, events: Value) -> String {
    let created = api.post("/v1/webhooks", json!({"url": receiver.url, "events": events})).await.ok(201);
    receiver.trust(&[&secret_of(&created)]);
    created["id"].as_str().unwrap().to_owned()
}

/// `writers` concurrent writers each create `per_writer` risks and update each once, going round
/// `clients` (so through every instance); the number of changes made.
async fn write_burst(clients: &[Client], writers: usize, per_writer: usize) -> usize {
    let mut tasks = tokio::task::JoinSet::new();
    for writer in 0..writers {
        let clients = clients.to_vec();
        tasks.spawn(async move {
            for n in 0..per_writer {
                let create = &clients[(writer + n) % clients.len()];
                let update = &clients[(writer + n + 1) % clients.len()];
                let body = json!({"title": format!("w{writer}-{n}"), "description": "d", "category": "other"});
                let risk = create.post("/v1/risks", body).await.ok(201);
                let path = format!("/v1/risks/{}", risk["id"].as_str().unwrap());
                update.patch(&path, json!({"title": format!("w{writer}-{n} updated")})).await.ok(200);
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    writers * per_writer * 2
}

/// The organization's risk changes as the audit trail orders them (`seq`): `(action, resourceId)`.
async fn audit_order(api: &Client) -> Vec<(String, String)> {
    let log = api.get("/v1/audit-log?action=risk.&limit=1000").await.ok(200);
    let mut entries = log["data"].as_array().unwrap().clone();
    assert!(log.get("nextCursor").is_none_or(Value::is_null), "more than a page of entries: {}", log["count"]);
    entries.sort_by_key(|entry| entry["seq"].as_i64().unwrap());
    entries
        .iter()
        .map(|entry| (entry["action"].as_str().unwrap().to_owned(), entry["resourceId"].as_str().unwrap().to_owned()))
        .collect()
}

/// What the receiver got as `(type, data.id)`, checking that each was a verified 200.
fn events_of(received: &[Value]) -> Vec<(String, String)> {
    received
        .iter()
        .map(|r| {
            assert_eq!(r["verifiedWith"], json!([0]), "standardwebhooks verifies every delivery: {r}");
            assert_eq!(r["status"], 200, "{r}");
            let body: Value = serde_json::from_str(r["body"].as_str().unwrap()).unwrap();
            assert_eq!(body["type"], r["type"]);
            (body["type"].as_str().unwrap().to_owned(), body["data"]["id"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// The `webhook-id`s of what arrived, checking that none arrived twice.
fn distinct_ids(received: &[Value]) -> HashSet<String> {
    let ids: HashSet<String> = received.iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(ids.len(), received.len(), "a webhook-id arrived twice");
    ids
}

/// The webhook's delivery records once there are `count` and every one succeeded (so none can be
/// sent again).
async fn settled(api: &Client, webhook: &str, count: usize) -> Vec<Value> {
    let path = format!("/v1/webhooks/{webhook}/deliveries?limit=1000");
    let done = poll_every(Duration::from_millis(200), PATIENCE, || async {
        let list = api.get(&path).await.ok(200);
        let data = list["data"].as_array().unwrap().clone();
        (data.len() == count && data.iter().all(|d| d["status"] == "succeeded")).then_some(data)
    });
    match done.await {
        Some(records) => records,
        None => panic!("the deliveries did not all succeed: {}", api.get(&path).await.ok(200)),
    }
}

async fn two_instances_burst(server: &TestServer, sibling: &mut Sibling) {
    let tenant = server.tenant().await;
    let key = api_key(server, &tenant).await;
    let a = server.client(Auth::ApiKey(key.clone()), None);
    let b = sibling.client(Auth::ApiKey(key), None);
    let receivers = [Receiver::start(0).await, Receiver::start(0).await];
    let hooks = [
        hook(&a, &receivers[0], json!(["risk.*"])).await,
        hook(&b, &receivers[1], json!(["risk.created", "risk.updated"])).await,
    ];

    let started = Instant::now();
    let changes = write_burst(&[a.clone(), b.clone()], 10, 50).await;
    assert_eq!(changes, 1000);
    let written = started.elapsed();
    let order = audit_order(&b).await;
    assert_eq!(order.len(), changes, "an audit entry per change");
    for (receiver, hook) in receivers.iter().zip(&hooks) {
        receiver.wait_for_within(changes, BURST_DEADLINE).await;
        let records = settled(&a, hook, changes).await;
        let received = receiver.received().await;
        // Every delivery is recorded as succeeded, so nothing more can come: each event once.
        assert_eq!(received.len(), changes, "each event exactly once per endpoint");
        let ids = distinct_ids(&received);
        let recorded: HashSet<String> = records.iter().map(|d| d["id"].as_str().unwrap().to_owned()).collect();
        assert_eq!(ids, recorded, "the webhook-ids are the delivery records' ids");
        assert!(records.iter().all(|d| d["attempts"] == 1), "nothing was sent twice");
        let events = events_of(&received);
        if let Some(at) = events.iter().zip(&order).position(|(got, entry)| got != entry) {
            panic!("delivery {at} is {:?}, the audit trail's {at}th change is {:?}", events[at], order[at]);
        }
    }
    eprintln!(
        "{changes} changes through two instances written in {written:?}, at both endpoints after {:?}",
        started.elapsed()
    );
    assert!(server.healthy().await && sibling.healthy().await);
}

async fn sigterm_mid_burst_loses_nothing_and_sends_nothing_twice(server: &TestServer) {
    let tenant = server.tenant().await;
    let key = api_key(server, &tenant).await;
    // A slow receiver: deliveries are in flight when the signal comes.
    let receiver = Receiver::with(&["--delay-ms", "20"]).await;
    let webhook = hook(&tenant.api, &receiver, json!(["risk.*"])).await;
    let changes = write_burst(std::slice::from_ref(&tenant.api), 4, 25).await;

    receiver.wait_for_within(10, PATIENCE).await;
    server.terminate();
    let status = server.wait_exit(Duration::from_secs(40)).await;
    assert!(status.success(), "exit status after SIGTERM: {status}; stderr:\n{}", server.stderr());
    let at_stop = receiver.count().await;
    assert!(at_stop < changes, "all {changes} were delivered before the stop: the test stopped nothing in flight");

    // The same deployment started again (same database, same vault key) delivers the rest.
    let restarted = server.start_sibling(&owned(LOOPBACK)).await;
    let api = restarted.client(Auth::ApiKey(key), None);
    receiver.wait_for_within(changes, BURST_DEADLINE).await;
    let records = settled(&api, &webhook, changes).await;
    let received = receiver.received().await;
    // A stop lets the deliveries in flight finish and records them: none is sent again.
    assert_eq!(received.len(), changes, "each event once ({at_stop} arrived before the stop)");
    distinct_ids(&received);
    assert!(records.iter().all(|d| d["attempts"] == 1), "nothing was sent twice");
    assert_eq!(events_of(&received), audit_order(&api).await, "in commit order, across the restart");
}

async fn a_delivery_cut_off_by_a_crash_is_sent_again_under_its_id(server: &TestServer) {
    let tenant = server.tenant().await;
    let key = api_key(server, &tenant).await;
    // The first request is held (recorded on arrival, answered after a minute): the server dies
    // before it knows the outcome.
    let receiver = Receiver::with(&["--delay-ms", "60000", "--delay-first", "1"]).await;
    let webhook = hook(&tenant.api, &receiver, json!(["risk.*"])).await;
    let changes = write_burst(std::slice::from_ref(&tenant.api), 1, 2).await;
    receiver.wait_for_within(1, PATIENCE).await;
    server.signal("KILL");
    server.wait_exit(Duration::from_secs(10)).await;

    let restarted = server.start_sibling(&owned(SHORT_CLAIMS)).await;
    let api = restarted.client(Auth::ApiKey(key), None);
    receiver.wait_for_within(changes + 1, PATIENCE).await;
    let records = settled(&api, &webhook, changes).await;
    let received = receiver.received().await;
    // At least once: the delivery the crash cut off came again once its claim ran out, under the
    // same webhook-id (a receiver deduplicates on it), before any later one; nothing else twice.
    assert_eq!(received.len(), changes + 1, "{received:?}");
    assert_eq!(received[0]["id"], received[1]["id"], "the redelivery keeps its webhook-id");
    assert_eq!(received[0]["body"], received[1]["body"]);
    distinct_ids(&received[1..]);
    assert_eq!(events_of(&received[1..]), audit_order(&api).await, "in commit order");
    let first = records.iter().find(|d| d["id"] == received[0]["id"]).unwrap();
    assert_eq!(first["attempts"], 2, "{first}");
}

async fn a_429_is_retried_after_its_retry_after(server: &TestServer) {
    let tenant = server.tenant().await;
    let receiver = Receiver::with(&["--throttle-first", "1", "--retry-after", "2"]).await;
    let webhook = hook(&tenant.api, &receiver, json!(["risk.*"])).await;
    let queued = tenant.api.post(&format!("/v1/webhooks/{webhook}/test"), json!({})).await.ok(202);
    let risk = tenant.api.post("/v1/risks", json!({"title": "r", "description": "d", "category": "other"})).await;
    let risk = risk.ok(201);

    let received = receiver.wait_for(3).await;
    let statuses: Vec<&Value> = received.iter().map(|r| &r["status"]).collect();
    assert_eq!(statuses, [&json!(429), &json!(200), &json!(200)], "{received:?}");
    assert_eq!((&received[0]["id"], &received[1]["id"]), (&queued["id"], &queued["id"]));
    // The retry waited the 2 s the receiver asked for, not the 0.2 s backoff.
    let waited = received[1]["at"].as_f64().unwrap() - received[0]["at"].as_f64().unwrap();
    assert!(waited >= 2.0, "retried {waited:.3} s after a 429 with Retry-After: 2");
    // The later event waited behind it.
    assert_eq!(events_of(&received[2..]), [("risk.created".to_owned(), risk["id"].as_str().unwrap().to_owned())]);
    let records = settled(&tenant.api, &webhook, 2).await;
    let test = records.iter().find(|d| d["id"] == queued["id"]).unwrap();
    assert_eq!((&test["attempts"], &test["responseStatus"]), (&json!(2), &json!(200)), "{test}");
}

async fn an_endpoint_failing_past_the_window_is_disabled_with_a_reason(server: &TestServer) {
    let tenant = server.tenant().await;
    let receiver = Receiver::start(1_000_000).await;
    let webhook = hook(&tenant.api, &receiver, json!(["risk.*"])).await;
    let path = format!("/v1/webhooks/{webhook}");
    let queued = tenant.api.post(&format!("{path}/test"), json!({})).await.ok(202);

    let disabled = poll_every(Duration::from_millis(100), PATIENCE, || async {
        let read = tenant.api.get(&path).await.ok(200);
        (read["isEnabled"] == false).then_some(read)
    })
    .await;
    let Some(disabled) = disabled else {
        panic!("still enabled after {PATIENCE:?}: {:?}", receiver.received().await);
    };
    let reason = disabled["disabledReason"].as_str().unwrap_or_else(|| panic!("no reason: {disabled}"));
    assert!(reason.contains("failed since"), "{reason}");
    let failures = receiver.received().await;
    assert!(failures.len() >= 2, "retried before it was disabled: {failures:?}");
    assert!(failures.iter().all(|r| r["status"] == 503 && r["id"] == queued["id"]), "{failures:?}");
    // The worker wrote why, as the system, in the same transaction.
    let log = tenant.api.get(&format!("/v1/audit-log?action=webhook.disabled&resourceId={webhook}")).await.ok(200);
    assert_eq!(log["data"].as_array().map(Vec::len), Some(1), "{log}");
    let entry = &log["data"][0];
    assert_eq!(entry["actor"], json!({"type": "system", "id": "webhook-worker"}), "{entry}");
    assert_eq!(entry["resourceType"], "webhook");
    assert_eq!(entry["changes"]["isEnabled"], json!({"from": true, "to": false}), "{entry}");
    assert_eq!(entry["changes"]["disabledReason"], json!({"from": null, "to": reason}), "{entry}");
    let records = tenant.api.get(&format!("{path}/deliveries")).await.ok(200);
    assert_eq!(records["data"][0]["status"], "pending", "the delivery waits for the endpoint: {records}");
    assert_eq!(records["data"][0]["responseStatus"], 503);

    // Enabled again, the endpoint (now answering) gets the waiting delivery.
    receiver.heal().await;
    let enabled = tenant.api.patch(&path, json!({"isEnabled": true})).await.ok(200);
    assert_eq!((&enabled["isEnabled"], &enabled["disabledReason"]), (&json!(true), &Value::Null), "{enabled}");
    let received = receiver.wait_for(failures.len() + 1).await;
    let last = received.last().unwrap();
    assert_eq!((&last["id"], &last["status"]), (&queued["id"], &json!(200)), "{last}");
    settled(&tenant.api, &webhook, 1).await;
    assert_eq!(tenant.api.get(&path).await.ok(200)["isEnabled"], true);
}

async fn no_secret_in_any_answer_record_delivery_or_log(server: &TestServer) {
    let tenant = server.tenant().await;
    let receiver = Receiver::start(0).await;
    let created = tenant.api.post("/v1/webhooks", json!({"url": receiver.url, "events": ["*"]})).await.ok(201);
    let first = secret_of(&created);
    let id = created["id"].as_str().unwrap();
    let path = format!("/v1/webhooks/{id}");
    let rotated = tenant.api.post(&format!("{path}/rotate-secret"), json!({})).await.ok(200);
    let second = secret_of(&rotated);
    receiver.trust(&[&second, &first]);
    let mut answers = vec![rotated.clone()];
    answers.push(tenant.api.patch(&path, json!({"description": "ops"})).await.ok(200));
    answers.push(tenant.api.post(&format!("{path}/test"), json!({})).await.ok(202));
    let risk = tenant.api.post("/v1/risks", json!({"title": "r", "description": "d", "category": "other"})).await;
    let risk_id = risk.ok(201)["id"].as_str().unwrap().to_owned();
    tenant.api.patch(&format!("/v1/risks/{risk_id}"), json!({"title": "r2"})).await.ok(200);
    let arrived = poll_every(Duration::from_millis(100), PATIENCE, || async {
        let received = receiver.received().await;
        received.iter().any(|r| r["type"] == "risk.updated").then_some(received)
    })
    .await
    .unwrap_or_else(|| panic!("no risk.updated arrived"));
    assert!(arrived.iter().all(|r| r["verifiedWith"] == json!([0, 1])), "{arrived:?}");
    answers.extend(arrived);
    answers.push(tenant.api.get(&path).await.ok(200));
    answers.push(tenant.api.get("/v1/webhooks").await.ok(200));
    answers.push(tenant.api.get(&format!("{path}/deliveries")).await.ok(200));
    answers.push(tenant.api.get("/v1/audit-log?limit=1000").await.ok(200));
    let log = server.stop().await;
    assert!(log.contains("DEBUG"), "the server logged at debug: {log}");

    // The rotation answer shows the new secret once, and never the old one.
    assert!(!rotated.to_string().contains(&first), "{rotated}");
    let shown = answers[1..].iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
    for secret in [&first, &second] {
        let encoded = secret.strip_prefix("whsec_").unwrap();
        let hex: String = base64_decode(encoded).iter().map(|b| format!("{b:02x}")).collect();
        for needle in [secret.as_str(), encoded, &hex] {
            assert!(!shown.contains(needle), "{needle} is in an answer, record or delivery");
            assert!(!log.contains(needle), "{needle} is in the server log");
        }
    }
}

/// Standard base64 (with padding) decoded: the raw key bytes of a `whsec_` secret.
fn base64_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::new();
    for c in text.bytes().filter(|&c| c != b'=') {
        let value = ALPHABET.iter().position(|&a| a == c).unwrap_or_else(|| panic!("{c} is not base64"));
        bits = (bits << 6) | u32::try_from(value).unwrap();
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push(u8::try_from((bits >> count) & 0xff).unwrap());
        }
    }
    out
}
