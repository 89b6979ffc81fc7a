//! A policy's life: submitting, rejecting and approving, the versions each publish makes, and
//! the rounds of signatures (docs/api.md, "Policy versions, approval and signatures").

use serde_json::{Value, json};

use crate::checks::{assert_later, missing_id, str_of, tick};
use crate::client::{Auth, Client};
use crate::harness::TestServer;
use crate::tenant::{Tenant, User};

api_tests!(
    lifecycle_from_draft_to_version_two,
    approval_refuses_the_wrong_people_and_states,
    versions_are_immutable_and_numbered,
    another_organizations_policy_is_not_found,
    signature_rounds_follow_versions_and_members,
    a_member_sees_what_they_signed,
);

fn paragraph(text: &str) -> Value {
    json!([{"type": "paragraph", "content": [{"type": "text", "text": text}]}])
}

/// A member of `tenant` with `role`, its member id and a session of theirs.
async fn member(server: &TestServer, tenant: &Tenant, role: &str) -> (User, String, Client) {
    let (user, member) = server.member(tenant, role).await;
    let session = server.session(&user.id, Some(&tenant.org_id)).await;
    (user, str_of(&member, "id").to_owned(), session)
}

async fn audit_actions(tenant: &Tenant, policy: &str) -> Vec<String> {
    let log = tenant.api.get(&format!("/v1/audit-log?resourceId={policy}&limit=100")).await.ok(200);
    let mut actions: Vec<String> =
        log["data"].as_array().unwrap().iter().map(|e| str_of(e, "action").to_owned()).collect();
    actions.reverse();
    actions
}

async fn lifecycle_from_draft_to_version_two(server: &TestServer) {
    let tenant = server.tenant().await;
    let (approver, approver_member, approver_session) = member(server, &tenant, "admin").await;
    let (assignee, assignee_member, assignee_session) = member(server, &tenant, "employee").await;
    let body = json!({"name": "Access", "content": paragraph("v1 text"),
                      "assigneeId": assignee_member, "approverId": approver_member, "frequency": "quarterly"});
    let policy = tenant.api.post("/v1/policies", body).await.ok(201);
    let id = str_of(&policy, "id").to_owned();
    let path = format!("/v1/policies/{id}");
    assert_eq!(policy["currentVersion"], Value::Null);
    assert_eq!(policy["rejectionReason"], Value::Null);

    // the assignee submits; the approver rejects with a reason
    let submitted = assignee_session.post(&format!("{path}/submit"), json!({"changeNote": "first cut"})).await.ok(200);
    assert_eq!(submitted["status"], "pending_approval");
    assert_eq!(submitted["submittedBy"], assignee.id.as_str());
    assert_eq!(submitted["changeNote"], "first cut");
    let rejected = approver_session.post(&format!("{path}/reject"), json!({"reason": "too vague"})).await.ok(200);
    assert_eq!(rejected["status"], "draft");
    assert_eq!(rejected["rejectionReason"], "too vague");
    assert_eq!(rejected["submittedBy"], Value::Null);
    assert_eq!(tenant.api.get(&format!("{path}/versions")).await.ok(200)["data"], json!([]));

    // submitted again by the owner, approved: version 1
    let again = tenant.api.post(&format!("{path}/submit"), json!({"changeNote": "clearer"})).await.ok(200);
    assert_eq!(again["rejectionReason"], Value::Null, "a new submission clears the reason");
    let approved = approver_session.post(&format!("{path}/approve"), json!({})).await.ok(200);
    assert_eq!(approved["status"], "published");
    assert_eq!(approved["currentVersion"], 1);
    assert_eq!(approved["signedBy"], json!([]));
    assert_later(&approved["lastPublishedAt"], &policy["createdAt"]);
    let versions = tenant.api.get(&format!("{path}/versions")).await.ok(200);
    let first = &versions["data"][0];
    assert_eq!(versions["data"].as_array().unwrap().len(), 1);
    assert_eq!(first["number"], 1);
    assert_eq!(first["changeNote"], "clearer");
    assert_eq!(first["approvedBy"], approver.id.as_str());
    assert_eq!(first["publishedBy"], approver.id.as_str());
    assert_eq!(first["signatureCount"], 0);
    assert_eq!(first["publishedAt"], approved["lastPublishedAt"]);

    // an edit of the content needs review; version 1 stays what was published
    tick().await;
    let edited = tenant.api.patch(&path, json!({"content": paragraph("v2 text")})).await.ok(200);
    assert_eq!(edited["status"], "needs_review");
    assert_eq!(edited["currentVersion"], 1);
    assert_eq!(tenant.api.get(&format!("{path}/versions/1")).await.ok(200)["content"], paragraph("v1 text"));
    let direct = tenant.api.patch(&path, json!({"status": "published"})).await.problem(409);
    assert!(str_of(&direct, "detail").contains("approver"), "{direct}");

    // version 2, through approval; the review date moves by the frequency
    assignee_session.post(&format!("{path}/submit"), json!({})).await.ok(200);
    tick().await;
    let second = approver_session.post(&format!("{path}/approve"), json!({})).await.ok(200);
    assert_eq!(second["currentVersion"], 2);
    assert_later(&second["lastPublishedAt"], &approved["lastPublishedAt"]);
    assert_later(&second["reviewDate"], &second["lastPublishedAt"]);
    assert_ne!(second["reviewDate"], policy["reviewDate"], "republishing moves the review date");
    let v2 = tenant.api.get(&format!("{path}/versions/2")).await.ok(200);
    assert_eq!(v2["content"], paragraph("v2 text"));
    assert_eq!(v2["number"], 2);
    assert_eq!(v2["policyId"], id.as_str());

    assert_eq!(
        audit_actions(&tenant, &id).await,
        [
            "policy.created",
            "policy.submitted",
            "policy.rejected",
            "policy.submitted",
            "policy.approved",
            "policy.updated",
            "policy.submitted",
            "policy.approved"
        ]
    );
}

