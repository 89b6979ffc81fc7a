//! `/v1/browser/automations/{id}/secrets`: write-only login secrets, listed by name, never
//! answered back nor logged; another organization can neither read nor touch them; and the
//! automation fields that go with them (`connectionId`, `postResultToTask`).

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};

use crate::checks::{assert_timestamp, str_of};
use crate::client::Response;
use crate::harness::TestServer;
use crate::tenant::Tenant;

api_tests!(
    secrets_are_write_only_and_listed_by_name,
    bad_names_and_values_are_400_without_the_value,
    another_organization_cannot_reach_the_secrets,
    connection_id_must_name_a_connection_of_the_organization,
    post_result_to_task_defaults_to_true_and_can_be_switched_off,
);

const AUTOMATIONS: &str = "/v1/browser/automations";
const VALUE: &str = "correct-horse-battery-staple-42";

async fn new_automation(tenant: &Tenant) -> Value {
    let task = crate::tasks::create(&tenant.api, "Log in to the admin console").await;
    let body = json!({"taskId": str_of(&task, "id"), "name": "Admin console", "targetUrl": "https://example.com/login",
                      "instruction": "Sign in and check the security settings."});
    tenant.api.post(AUTOMATIONS, body).await.ok(201)
}

fn secrets_path(automation: &str) -> String {
    format!("{AUTOMATIONS}/{automation}/secrets")
}

fn secret_path(automation: &str, name: &str) -> String {
    format!("{AUTOMATIONS}/{automation}/secrets/{name}")
}

#[track_caller]
fn without_value(response: Response) -> Response {
    let text = String::from_utf8_lossy(&response.bytes);
    assert!(!text.contains(VALUE), "{} answered the secret's value: {text}", response.request());
    response
}

async fn secrets_are_write_only_and_listed_by_name(server: &TestServer) {
    let tenant = server.tenant().await;
    let automation = new_automation(&tenant).await;
    let id = str_of(&automation, "id");

    let created = without_value(tenant.api.put(&secret_path(id, "admin_password"), json!({"value": VALUE})).await);
    let created = created.ok(201);
    assert_eq!(created["name"], "admin_password", "{created}");
    assert_timestamp(&created["updatedAt"]);
    assert_eq!(created.as_object().unwrap().len(), 2, "only the name and updatedAt: {created}");
    let again = without_value(tenant.api.put(&secret_path(id, "admin_password"), json!({"value": "other"})).await);
    assert_eq!(again.ok(200)["name"], "admin_password");
    without_value(tenant.session.put(&secret_path(id, "Email"), json!({"value": VALUE})).await).ok(201);

    let listed = without_value(tenant.api.get(&secrets_path(id)).await).ok(200);
    let names: Vec<&str> = listed.as_array().unwrap().iter().map(|s| str_of(s, "name")).collect();
    assert_eq!(names, ["Email", "admin_password"], "sorted by name: {listed}");
    for secret in listed.as_array().unwrap() {
        assert_eq!(secret.as_object().unwrap().len(), 2, "only the name and updatedAt: {secret}");
    }
    without_value(tenant.api.get(&format!("{AUTOMATIONS}/{id}")).await).ok(200);

    let deleted = tenant.api.delete(&secret_path(id, "Email")).await.ok(200);
    assert_eq!(deleted, json!({"message": "Secret deleted", "name": "Email"}));
    tenant.api.delete(&secret_path(id, "Email")).await.problem(404);
    let listed = tenant.api.get(&secrets_path(id)).await.ok(200);
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");

    // Deleting the automation deletes its secrets: the routes answer 404 for it from then on.
    tenant.api.delete(&format!("{AUTOMATIONS}/{id}")).await.ok(200);
    tenant.api.get(&secrets_path(id)).await.problem(404);
    tenant.api.put(&secret_path(id, "admin_password"), json!({"value": VALUE})).await.problem(404);

    let stderr = server.stop().await;
    assert!(!stderr.contains(VALUE), "the server logged a secret's value:\n{stderr}");
}

