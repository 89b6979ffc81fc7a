//! `/v1/api-keys`: keys made over HTTP are shown once, listed without their text, limited by their
//! scopes and their creator's role, and revoked at once, on every instance (docs/api.md, "API keys
//! over HTTP"). Also the last owner's protection.

use serde_json::{Value, json};

use crate::checks::{missing_id, str_of};
use crate::client::{Auth, Client};
use crate::harness::{Backend, TestServer};

api_tests!(
    a_key_is_shown_once_listed_without_its_text_and_revoked_at_once,
    scopes_limit_a_key_within_its_creators_role,
    members_manage_their_own_keys_and_owners_all,
    another_organizations_keys_are_neither_listed_nor_revocable,
    the_last_owner_cannot_be_deactivated_or_demoted,
    a_key_made_by_a_key_cannot_outlive_it,
);

async fn make_key(client: &Client, scopes: &[&str]) -> Value {
    client.post("/v1/api-keys", json!({"name": "ci", "scopes": scopes})).await.ok(201)
}

fn key_client(server: &TestServer, created: &Value) -> Client {
    server.client(Auth::ApiKey(str_of(created, "key").to_owned()), None)
}

async fn a_key_is_shown_once_listed_without_its_text_and_revoked_at_once(server: &TestServer) {
    let tenant = server.tenant().await;
    let created = make_key(&tenant.session, &["risks:read"]).await;
    assert!(str_of(&created, "key").starts_with("cpk_"), "{created}");
    assert_eq!(created["scopes"], json!(["risks:read"]));
    assert_eq!(created["createdBy"], tenant.owner.id.as_str());
    let id = str_of(&created, "id").to_owned();

    let listed = tenant.session.get("/v1/api-keys").await.ok(200);
    let item = listed["data"].as_array().unwrap().iter().find(|k| k["id"] == id.as_str()).cloned().unwrap();
    assert!(item.get("key").is_none() && !listed.to_string().contains(str_of(&created, "key")), "{listed}");
    assert_eq!(item["revokedAt"], Value::Null);
    assert_eq!(listed["count"], 2, "the CLI's key and this one: {listed}");

    let key = key_client(server, &created);
    key.get("/v1/risks").await.ok(200);
    let revoked = tenant.session.delete(&format!("/v1/api-keys/{id}")).await.ok(200);
    assert!(revoked["revokedAt"].is_string(), "{revoked}");
    key.get("/v1/risks").await.problem(401);
    let again = tenant.session.delete(&format!("/v1/api-keys/{id}")).await.ok(200);
    assert_eq!(again["revokedAt"], revoked["revokedAt"], "revoking twice keeps the first time");

    // The CLI's revocation (another process) is refused at once as well, the cache notwithstanding.
    tenant.api.get("/v1/risks").await.ok(200);
    server.admin().revoke_api_key(&tenant.api_key_id).await;
    tenant.api.get("/v1/risks").await.problem(401);
}