async fn approval_refuses_the_wrong_people_and_states(server: &TestServer) {
    let tenant = server.tenant().await;
    let (_, approver_member, approver_session) = member(server, &tenant, "admin").await;
    let (_, _, employee_session) = member(server, &tenant, "employee").await;
    let (_, _, auditor_session) = member(server, &tenant, "auditor").await;
    let body = json!({"name": "Approvals", "content": paragraph("x")});
    let policy = tenant.api.post("/v1/policies", body).await.ok(201);
    let path = format!("/v1/policies/{}", str_of(&policy, "id"));

    // no approver: nothing to submit to; publishing directly is for owners and admins
    let none = tenant.api.post(&format!("{path}/submit"), json!({})).await.problem(409);
    assert!(str_of(&none, "detail").contains("no approver"), "{none}");
    tenant.api.patch(&path, json!({"approverId": approver_member})).await.ok(200);

    // who may submit: not an employee who is not the assignee, not an auditor
    employee_session.post(&format!("{path}/submit"), json!({})).await.problem(403);
    auditor_session.post(&format!("{path}/submit"), json!({})).await.problem(403);
    let detail = approver_session.post(&format!("{path}/submit"), json!({})).await.problem(409);
    assert!(str_of(&detail, "detail").contains("approver"), "the approver cannot submit: {detail}");
    tenant.api.patch(&path, json!({"status": "pending_approval"})).await.invalid("status");
    tenant.api.post(&format!("{path}/submit"), json!({"note": "x"})).await.invalid("note");
    tenant.api.post(&format!("{path}/submit"), json!({"changeNote": "x".repeat(2001)})).await.invalid("changeNote");

    // approve and reject only while pending
    approver_session.post(&format!("{path}/approve"), json!({})).await.problem(409);
    approver_session.post(&format!("{path}/reject"), json!({"reason": "no"})).await.problem(409);
    tenant.api.post(&format!("{path}/submit"), json!({})).await.ok(200);
    tenant.api.post(&format!("{path}/submit"), json!({})).await.problem(409);
    let editing = tenant.api.patch(&path, json!({"content": paragraph("sneaky")})).await.problem(409);
    assert!(str_of(&editing, "detail").contains("pending approval"), "{editing}");

    // only the approver approves or rejects; a reason is required
    tenant.api.post(&format!("{path}/approve"), json!({})).await.problem(403);
    employee_session.post(&format!("{path}/reject"), json!({"reason": "no"})).await.problem(403);
    approver_session.post(&format!("{path}/reject"), json!({})).await.invalid("reason");
    approver_session.post(&format!("{path}/reject"), json!({"reason": "  "})).await.invalid("reason");

    // an API key needs policies:write to take part
    let key = tenant.api.post("/v1/api-keys", json!({"name": "reader", "scopes": ["policies:read"]})).await.ok(201);
    let reader = server.client(Auth::ApiKey(str_of(&key, "key").to_owned()), None);
    reader.post(&format!("{path}/approve"), json!({})).await.problem(403);
    reader.get(&format!("{path}/versions")).await.ok(200);

    // the approver who submitted may not approve: make the owner the approver of a policy the
    // owner submits, through an assignee
    assert_eq!(tenant.api.get(&path).await.ok(200)["status"], "pending_approval", "refusals change nothing");
    approver_session.post(&format!("{path}/approve"), json!({})).await.ok(200);
    let owned = tenant.api.post("/v1/policies", json!({"name": "Self", "content": paragraph("x")})).await.ok(201);
    let owned_path = format!("/v1/policies/{}", str_of(&owned, "id"));
    tenant.api.post(&format!("{owned_path}/submit"), json!({})).await.problem(409);
    approver_session.patch(&owned_path, json!({"approverId": tenant.owner_member_id})).await.ok(200);
    approver_session.post(&format!("{owned_path}/submit"), json!({})).await.ok(200);
    tenant.api.patch(&owned_path, json!({"approverId": approver_member})).await.ok(200);
    let own = approver_session.post(&format!("{owned_path}/approve"), json!({})).await.problem(409);
    assert!(str_of(&own, "detail").contains("submitter"), "{own}");
}

