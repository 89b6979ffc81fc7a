//! `/v1/risks`: defaults, fields absent from list items, partial updates, nulls, validation and the
//! permanent delete.

use compliance_client::types::{
    Department, Impact, Likelihood, NewRisk, RiskCategory, RiskChanges, RiskStatus, TreatmentStrategy,
};
use serde_json::{Value, json};

use crate::checks::{
    assert_acting_user, assert_has, assert_id, assert_lacks, assert_later, assert_only_changed, assert_timestamp, data,
    ids, missing_id, str_of, tick, without,
};
use crate::client::Client;
use crate::harness::TestServer;

api_tests!(
    create_uses_the_spec_defaults,
    create_requires_title_description_and_category,
    list_items_omit_the_detail_fields,
    update_changes_only_the_given_fields,
    explicit_null_clears_nullable_fields,
    invalid_updates_are_400_naming_the_field,
    delete_is_permanent_and_reports_the_risk,
    text_that_the_database_cannot_hold_is_400,
    concurrent_patches_of_different_fields_all_apply,
);

const ENVELOPE: [&str; 2] = ["authType", "authenticatedUser"];

/// Fields the spec marks "absent from list items".
const DETAIL_ONLY: [&str; 5] =
    ["department", "residualLikelihood", "residualImpact", "treatmentStrategyDescription", "organizationId"];

/// Creates a risk through the API and returns the 201 body.
pub async fn create(client: &Client, title: &str) -> Value {
    let body = json!({"title": title, "description": "Unencrypted disks.", "category": "technology"});
    client.post("/v1/risks", body).await.ok(201)
}

async fn create_uses_the_spec_defaults(server: &TestServer) {
    let tenant = server.tenant().await;
    let risk = create(&tenant.api, "Laptop theft").await;
    assert_id(&risk["id"], "rsk_");
    assert_eq!(risk["organizationId"], tenant.org_id.as_str());
    assert_eq!(risk["title"], "Laptop theft");
    assert_eq!(risk["description"], "Unencrypted disks.");
    assert_eq!(risk["category"], "technology");
    let defaults = [
        ("status", "open"),
        ("likelihood", "very_unlikely"),
        ("impact", "insignificant"),
        ("residualLikelihood", "very_unlikely"),
        ("residualImpact", "insignificant"),
        ("treatmentStrategy", "accept"),
    ];
    for (key, value) in defaults {
        assert_eq!(risk[key], value, "{key} in {risk}");
    }
    for key in ["department", "treatmentStrategyDescription", "assigneeId"] {
        assert_eq!(risk[key], Value::Null, "{key} in {risk}");
    }
    assert_timestamp(&risk["createdAt"]);
    assert_timestamp(&risk["updatedAt"]);
    assert_eq!(risk["authType"], "api-key");
    assert_lacks(&risk, &["authenticatedUser"]);

    let full = json!({"title": "Vendor breach", "description": "d", "category": "vendor_management",
                      "department": "itsm", "status": "pending", "likelihood": "likely", "impact": "severe",
                      "residualLikelihood": "possible", "residualImpact": "moderate",
                      "treatmentStrategy": "mitigate", "treatmentStrategyDescription": "Contract clauses.",
                      "assigneeId": tenant.owner_member_id});
    let risk = tenant.session.post("/v1/risks", full.clone()).await.ok(201);
    for (key, value) in full.as_object().into_iter().flatten() {
        assert_eq!(&risk[key], value, "{key} in {risk}");
    }
    assert_eq!(risk["authType"], "session");
    assert_acting_user(&risk, &tenant.owner);
}

async fn create_requires_title_description_and_category(server: &TestServer) {
    let tenant = server.tenant().await;
    let post = |body: Value| tenant.api.post("/v1/risks", body);
    post(json!({"description": "d", "category": "people"})).await.invalid("title");
    post(json!({"title": "t", "category": "people"})).await.invalid("description");
    post(json!({"title": "t", "description": "d"})).await.invalid("category");
    post(json!({"title": "", "description": "d", "category": "people"})).await.invalid("title");
    post(json!({"title": "t", "description": "d", "category": "weather"})).await.invalid("category");
    post(json!({"title": "t", "description": "d", "category": "people", "likelihood": 3})).await.invalid("likelihood");
    post(json!({"title": "t", "description": "d", "category": "people", "score": 3})).await.invalid("score");
    assert_eq!(tenant.api.get("/v1/risks").await.ok(200)["count"], 0);
}

