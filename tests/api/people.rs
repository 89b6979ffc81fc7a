//! `/v1/people`: memberships of the organization, each with its nested user.

use serde_json::{Value, json};

use crate::checks::{
    assert_acting_user, assert_id, assert_lacks, assert_timestamp, data, ids, missing_id, str_of, tick,
};
use crate::harness::TestServer;

api_tests!(
    list_has_active_members_with_their_user,
    a_user_joins_only_by_accepting_never_by_id,
    last_login_is_the_organizations_own,
    get_one_is_the_bare_member,
    update_changes_only_the_given_fields,
    deactivation_keeps_the_record_and_locks_the_session,
);

/// Asserts the shape of a Member whose user is `user_id`.
#[track_caller]
fn assert_member(member: &Value, org_id: &str, user_id: &str) {
    assert_id(&member["id"], "mem_");
    assert_eq!(member["organizationId"], org_id, "{member}");
    assert_eq!(member["userId"], user_id, "{member}");
    assert!(member["role"].is_string(), "{member}");
    assert!(member["department"].is_string(), "{member}");
    assert!(member["isActive"].is_boolean(), "{member}");
    assert!(member["deviceManagerLabelId"].is_null() || member["deviceManagerLabelId"].is_i64(), "{member}");
    assert_timestamp(&member["createdAt"]);
    let user = &member["user"];
    assert_id(&user["id"], "usr_");
    assert_eq!(user["id"], user_id, "{member}");
    assert!(user["name"].is_string() && user["email"].is_string(), "{member}");
    assert!(user["emailVerified"].is_boolean(), "{member}");
    assert!(user["image"].is_null() || user["image"].is_string(), "{member}");
    assert_timestamp(&user["createdAt"]);
    assert_timestamp(&user["updatedAt"]);
    assert!(user["lastLogin"].is_null() || user["lastLogin"].is_string(), "{member}");
}

async fn list_has_active_members_with_their_user(server: &TestServer) {
    let tenant = server.tenant().await;
    tick().await;
    let (auditor, member) = server.member(&tenant, "auditor").await;

    let list = tenant.api.get("/v1/people").await.ok(200);
    assert_eq!(list["count"], 2);
    assert_eq!(list["authType"], "api-key");
    assert_acting_user(&list, &tenant.owner);
    assert_eq!(ids(&list), [str_of(&member, "id"), tenant.owner_member_id.as_str()], "newest first");
    let item = &data(&list)[0];
    assert_member(item, &tenant.org_id, &auditor.id);
    assert_eq!(item["user"]["email"], auditor.email.as_str());
    assert_eq!(item["user"]["name"], auditor.name.as_str());
    assert_eq!(item["role"], "auditor");
    assert_eq!(item["isActive"], true);

    let session = server.session(&auditor.id, Some(&tenant.org_id)).await;
    let list = session.get("/v1/people").await.ok(200);
    assert_eq!(list["authType"], "session");
    assert_acting_user(&list, &auditor);
}

/// Issue 42, finding 3: an admin enrolled another tenant's user by id (`POST /v1/people`, or
/// `PATCH` re-pointing `userId`) and then saw that user's e-mail, name, last login and every
/// sign-in. A user joins only by accepting an invitation (or through the operator).
async fn a_user_joins_only_by_accepting_never_by_id(server: &TestServer) {
    let attacker = server.tenant().await;
    let victim = server.tenant().await;
    let (_, member) = server.member(&attacker, "employee").await;
    let member_id = str_of(&member, "id");

    let refused = attacker.api.post("/v1/people", json!({"userId": victim.owner.id, "role": "employee"})).await;
    assert_eq!(refused.status, 405, "{}", refused.body);
    let bulk = json!({"operations": [{"op": "create", "body": {"userId": victim.owner.id, "role": "employee"}}]});
    attacker.api.post("/v1/people/bulk", bulk).await.problem(400);
    let path = format!("/v1/people/{member_id}");
    attacker.session.patch(&path, json!({"userId": victim.owner.id})).await.invalid("userId");
    attacker.api.patch(&path, json!({"userId": missing_id("usr_")})).await.invalid("userId");
    // Its own user, sent back as read, is no change.
    attacker.api.patch(&path, json!({"userId": member["userId"], "role": "auditor"})).await.ok(200);

    let people = attacker.api.get("/v1/people?includeInactive=true").await.ok(200);
    assert_eq!(people["count"], 2, "{people}");
    assert!(!people.to_string().contains(&victim.owner.email), "{people}");
    // The victim signs in: nothing of it reaches the attacker's audit trail.
    server.session(&victim.owner.id, None).await;
    let log = attacker.api.get("/v1/audit-log?limit=100").await.ok(200);
    assert!(!log.to_string().contains(&victim.owner.id), "{log}");
}