async fn versions_are_immutable_and_numbered(server: &TestServer) {
    let tenant = server.tenant().await;
    let body = json!({"name": "Direct", "content": paragraph("one"), "status": "published"});
    let policy = tenant.api.post("/v1/policies", body).await.ok(201);
    assert_eq!(policy["status"], "published");
    assert_eq!(policy["currentVersion"], 1);
    let path = format!("/v1/policies/{}", str_of(&policy, "id"));
    let first = tenant.api.get(&format!("{path}/versions/1")).await;
    let v1_tag = first.header("ETag").expect("a version answers its ETag");
    let v1 = first.ok(200);
    assert_eq!(v1["content"], paragraph("one"));
    assert_eq!(v1["approvedBy"], Value::Null);
    assert_eq!(v1["publishedBy"], tenant.owner.id.as_str());

    // a rename alone does not need review; a content change does
    let renamed = tenant.api.patch(&path, json!({"name": "Direct (renamed)"})).await.ok(200);
    assert_eq!(renamed["status"], "published");
    tenant.api.patch(&path, json!({"content": paragraph("two")})).await.ok(200);
    let republished =
        tenant.api.patch(&path, json!({"status": "published", "content": paragraph("three")})).await.ok(200);
    assert_eq!(republished["currentVersion"], 2);
    assert_eq!(tenant.api.get(&format!("{path}/versions/1")).await.ok(200), v1, "version 1 never changes");
    // So its tag never does: a client holding it is answered 304.
    let held = tenant.api.with_header("If-None-Match", &v1_tag).get(&format!("{path}/versions/1")).await;
    assert_eq!((held.status, held.header("ETag")), (304, Some(v1_tag.clone())));
    let v2 = tenant.api.with_header("If-None-Match", &v1_tag).get(&format!("{path}/versions/2")).await;
    assert_ne!(v2.header("ETag"), Some(v1_tag), "another version, another tag");
    assert_eq!(v2.ok(200)["content"], paragraph("three"));
    let same = tenant.api.patch(&path, json!({"status": "published"})).await.ok(200);
    assert_eq!(same["currentVersion"], 2, "publishing the published changes nothing");
    let list = tenant.api.get(&format!("{path}/versions")).await.ok(200);
    let numbers: Vec<&Value> = list["data"].as_array().unwrap().iter().map(|v| &v["number"]).collect();
    assert_eq!(numbers, [&json!(1), &json!(2)]);
    assert!(list["data"][0].get("content").is_none(), "the list leaves content out");
    for missing in ["3", "0", "-1", "one", "99999999999"] {
        tenant.api.get(&format!("{path}/versions/{missing}")).await.problem(404);
    }
    tenant.api.get(&format!("/v1/policies/{}/versions", missing_id("pol_"))).await.problem(404);
}

