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
    the_operators_setup_is_written_as_the_system,
    people_changes_write_member_entries_with_a_history,
    api_keys_sessions_invitations_organization_and_comments_write_entries_without_secrets,
    automations_and_their_secrets_write_entries_without_the_value,
    webhooks_write_entries_without_the_secret,
);

/// The entries `server.tenant()` leaves, all by the operator (`admin` CLI): `organization.created`,
/// `member.created` (the owner), `apiKey.created` and `session.created`.
const SETUP: i64 = 4;

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
    tenant
        .session
        .patch(&format!("/v1/risks/{id}"), json!({"title": "Stolen laptop", "status": "closed"}))
        .await
        .ok(200);
    tenant.api.delete(&format!("/v1/risks/{id}")).await.ok(200);

    let history = tenant.api.get(&format!("/v1/risks/{id}/history")).await.ok(200);
    let log = history["data"].as_array().unwrap();
    let actions: Vec<&str> = log.iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["risk.deleted", "risk.updated", "risk.created"], "newest first: {history}");
    let seqs: Vec<i64> = log.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, [SETUP + 3, SETUP + 2, SETUP + 1]);

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
    assert_eq!(verified, json!({"valid": true, "checked": SETUP + 3, "firstInvalidId": null}));
}

async fn the_log_filters_by_type_id_actor_action_prefix_and_time(server: &TestServer) {
    let tenant = server.tenant().await;
    let first = create_risk(&tenant.api, "One").await;
    let second = create_risk(&tenant.api, "Two").await;
    let id = first["id"].as_str().unwrap();
    tenant.api.patch(&format!("/v1/risks/{id}"), json!({"title": "Uno"})).await.ok(200);
    tenant.api.post("/v1/vendors", json!({"name": "Acme", "description": "Parts.", "category": "other"})).await.ok(201);

    assert_eq!(entries(&tenant.api, "").await.len() as i64, SETUP + 4);
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
    assert_eq!(entries(&tenant.api, "?createdAfter=2000-01-01T00:00:00Z").await.len() as i64, SETUP + 4);
    assert_eq!(entries(&tenant.api, "?actorId=admin").await.len() as i64, SETUP, "the operator's setup");

    // pages of two, newest first, with the total
    let page = tenant.api.get("/v1/audit-log?limit=2").await.ok(200);
    assert_eq!(page["count"], SETUP + 4);
    assert_eq!(page["data"].as_array().unwrap().len(), 2);
    assert_eq!(page["data"][0]["action"], "vendor.created");
    let cursor = page["nextCursor"].as_str().unwrap();
    let next = tenant.api.get(&format!("/v1/audit-log?limit=2&cursor={cursor}")).await.ok(200);
    let seqs: Vec<i64> = next["data"].as_array().unwrap().iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, [SETUP + 2, SETUP + 1]);
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
    let second = log.iter().find(|e| e["seq"] == SETUP + 2).unwrap();
    let second_id = second["id"].as_str().unwrap();

    // someone rewrites history: B was never created, it was "Z"
    let forged = r#"{"title":{"from":null,"to":"Z"}}"#;
    server.execute_sql(&format!("UPDATE audit_entries SET changes = '{forged}' WHERE id = '{second_id}'")).await;
    let verified = tenant.api.get("/v1/audit-log/verify").await.ok(200);
    assert_eq!(verified, json!({"valid": false, "checked": SETUP + 2, "firstInvalidId": second_id}));

    // put back, then delete the entry instead: the next one no longer follows
    let original = second["changes"].to_string();
    server.execute_sql(&format!("UPDATE audit_entries SET changes = '{original}' WHERE id = '{second_id}'")).await;
    assert_eq!(tenant.api.get("/v1/audit-log/verify").await.ok(200)["valid"], true, "restored");
    server.execute_sql(&format!("DELETE FROM audit_entries WHERE id = '{second_id}'")).await;
    let third_id = log.iter().find(|e| e["seq"] == SETUP + 3).unwrap()["id"].clone();
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
    assert_eq!(verified, json!({"valid": false, "checked": SETUP + 1, "firstInvalidId": null}));
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
    assert_eq!(seqs, (1..=SETUP + 24).collect::<Vec<_>>());
    let verified = tenant.api.get("/v1/audit-log/verify").await.ok(200);
    assert_eq!(verified, json!({"valid": true, "checked": SETUP + 24, "firstInvalidId": null}));
}

