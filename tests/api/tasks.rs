//! `/v1/tasks`: defaults, validation, partial updates, nulls and the permanent delete.

use serde_json::{Value, json};

use crate::checks::{
    assert_acting_user, assert_id, assert_lacks, assert_later, assert_only_changed, assert_timestamp, data, ids,
    missing_id, str_of, tick, without,
};
use crate::client::Client;
use crate::harness::TestServer;

api_tests!(
    create_uses_the_defaults,
    create_requires_a_title_and_valid_fields,
    list_is_newest_first_with_the_envelope,
    update_changes_only_the_given_fields,
    invalid_updates_are_400_naming_the_field,
    delete_is_permanent_and_reports_the_task,
);

const ENVELOPE: [&str; 2] = ["authType", "authenticatedUser"];

/// Creates a task through the API and returns the 201 body.
pub async fn create(client: &Client, title: &str) -> Value {
    client.post("/v1/tasks", json!({"title": title})).await.ok(201)
}

async fn create_uses_the_defaults(server: &TestServer) {
    let tenant = server.tenant().await;
    let task = create(&tenant.api, "Rotate keys").await;
    assert_id(&task["id"], "tsk_");
    assert_eq!(task["organizationId"], tenant.org_id.as_str());
    assert_eq!(task["title"], "Rotate keys");
    assert_eq!(task["description"], "");
    assert_eq!(task["status"], "todo");
    assert_eq!(task["assigneeId"], Value::Null);
    assert_timestamp(&task["createdAt"]);
    assert_timestamp(&task["updatedAt"]);
    assert_eq!(task["authType"], "api-key");
    assert_lacks(&task, &["authenticatedUser"]);

    for status in ["todo", "in_progress", "done", "not_relevant"] {
        let body = json!({"title": "Audit", "description": "Yearly.", "status": status,
                          "assigneeId": tenant.owner_member_id});
        let task = tenant.session.post("/v1/tasks", body.clone()).await.ok(201);
        for (key, value) in body.as_object().into_iter().flatten() {
            assert_eq!(&task[key], value, "{key} in {task}");
        }
        assert_eq!(task["authType"], "session");
        assert_acting_user(&task, &tenant.owner);
    }
    let task = tenant.api.post("/v1/tasks", json!({"title": "t", "assigneeId": null})).await.ok(201);
    assert_eq!(task["assigneeId"], Value::Null);
    let body = json!({"title": "x".repeat(255), "description": "d".repeat(10_000)});
    tenant.api.post("/v1/tasks", body).await.ok(201);
}

async fn create_requires_a_title_and_valid_fields(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let (_, former) = server.member(&tenant, "auditor").await;
    tenant.deactivate(str_of(&former, "id")).await;

    let post = |body: Value| tenant.api.post("/v1/tasks", body);
    let cases = [
        ("title", json!({"description": "d"})),
        ("title", json!({"title": ""})),
        ("title", json!({"title": "   "})),
        ("title", json!({"title": null})),
        ("title", json!({"title": 5})),
        ("title", json!({"title": "x".repeat(256)})),
        ("title", json!({"title": "a\0b"})),
        ("description", json!({"title": "t", "description": "d".repeat(10_001)})),
        ("description", json!({"title": "t", "description": null})),
        ("status", json!({"title": "t", "status": "open"})),
        ("status", json!({"title": "t", "status": null})),
        ("assigneeId", json!({"title": "t", "assigneeId": other.owner_member_id})),
        ("assigneeId", json!({"title": "t", "assigneeId": str_of(&former, "id")})),
        ("assigneeId", json!({"title": "t", "assigneeId": missing_id("mem_")})),
        ("assigneeId", json!({"title": "t", "assigneeId": tenant.owner.id})),
        ("assigneeId", json!({"title": "t", "assigneeId": "bob"})),
        ("priority", json!({"title": "t", "priority": "high"})),
    ];
    for (field, body) in cases {
        post(body).await.invalid(field);
    }
    let list = tenant.api.get("/v1/tasks").await.ok(200);
    assert_eq!(list["count"], 0, "{list}");
}

async fn list_is_newest_first_with_the_envelope(server: &TestServer) {
    let tenant = server.tenant().await;
    let empty = tenant.api.get("/v1/tasks").await.ok(200);
    assert_eq!((&empty["count"], empty["data"].as_array().map(Vec::len)), (&json!(0), Some(0)), "{empty}");

    let first = create(&tenant.api, "First").await;
    tick().await;
    let second = create(&tenant.api, "Second").await;

    let list = tenant.api.get("/v1/tasks").await.ok(200);
    assert_eq!(list["count"], 2);
    assert_eq!(list["authType"], "api-key");
    assert_acting_user(&list, &tenant.owner);
    assert_eq!(ids(&list), [str_of(&second, "id"), str_of(&first, "id")]);
    for item in data(&list) {
        assert_lacks(item, &ENVELOPE);
        assert_id(&item["id"], "tsk_");
    }

    let one = tenant.api.get(&format!("/v1/tasks/{}", str_of(&first, "id"))).await.ok(200);
    assert_lacks(&one, &ENVELOPE);
    assert_eq!(one, without(&first, &ENVELOPE));

    let list = tenant.session.get("/v1/tasks").await.ok(200);
    assert_eq!(list["authType"], "session");
    assert_acting_user(&list, &tenant.owner);
    tenant.api.get(&format!("/v1/tasks/{}", missing_id("tsk_"))).await.problem(404);
    tenant.api.get(&format!("/v1/tasks/{}", missing_id("rsk_"))).await.problem(404);
}