async fn another_organizations_policy_is_not_found(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let body = json!({"name": "Ours", "content": paragraph("x"), "status": "published"});
    let policy = tenant.api.post("/v1/policies", body).await.ok(201);
    let path = format!("/v1/policies/{}", str_of(&policy, "id"));
    for read in ["versions", "versions/1", "signatures"] {
        other.api.get(&format!("{path}/{read}")).await.problem(404);
    }
    for (action, body) in
        [("submit", json!({})), ("approve", json!({})), ("reject", json!({"reason": "x"})), ("sign", json!({}))]
    {
        other.api.post(&format!("{path}/{action}"), body).await.problem(404);
    }
    other.api.get(&format!("/v1/people/{}/policies", tenant.owner_member_id)).await.problem(404);
    assert_eq!(tenant.api.get(&path).await.ok(200)["signedBy"], json!([]));
}

/// The user ids of a signature list.
fn user_ids(list: &Value) -> Vec<String> {
    let mut ids: Vec<String> = list.as_array().unwrap().iter().map(|s| str_of(s, "userId").to_owned()).collect();
    ids.sort();
    ids
}

fn sorted(ids: &[&str]) -> Vec<String> {
    let mut ids: Vec<String> = ids.iter().map(|id| (*id).to_owned()).collect();
    ids.sort();
    ids
}