async fn another_organization_sees_none_of_the_entries(server: &TestServer) {
    let ours = server.tenant().await;
    let theirs = server.tenant().await;
    let risk = create_risk(&ours.api, "Ours").await;
    let id = risk["id"].as_str().unwrap();
    let their_log = entries(&theirs.api, "").await;
    assert_eq!(their_log.len() as i64, SETUP, "only their own setup: {their_log:?}");
    assert!(their_log.iter().all(|e| e["organizationId"] == theirs.org_id.as_str()));
    assert_eq!(entries(&theirs.api, &format!("?resourceId={id}")).await.len(), 0);
    let history = theirs.api.get(&format!("/v1/risks/{id}/history")).await.ok(200);
    assert_eq!(history["data"], json!([]));
    assert_eq!(theirs.api.get("/v1/audit-log/verify").await.ok(200)["checked"], SETUP);
}

async fn policies_vendors_tasks_and_context_write_entries(server: &TestServer) {
    let tenant = server.tenant().await;
    let vendor = tenant
        .api
        .post("/v1/vendors", json!({"name": "Acme", "description": "Parts.", "category": "other"}))
        .await
        .ok(201);
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
    assert_eq!(actions[..expected.len()], expected);
    assert_eq!(actions.len(), expected.len() + SETUP as usize);
    let vendor_log = tenant.api.get(&format!("/v1/vendors/{}/history", vendor["id"].as_str().unwrap())).await.ok(200);
    assert_eq!(vendor_log["data"][0]["resourceType"], "vendor");
    assert_eq!(log.iter().find(|e| e["resourceType"] == "contextEntry").unwrap()["resourceId"], entry["id"]);
    assert_eq!(tenant.api.get("/v1/audit-log/verify").await.ok(200)["valid"], true);
}

fn actions(log: &[Value]) -> Vec<&str> {
    log.iter().map(|e| e["action"].as_str().unwrap()).collect()
}

/// The newest entry of `action`.
async fn newest(client: &Client, action: &str) -> Value {
    let found = entries(client, &format!("?action={action}&limit=1")).await;
    found.first().cloned().unwrap_or_else(|| panic!("no {action} entry"))
}

async fn the_operators_setup_is_written_as_the_system(server: &TestServer) {
    let tenant = server.tenant().await;
    let mut log = entries(&tenant.api, "").await;
    log.reverse();
    assert_eq!(actions(&log), ["organization.created", "member.created", "apiKey.created", "session.created"]);
    for entry in &log {
        assert_eq!(entry["actor"], json!({"type": "system", "id": "admin"}), "{entry}");
        assert_eq!(entry["organizationId"], tenant.org_id.as_str());
    }
    assert_eq!(log[0]["resourceType"], "organization");
    assert_eq!(log[0]["resourceId"], tenant.org_id.as_str());
    assert_eq!(log[1]["resourceType"], "member");
    assert_eq!(log[1]["resourceId"], tenant.owner_member_id.as_str());
    assert_eq!(log[1]["changes"]["role"], json!({"from": null, "to": "owner"}));
    assert_eq!(log[2]["resourceType"], "apiKey");
    assert_eq!(log[2]["resourceId"], tenant.api_key_id.as_str());
    assert_eq!(log[3]["resourceType"], "session");
    let text = serde_json::to_string(&log).unwrap();
    assert!(!text.contains("keyHash") && !text.contains("tokenHash"), "{text}");
}

