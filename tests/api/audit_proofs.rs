//! The audit log as an auditor checks it: signed tree heads, inclusion and consistency proofs
//! (RFC 9162), checked by an independent implementation (`pymerkle`, and `cryptography`'s
//! Ed25519, in tests/audit_proofs.py); a reordered entry caught by `verify`; bad proof requests;
//! pruning under a signed checkpoint that still verifies, and a forged checkpoint refused.

use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::client::Client;
use crate::harness::{PATIENCE, TestServer, poll_until};

api_tests!(
    heads_and_proofs_verify_with_an_independent_implementation,
    a_reordered_entry_is_detected,
    bad_proof_requests_are_answered_with_what_is_wrong,
    another_organizations_log_is_neither_proved_nor_shown,
    pruning_keeps_a_signed_checkpoint_the_rest_verifies_from with PRUNING,
);

/// Entries older than a day are pruned, every 200 ms.
const PRUNING: &[(&str, &str)] = &[
    ("AUDIT_RETENTION_DAYS", "1"),
    ("AUDIT_PRUNE_MILLIS", "200"),
    ("AUDIT_SIGNING_KEY", "an-audit-signing-key-of-at-least-32-bytes"),
];

async fn create_risk(client: &Client, title: &str) -> Value {
    let body = json!({"title": title, "description": "Unencrypted disks.", "category": "technology"});
    client.post("/v1/risks", body).await.ok(201)
}

/// Every entry of the log, oldest first (the log's reads wait until what was written is sealed).
async fn sealed_log(client: &Client) -> Vec<Value> {
    let body = client.get("/v1/audit-log?limit=200").await.ok(200);
    let mut log = body["data"].as_array().unwrap().clone();
    assert!(log.iter().all(|entry| entry["seq"].is_i64()), "all sealed: {log:?}");
    log.sort_by_key(|entry| entry["seq"].as_i64().unwrap());
    log
}

/// Runs tests/audit_proofs.py on `input`; its "ok N" line.
async fn independently_checked(input: &Value) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/audit_proofs.py");
    let mut child = Command::new("python3")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs tests/audit_proofs.py (`cargo xtask tools` installs pymerkle in target/tools/venv; put its bin first on PATH)");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.to_string().as_bytes()).await.unwrap();
    drop(stdin);
    let output = child.wait_with_output().await.unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "tests/audit_proofs.py refused: {stderr}");
    stdout.trim().to_owned()
}

async fn heads_and_proofs_verify_with_an_independent_implementation(server: &TestServer) {
    let tenant = server.tenant().await;
    for n in 0..5 {
        create_risk(&tenant.api, &format!("Risk {n}")).await;
    }
    let early = tenant.api.get("/v1/audit-log/tree-head").await.ok(200);
    for n in 5..17 {
        create_risk(&tenant.api, &format!("Risk {n}")).await;
    }
    let log = sealed_log(&tenant.api).await;
    let head = tenant.api.get("/v1/audit-log/tree-head").await.ok(200);
    let (early_size, size) = (early["treeSize"].as_u64().unwrap(), head["treeSize"].as_u64().unwrap());
    assert_eq!(size, log.len() as u64, "the head holds every entry: {head}");
    assert!(early_size < size);
    assert_eq!(head["publicKey"], early["publicKey"]);
    assert!(head["note"].as_str().unwrap().starts_with(head["checkpoint"].as_str().unwrap()));

    let mut inclusion = Vec::new();
    for entry in &log {
        let seq = entry["seq"].as_u64().unwrap();
        inclusion.push(tenant.api.get(&format!("/v1/audit-log/{seq}/proof")).await.ok(200));
        if seq <= early_size {
            inclusion.push(tenant.api.get(&format!("/v1/audit-log/{seq}/proof?treeSize={early_size}")).await.ok(200));
        }
    }
    assert!(
        inclusion.iter().all(|proof| proof["leafHash"] == log[proof["leafIndex"].as_u64().unwrap() as usize]["hash"])
    );
    let mut consistency = Vec::new();
    for from in 1..=size {
        let proof = tenant.api.get(&format!("/v1/audit-log/consistency?from={from}&to={size}")).await.ok(200);
        consistency.push(proof);
    }
    consistency.push(tenant.api.get(&format!("/v1/audit-log/consistency?from={early_size}")).await.ok(200));
    let heads = [&early, &head].map(|h| {
        json!({"treeSize": h["treeSize"], "rootHash": h["rootHash"], "publicKey": h["publicKey"],
               "signature": h["signature"], "checkpoint": h["checkpoint"]})
    });
    let input = json!({
        "leaves": log.iter().map(|entry| entry["hash"].clone()).collect::<Vec<_>>(),
        "heads": heads,
        "inclusion": inclusion,
        "consistency": consistency.iter().filter(|p| p["from"] != p["to"]).collect::<Vec<_>>(),
    });
    let checked = independently_checked(&input).await;
    let expected = 2 + inclusion.len() + consistency.iter().filter(|p| p["from"] != p["to"]).count();
    assert_eq!(checked, format!("ok {expected}"));
}

