//! `/v1/policies`: rich-text content, publishing and archiving, and the envelope without `count`.

use serde_json::{Value, json};

use crate::checks::{
    assert_acting_user, assert_id, assert_lacks, assert_later, assert_timestamp, data, ids, missing_id, str_of, tick,
    without,
};
use crate::client::Client;
use crate::harness::TestServer;

api_tests!(
    create_answers_201_with_defaults,
    list_has_no_count,
    content_round_trips_unchanged,
    invalid_content_is_400_naming_content,
    content_nests_at_most_32_deep,
    publishing_and_archiving_set_their_timestamps,
    signed_by_is_read_only,
    get_update_and_delete_by_id,
    assignee_and_approver_must_be_members_here,
);

/// Fields a response adds around the policy itself.
const ENVELOPE: [&str; 2] = ["authType", "authenticatedUser"];

/// A document using nested nodes, `attrs` null and with `textAlign`, marks and non-ASCII text.
pub fn rich_content() -> Value {
    json!([
        {"type": "heading", "attrs": {"level": 1, "textAlign": "center"},
         "content": [{"type": "text", "text": "Access control"}]},
        {"type": "paragraph", "attrs": null, "content": [
            {"type": "text", "text": "Grant ", "marks": []},
            {"type": "text", "text": "least", "marks": [
                {"type": "bold"},
                {"type": "link", "attrs": {"href": "https://example.test/p", "target": null}}
            ]},
            {"type": "text", "text": " privilege — ünïcødé ✓ \"quoted\""}
        ]},
        {"type": "bulletList", "content": [
            {"type": "listItem", "content": [
                {"type": "paragraph", "attrs": {"textAlign": "left"},
                 "content": [{"type": "text", "text": "nested"}]}
            ]}
        ]},
        {"type": "horizontalRule"}
    ])
}

/// Creates a policy through the API and returns the 201 body.
pub async fn create(client: &Client, name: &str) -> Value {
    let body = json!({"name": name, "content": [{"type": "paragraph", "content": [{"type": "text", "text": "x"}]}]});
    client.post("/v1/policies", body).await.ok(201)
}

async fn create_answers_201_with_defaults(server: &TestServer) {
    let tenant = server.tenant().await;
    let policy =
        tenant.api.post("/v1/policies", json!({"name": "Access Control", "content": rich_content()})).await.ok(201);
    assert_id(&policy["id"], "pol_");
    assert_eq!(policy["organizationId"], tenant.org_id.as_str());
    assert_eq!(policy["name"], "Access Control");
    assert!(policy["description"].is_string(), "{policy}");
    assert_eq!(policy["status"], "draft");
    assert_eq!(policy["frequency"], "yearly");
    assert_eq!(policy["department"], "none");
    assert_eq!(policy["isRequiredToSign"], true);
    assert_eq!(policy["signedBy"], json!([]));
    assert_eq!(policy["isArchived"], false);
    for key in ["lastArchivedAt", "lastPublishedAt", "assigneeId", "approverId", "policyTemplateId"] {
        assert_eq!(policy[key], Value::Null, "{key} in {policy}");
    }
    for key in ["reviewDate", "createdAt", "updatedAt"] {
        assert_timestamp(&policy[key]);
    }
    assert_eq!(policy["authType"], "api-key");
    assert_lacks(&policy, &["authenticatedUser"]);

    let policy = create(&tenant.session, "By session").await;
    assert_eq!(policy["authType"], "session");
    assert_acting_user(&policy, &tenant.owner);
}

async fn list_has_no_count(server: &TestServer) {
    let tenant = server.tenant().await;
    let first = create(&tenant.api, "First").await;
    tick().await;
    let second = create(&tenant.api, "Second").await;

    let list = tenant.api.get("/v1/policies").await.ok(200);
    assert_lacks(&list, &["count"]);
    assert_eq!(list["authType"], "api-key");
    assert_acting_user(&list, &tenant.owner);
    assert_eq!(ids(&list), [str_of(&second, "id"), str_of(&first, "id")]);
    assert_eq!(data(&list)[1], without(&first, &ENVELOPE));

    let (reader, _) = server.member(&tenant, "auditor").await;
    let session = server.session(&reader.id, Some(&tenant.org_id)).await;
    let list = session.get("/v1/policies").await.ok(200);
    assert_lacks(&list, &["count"]);
    assert_eq!(list["authType"], "session");
    assert_acting_user(&list, &reader);
}