async fn people_changes_write_member_entries_with_a_history(server: &TestServer) {
    let tenant = server.tenant().await;
    let (user, person) = server.member(&tenant, "employee").await;
    let id = person["id"].as_str().unwrap();
    let path = format!("/v1/people/{id}");
    tenant.session.patch(&path, json!({"role": "auditor"})).await.ok(200);
    tenant.api.patch(&path, json!({"department": "it"})).await.ok(200);
    tenant.deactivate(id).await;
    tenant.session.patch(&path, json!({"isActive": true})).await.ok(200);

    let history = entries(&tenant.api, &format!("?resourceType=member&resourceId={id}")).await;
    assert_eq!(
        actions(&history),
        ["member.reactivated", "member.deactivated", "member.updated", "member.role_changed", "member.created"]
    );
    let (reactivated, deactivated, updated, role_changed, created) =
        (&history[0], &history[1], &history[2], &history[3], &history[4]);
    // People join through the operator (here) or by accepting an invitation.
    assert_eq!(created["actor"], json!({"type": "system", "id": "admin"}));
    assert_eq!(created["changes"]["userId"], json!({"from": null, "to": user.id}));
    assert_eq!(role_changed["changes"], json!({"role": {"from": "employee", "to": "auditor"}}));
    assert_eq!(updated["actor"]["type"], "apiKey");
    assert_eq!(updated["actor"]["apiKeyId"], tenant.api_key_id.as_str());
    assert_eq!(updated["changes"]["department"]["to"], "it");
    assert_eq!(deactivated["changes"], json!({"isActive": {"from": true, "to": false}}));
    assert_eq!(reactivated["changes"], json!({"isActive": {"from": false, "to": true}}));
    for entry in &history {
        assert_eq!(entry["resourceType"], "member");
        assert_eq!(entry["resourceId"], id);
    }
    // a refused change writes nothing
    let before = entries(&tenant.api, "").await.len();
    tenant.session.patch(&path, json!({"department": "moon"})).await.invalid("department");
    assert_eq!(entries(&tenant.api, "").await.len(), before);
    assert_eq!(tenant.api.get("/v1/audit-log/verify").await.ok(200)["valid"], true);
}