async fn a_reordered_entry_is_detected(server: &TestServer) {
    let tenant = server.tenant().await;
    create_risk(&tenant.api, "First").await;
    create_risk(&tenant.api, "Second").await;
    let log = sealed_log(&tenant.api).await;
    let (a, b) = (&log[log.len() - 2], &log[log.len() - 1]);
    // swap the two newest entries' places (and leaf hashes): each now sits where the other was
    let swap = |one: &Value, other: &Value| {
        format!(
            "UPDATE audit_entries SET seq = -{}, hash = '{}' WHERE id = '{}'",
            other["seq"],
            other["hash"].as_str().unwrap(),
            one["id"].as_str().unwrap()
        )
    };
    server.execute_sql(&swap(a, b)).await;
    server.execute_sql(&swap(b, a)).await;
    server.execute_sql("UPDATE audit_entries SET seq = -seq WHERE seq < 0").await;
    let verified = tenant.api.get("/v1/audit-log/verify").await.ok(200);
    assert_eq!(verified["valid"], false, "{verified}");
    assert_eq!(verified["firstInvalidId"], b["id"], "the entry now at the first swapped place: {verified}");
}

async fn bad_proof_requests_are_answered_with_what_is_wrong(server: &TestServer) {
    let tenant = server.tenant().await;
    create_risk(&tenant.api, "Only").await;
    let size = tenant.api.get("/v1/audit-log/tree-head").await.ok(200)["treeSize"].as_u64().unwrap();
    for (path, status, named) in [
        (format!("/v1/audit-log/{}/proof", size + 1), 404, "audit entry"),
        ("/v1/audit-log/0/proof".to_owned(), 404, "audit entry"),
        ("/v1/audit-log/x/proof".to_owned(), 404, "audit entry"),
        (format!("/v1/audit-log/1/proof?treeSize={}", size + 1), 404, "audit tree of that size"),
        ("/v1/audit-log/2/proof?treeSize=1".to_owned(), 404, "proof of the entry"),
        ("/v1/audit-log/1/proof?treeSize=none".to_owned(), 400, "treeSize"),
        ("/v1/audit-log/1/proof?size=1".to_owned(), 400, "size"),
        ("/v1/audit-log/consistency".to_owned(), 400, "from"),
        ("/v1/audit-log/consistency?from=0".to_owned(), 400, "from"),
        (format!("/v1/audit-log/consistency?from={size}&to=1"), 400, "from"),
        (format!("/v1/audit-log/consistency?from={}", size + 1), 404, "audit tree of that size"),
        (format!("/v1/audit-log/consistency?from=1&to={}", size + 1), 404, "audit tree of that size"),
    ] {
        let answer = tenant.api.get(&path).await;
        assert_eq!(answer.status, status, "{path}: {}", answer.body);
        assert!(answer.body.to_string().contains(named), "{path}: {}", answer.body);
    }
    let same = tenant.api.get(&format!("/v1/audit-log/consistency?from={size}&to={size}")).await.ok(200);
    assert_eq!(same["proof"], json!([]));
}