async fn content_round_trips_unchanged(server: &TestServer) {
    let tenant = server.tenant().await;
    let policy = tenant.api.post("/v1/policies", json!({"name": "Rich", "content": rich_content()})).await.ok(201);
    assert_eq!(policy["content"], rich_content());
    let path = format!("/v1/policies/{}", str_of(&policy, "id"));
    assert_eq!(tenant.api.get(&path).await.ok(200)["content"], rich_content());
    assert_eq!(data(&tenant.api.get("/v1/policies").await.ok(200))[0]["content"], rich_content());

    let replacement = json!([{"type": "paragraph", "attrs": {"textAlign": "right"},
                              "content": [{"type": "text", "text": "v2", "marks": [{"type": "italic"}]}]}]);
    let updated = tenant.api.patch(&path, json!({"content": replacement})).await.ok(200);
    assert_eq!(updated["content"], replacement);
    assert_eq!(tenant.api.get(&path).await.ok(200)["content"], replacement);
}

async fn invalid_content_is_400_naming_content(server: &TestServer) {
    let tenant = server.tenant().await;
    let invalid = [
        json!(null),
        json!("just text"),
        json!({"type": "doc"}),
        json!(["paragraph"]),
        json!([{}]),
        json!([{"type": 5}]),
        json!([{"type": "paragraph", "attrs": "center"}]),
        json!([{"type": "paragraph", "attrs": []}]),
        json!([{"type": "paragraph", "content": {"type": "text", "text": "x"}}]),
        json!([{"type": "paragraph", "content": ["x"]}]),
        json!([{"type": "paragraph", "content": [{"type": "text"}]}]),
        json!([{"type": "paragraph", "content": [{"type": "text", "text": 5}]}]),
    ];
    for content in &invalid {
        tenant.api.post("/v1/policies", json!({"name": "Bad", "content": content})).await.invalid("content");
    }
    tenant.api.post("/v1/policies", json!({"name": "No content"})).await.invalid("content");
    tenant.api.post("/v1/policies", json!({"content": rich_content()})).await.invalid("name");

    let policy = create(&tenant.api, "Good").await;
    let path = format!("/v1/policies/{}", str_of(&policy, "id"));
    for content in invalid {
        tenant.api.patch(&path, json!({"content": content})).await.invalid("content");
    }
    assert_eq!(tenant.api.get(&path).await.ok(200), without(&policy, &ENVELOPE), "failed updates change nothing");
    assert_eq!(data(&tenant.api.get("/v1/policies").await.ok(200)).len(), 1, "failed creates store nothing");
}

/// A node `depth` levels deep: `depth - 1` blockquotes around a text node.
fn nested(depth: usize) -> Value {
    (1..depth)
        .fold(json!({"type": "text", "text": "bottom"}), |node, _| json!({"type": "blockquote", "content": [node]}))
}

/// docs/api.md: policy content nests at most 32 deep.
async fn content_nests_at_most_32_deep(server: &TestServer) {
    let tenant = server.tenant().await;
    let policy = tenant.api.post("/v1/policies", json!({"name": "Deep", "content": [nested(32)]})).await.ok(201);
    assert_eq!(policy["content"], json!([nested(32)]));
    tenant.api.post("/v1/policies", json!({"name": "Too deep", "content": [nested(33)]})).await.invalid("content");
}

async fn publishing_and_archiving_set_their_timestamps(server: &TestServer) {
    let tenant = server.tenant().await;
    let policy = create(&tenant.api, "Lifecycle").await;
    let path = format!("/v1/policies/{}", str_of(&policy, "id"));

    let published = tenant.api.patch(&path, json!({"status": "published"})).await.ok(200);
    assert_eq!(published["status"], "published");
    assert_later(&published["lastPublishedAt"], &policy["createdAt"]);
    assert_eq!(published["lastArchivedAt"], Value::Null);
    assert_eq!(published["isArchived"], false);

    let archived = tenant.api.patch(&path, json!({"isArchived": true})).await.ok(200);
    assert_eq!(archived["isArchived"], true);
    assert_later(&archived["lastArchivedAt"], &policy["createdAt"]);
    assert_eq!(archived["lastPublishedAt"], published["lastPublishedAt"], "archiving keeps lastPublishedAt");
    let fetched = tenant.api.get(&path).await.ok(200);
    assert_eq!(fetched["lastArchivedAt"], archived["lastArchivedAt"]);
    assert_eq!(fetched["lastPublishedAt"], published["lastPublishedAt"]);

    let body = json!({"name": "Born published", "content": rich_content(), "status": "published", "isArchived": true});
    let born = tenant.api.post("/v1/policies", body).await.ok(201);
    assert_timestamp(&born["lastPublishedAt"]);
    assert_timestamp(&born["lastArchivedAt"]);

    tenant.api.patch(&path, json!({"status": "live"})).await.invalid("status");
    tenant.api.patch(&path, json!({"frequency": "hourly"})).await.invalid("frequency");
    tenant.api.patch(&path, json!({"department": "sales"})).await.invalid("department");
    tenant.api.patch(&path, json!({"isArchived": "yes"})).await.invalid("isArchived");
}

