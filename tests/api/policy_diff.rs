//! `GET /v1/policies/{id}/versions/{from}/diff/{to}`: what changed between two versions, block by
//! block (docs/api.md, "Comparing versions").

use serde_json::{Value, json};

use crate::checks::{missing_id, str_of};
use crate::harness::TestServer;

api_tests!(
    versions_differ_block_by_block,
    a_version_against_the_draft,
    bad_version_numbers_are_400_naming_the_parameter,
    another_organizations_policy_is_not_found,
);

fn paragraph(text: &str) -> Value {
    json!({"type": "paragraph", "content": [{"type": "text", "text": text}]})
}

fn heading(level: u8, text: &str) -> Value {
    json!({"type": "heading", "attrs": {"level": level}, "content": [{"type": "text", "text": text}]})
}

fn bullets(items: &[&str]) -> Value {
    let items: Vec<Value> = items.iter().map(|i| json!({"type": "listItem", "content": [paragraph(i)]})).collect();
    json!({"type": "bulletList", "content": items})
}

fn version_one() -> Value {
    json!([
        heading(1, "Access control"),
        paragraph("Staff may share keys."),
        bullets(&["Laptops", "Phones"]),
        paragraph("Reviewed yearly.")
    ])
}

fn version_two() -> Value {
    json!([
        heading(1, "Access control"),
        paragraph("Staff must never share keys."),
        bullets(&["Laptops"]),
        heading(2, "Exceptions"),
        paragraph("Reviewed yearly.")
    ])
}

/// A policy published twice (versions 1 and 2) by the tenant's owner; its path.
async fn two_versions(tenant: &crate::tenant::Tenant) -> String {
    let body = json!({"name": "Access", "content": version_one(), "status": "published"});
    let policy = tenant.api.post("/v1/policies", body).await.ok(201);
    let path = format!("/v1/policies/{}", str_of(&policy, "id"));
    tenant.api.patch(&path, json!({"content": version_two()})).await.ok(200);
    let second = tenant.api.patch(&path, json!({"status": "published"})).await.ok(200);
    assert_eq!(second["currentVersion"], 2);
    path
}

/// Each change as (op, kind, before text, after text).
fn summary(diff: &Value) -> Vec<(String, String, Value, Value)> {
    diff["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let side = if c["after"].is_null() { &c["before"] } else { &c["after"] };
            (
                str_of(c, "op").to_owned(),
                str_of(side, "kind").to_owned(),
                c["before"]["text"].clone(),
                c["after"]["text"].clone(),
            )
        })
        .collect()
}

fn row(op: &str, kind: &str, before: Option<&str>, after: Option<&str>) -> (String, String, Value, Value) {
    (op.to_owned(), kind.to_owned(), json!(before), json!(after))
}