async fn list_items_omit_the_detail_fields(server: &TestServer) {
    let tenant = server.tenant().await;
    let first = create(&tenant.api, "First").await;
    tick().await;
    let second = create(&tenant.api, "Second").await;

    let list = tenant.api.get("/v1/risks").await.ok(200);
    assert_eq!(list["count"], 2);
    assert_eq!(list["authType"], "api-key");
    assert_acting_user(&list, &tenant.owner);
    assert_eq!(ids(&list), [str_of(&second, "id"), str_of(&first, "id")]);
    for item in data(&list) {
        assert_lacks(item, &DETAIL_ONLY);
        assert_lacks(item, &ENVELOPE);
    }

    let one = tenant.api.get(&format!("/v1/risks/{}", str_of(&first, "id"))).await.ok(200);
    assert_has(&one, &DETAIL_ONLY);
    assert_lacks(&one, &ENVELOPE);
    assert_eq!(one, without(&first, &ENVELOPE));
    assert_eq!(data(&list)[1], without(&one, &DETAIL_ONLY));

    let list = tenant.session.get("/v1/risks").await.ok(200);
    assert_eq!(list["authType"], "session");
    assert_acting_user(&list, &tenant.owner);
}

async fn update_changes_only_the_given_fields(server: &TestServer) {
    let tenant = server.tenant().await;
    let risk = create(&tenant.api, "Partial").await;
    let path = format!("/v1/risks/{}", str_of(&risk, "id"));

    tick().await;
    let updated = tenant.api.patch(&path, json!({"likelihood": "likely", "status": "pending"})).await.ok(200);
    assert_eq!((&updated["likelihood"], &updated["status"]), (&json!("likely"), &json!("pending")));
    assert_only_changed(&risk, &updated, &["likelihood", "status"]);
    assert_later(&updated["updatedAt"], &risk["updatedAt"]);
    assert_eq!(updated["organizationId"], tenant.org_id.as_str());
    assert_eq!(updated["authType"], "api-key");
    assert_lacks(&updated, &["authenticatedUser"]);

    let body = json!({"department": "qms", "treatmentStrategyDescription": "Encrypt all disks."});
    let updated2 = tenant.session.patch(&path, body).await.ok(200);
    assert_eq!(updated2["department"], "qms");
    assert_eq!(updated2["treatmentStrategyDescription"], "Encrypt all disks.");
    assert_only_changed(&updated, &updated2, &["department", "treatmentStrategyDescription"]);
    assert_eq!(updated2["authType"], "session");
    assert_acting_user(&updated2, &tenant.owner);
    assert_eq!(tenant.api.get(&path).await.ok(200), without(&updated2, &ENVELOPE));

    let unchanged = tenant.api.patch(&path, json!({})).await.ok(200);
    assert_eq!(without(&unchanged, &ENVELOPE), without(&updated2, &ENVELOPE), "an empty PATCH changes nothing");
}

async fn explicit_null_clears_nullable_fields(server: &TestServer) {
    let tenant = server.tenant().await;
    let risk = create(&tenant.api, "Nulls").await;
    let path = format!("/v1/risks/{}", str_of(&risk, "id"));
    let set =
        json!({"department": "it", "treatmentStrategyDescription": "Later.", "assigneeId": tenant.owner_member_id});
    let updated = tenant.api.patch(&path, set).await.ok(200);
    assert_eq!(updated["assigneeId"], tenant.owner_member_id.as_str());

    let clear = json!({"department": null, "treatmentStrategyDescription": null, "assigneeId": null});
    let cleared = tenant.api.patch(&path, clear).await.ok(200);
    let nullable = ["department", "treatmentStrategyDescription", "assigneeId"];
    for key in nullable {
        assert_eq!(cleared[key], Value::Null, "{key} in {cleared}");
    }
    assert_only_changed(&updated, &cleared, &nullable);
    assert_eq!(tenant.api.get(&path).await.ok(200), without(&cleared, &ENVELOPE));
}

async fn invalid_updates_are_400_naming_the_field(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let risk = create(&tenant.api, "Strict").await;
    let path = format!("/v1/risks/{}", str_of(&risk, "id"));

    let cases = [
        ("title", json!(null)),
        ("description", json!(null)),
        ("category", json!(null)),
        ("status", json!(null)),
        ("likelihood", json!(null)),
        ("impact", json!(null)),
        ("residualLikelihood", json!(null)),
        ("residualImpact", json!(null)),
        ("treatmentStrategy", json!(null)),
        ("title", json!(["t"])),
        ("title", json!("x".repeat(256))),
        ("description", json!(false)),
        ("description", json!("x".repeat(10_001))),
        ("treatmentStrategyDescription", json!("x".repeat(10_001))),
        ("category", json!("weather")),
        ("department", json!("sales")),
        ("status", json!("done")),
        ("likelihood", json!("often")),
        ("impact", json!("huge")),
        ("residualLikelihood", json!(2)),
        ("treatmentStrategy", json!("ignore")),
        ("treatmentStrategyDescription", json!(7)),
        ("assigneeId", json!(other.owner_member_id)),
        ("assigneeId", json!(missing_id("mem_"))),
        ("assigneeId", json!(5)),
        ("severity", json!("high")),
    ];
    for (field, value) in cases {
        tenant.api.patch(&path, json!({field: value})).await.invalid(field);
    }
    // One bad field spoils the whole update.
    tenant.api.patch(&path, json!({"title": "Fine", "impact": "huge"})).await.invalid("impact");
    assert_eq!(tenant.api.get(&path).await.ok(200), without(&risk, &ENVELOPE), "failed updates change nothing");
}