async fn signed_by_is_read_only(server: &TestServer) {
    let tenant = server.tenant().await;
    let body = json!({"name": "Sign", "content": rich_content(), "signedBy": []});
    tenant.api.post("/v1/policies", body).await.invalid("signedBy");
    let policy = create(&tenant.api, "Sign").await;
    let path = format!("/v1/policies/{}", str_of(&policy, "id"));
    tenant.api.patch(&path, json!({"signedBy": [tenant.owner.id]})).await.invalid("signedBy");
    assert_eq!(tenant.api.get(&path).await.ok(200)["signedBy"], json!([]));
}

async fn get_update_and_delete_by_id(server: &TestServer) {
    let tenant = server.tenant().await;
    let policy = create(&tenant.api, "Backup").await;
    let path = format!("/v1/policies/{}", str_of(&policy, "id"));
    assert_eq!(tenant.api.get(&path).await.ok(200), without(&policy, &ENVELOPE), "GET one is the bare policy");

    tick().await;
    let changes = json!({"name": "Backup and Restore", "description": "How we back up.", "frequency": "quarterly",
                         "department": "it", "isRequiredToSign": false});
    let updated = tenant.api.patch(&path, changes.clone()).await.ok(200);
    for (key, value) in changes.as_object().into_iter().flatten() {
        assert_eq!(&updated[key], value, "{key} in {updated}");
    }
    assert_eq!(updated["status"], policy["status"]);
    assert_eq!(updated["content"], policy["content"]);
    assert_eq!(updated["reviewDate"], policy["reviewDate"]);
    assert_eq!(updated["authType"], "api-key");
    assert_lacks(&updated, &["authenticatedUser"]);
    assert_later(&updated["updatedAt"], &policy["updatedAt"]);
    assert_eq!(tenant.api.get(&path).await.ok(200), without(&updated, &ENVELOPE));

    let updated = tenant.session.patch(&path, json!({"reviewDate": "2030-01-31T00:00:00Z"})).await.ok(200);
    assert_eq!(updated["authType"], "session");
    assert_acting_user(&updated, &tenant.owner);
    assert_timestamp(&updated["reviewDate"]);
    assert!(str_of(&updated, "reviewDate").starts_with("2030-01-31T00:00:00"), "{updated}");

    let deleted = tenant.api.delete(&path).await.ok(200);
    assert!(deleted["message"].is_string(), "{deleted}");
    assert_eq!(deleted["deletedPolicy"], json!({"id": policy["id"], "name": "Backup and Restore"}));
    assert_eq!(deleted["authType"], "api-key");
    assert_lacks(&deleted, &["authenticatedUser"]);
    tenant.api.get(&path).await.problem(404);
    tenant.api.delete(&path).await.problem(404);
}

/// `assigneeId` and `approverId` name active members of the same organization; null clears them.
async fn assignee_and_approver_must_be_members_here(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let (_, approver) = server.member(&tenant, "approver").await;
    let policy = create(&tenant.api, "Owned").await;
    let path = format!("/v1/policies/{}", str_of(&policy, "id"));

    let strangers = [other.owner_member_id.clone(), other.owner.id.clone(), missing_id("mem_"), "nobody".to_owned()];
    for field in ["assigneeId", "approverId"] {
        for stranger in &strangers {
            tenant.api.patch(&path, json!({field: stranger})).await.invalid(field);
            let body = json!({"name": "P", "content": rich_content(), field: stranger});
            tenant.api.post("/v1/policies", body).await.invalid(field);
        }
    }
    assert_eq!(tenant.api.get(&path).await.ok(200), without(&policy, &ENVELOPE), "failed updates change nothing");

    let body = json!({"assigneeId": tenant.owner_member_id, "approverId": approver["id"]});
    let assigned = tenant.api.patch(&path, body).await.ok(200);
    assert_eq!(assigned["assigneeId"], tenant.owner_member_id.as_str());
    assert_eq!(assigned["approverId"], approver["id"]);
    let cleared = tenant.api.patch(&path, json!({"assigneeId": null, "approverId": null})).await.ok(200);
    assert_eq!((&cleared["assigneeId"], &cleared["approverId"]), (&Value::Null, &Value::Null));
}