async fn versions_differ_block_by_block(server: &TestServer) {
    let tenant = server.tenant().await;
    let path = two_versions(&tenant).await;
    let (user, _) = server.member(&tenant, "employee").await;
    let employee = server.session(&user.id, Some(&tenant.org_id)).await;

    // an employee reads policies, so reads the diff too
    let diff = employee.get(&format!("{path}/versions/1/diff/2")).await.ok(200);
    assert_eq!((diff["from"].clone(), diff["to"].clone()), (json!(1), json!(2)));
    assert_eq!(
        summary(&diff),
        [
            row("changed", "paragraph", Some("Staff may share keys."), Some("Staff must never share keys.")),
            row("removed", "listItem", Some("Phones"), None),
            row("added", "heading", None, Some("Exceptions")),
        ]
    );
    let changed = &diff["changes"][0];
    assert_eq!(changed["before"]["index"], 1);
    assert_eq!(changed["after"]["index"], 1);
    assert_eq!(changed["before"]["level"], Value::Null);
    assert_eq!(
        changed["words"],
        json!([{"op": "equal", "text": "Staff "}, {"op": "removed", "text": "may"},
               {"op": "added", "text": "must never"}, {"op": "equal", "text": " share keys."}])
    );
    let removed = &diff["changes"][1];
    assert_eq!((removed["after"].clone(), removed["words"].clone()), (Value::Null, Value::Null));
    assert_eq!(removed["before"]["within"], json!(["bulletList"]));
    assert_eq!(removed["before"]["index"], 3);
    let added = &diff["changes"][2];
    assert_eq!(added["after"]["level"], 2);
    assert_eq!(added["after"]["within"], json!([]));

    // the other way round, the same blocks swap sides (a run's removed blocks come first)
    let back = tenant.api.get(&format!("{path}/versions/2/diff/1")).await.ok(200);
    assert_eq!(
        summary(&back),
        [
            row("changed", "paragraph", Some("Staff must never share keys."), Some("Staff may share keys.")),
            row("removed", "heading", Some("Exceptions"), None),
            row("added", "listItem", None, Some("Phones")),
        ]
    );

    // a version against itself has no changes; a version that does not exist is 404
    let same = tenant.api.get(&format!("{path}/versions/2/diff/2")).await.ok(200);
    assert_eq!(same, json!({"from": 2, "to": 2, "changes": []}));
    for missing in ["1/diff/3", "3/diff/1", "3/diff/3", "3/diff/draft"] {
        let problem = tenant.api.get(&format!("{path}/versions/{missing}")).await.problem(404);
        assert!(str_of(&problem, "detail").contains("policy version"), "{missing}: {problem}");
    }
}

async fn a_version_against_the_draft(server: &TestServer) {
    let tenant = server.tenant().await;
    let path = two_versions(&tenant).await;
    // unchanged since version 2: nothing to review
    assert_eq!(tenant.api.get(&format!("{path}/versions/2/diff/draft")).await.ok(200)["changes"], json!([]));

    let mut draft = version_two();
    draft[4] = paragraph("Reviewed quarterly.");
    let edited = tenant.api.patch(&path, json!({"content": draft})).await.ok(200);
    assert_eq!(edited["status"], "needs_review");
    let diff = tenant.api.get(&format!("{path}/versions/2/diff/draft")).await.ok(200);
    assert_eq!(diff["to"], "draft");
    assert_eq!(summary(&diff), [row("changed", "paragraph", Some("Reviewed yearly."), Some("Reviewed quarterly."))]);
    // the published versions stay what they were
    assert_eq!(
        tenant.api.get(&format!("{path}/versions/1/diff/2")).await.ok(200)["changes"].as_array().unwrap().len(),
        3
    );
}

async fn bad_version_numbers_are_400_naming_the_parameter(server: &TestServer) {
    let tenant = server.tenant().await;
    let path = two_versions(&tenant).await;
    for (pair, field) in [
        ("0/diff/1", "from"),
        ("-1/diff/1", "from"),
        ("x/diff/1", "from"),
        ("draft/diff/1", "from"),
        ("1/diff/0", "to"),
        ("1/diff/01", "to"),
        ("1/diff/Draft", "to"),
        ("1/diff/1000000000", "to"),
    ] {
        let problem = tenant.api.get(&format!("{path}/versions/{pair}")).await.problem(400);
        assert_eq!(problem["errors"][0]["field"], field, "{pair}: {problem}");
    }
}

async fn another_organizations_policy_is_not_found(server: &TestServer) {
    let (ours, theirs) = (server.tenant().await, server.tenant().await);
    let path = two_versions(&theirs).await;
    for to in ["2", "draft"] {
        let problem = ours.api.get(&format!("{path}/versions/1/diff/{to}")).await.problem(404);
        assert!(!problem.to_string().contains("Access"), "nothing of theirs shows: {problem}");
    }
    let missing = format!("/v1/policies/{}/versions/1/diff/2", missing_id("pol"));
    ours.api.get(&missing).await.problem(404);
}
