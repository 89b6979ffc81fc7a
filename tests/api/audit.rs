//! The audit trail over HTTP: each change writes one entry with its actor, changes and request id;
//! the log's filters and a record's history; the hash chain's verification catching an entry
//! edited or deleted in the database; writers at once (and two instances) keeping it linear; and
//! one organization never seeing another's entries.

use serde_json::{Value, json};

use crate::client::Client;
use crate::harness::TestServer;

api_tests!(
    each_change_of_a_risk_writes_one_entry_with_actor_changes_and_request_id,
    the_log_filters_by_type_id_actor_action_prefix_and_time,
    bad_filters_are_400_naming_the_parameter,
    an_entry_edited_or_deleted_in_the_database_is_detected,
    concurrent_writers_keep_the_chain_linear_and_gap_free,
    another_organization_sees_none_of_the_entries,
    policies_vendors_tasks_and_context_write_entries,
);

async fn entries(client: &Client, query: &str) -> Vec<Value> {
    let body = client.get(&format!("/v1/audit-log{query}")).await.ok(200);
    body["data"].as_array().unwrap().clone()
}

async fn create_risk(client: &Client, title: &str) -> Value {
    let body = json!({"title": title, "description": "Unencrypted disks.", "category": "technology"});
    client.post("/v1/risks", body).await.ok(201)
}

async fn each_change_of_a_risk_writes_one_entry_with_actor_changes_and_request_id(server: &TestServer) {
    let tenant = server.tenant().await;
    let risk = create_risk(&tenant.api, "Laptop theft").await;
    let id = risk["id"].as_str().unwrap();
    tenant.session.patch(&format!("/v1/risks/{id}"), json!({"title": "Stolen laptop", "status": "closed"})).await.ok(200);
    tenant.api.delete(&format!("/v1/risks/{id}")).await.ok(200);

    let history = tenant.api.get(&format!("/v1/risks/{id}/history")).await.ok(200);
    let log = history["data"].as_array().unwrap();
    let actions: Vec<&str> = log.iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["risk.deleted", "risk.updated", "risk.created"], "newest first: {history}");
    let seqs: Vec<i64> = log.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, [3, 2, 1]);

    let (deleted, updated, created) = (&log[0], &log[1], &log[2]);
    assert!(created["id"].as_str().unwrap().starts_with("aud_"), "{created}");
    assert_eq!(created["organizationId"], tenant.org_id.as_str());
    assert_eq!(created["resourceType"], "risk");
    assert_eq!(created["resourceId"], id);
    assert_eq!(created["actor"]["type"], "apiKey");
    assert_eq!(created["actor"]["id"], tenant.owner.id.as_str());
    assert_eq!(created["actor"]["apiKeyId"], tenant.api_key_id.as_str());
    assert_eq!(created["changes"]["title"], json!({"from": null, "to": "Laptop theft"}));
    // rich text is summarised by its length, never copied
    assert_eq!(created["changes"]["description"], json!({"from": null, "to": {"length": 18}}));
    assert!(created["requestId"].as_str().is_some_and(|r| !r.is_empty()), "{created}");
    assert_eq!(created["hash"].as_str().unwrap().len(), 64);

    assert_eq!(updated["actor"]["type"], "user");
    assert_eq!(updated["actor"]["email"], tenant.owner.email.as_str());
    assert!(updated["actor"].get("apiKeyId").is_none(), "{updated}");
    assert_eq!(
        updated["changes"],
        json!({"title": {"from": "Laptop theft", "to": "Stolen laptop"}, "status": {"from": "open", "to": "closed"}}),
        "only what changed, not updatedAt"
    );
    assert_eq!(deleted["changes"]["title"], json!({"from": "Stolen laptop", "to": null}));

    let verified = tenant.api.get("/v1/audit-log/verify").await.ok(200);
    assert_eq!(verified, json!({"valid": true, "checked": 3, "firstInvalidId": null}));
}