/// A person's `user.lastLogin` is when a session of theirs last came to this organization, not
/// when they signed in to use another one.
async fn last_login_is_the_organizations_own(server: &TestServer) {
    let (ours, theirs) = (server.tenant().await, server.tenant().await);
    let (user, in_theirs) = server.member(&theirs, "admin").await;
    let in_ours = server.admin().add_member(&ours.org_id, &user.id, "admin").await;
    let (ours_path, theirs_path) =
        (format!("/v1/people/{}", str_of(&in_ours, "id")), format!("/v1/people/{}", str_of(&in_theirs, "id")));

    let session = server.session(&user.id, Some(&theirs.org_id)).await;
    session.get("/v1/people").await.ok(200);
    let seen_by_them = theirs.api.get(&theirs_path).await.ok(200);
    assert_timestamp(&seen_by_them["user"]["lastLogin"]);
    let seen_by_us = ours.api.get(&ours_path).await.ok(200);
    assert_eq!(seen_by_us["user"]["lastLogin"], Value::Null, "{seen_by_us}");

    // Once the session comes to this organization too, it sees it.
    session.with_org(Some(&ours.org_id)).get("/v1/people").await.ok(200);
    assert_timestamp(&ours.api.get(&ours_path).await.ok(200)["user"]["lastLogin"]);
}

async fn get_one_is_the_bare_member(server: &TestServer) {
    let tenant = server.tenant().await;
    let (user, created) = server.member(&tenant, "auditor").await;
    let path = format!("/v1/people/{}", str_of(&created, "id"));
    let member = tenant.api.get(&path).await.ok(200);
    assert_member(&member, &tenant.org_id, &user.id);
    assert_lacks(&member, &["authType", "authenticatedUser", "data"]);
    assert_eq!(member, created, "the API and the CLI show the same Member");
    tenant.api.get(&format!("/v1/people/{}", missing_id("mem_"))).await.problem(404);
}

async fn update_changes_only_the_given_fields(server: &TestServer) {
    let tenant = server.tenant().await;
    let (_, member) = server.member(&tenant, "auditor").await;
    let path = format!("/v1/people/{}", str_of(&member, "id"));

    let updated = tenant.api.patch(&path, json!({"role": "admin", "department": "hr"})).await.ok(200);
    assert_eq!(updated["role"], "admin");
    assert_eq!(updated["department"], "hr");
    assert_eq!(updated["isActive"], true);
    assert_eq!(updated["user"], member["user"]);
    assert_lacks(&updated, &["authType", "authenticatedUser"]);

    // The operator assigns device labels; the current value may be sent back.
    tenant.api.patch(&path, json!({"deviceManagerLabelId": 42})).await.problem(403);
    let updated = tenant.api.patch(&path, json!({"deviceManagerLabelId": null})).await.ok(200);
    assert_eq!(updated["deviceManagerLabelId"], Value::Null);
    assert_eq!(updated["role"], "admin");

    tenant.api.patch(&path, json!({"deviceManagerLabelId": "42"})).await.invalid("deviceManagerLabelId");
    tenant.api.patch(&path, json!({"deviceManagerLabelId": 1.5})).await.invalid("deviceManagerLabelId");
    tenant.api.patch(&path, json!({"role": null})).await.invalid("role");
    tenant.api.patch(&path, json!({"department": null})).await.invalid("department");
    tenant.api.patch(&path, json!({"department": "sales"})).await.invalid("department");
    tenant.api.patch(&path, json!({"isActive": "no"})).await.invalid("isActive");
    tenant.api.patch(&path, json!({"userId": missing_id("usr_")})).await.invalid("userId");
    tenant.api.patch(&path, json!({"nickname": "x"})).await.invalid("nickname");
    assert_eq!(tenant.api.get(&path).await.ok(200), updated, "failed updates change nothing");
}

async fn deactivation_keeps_the_record_and_locks_the_session(server: &TestServer) {
    let tenant = server.tenant().await;
    let (user, member) = server.member(&tenant, "auditor").await;
    let path = format!("/v1/people/{}", str_of(&member, "id"));
    let session = server.session(&user.id, Some(&tenant.org_id)).await;
    session.get("/v1/risks").await.ok(200);

    let updated = tenant.api.patch(&path, json!({"isActive": false})).await.ok(200);
    assert_eq!(updated["isActive"], false);
    let fetched = tenant.api.get(&path).await.ok(200);
    assert_eq!(fetched["isActive"], false, "the record remains");
    assert_eq!(fetched["role"], "auditor");

    let active = tenant.api.get("/v1/people").await.ok(200);
    assert_eq!(ids(&active), [tenant.owner_member_id.as_str()]);
    assert_eq!(active["count"], 1);
    let all = tenant.api.get("/v1/people?includeInactive=true").await.ok(200);
    assert_eq!(all["count"], 2);
    let inactive = data(&all).iter().find(|m| m["id"] == member["id"]).expect("deactivated member listed");
    assert_eq!(inactive["isActive"], false);
    assert_eq!(tenant.api.get("/v1/people?includeInactive=false").await.ok(200)["count"], 1);
    tenant.api.get("/v1/people?includeInactive=maybe").await.problem(400);

    session.get("/v1/risks").await.problem(403);

    tenant.api.patch(&path, json!({"isActive": true})).await.ok(200);
    session.get("/v1/risks").await.ok(200);
    assert_eq!(tenant.api.get("/v1/people").await.ok(200)["count"], 2);
}