async fn update_changes_only_the_given_fields(server: &TestServer) {
    let tenant = server.tenant().await;
    let task = create(&tenant.api, "Partial").await;
    let path = format!("/v1/tasks/{}", str_of(&task, "id"));

    tick().await;
    let updated = tenant.api.patch(&path, json!({"status": "in_progress"})).await.ok(200);
    assert_eq!(updated["status"], "in_progress");
    assert_only_changed(&task, &updated, &["status"]);
    assert_later(&updated["updatedAt"], &task["updatedAt"]);
    assert_eq!(updated["authType"], "api-key");
    assert_lacks(&updated, &["authenticatedUser"]);

    let body = json!({"description": "Now with details.", "assigneeId": tenant.owner_member_id, "title": "Renamed"});
    let updated2 = tenant.session.patch(&path, body.clone()).await.ok(200);
    for (key, value) in body.as_object().into_iter().flatten() {
        assert_eq!(&updated2[key], value, "{key} in {updated2}");
    }
    assert_only_changed(&updated, &updated2, &["description", "assigneeId", "title"]);
    assert_eq!(updated2["authType"], "session");
    assert_acting_user(&updated2, &tenant.owner);
    assert_eq!(tenant.api.get(&path).await.ok(200), without(&updated2, &ENVELOPE));

    let cleared = tenant.api.patch(&path, json!({"assigneeId": null})).await.ok(200);
    assert_eq!(cleared["assigneeId"], Value::Null);
    assert_only_changed(&updated2, &cleared, &["assigneeId"]);

    let unchanged = tenant.api.patch(&path, json!({})).await.ok(200);
    assert_eq!(without(&unchanged, &ENVELOPE), without(&cleared, &ENVELOPE), "an empty PATCH changes nothing");
    for status in ["done", "not_relevant", "todo"] {
        assert_eq!(tenant.api.patch(&path, json!({"status": status})).await.ok(200)["status"], status);
    }
}

async fn invalid_updates_are_400_naming_the_field(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let task = create(&tenant.api, "Strict").await;
    let path = format!("/v1/tasks/{}", str_of(&task, "id"));
    let cases = [
        ("title", json!(null)),
        ("title", json!("")),
        ("title", json!("x".repeat(256))),
        ("description", json!(null)),
        ("description", json!("x".repeat(10_001))),
        ("status", json!(null)),
        ("status", json!("closed")),
        ("assigneeId", json!(other.owner_member_id)),
        ("assigneeId", json!(missing_id("mem_"))),
        ("assigneeId", json!(7)),
        ("dueDate", json!("2030-01-01")),
    ];
    for (field, value) in cases {
        tenant.api.patch(&path, json!({field: value})).await.invalid(field);
    }
    tenant.api.patch(&path, json!({"title": "Fine", "status": "closed"})).await.invalid("status");
    assert_eq!(tenant.api.get(&path).await.ok(200), without(&task, &ENVELOPE), "failed updates change nothing");
    tenant.api.patch(&format!("/v1/tasks/{}", missing_id("tsk_")), json!({"title": "x"})).await.problem(404);
}

async fn delete_is_permanent_and_reports_the_task(server: &TestServer) {
    let tenant = server.tenant().await;
    let task = create(&tenant.api, "Shred").await;
    let path = format!("/v1/tasks/{}", str_of(&task, "id"));
    let deleted = tenant.api.delete(&path).await.ok(200);
    assert!(deleted["message"].is_string(), "{deleted}");
    assert_eq!(deleted["deletedTask"], json!({"id": task["id"], "title": "Shred"}));
    assert_eq!(deleted["authType"], "api-key");
    tenant.api.get(&path).await.problem(404);
    tenant.api.patch(&path, json!({"title": "Back"})).await.problem(404);
    tenant.api.delete(&path).await.problem(404);
    assert_eq!(tenant.api.get("/v1/tasks").await.ok(200)["count"], 0);

    let task = create(&tenant.api, "Burn").await;
    let path = format!("/v1/tasks/{}", str_of(&task, "id"));
    let deleted = tenant.session.delete(&path).await.ok(200);
    assert_eq!(deleted["deletedTask"], json!({"id": task["id"], "title": "Burn"}));
    assert_eq!(deleted["authType"], "session");
    assert_acting_user(&deleted, &tenant.owner);
    tenant.session.get(&path).await.problem(404);
}