async fn api_keys_sessions_invitations_organization_and_comments_write_entries_without_secrets(server: &TestServer) {
    let tenant = server.tenant().await;

    // API keys: made and revoked, never the key's text
    let created = tenant.session.post("/v1/api-keys", json!({"name": "ci", "scopes": ["risks:read"]})).await.ok(201);
    let (key_id, key) = (created["id"].as_str().unwrap(), created["key"].as_str().unwrap());
    let made = newest(&tenant.api, "apiKey.created").await;
    assert_eq!(made["resourceId"], key_id);
    assert_eq!(made["actor"]["type"], "user");
    assert_eq!(made["changes"]["name"], json!({"from": null, "to": "ci"}));
    assert_eq!(made["changes"]["scopes"], json!({"from": null, "to": ["risks:read"]}));
    tenant.session.delete(&format!("/v1/api-keys/{key_id}")).await.ok(200);
    tenant.session.delete(&format!("/v1/api-keys/{key_id}")).await.ok(200);
    let revoked = entries(&tenant.api, &format!("?action=apiKey.revoked&resourceId={key_id}")).await;
    assert_eq!(revoked.len(), 1, "revoking twice writes one entry: {revoked:?}");
    assert_eq!(revoked[0]["changes"]["revokedAt"]["from"], Value::Null);
    assert!(revoked[0]["changes"]["revokedAt"]["to"].is_string());

    // sessions: another session of the owner, ended by the owner's session
    let second = server.session(&tenant.owner.id, Some(&tenant.org_id)).await;
    let listed = second.get("/v1/sessions").await.ok(200);
    let current = listed["data"].as_array().unwrap().iter().find(|s| s["current"] == true).unwrap().clone();
    let session_id = current["id"].as_str().unwrap();
    tenant.session.delete(&format!("/v1/sessions/{session_id}")).await;
    let ended = newest(&tenant.api, "session.revoked").await;
    assert_eq!(ended["resourceId"], session_id);
    assert_eq!(ended["actor"]["type"], "user");
    assert_eq!(ended["actor"]["id"], tenant.owner.id.as_str());
    assert_eq!(newest(&tenant.api, "session.created").await["resourceId"], session_id);

    // invitations: made and withdrawn, never the token
    let invited =
        tenant.session.post("/v1/invitations", json!({"email": "new@example.test", "role": "employee"})).await.ok(201);
    let invitation_id = invited["id"].as_str().unwrap();
    let accept_url = invited["acceptUrl"].as_str().unwrap();
    let token = accept_url.split_once("token=").map(|(_, t)| t.to_owned()).unwrap();
    assert!(token.len() > 20, "{accept_url}");
    let made = newest(&tenant.api, "invitation.created").await;
    assert_eq!(made["resourceId"], invitation_id);
    assert_eq!(made["changes"]["email"], json!({"from": null, "to": "new@example.test"}));
    tenant.session.delete(&format!("/v1/invitations/{invitation_id}")).await;
    assert_eq!(newest(&tenant.api, "invitation.deleted").await["resourceId"], invitation_id);

    // the organization
    tenant.session.patch("/v1/organization", json!({"name": "Renamed"})).await.ok(200);
    let renamed = newest(&tenant.api, "organization.updated").await;
    assert_eq!(renamed["resourceId"], tenant.org_id.as_str());
    assert_eq!(renamed["changes"]["name"]["to"], "Renamed");

    // comments: content shown by length
    let risk = create_risk(&tenant.api, "Flood").await;
    let body = json!({"content": "Sandbags", "entityType": "risk", "entityId": risk["id"], "userId": tenant.owner.id});
    let comment = tenant.api.post("/v1/comments", body).await.ok(201);
    let comment_path = format!("/v1/comments/{}", comment["id"].as_str().unwrap());
    tenant.api.put(&comment_path, json!({"content": "More sandbags"})).await.ok(200);
    tenant.api.delete(&comment_path).await.ok(200);
    let log = entries(&tenant.api, &format!("?resourceId={}", comment["id"].as_str().unwrap())).await;
    assert_eq!(actions(&log), ["comment.deleted", "comment.updated", "comment.created"]);
    assert_eq!(log[2]["changes"]["content"], json!({"from": null, "to": {"length": 8}}));
    assert_eq!(log[1]["changes"]["content"], json!({"from": {"length": 8}, "to": {"length": 13}}));

    // no secret anywhere in the log
    let all = tenant.api.get("/v1/audit-log?limit=100").await.ok(200).to_string();
    assert!(!all.contains(key), "the API key's text is in the log");
    assert!(!all.contains(&token), "the invitation's token is in the log");
    assert!(!all.contains("Sandbags"), "comment text is summarised, not copied");
    assert_eq!(tenant.api.get("/v1/audit-log/verify").await.ok(200)["valid"], true);
}

async fn automations_and_their_secrets_write_entries_without_the_value(server: &TestServer) {
    const VALUE: &str = "correct-horse-battery-staple-42";
    let tenant = server.tenant().await;
    let task = crate::tasks::create(&tenant.api, "Log in to the admin console").await;
    let body = json!({"taskId": task["id"], "name": "Admin console", "targetUrl": "https://example.com/login",
                      "instruction": "Sign in and check the security settings."});
    let automation = tenant.api.post("/v1/browser/automations", body).await.ok(201);
    let id = automation["id"].as_str().unwrap();
    let path = format!("/v1/browser/automations/{id}");
    tenant.session.patch(&path, json!({"name": "Console"})).await.ok(200);
    tenant.api.put(&format!("{path}/secrets/admin_password"), json!({"value": VALUE})).await.ok(201);
    tenant.api.put(&format!("{path}/secrets/admin_password"), json!({"value": "another-value-1"})).await.ok(200);
    tenant.api.delete(&format!("{path}/secrets/admin_password")).await;
    tenant.api.delete(&path).await;

    let log = entries(&tenant.api, &format!("?resourceType=automation&resourceId={id}")).await;
    assert_eq!(
        actions(&log),
        [
            "automation.deleted",
            "automation.secret_deleted",
            "automation.secret_set",
            "automation.secret_set",
            "automation.updated",
            "automation.created"
        ]
    );
    let created = &log[5];
    assert_eq!(created["actor"]["type"], "apiKey");
    assert_eq!(created["changes"]["name"], json!({"from": null, "to": "Admin console"}));
    assert_eq!(created["changes"]["instruction"]["to"], json!({"length": 40}));
    assert_eq!(log[4]["actor"]["type"], "user");
    assert_eq!(log[4]["changes"]["name"], json!({"from": "Admin console", "to": "Console"}));
    assert_eq!(log[3]["changes"]["secretName"], json!({"from": null, "to": "admin_password"}));
    assert_eq!(log[1]["changes"]["secretName"], json!({"from": "admin_password", "to": null}));
    let text = serde_json::to_string(&log).unwrap();
    assert!(!text.contains(VALUE) && !text.contains("another-value-1"), "a secret's value is in the log: {text}");
    assert!(!text.contains("ciphertext"), "{text}");
    assert_eq!(tenant.api.get("/v1/audit-log/verify").await.ok(200)["valid"], true);
}