async fn another_organizations_log_is_neither_proved_nor_shown(server: &TestServer) {
    let ours = server.tenant().await;
    let theirs = server.tenant().await;
    for n in 0..6 {
        create_risk(&ours.api, &format!("Ours {n}")).await;
    }
    let our_head = ours.api.get("/v1/audit-log/tree-head").await.ok(200);
    let their_head = theirs.api.get("/v1/audit-log/tree-head").await.ok(200);
    assert_ne!(our_head["rootHash"], their_head["rootHash"]);
    assert!(their_head["checkpoint"].as_str().unwrap().contains(theirs.org_id.as_str()));
    let our_size = our_head["treeSize"].as_u64().unwrap();
    let their_size = their_head["treeSize"].as_u64().unwrap();
    assert!(our_size > their_size);
    // their seq numbers are their own: a seq only our log reaches is no entry of theirs
    let answer = theirs.api.get(&format!("/v1/audit-log/{our_size}/proof")).await;
    assert_eq!(answer.status, 404, "{}", answer.body);
    let answer = theirs.api.get(&format!("/v1/audit-log/consistency?from=1&to={our_size}")).await;
    assert_eq!(answer.status, 404, "{}", answer.body);
    // the same seq in each log is each organization's own entry
    let mine = ours.api.get("/v1/audit-log/1/proof").await.ok(200);
    let yours = theirs.api.get("/v1/audit-log/1/proof").await.ok(200);
    assert_ne!(mine["leafHash"], yours["leafHash"]);
    // reading the log needs the audit family: a key without it is refused
    let key = ours.api.post("/v1/api-keys", json!({"name": "risks only", "scopes": ["risks:read"]})).await.ok(201);
    let scoped = server.client(crate::client::Auth::ApiKey(key["key"].as_str().unwrap().to_owned()), None);
    for path in ["/v1/audit-log/tree-head", "/v1/audit-log/1/proof", "/v1/audit-log/consistency?from=1"] {
        assert_eq!(scoped.get(path).await.status, 403, "{path}");
    }
}

async fn pruning_keeps_a_signed_checkpoint_the_rest_verifies_from(server: &TestServer) {
    let tenant = server.tenant().await;
    for n in 0..5 {
        create_risk(&tenant.api, &format!("Risk {n}")).await;
    }
    let before = sealed_log(&tenant.api).await;
    let org = tenant.org_id.as_str();
    // the first six entries are from long ago: past the retention of one day
    server
        .execute_sql(&format!(
            "UPDATE audit_entries SET created_at = '2020-01-01 00:00:00' WHERE organization_id = '{org}' AND seq <= 6"
        ))
        .await;
    let pruned = poll_until(PATIENCE, || async {
        let body = tenant.api.get("/v1/audit-log").await.ok(200);
        (body["count"] == before.len() - 6).then_some(body)
    })
    .await;
    assert!(pruned.is_some(), "the six old entries were pruned");
    let verified = tenant.api.get("/v1/audit-log/verify").await.ok(200);
    assert_eq!(verified, json!({"valid": true, "checked": before.len() - 6, "firstInvalidId": null}));
    assert_eq!(tenant.api.get("/v1/audit-log/3/proof").await.status, 404, "a pruned entry has no proof");
    // the tree's nodes outlive the entries: a kept entry is proved, and the log only grew
    let proof = tenant.api.get("/v1/audit-log/7/proof").await.ok(200);
    assert_eq!(proof["leafHash"], before[6]["hash"]);
    let grown = tenant.api.get("/v1/audit-log/consistency?from=1").await.ok(200);
    assert!(!grown["proof"].as_array().unwrap().is_empty());

    // a checkpoint edited in the database no longer verifies
    let flip_first_digit = "CASE WHEN substr(frontier, 1, 1) = 'a' THEN 'b' ELSE 'a' END || substr(frontier, 2)";
    server
        .execute_sql(&format!(
            "UPDATE audit_checkpoints SET frontier = {flip_first_digit} WHERE organization_id = '{org}'"
        ))
        .await;
    let verified = tenant.api.get("/v1/audit-log/verify").await.ok(200);
    assert_eq!(verified, json!({"valid": false, "checked": 0, "firstInvalidId": null}));
}