async fn signature_rounds_follow_versions_and_members(server: &TestServer) {
    let tenant = server.tenant().await;
    let (first, _, first_session) = member(server, &tenant, "employee").await;
    let (second, second_member, _) = member(server, &tenant, "employee").await;
    let draft = tenant.api.post("/v1/policies", json!({"name": "Draft", "content": paragraph("x")})).await.ok(201);
    let refused = first_session.post(&format!("/v1/policies/{}/sign", str_of(&draft, "id")), json!({})).await;
    assert!(str_of(&refused.problem(409), "detail").contains("never been published"));

    let body = json!({"name": "Acceptable use", "content": paragraph("one"), "status": "published"});
    let policy = tenant.api.post("/v1/policies", body).await.ok(201);
    let path = format!("/v1/policies/{}", str_of(&policy, "id"));
    let round = tenant.api.get(&format!("{path}/signatures")).await.ok(200);
    assert_eq!(round["version"], 1);
    assert_eq!(round["signed"], json!([]));
    assert_eq!(user_ids(&round["pending"]), sorted(&[&tenant.owner.id, &first.id, &second.id]));

    // signing, twice; by a session and by a key (its creator signs)
    let signed = first_session.post(&format!("{path}/sign"), json!({})).await.ok(200);
    assert_eq!(signed["signedBy"], json!([first.id]));
    let again = first_session.post(&format!("{path}/sign"), json!({})).await.ok(200);
    assert_eq!(again["signedBy"], json!([first.id]), "signing twice is one signature");
    assert_eq!(again["updatedAt"], signed["updatedAt"]);
    tenant.api.post(&format!("{path}/sign"), json!({})).await.ok(200);
    let round = tenant.api.get(&format!("{path}/signatures")).await.ok(200);
    assert_eq!(user_ids(&round["signed"]), sorted(&[&tenant.owner.id, &first.id]));
    let mine = round["signed"].as_array().unwrap().iter().find(|s| s["userId"] == first.id.as_str()).unwrap();
    assert_eq!(
        (mine["name"].as_str(), mine["email"].as_str()),
        (Some(first.name.as_str()), Some(first.email.as_str()))
    );
    assert!(mine["signedAt"].is_string());
    assert_eq!(user_ids(&round["pending"]), sorted(&[&second.id]));
    // an employee may not read people: the round shows them only themselves
    let own = first_session.get(&format!("{path}/signatures")).await.ok(200);
    assert_eq!((user_ids(&own["signed"]), user_ids(&own["pending"])), (sorted(&[&first.id]), Vec::new()));

    // members joining and leaving change who is pending
    let (third, _, _) = member(server, &tenant, "auditor").await;
    tenant.api.patch(&format!("/v1/people/{second_member}"), json!({"isActive": false})).await.ok(200);
    let round = tenant.api.get(&format!("{path}/signatures")).await.ok(200);
    assert_eq!(user_ids(&round["pending"]), sorted(&[&third.id]));
    let versions = tenant.api.get(&format!("{path}/versions")).await.ok(200);
    assert_eq!(versions["data"][0]["signatureCount"], 2);

    // a new version starts a new round
    tenant.api.patch(&path, json!({"content": paragraph("two")})).await.ok(200);
    let still = tenant.api.get(&path).await.ok(200);
    assert_eq!(still["signedBy"].as_array().unwrap().len(), 2, "under review, version 1's signatures stand");
    let v2 = tenant.api.patch(&path, json!({"status": "published"})).await.ok(200);
    assert_eq!(v2["signedBy"], json!([]));
    let round = tenant.api.get(&format!("{path}/signatures")).await.ok(200);
    assert_eq!(round["version"], 2);
    assert_eq!(round["signed"], json!([]));
    assert_eq!(user_ids(&round["pending"]), sorted(&[&tenant.owner.id, &first.id, &third.id]));
    let versions = tenant.api.get(&format!("{path}/versions")).await.ok(200);
    assert_eq!(
        (&versions["data"][0]["signatureCount"], &versions["data"][1]["signatureCount"]),
        (&json!(2), &json!(0))
    );

    // nobody is pending when the policy need not be signed
    tenant.api.patch(&path, json!({"isRequiredToSign": false})).await.ok(200);
    assert_eq!(tenant.api.get(&format!("{path}/signatures")).await.ok(200)["pending"], json!([]));
    let actions = audit_actions(&tenant, str_of(&policy, "id")).await;
    assert_eq!(actions.iter().filter(|a| *a == "policy.signed").count(), 2, "{actions:?}");
}

async fn a_member_sees_what_they_signed(server: &TestServer) {
    let tenant = server.tenant().await;
    let (_, member_id, session) = member(server, &tenant, "employee").await;
    let (_, other_member, _) = member(server, &tenant, "employee").await;
    let published = json!({"name": "Signed", "content": paragraph("x"), "status": "published"});
    let signed = tenant.api.post("/v1/policies", published).await.ok(201);
    let unsigned =
        tenant.api.post("/v1/policies", json!({"name": "Unsigned", "content": paragraph("y"), "status": "published"}));
    let unsigned = unsigned.await.ok(201);
    tenant.api.post("/v1/policies", json!({"name": "Draft", "content": paragraph("z")})).await.ok(201);
    session.post(&format!("/v1/policies/{}/sign", str_of(&signed, "id")), json!({})).await.ok(200);

    let own = session.get(&format!("/v1/people/{member_id}/policies")).await.ok(200);
    let rows = own["data"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "published policies only: {own}");
    assert_eq!(rows[0]["policy"]["id"], signed["id"]);
    assert_eq!(rows[0]["signed"], true);
    assert!(rows[0]["signedAt"].is_string());
    assert_eq!(rows[1]["policy"]["id"], unsigned["id"]);
    assert_eq!((&rows[1]["signed"], &rows[1]["signedAt"]), (&json!(false), &Value::Null));

    // another member's list takes reading people; the owner may
    session.get(&format!("/v1/people/{other_member}/policies")).await.problem(403);
    let theirs = tenant.api.get(&format!("/v1/people/{member_id}/policies")).await.ok(200);
    assert_eq!(theirs, own);
    tenant.api.get(&format!("/v1/people/{}/policies", missing_id("mem_"))).await.problem(404);
    tenant.api.get("/v1/people/nobody/policies").await.problem(404);
}