async fn a_key_made_by_a_key_cannot_outlive_it(server: &TestServer) {
    let tenant = server.tenant().await;
    let made = |expires_at: Option<&str>| match expires_at {
        Some(at) => json!({"name": "ci", "scopes": ["*"], "expiresAt": at}),
        None => json!({"name": "ci", "scopes": ["*"]}),
    };
    let parent = tenant.session.post("/v1/api-keys", made(Some("2099-01-01T00:00:00Z"))).await.ok(201);
    assert_eq!(parent["parentId"], Value::Null, "made with a session");
    assert!(str_of(&parent, "expiresAt").starts_with("2099-01-01"), "{parent}");
    let as_parent = key_client(server, &parent);

    // No expiry, or a later one, becomes the parent's; an earlier one is kept.
    let child = as_parent.post("/v1/api-keys", made(None)).await.ok(201);
    assert_eq!((&child["expiresAt"], &child["parentId"]), (&parent["expiresAt"], &parent["id"]), "{child}");
    let later = as_parent.post("/v1/api-keys", made(Some("2100-01-01T00:00:00Z"))).await.ok(201);
    assert_eq!(later["expiresAt"], parent["expiresAt"], "{later}");
    let earlier = as_parent.post("/v1/api-keys", made(Some("2098-01-01T00:00:00Z"))).await.ok(201);
    assert!(str_of(&earlier, "expiresAt").starts_with("2098-01-01"), "{earlier}");
    let as_child = key_client(server, &child);
    let grandchild = as_child.post("/v1/api-keys", made(None)).await.ok(201);
    assert_eq!(grandchild["parentId"], child["id"]);
    let as_grandchild = key_client(server, &grandchild);
    as_grandchild.get("/v1/risks").await.ok(200);

    // Revoking the parent revokes what it made, however deep, with an entry each.
    tenant.session.delete(&format!("/v1/api-keys/{}", str_of(&parent, "id"))).await.ok(200);
    for key in [&as_parent, &as_child, &as_grandchild] {
        key.get("/v1/risks").await.problem(401);
    }
    let listed = tenant.session.get("/v1/api-keys").await.ok(200);
    let revoked =
        |id: &Value| listed["data"].as_array().unwrap().iter().any(|k| &k["id"] == id && k["revokedAt"].is_string());
    for key in [&parent, &child, &later, &earlier, &grandchild] {
        assert!(revoked(&key["id"]), "{} was not revoked: {listed}", key["id"]);
    }
    tenant.api.get("/v1/risks").await.ok(200);
    let log = tenant.session.get("/v1/audit-log?action=apiKey.revoked&limit=50").await.ok(200);
    assert_eq!(log["data"].as_array().unwrap().len(), 5, "an entry per revoked key: {log}");
}

async fn scopes_limit_a_key_within_its_creators_role(server: &TestServer) {
    let tenant = server.tenant().await;
    let key = key_client(server, &make_key(&tenant.session, &["risks:read", "tasks:write"]).await);
    key.get("/v1/risks").await.ok(200);
    key.get("/v1/tasks").await.ok(200);
    let refused =
        key.post("/v1/risks", json!({"title": "t", "description": "d", "category": "other"})).await.problem(403);
    assert_eq!(refused["detail"], "the API key lacks scope risks:write");
    let refused = key.get("/v1/vendors").await.problem(403);
    assert_eq!(refused["detail"], "the API key lacks scope vendors:read");
    // A key cannot make a key wider than itself.
    let refused = key.post("/v1/api-keys", json!({"name": "x", "scopes": ["*"]})).await.problem(403);
    assert!(refused["detail"].as_str().unwrap().contains("api-keys:write"), "{refused}");

    let unknown = tenant.session.post("/v1/api-keys", json!({"name": "x", "scopes": ["risks:eat"]})).await;
    let body = unknown.invalid("scopes");
    assert!(body.to_string().contains("risks:eat"), "{body}");
    tenant.session.post("/v1/api-keys", json!({"name": "x", "scopes": []})).await.invalid("scopes");
    tenant.session.post("/v1/api-keys", json!({"name": "x"})).await.invalid("scopes");
    let past = json!({"name": "x", "scopes": ["*"], "expiresAt": "2001-01-01T00:00:00Z"});
    tenant.session.post("/v1/api-keys", past).await.invalid("expiresAt");

    // Never more than the creator's role: an auditor's key cannot write, whatever it asks for.
    let (auditor, _) = server.member(&tenant, "auditor").await;
    let auditor = server.session(&auditor.id, Some(&tenant.org_id)).await;
    let refused = auditor.post("/v1/api-keys", json!({"name": "x", "scopes": ["risks:write"]})).await.problem(403);
    assert!(refused["detail"].as_str().unwrap().contains("role auditor may not write risks"), "{refused}");
    let everything = key_client(server, &make_key(&auditor, &["*"]).await);
    everything.get("/v1/risks").await.ok(200);
    let refused = everything.post("/v1/risks", json!({"title": "t", "description": "d", "category": "other"})).await;
    assert_eq!(refused.problem(403)["detail"], "role auditor may not write risks");
}

async fn members_manage_their_own_keys_and_owners_all(server: &TestServer) {
    let tenant = server.tenant().await;
    let (employee, _) = server.member(&tenant, "employee").await;
    let employee = server.session(&employee.id, Some(&tenant.org_id)).await;
    let theirs = make_key(&employee, &["policies:read"]).await;
    let listed = employee.get("/v1/api-keys").await.ok(200);
    assert_eq!(listed["count"], 1, "only their own: {listed}");
    let owners = format!("/v1/api-keys/{}", tenant.api_key_id);
    let refused = employee.delete(&owners).await.problem(403);
    assert_eq!(refused["detail"], "role employee may write only the API keys they created");
    tenant.session.delete(&format!("/v1/api-keys/{}", str_of(&theirs, "id"))).await.ok(200);
    key_client(server, &theirs).get("/v1/policies").await.problem(401);
}