async fn the_log_filters_by_type_id_actor_action_prefix_and_time(server: &TestServer) {
    let tenant = server.tenant().await;
    let first = create_risk(&tenant.api, "One").await;
    let second = create_risk(&tenant.api, "Two").await;
    let id = first["id"].as_str().unwrap();
    tenant.api.patch(&format!("/v1/risks/{id}"), json!({"title": "Uno"})).await.ok(200);
    tenant.api.post("/v1/vendors", json!({"name": "Acme", "description": "Parts.", "category": "other"})).await.ok(201);

    assert_eq!(entries(&tenant.api, "").await.len(), 4);
    assert_eq!(entries(&tenant.api, "?resourceType=risk").await.len(), 3);
    assert_eq!(entries(&tenant.api, &format!("?resourceId={id}")).await.len(), 2);
    let second_id = second["id"].as_str().unwrap();
    assert_eq!(entries(&tenant.api, &format!("?resourceType=risk&resourceId={second_id}")).await.len(), 1);
    assert_eq!(entries(&tenant.api, "?action=risk.").await.len(), 3);
    assert_eq!(entries(&tenant.api, "?action=risk.updated").await.len(), 1);
    assert_eq!(entries(&tenant.api, "?action=vendor.").await.len(), 1);
    assert_eq!(entries(&tenant.api, "?action=risk%25").await.len(), 0, "% is no wildcard");
    assert_eq!(entries(&tenant.api, &format!("?actorId={}", tenant.owner.id)).await.len(), 4);
    assert_eq!(entries(&tenant.api, "?actorId=usr_nobody").await.len(), 0);
    assert_eq!(entries(&tenant.api, "?createdAfter=2999-01-01T00:00:00Z").await.len(), 0);
    assert_eq!(entries(&tenant.api, "?createdBefore=2000-01-01T00:00:00Z").await.len(), 0);
    assert_eq!(entries(&tenant.api, "?createdAfter=2000-01-01T00:00:00Z").await.len(), 4);

    // pages of two, newest first, with the total
    let page = tenant.api.get("/v1/audit-log?limit=2").await.ok(200);
    assert_eq!(page["count"], 4);
    assert_eq!(page["data"].as_array().unwrap().len(), 2);
    assert_eq!(page["data"][0]["action"], "vendor.created");
    let cursor = page["nextCursor"].as_str().unwrap();
    let next = tenant.api.get(&format!("/v1/audit-log?limit=2&cursor={cursor}")).await.ok(200);
    let seqs: Vec<i64> = next["data"].as_array().unwrap().iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, [2, 1]);
}

async fn bad_filters_are_400_naming_the_parameter(server: &TestServer) {
    let tenant = server.tenant().await;
    for (query, name) in [
        ("createdAfter=yesterday", "createdAfter"),
        ("createdBefore=2026-13-01T00:00:00Z", "createdBefore"),
        ("resourceType=", "resourceType"),
        ("limit=0", "limit"),
        ("cursor=nonsense", "cursor"),
    ] {
        let answer = tenant.api.get(&format!("/v1/audit-log?{query}")).await;
        assert_eq!(answer.status, 400, "{query}: {}", answer.body);
        assert!(answer.body.to_string().contains(name), "{query}: {}", answer.body);
    }
    let answer = tenant.api.get("/v1/risks/not-a-risk/history").await;
    assert_eq!(answer.status, 404, "{}", answer.body);
}

