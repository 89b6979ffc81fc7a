//! `/v1/webhooks`: endpoints, secrets, rotation, tests and deliveries. Every delivery is received by
//! a real receiver on loopback (tests/webhook_receiver.py) that verifies its signature with the
//! Standard Webhooks reference library from PyPI, not with our code.

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::harness::{PATIENCE, TestServer, poll_every, random_hex};

/// Loopback receivers, a quick worker and quick retries.
const LOOPBACK: crate::harness::Env =
    &[("WEBHOOK_ALLOWED_HOSTS", "127.0.0.1"), ("WEBHOOK_POLL_MILLIS", "100"), ("WEBHOOK_RETRY_BASE_MILLIS", "200")];

api_tests!(
    a_test_event_arrives_signed_and_is_recorded with LOOPBACK,
    changes_arrive_in_order_after_a_failing_receiver_recovers with LOOPBACK,
    a_rotated_secret_signs_beside_the_new_one with LOOPBACK,
    bad_webhooks_are_400_naming_the_field with LOOPBACK,
    crud_and_another_organization_sees_nothing with LOOPBACK,
);

/// tests/webhook_receiver.py, running; killed on drop.
struct Receiver {
    url: String,
    secrets: PathBuf,
    http: reqwest::Client,
    _child: Child,
}

impl Receiver {
    async fn start(fail_first: u32) -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/webhook_receiver.py");
        let secrets = std::env::temp_dir().join(format!("webhook-secrets-{}", random_hex(8)));
        let mut child = Command::new("python3")
            .arg(script)
            .arg(&secrets)
            .args(["--fail-first", &fail_first.to_string()])
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs tests/webhook_receiver.py (python3 -m pip install standardwebhooks==1.1.0)");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        tokio::time::timeout(PATIENCE, BufReader::new(stdout).read_line(&mut line))
            .await
            .expect("the receiver prints its port")
            .unwrap();
        let port: u16 = line.trim().parse().unwrap_or_else(|_| panic!("the receiver printed {line:?}, not its port"));
        Self { url: format!("http://127.0.0.1:{port}/hook"), secrets, http: reqwest::Client::new(), _child: child }
    }

    fn trust(&self, secrets: &[&str]) {
        std::fs::write(&self.secrets, secrets.join("\n")).unwrap();
    }

    async fn received(&self) -> Vec<Value> {
        let answer = self.http.get(&self.url).send().await.unwrap();
        answer.json::<Vec<Value>>().await.unwrap()
    }

    /// What arrived, once at least `count` requests did.
    async fn wait_for(&self, count: usize) -> Vec<Value> {
        let got = poll_every(Duration::from_millis(100), PATIENCE, || async {
            let received = self.received().await;
            (received.len() >= count).then_some(received)
        })
        .await;
        match got {
            Some(received) => received,
            None => panic!("the receiver got fewer than {count} deliveries: {:?}", self.received().await),
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
    tenant.api.post("/v1/vendors", json!({"name": "v"})).await;

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
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.received().await.len(), 7, "nothing more (the vendor is no risk.* event)");

    let list = tenant.api.get(&format!("/v1/webhooks/{}/deliveries", created["id"].as_str().unwrap())).await.ok(200);
    let first = list["data"].as_array().unwrap().iter().find(|d| d["id"] == received[0]["id"]).unwrap();
    assert_eq!(first["attempts"], 3, "{first}");
    assert_eq!(first["status"], "succeeded");
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