async fn another_organizations_keys_are_neither_listed_nor_revocable(server: &TestServer) {
    let (a, b) = (server.tenant().await, server.tenant().await);
    let listed = a.session.get("/v1/api-keys").await.ok(200);
    assert!(!listed.to_string().contains(&b.api_key_id), "{listed}");
    a.session.delete(&format!("/v1/api-keys/{}", b.api_key_id)).await.problem(404);
    a.session.delete(&format!("/v1/api-keys/{}", missing_id("apk_"))).await.problem(404);
    b.api.get("/v1/risks").await.ok(200);
}

async fn the_last_owner_cannot_be_deactivated_or_demoted(server: &TestServer) {
    let tenant = server.tenant().await;
    let owner = format!("/v1/people/{}", tenant.owner_member_id);
    let refused = tenant.session.patch(&owner, json!({"isActive": false})).await.problem(409);
    assert!(refused["detail"].as_str().unwrap().contains("last owner"), "{refused}");
    tenant.session.patch(&owner, json!({"role": "admin"})).await.problem(409);
    tenant.session.patch(&owner, json!({"role": "Owner, auditor"})).await.ok(200);

    let (admin, _) = server.member(&tenant, "admin").await;
    let admin = server.session(&admin.id, Some(&tenant.org_id)).await;
    let refused = admin.patch(&owner, json!({"role": "admin"})).await.problem(403);
    assert!(refused["detail"].as_str().unwrap().contains("only an owner"), "{refused}");

    let (_, second) = server.member(&tenant, "owner").await;
    tenant.session.patch(&owner, json!({"role": "admin"})).await.ok(200);
    // The demotion holds at once for the demoted owner's own session: no longer an owner.
    let second = format!("/v1/people/{}", str_of(&second, "id"));
    let refused = tenant.session.patch(&second, json!({"isActive": false})).await.problem(403);
    assert!(refused["detail"].as_str().unwrap().contains("only an owner"), "{refused}");
}

/// Two server processes on one PostgreSQL database, each remembering callers for five minutes: a
/// key revoked, or a member demoted, through one is refused by the other at its next request.
#[tokio::test]
async fn a_revocation_on_one_instance_takes_effect_at_once_on_another() {
    let env: Vec<(String, String)> = vec![("AUTH_CACHE_SECONDS".into(), "300".into())];
    crate::harness::run_with_owned_env(Backend::Postgres, env.clone(), |server| async move {
        let sibling = server.start_sibling(&env).await;
        let tenant = server.tenant().await;
        let created = make_key(&tenant.session, &["*"]).await;
        let secret = str_of(&created, "key").to_owned();
        let elsewhere = sibling.client(Auth::ApiKey(secret), None);
        elsewhere.get("/v1/risks").await.ok(200);
        elsewhere.get("/v1/risks").await.ok(200); // now remembered by the sibling

        tenant.session.delete(&format!("/v1/api-keys/{}", str_of(&created, "id"))).await.ok(200);
        elsewhere.get("/v1/risks").await.problem(401);

        let (user, member) = server.member(&tenant, "admin").await;
        let admin = sibling.client(
            Auth::ApiKey(str_of(&server.admin().create_api_key(&tenant.org_id, &user.id).await, "key").to_owned()),
            None,
        );
        admin.post("/v1/risks", json!({"title": "t", "description": "d", "category": "other"})).await.ok(201);
        tenant
            .session
            .patch(&format!("/v1/people/{}", str_of(&member, "id")), json!({"role": "auditor"}))
            .await
            .ok(200);
        let refused = admin.post("/v1/risks", json!({"title": "t", "description": "d", "category": "other"})).await;
        assert_eq!(refused.problem(403)["detail"], "role auditor may not write risks");
        tenant
            .session
            .patch(&format!("/v1/people/{}", str_of(&member, "id")), json!({"isActive": false}))
            .await
            .ok(200);
        admin.get("/v1/risks").await.problem(401);
    })
    .await;
}