async fn webhooks_write_entries_without_the_secret(server: &TestServer) {
    let tenant = server.tenant().await;
    let body = json!({"url": "https://hooks.example.com/a", "events": ["risk.*"], "description": "ops"});
    let created = tenant.api.post("/v1/webhooks", body).await.ok(201);
    let (id, first) = (created["id"].as_str().unwrap(), created["secret"].as_str().unwrap().to_owned());
    let path = format!("/v1/webhooks/{id}");
    tenant.session.patch(&path, json!({"events": ["*"], "isEnabled": false})).await.ok(200);
    let rotated = tenant.api.post(&format!("{path}/rotate-secret"), json!({})).await.ok(200);
    let second = rotated["secret"].as_str().unwrap().to_owned();
    // a test send changes no resource: no entry
    tenant.api.post(&format!("{path}/test"), json!({})).await.ok(202);
    assert_eq!(tenant.api.delete(&path).await.status, 204);

    let log = entries(&tenant.api, &format!("?resourceType=webhook&resourceId={id}")).await;
    assert_eq!(actions(&log), ["webhook.deleted", "webhook.secret_rotated", "webhook.updated", "webhook.created"]);
    let (deleted, rotation, updated, made) = (&log[0], &log[1], &log[2], &log[3]);
    assert_eq!(made["actor"]["type"], "apiKey");
    assert_eq!(made["actor"]["apiKeyId"], tenant.api_key_id.as_str());
    // The URL is a credential: entries show it masked (docs/api.md, "Webhooks").
    assert_eq!(made["changes"]["url"], json!({"from": null, "to": "https://hooks.example.com/…"}));
    assert_eq!(made["changes"]["events"], json!({"from": null, "to": ["risk.*"]}));
    assert_eq!(updated["actor"]["type"], "user");
    assert_eq!(
        updated["changes"],
        json!({"events": {"from": ["risk.*"], "to": ["*"]}, "isEnabled": {"from": true, "to": false}}),
        "{updated}"
    );
    assert_eq!(rotation["changes"]["previousSecretExpiresAt"]["from"], Value::Null, "{rotation}");
    assert!(rotation["changes"]["previousSecretExpiresAt"]["to"].is_string(), "{rotation}");
    assert_eq!(deleted["changes"]["url"], json!({"from": "https://hooks.example.com/…", "to": null}));
    assert!(entries(&tenant.api, "?action=webhook.test").await.is_empty());

    let all = tenant.api.get("/v1/audit-log?limit=100").await.ok(200).to_string();
    assert!(!all.contains(&first) && !all.contains(&second), "a webhook secret is in the log");
    assert!(!all.contains("whsec_"), "{all}");
    assert!(!all.contains("hooks.example.com/a"), "a webhook URL's path is in the log: {all}");
    assert_eq!(tenant.api.get("/v1/audit-log/verify").await.ok(200)["valid"], true);
}
