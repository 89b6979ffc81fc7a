//! `/v1/vendors`: defaults, the list envelope, partial updates, nulls and validation.

use serde_json::{Value, json};

use crate::checks::{
    assert_acting_user, assert_id, assert_lacks, assert_later, assert_only_changed, assert_timestamp, data, ids,
    missing_id, str_of, tick, without,
};
use crate::client::Client;
use crate::harness::TestServer;

api_tests!(
    create_uses_the_spec_defaults,
    create_requires_name_and_description,
    list_items_omit_organization_id,
    update_changes_only_the_given_fields,
    explicit_null_clears_nullable_fields,
    invalid_updates_are_400_naming_the_field,
    delete_removes_the_vendor,
);

const ENVELOPE: [&str; 2] = ["authType", "authenticatedUser"];

/// Creates a vendor through the API and returns the 201 body.
pub async fn create(client: &Client, name: &str) -> Value {
    client.post("/v1/vendors", json!({"name": name, "description": "Hosts our data."})).await.ok(201)
}

async fn create_uses_the_spec_defaults(server: &TestServer) {
    let tenant = server.tenant().await;
    let vendor = create(&tenant.api, "Cloudy").await;
    assert_id(&vendor["id"], "vnd_");
    assert_eq!(vendor["organizationId"], tenant.org_id.as_str());
    assert_eq!(vendor["name"], "Cloudy");
    assert_eq!(vendor["description"], "Hosts our data.");
    let defaults = [
        ("category", "other"),
        ("status", "not_assessed"),
        ("inherentProbability", "very_unlikely"),
        ("inherentImpact", "insignificant"),
        ("residualProbability", "very_unlikely"),
        ("residualImpact", "insignificant"),
    ];
    for (key, value) in defaults {
        assert_eq!(vendor[key], value, "{key} in {vendor}");
    }
    assert_eq!(vendor["website"], Value::Null);
    assert_eq!(vendor["assigneeId"], Value::Null);
    assert_timestamp(&vendor["createdAt"]);
    assert_timestamp(&vendor["updatedAt"]);
    assert_eq!(vendor["authType"], "api-key");
    assert_lacks(&vendor, &["authenticatedUser"]);

    let full = json!({"name": "Payroll Inc", "description": "Payroll.", "category": "finance", "status": "assessed",
                      "inherentProbability": "likely", "inherentImpact": "major", "residualProbability": "unlikely",
                      "residualImpact": "minor", "website": "https://payroll.example.test",
                      "assigneeId": tenant.owner_member_id});
    let vendor = tenant.session.post("/v1/vendors", full.clone()).await.ok(201);
    for (key, value) in full.as_object().into_iter().flatten() {
        assert_eq!(&vendor[key], value, "{key} in {vendor}");
    }
    assert_eq!(vendor["authType"], "session");
    assert_acting_user(&vendor, &tenant.owner);
}

async fn create_requires_name_and_description(server: &TestServer) {
    let tenant = server.tenant().await;
    let post = |body: Value| tenant.api.post("/v1/vendors", body);
    post(json!({"description": "d"})).await.invalid("name");
    post(json!({"name": "n"})).await.invalid("description");
    post(json!({"name": " ", "description": "d"})).await.invalid("name");
    post(json!({"name": "n".repeat(256), "description": "d"})).await.invalid("name");
    post(json!({"name": "n", "description": "d", "category": "spaceship"})).await.invalid("category");
    post(json!({"name": "n", "description": "d", "website": "ftp://files.example.test"})).await.invalid("website");
    post(json!({"name": "n", "description": "d", "rating": 5})).await.invalid("rating");
    assert_eq!(tenant.api.get("/v1/vendors").await.ok(200)["count"], 0);
}

async fn list_items_omit_organization_id(server: &TestServer) {
    let tenant = server.tenant().await;
    let first = create(&tenant.api, "First").await;
    tick().await;
    let second = create(&tenant.api, "Second").await;

    let list = tenant.api.get("/v1/vendors").await.ok(200);
    assert_eq!(list["count"], 2);
    assert_eq!(list["authType"], "api-key");
    assert_acting_user(&list, &tenant.owner);
    assert_eq!(ids(&list), [str_of(&second, "id"), str_of(&first, "id")]);
    let item = &data(&list)[1];
    assert_lacks(item, &["organizationId", "authType", "authenticatedUser"]);

    let one = tenant.api.get(&format!("/v1/vendors/{}", str_of(&first, "id"))).await.ok(200);
    assert_eq!(one["organizationId"], tenant.org_id.as_str(), "single items carry organizationId");
    assert_lacks(&one, &ENVELOPE);
    assert_eq!(one, without(&first, &ENVELOPE));
    assert_eq!(*item, without(&one, &["organizationId"]));

    let list = tenant.session.get("/v1/vendors").await.ok(200);
    assert_eq!(list["authType"], "session");
    assert_acting_user(&list, &tenant.owner);
}

