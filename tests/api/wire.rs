//! Rules for every request and response: bodies, media types, routing, ids and timestamps.

use reqwest::Method;
use serde_json::json;

use crate::checks::{assert_id, assert_timestamp, str_of};
use crate::harness::TestServer;

api_tests!(
    malformed_json_is_a_400_problem,
    a_body_that_is_not_json_is_415,
    a_body_over_one_mebibyte_is_413,
    unknown_routes_methods_and_ids_are_problems,
    cli_output_has_prefixed_ids_and_utc_timestamps,
);

const RISK: &str = r#"{"title":"t","description":"d","category":"people"}"#;

async fn malformed_json_is_a_400_problem(server: &TestServer) {
    let tenant = server.tenant().await;
    let risk = crate::risks::create(&tenant.api, "Target").await;
    let path = format!("/v1/risks/{}", str_of(&risk, "id"));
    for body in [r#"{"title": "#, "{'title': 'x'}", "", "null", "[1, 2]", r#""text""#] {
        let json = Some("application/json");
        tenant.api.raw(Method::POST, "/v1/risks", json, body).await.problem(400);
        tenant.api.raw(Method::PATCH, &path, json, body).await.problem(400);
    }
    assert_eq!(tenant.api.get("/v1/risks").await.ok(200)["count"], 1);
}

async fn a_body_that_is_not_json_is_415(server: &TestServer) {
    let tenant = server.tenant().await;
    tenant.api.raw(Method::POST, "/v1/risks", None, RISK).await.problem(415);
    tenant.api.raw(Method::POST, "/v1/risks", Some("text/plain"), RISK).await.problem(415);
    tenant.api.raw(Method::POST, "/v1/risks", Some("application/x-www-form-urlencoded"), "title=t").await.problem(415);
    assert_eq!(tenant.api.get("/v1/risks").await.ok(200)["count"], 0);
    let created = tenant.api.raw(Method::POST, "/v1/risks", Some("application/json; charset=utf-8"), RISK).await;
    created.ok(201);
}

async fn a_body_over_one_mebibyte_is_413(server: &TestServer) {
    let tenant = server.tenant().await;
    let body = json!({"title": "t", "description": "x".repeat(1_100_000), "category": "people"});
    tenant.api.post("/v1/risks", body).await.problem(413);
}

async fn unknown_routes_methods_and_ids_are_problems(server: &TestServer) {
    let tenant = server.tenant().await;
    tenant.api.get("/v1/nothing-here").await.problem(404);
    tenant.api.raw(Method::PUT, "/v1/risks", Some("application/json"), RISK).await.problem(405);
    for path in ["/v1/risks/123", "/v1/risks/vnd_00000000000000000000000000000000", "/v1/vendors/rsk_x"] {
        tenant.api.get(path).await.problem(404);
    }
}

async fn cli_output_has_prefixed_ids_and_utc_timestamps(server: &TestServer) {
    let admin = server.admin();
    let org = admin.create_org("Prefixes", &crate::tenant::unique("prefixes")).await;
    assert_id(&org["id"], "org_");
    assert_timestamp(&org["createdAt"]);
    let user = admin.create_user(&format!("{}@example.test", crate::tenant::unique("u")), "U").await;
    assert_id(&user["id"], "usr_");
    assert_timestamp(&user["createdAt"]);
    assert_timestamp(&user["updatedAt"]);
    let member = admin.add_member(str_of(&org, "id"), str_of(&user, "id"), "owner").await;
    assert_id(&member["id"], "mem_");
    assert_eq!(member["user"]["id"], user["id"]);
    let key = admin.create_api_key(str_of(&org, "id"), str_of(&user, "id")).await;
    assert_id(&key["id"], "apk_");
    assert!(str_of(&key, "key").starts_with("cpk_"), "{key}");
    assert_eq!(key["organizationId"], org["id"]);
    assert_eq!(key["createdBy"], user["id"]);
    assert_timestamp(&key["createdAt"]);
    let session = admin.create_session(str_of(&user, "id")).await;
    assert!(str_of(&session, "token").starts_with("cps_"), "{session}");
    assert_eq!(session["userId"], user["id"]);
    assert_timestamp(&session["expiresAt"]);
    // A failing command exits non-zero with one line on stderr.
    let err = admin.try_run(&["add-member", "--org", str_of(&org, "id"), "--user", "usr_nope", "--role", "x"]).await;
    let err = err.expect_err("adding an unknown user must fail");
    assert_eq!(err.trim().lines().count(), 1, "one line on stderr: {err}");
}