async fn bad_names_and_values_are_400_without_the_value(server: &TestServer) {
    let tenant = server.tenant().await;
    let automation = new_automation(&tenant).await;
    let id = str_of(&automation, "id");
    for name in ["1password", "_x", "pass-word", "p%C3%A4ss", &"x".repeat(65)] {
        tenant.api.put(&secret_path(id, name), json!({"value": VALUE})).await.invalid("name");
    }
    let too_long = "v".repeat(4097);
    for body in [json!({"value": ""}), json!({}), json!({"value": too_long})] {
        tenant.api.put(&secret_path(id, "password"), body).await.invalid("value");
    }
    let echoed = tenant.api.put(&secret_path(id, "password"), json!({"value": 987_654_321})).await;
    assert_eq!(echoed.status, 400, "{}", echoed.body);
    assert!(!echoed.body.to_string().contains("987654321"), "the refusal quotes the value: {}", echoed.body);
    let unknown = tenant.api.put(&secret_path(id, "password"), json!({"value": VALUE, "extra": 1})).await;
    assert_eq!(unknown.status, 400, "{}", unknown.body);
    tenant.api.delete(&secret_path(id, "not-a-name")).await.problem(404);
    assert_eq!(tenant.api.get(&secrets_path(id)).await.ok(200), json!([]), "nothing was stored");
}

async fn another_organization_cannot_reach_the_secrets(server: &TestServer) {
    let a = server.tenant().await;
    let b = server.tenant().await;
    let automation = new_automation(&a).await;
    let id = str_of(&automation, "id");
    a.api.put(&secret_path(id, "password"), json!({"value": VALUE})).await.ok(201);
    let before = a.api.get(&secrets_path(id)).await.ok(200);

    for client in [&b.api, &b.session] {
        without_value(client.get(&secrets_path(id)).await).problem(404);
        client.put(&secret_path(id, "password"), json!({"value": "taken over"})).await.problem(404);
        client.put(&secret_path(id, "another"), json!({"value": "planted"})).await.problem(404);
        client.delete(&secret_path(id, "password")).await.problem(404);
    }
    b.session.with_org(Some(&a.org_id)).get(&secrets_path(id)).await.problem(403);
    // B's own automation with a secret of the same name changes nothing of A's.
    let theirs = new_automation(&b).await;
    b.api.put(&secret_path(str_of(&theirs, "id"), "password"), json!({"value": "b's"})).await.ok(201);
    assert_eq!(a.api.get(&secrets_path(id)).await.ok(200), before);
}

async fn connection_id_must_name_a_connection_of_the_organization(server: &TestServer) {
    let tenant = server.tenant().await;
    let automation = new_automation(&tenant).await;
    let id = str_of(&automation, "id");
    assert_eq!(automation["connectionId"], Value::Null, "{automation}");
    let task = str_of(&automation, "taskId");
    let body = |connection: &str| {
        json!({"taskId": task, "name": "n", "targetUrl": "https://example.com/", "instruction": "i",
               "connectionId": connection})
    };
    let absent = "con_0000000000000000000000000000000a";
    tenant.api.post(AUTOMATIONS, body(absent)).await.invalid("connectionId");
    tenant.api.post(AUTOMATIONS, body("not-an-id")).await.invalid("connectionId");
    tenant.api.patch(&format!("{AUTOMATIONS}/{id}"), json!({"connectionId": absent})).await.invalid("connectionId");
    // Handing a connection's credentials to an automation is for administrators.
    let (employee, _) = server.member(&tenant, "employee").await;
    let employee = server.api_key(&tenant, &employee.id).await;
    employee.post(AUTOMATIONS, body(absent)).await.problem(403);
    // `null` is no connection.
    let cleared = tenant.api.patch(&format!("{AUTOMATIONS}/{id}"), json!({"connectionId": null})).await.ok(200);
    assert_eq!(cleared["connectionId"], Value::Null);
}

async fn post_result_to_task_defaults_to_true_and_can_be_switched_off(server: &TestServer) {
    let tenant = server.tenant().await;
    let automation = new_automation(&tenant).await;
    assert_eq!(automation["postResultToTask"], true, "{automation}");
    let path = format!("{AUTOMATIONS}/{}", str_of(&automation, "id"));
    let off = tenant.api.patch(&path, json!({"postResultToTask": false})).await.ok(200);
    assert_eq!(off["postResultToTask"], false, "{off}");
    assert_eq!(tenant.api.get(&path).await.ok(200)["postResultToTask"], false);
    tenant.api.patch(&path, json!({"postResultToTask": null})).await.invalid("postResultToTask");
}