async fn delete_is_permanent_and_reports_the_risk(server: &TestServer) {
    let tenant = server.tenant().await;
    let risk = create(&tenant.api, "Flood").await;
    let path = format!("/v1/risks/{}", str_of(&risk, "id"));
    let deleted = tenant.api.delete(&path).await.ok(200);
    assert!(deleted["message"].is_string(), "{deleted}");
    assert_eq!(deleted["deletedRisk"], json!({"id": risk["id"], "title": "Flood"}));
    assert_eq!(deleted["authType"], "api-key");
    assert_lacks(&deleted, &["authenticatedUser"]);
    tenant.api.get(&path).await.problem(404);
    tenant.api.patch(&path, json!({"title": "Back"})).await.problem(404);
    tenant.api.delete(&path).await.problem(404);
    assert_eq!(tenant.api.get("/v1/risks").await.ok(200)["count"], 0);

    let risk = create(&tenant.api, "Fire").await;
    let path = format!("/v1/risks/{}", str_of(&risk, "id"));
    let deleted = tenant.session.delete(&path).await.ok(200);
    assert_eq!(deleted["deletedRisk"], json!({"id": risk["id"], "title": "Fire"}));
    assert_eq!(deleted["authType"], "session");
    assert_acting_user(&deleted, &tenant.owner);
    tenant.session.get(&path).await.problem(404);
}

/// PostgreSQL text cannot hold NUL, and dates outside years 1–9999 do not fit RFC 3339: both are
/// refused up front, never a 500 from the database.
async fn text_that_the_database_cannot_hold_is_400(server: &TestServer) {
    let tenant = server.tenant().await;
    let body = json!({"title": "a\0b", "description": "d", "category": "other"});
    tenant.api.post("/v1/risks", body).await.invalid("title");
    let risk = create(&tenant.api, "Clean").await;
    let path = format!("/v1/risks/{}", str_of(&risk, "id"));
    tenant
        .api
        .patch(&path, json!({"treatmentStrategyDescription": "\0"}))
        .await
        .invalid("treatmentStrategyDescription");
    let policy = json!({"name": "P", "content": [], "reviewDate": "9999-12-31T23:30:00-01:00"});
    tenant.api.post("/v1/policies", policy).await.invalid("reviewDate");
    tenant.api.get("/v1/policies").await.ok(200);
}

/// Patches of different fields sent at once all land: none overwrites another with the value it
/// read before (PostgreSQL retries a write whose record changed since it was read).
async fn concurrent_patches_of_different_fields_all_apply(server: &TestServer) {
    let tenant = server.tenant().await;
    let client = server.typed_api(&tenant).await;
    let risk = client.create_risk(&NewRisk::new(RiskCategory::Other, "d".into(), "Contended".into())).await.unwrap();
    let changes = [
        RiskChanges { title: Some("Changed title".into()), ..Default::default() },
        RiskChanges { description: Some("Changed description".into()), ..Default::default() },
        RiskChanges { status: Some(RiskStatus::Closed), ..Default::default() },
        RiskChanges { likelihood: Some(Likelihood::VeryLikely), ..Default::default() },
        RiskChanges { impact: Some(Impact::Severe), ..Default::default() },
        RiskChanges { department: Some(Some(Department::Hr)), ..Default::default() },
        RiskChanges { treatment_strategy: Some(TreatmentStrategy::Avoid), ..Default::default() },
        RiskChanges { treatment_strategy_description: Some(Some("Changed treatment".into())), ..Default::default() },
    ];
    let patches = changes.iter().cloned().map(|change| {
        let (client, id) = (client.clone(), risk.id.clone());
        tokio::spawn(async move { client.update_risk(&id, &change).await.unwrap() })
    });
    for patch in patches.collect::<Vec<_>>() {
        patch.await.unwrap_or_else(|error| panic!("a patch task failed: {error}"));
    }
    let stored = client.get_risk(&risk.id).await.unwrap();
    let expected = (
        "Changed title",
        "Changed description",
        RiskStatus::Closed,
        Likelihood::VeryLikely,
        Impact::Severe,
        Some(Some(Department::Hr)),
        TreatmentStrategy::Avoid,
        Some(Some("Changed treatment".to_owned())),
    );
    let actual = (
        stored.title.as_str(),
        stored.description.as_str(),
        stored.status,
        stored.likelihood,
        stored.impact,
        stored.department,
        stored.treatment_strategy,
        stored.treatment_strategy_description,
    );
    assert_eq!(actual, expected, "no change was lost");
}