async fn update_changes_only_the_given_fields(server: &TestServer) {
    let tenant = server.tenant().await;
    let vendor = create(&tenant.api, "Partial").await;
    let path = format!("/v1/vendors/{}", str_of(&vendor, "id"));

    tick().await;
    let updated = tenant.api.patch(&path, json!({"status": "in_progress"})).await.ok(200);
    assert_eq!(updated["status"], "in_progress");
    assert_only_changed(&vendor, &updated, &["status"]);
    assert_later(&updated["updatedAt"], &vendor["updatedAt"]);
    assert_eq!(updated["organizationId"], tenant.org_id.as_str());
    assert_eq!(updated["authType"], "api-key");
    assert_lacks(&updated, &["authenticatedUser"]);

    let body = json!({"inherentImpact": "severe", "website": "http://vendor.example.test/about"});
    let updated2 = tenant.session.patch(&path, body).await.ok(200);
    assert_eq!(updated2["inherentImpact"], "severe");
    assert_eq!(updated2["website"], "http://vendor.example.test/about");
    assert_only_changed(&updated, &updated2, &["inherentImpact", "website"]);
    assert_eq!(updated2["authType"], "session");
    assert_acting_user(&updated2, &tenant.owner);
    assert_eq!(tenant.api.get(&path).await.ok(200), without(&updated2, &ENVELOPE));

    let unchanged = tenant.api.patch(&path, json!({})).await.ok(200);
    assert_eq!(without(&unchanged, &ENVELOPE), without(&updated2, &ENVELOPE), "an empty PATCH changes nothing");
}

async fn explicit_null_clears_nullable_fields(server: &TestServer) {
    let tenant = server.tenant().await;
    let vendor = create(&tenant.api, "Nulls").await;
    let path = format!("/v1/vendors/{}", str_of(&vendor, "id"));
    let set = json!({"website": "https://nulls.example.test", "assigneeId": tenant.owner_member_id});
    let updated = tenant.api.patch(&path, set).await.ok(200);
    assert_eq!(updated["assigneeId"], tenant.owner_member_id.as_str());
    assert_eq!(updated["website"], "https://nulls.example.test");

    let cleared = tenant.api.patch(&path, json!({"website": null, "assigneeId": null})).await.ok(200);
    assert_eq!(cleared["website"], Value::Null);
    assert_eq!(cleared["assigneeId"], Value::Null);
    assert_only_changed(&updated, &cleared, &["website", "assigneeId"]);
    let fetched = tenant.api.get(&path).await.ok(200);
    assert_eq!((&fetched["website"], &fetched["assigneeId"]), (&Value::Null, &Value::Null));
}

async fn invalid_updates_are_400_naming_the_field(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let vendor = create(&tenant.api, "Strict").await;
    let path = format!("/v1/vendors/{}", str_of(&vendor, "id"));
    let (_, inactive) = server.member(&tenant, "former").await;
    let inactive_path = format!("/v1/people/{}", str_of(&inactive, "id"));
    tenant.api.patch(&inactive_path, json!({"isActive": false})).await.ok(200);

    let cases = [
        ("name", json!(null)),
        ("description", json!(null)),
        ("category", json!(null)),
        ("status", json!(null)),
        ("residualProbability", json!(null)),
        ("name", json!(5)),
        ("name", json!("")),
        ("category", json!("spaceship")),
        ("status", json!("done")),
        ("inherentProbability", json!("often")),
        ("inherentImpact", json!("huge")),
        ("residualImpact", json!(["minor"])),
        ("website", json!("not a url")),
        ("website", json!("ftp://files.example.test")),
        ("website", json!(42)),
        ("website", json!(format!("https://example.test/{}", "a".repeat(2048)))),
        ("description", json!("x".repeat(10_001))),
        ("assigneeId", json!(other.owner_member_id)),
        ("assigneeId", json!(inactive["id"])),
        ("assigneeId", json!(missing_id("mem_"))),
        ("assigneeId", json!(tenant.owner.id)),
        ("assigneeId", json!("someone")),
        ("colour", json!("red")),
    ];
    for (field, value) in cases {
        tenant.api.patch(&path, json!({field: value})).await.invalid(field);
    }
    assert_eq!(tenant.api.get(&path).await.ok(200), without(&vendor, &ENVELOPE), "failed updates change nothing");
}

async fn delete_removes_the_vendor(server: &TestServer) {
    let tenant = server.tenant().await;
    let vendor = create(&tenant.api, "Gone").await;
    let keep = create(&tenant.api, "Kept").await;
    let path = format!("/v1/vendors/{}", str_of(&vendor, "id"));
    let deleted = tenant.api.delete(&path).await.ok(200);
    assert!(deleted["message"].is_string(), "{deleted}");
    assert_eq!(deleted["deletedVendor"], json!({"id": vendor["id"], "name": "Gone"}));
    assert_eq!(deleted["authType"], "api-key");
    assert_lacks(&deleted, &["authenticatedUser"]);
    tenant.api.get(&path).await.problem(404);
    tenant.api.patch(&path, json!({"name": "Back"})).await.problem(404);
    tenant.api.delete(&path).await.problem(404);
    assert_eq!(ids(&tenant.api.get("/v1/vendors").await.ok(200)), [str_of(&keep, "id")]);

    let path = format!("/v1/vendors/{}", str_of(&keep, "id"));
    let deleted = tenant.session.delete(&path).await.ok(200);
    assert_eq!(deleted["authType"], "session");
    assert_acting_user(&deleted, &tenant.owner);
}