async fn an_entry_edited_or_deleted_in_the_database_is_detected(server: &TestServer) {
    let tenant = server.tenant().await;
    for title in ["A", "B", "C"] {
        create_risk(&tenant.api, title).await;
    }
    assert_eq!(tenant.api.get("/v1/audit-log/verify").await.ok(200)["valid"], true);
    let log = entries(&tenant.api, "").await;
    let second = log.iter().find(|e| e["seq"] == 2).unwrap();
    let second_id = second["id"].as_str().unwrap();

    // someone rewrites history: B was never created, it was "Z"
    let forged = r#"{"title":{"from":null,"to":"Z"}}"#;
    server.execute_sql(&format!("UPDATE audit_entries SET changes = '{forged}' WHERE id = '{second_id}'")).await;
    let verified = tenant.api.get("/v1/audit-log/verify").await.ok(200);
    assert_eq!(verified, json!({"valid": false, "checked": 2, "firstInvalidId": second_id}));

    // put back, then delete the entry instead: the next one no longer follows
    let original = second["changes"].to_string();
    server.execute_sql(&format!("UPDATE audit_entries SET changes = '{original}' WHERE id = '{second_id}'")).await;
    assert_eq!(tenant.api.get("/v1/audit-log/verify").await.ok(200)["valid"], true, "restored");
    server.execute_sql(&format!("DELETE FROM audit_entries WHERE id = '{second_id}'")).await;
    let third_id = log.iter().find(|e| e["seq"] == 3).unwrap()["id"].clone();
    let verified = tenant.api.get("/v1/audit-log/verify").await.ok(200);
    assert_eq!(verified["valid"], false);
    assert_eq!(verified["firstInvalidId"], third_id);

    // deleting the newest entry leaves the chain head ahead of the log
    let other = server.tenant().await;
    create_risk(&other.api, "X").await;
    create_risk(&other.api, "Y").await;
    let newest = entries(&other.api, "").await[0]["id"].as_str().unwrap().to_owned();
    server.execute_sql(&format!("DELETE FROM audit_entries WHERE id = '{newest}'")).await;
    let verified = other.api.get("/v1/audit-log/verify").await.ok(200);
    assert_eq!(verified, json!({"valid": false, "checked": 1, "firstInvalidId": null}));
}

async fn concurrent_writers_keep_the_chain_linear_and_gap_free(server: &TestServer) {
    let tenant = server.tenant().await;
    let mut writes = tokio::task::JoinSet::new();
    for i in 0..24 {
        let api = tenant.api.clone();
        writes.spawn(async move { create_risk(&api, &format!("Risk {i}")).await });
    }
    while let Some(written) = writes.join_next().await {
        written.unwrap();
    }
    let log = entries(&tenant.api, "").await;
    let mut seqs: Vec<i64> = log.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=24).collect::<Vec<_>>());
    let verified = tenant.api.get("/v1/audit-log/verify").await.ok(200);
    assert_eq!(verified, json!({"valid": true, "checked": 24, "firstInvalidId": null}));
}

async fn another_organization_sees_none_of_the_entries(server: &TestServer) {
    let ours = server.tenant().await;
    let theirs = server.tenant().await;
    let risk = create_risk(&ours.api, "Ours").await;
    let id = risk["id"].as_str().unwrap();
    assert_eq!(entries(&theirs.api, "").await.len(), 0);
    assert_eq!(entries(&theirs.api, &format!("?resourceId={id}")).await.len(), 0);
    let history = theirs.api.get(&format!("/v1/risks/{id}/history")).await.ok(200);
    assert_eq!(history["data"], json!([]));
    assert_eq!(theirs.api.get("/v1/audit-log/verify").await.ok(200)["checked"], 0);
}

async fn policies_vendors_tasks_and_context_write_entries(server: &TestServer) {
    let tenant = server.tenant().await;
    let vendor =
        tenant.api.post("/v1/vendors", json!({"name": "Acme", "description": "Parts.", "category": "other"})).await.ok(201);
    let task = tenant.api.post("/v1/tasks", json!({"title": "Review", "description": "Yearly."})).await.ok(201);
    let entry = tenant.api.post("/v1/context", json!({"question": "Who?", "answer": "Us."})).await.ok(201);
    let policy = tenant.api.post("/v1/policies", json!({"name": "Access", "description": "Who gets in."})).await;
    let mut expected = vec!["contextEntry.created", "task.created", "vendor.created"];
    if policy.status == 201 {
        expected.insert(0, "policy.created");
    }
    tenant.api.delete(&format!("/v1/tasks/{}", task["id"].as_str().unwrap())).await.ok(200);
    expected.insert(0, "task.deleted");
    let log = entries(&tenant.api, "").await;
    let actions: Vec<&str> = log.iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions, expected);
    let vendor_log = tenant.api.get(&format!("/v1/vendors/{}/history", vendor["id"].as_str().unwrap())).await.ok(200);
    assert_eq!(vendor_log["data"][0]["resourceType"], "vendor");
    assert_eq!(log.iter().find(|e| e["resourceType"] == "contextEntry").unwrap()["resourceId"], entry["id"]);
    assert_eq!(tenant.api.get("/v1/audit-log/verify").await.ok(200)["valid"], true);
}
