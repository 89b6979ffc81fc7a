//! `/v1/browser/automations/{id}/secrets`: write-only login secrets, listed by name, never
//! answered back nor logged, typed only on the origin of `targetUrl`; another organization can
//! neither read nor touch them; and the automation fields that go with them (`connectionId`, which
//! needs `integrations:write`, and `postResultToTask`).

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::checks::{assert_timestamp, str_of};
use crate::client::{Auth, Client, Response};
use crate::harness::{TestServer, poll_every};
use crate::tenant::Tenant;

api_tests!(
    secrets_are_write_only_and_listed_by_name,
    bad_names_and_values_are_400_without_the_value,
    another_organization_cannot_reach_the_secrets,
    connection_id_must_name_a_connection_of_the_organization,
    post_result_to_task_defaults_to_true_and_can_be_switched_off,
    a_key_with_only_automations_write_neither_attaches_a_connection_nor_types_a_secret_elsewhere with LOOPBACK,
);

/// Pages on loopback may be opened (the test's sites are served there).
const LOOPBACK: crate::harness::Env = &[("AUTOMATION_ALLOWED_HOSTS", "127.0.0.1")];

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

/// A login form posting to `/login`.
const LOGIN_FORM: &str = r#"<!doctype html><html><head><title>Sign in</title></head><body>
<form method="post" action="/login">
  <label for="password">Password</label> <input id="password" name="password" type="password">
  <button type="submit">Sign in</button>
</form></body></html>"#;

/// A site serving [`LOGIN_FORM`] at `/login` and answering every POST.
async fn login_site() -> MockServer {
    let site = MockServer::start().await;
    let form = ResponseTemplate::new(200).set_body_raw(LOGIN_FORM.as_bytes().to_vec(), "text/html");
    Mock::given(method("GET")).and(path("/login")).respond_with(form.clone()).mount(&site).await;
    Mock::given(method("POST")).respond_with(form).mount(&site).await;
    site
}

/// A key scoped to `automations:write` alone may not hand an automation a connection's
/// credentials, and the secrets it stores are typed only on the origin of `targetUrl`: a step list
/// that goes to another allowed origin and types the secret there fails before typing, and that
/// site receives nothing.
async fn a_key_with_only_automations_write_neither_attaches_a_connection_nor_types_a_secret_elsewhere(
    server: &TestServer,
) {
    let tenant = server.tenant().await;
    let body = json!({"name": "automations only", "scopes": ["automations:write"]});
    let key = tenant.session.post("/v1/api-keys", body).await.ok(201);
    let key = server.client(Auth::ApiKey(str_of(&key, "key").to_owned()), None);
    let task = crate::tasks::create(&tenant.api, "Sign in to the admin console").await;
    let task = str_of(&task, "id");

    let connection = "con_0000000000000000000000000000000a";
    let attach = json!({"taskId": task, "name": "n", "targetUrl": "https://example.com/", "instruction": "screenshot",
                        "connectionId": connection});
    let refused = key.post(AUTOMATIONS, attach.clone()).await.problem(403);
    let detail = str_of(&refused, "detail");
    assert!(detail.contains("the API key lacks scope integrations:write"), "{refused}");
    // Its creator may: the owner is told only that there is no such connection.
    tenant.api.post(AUTOMATIONS, attach).await.invalid("connectionId");

    let (target, elsewhere) = (login_site().await, login_site().await);
    let script =
        format!("go to \"{}/login\"\ntype secret \"PASSWORD\" into \"password\"\nclick \"Sign in\"", elsewhere.uri());
    let body = json!({"taskId": task, "name": "Admin console", "targetUrl": format!("{}/login", target.uri()),
                      "instruction": script, "allowedOrigins": [elsewhere.uri()]});
    let automation = key.post(AUTOMATIONS, body).await.ok(201);
    let id = str_of(&automation, "id");
    key.put(&secret_path(id, "PASSWORD"), json!({"value": VALUE})).await.ok(201);

    let run = run_to_the_end(&key, id).await;
    assert_eq!(run["status"], "failed", "{run}");
    let target_origin = target.uri();
    let expected = format!(
        "step 2 (type secret \"password\"): the secret PASSWORD may be typed only on the origin of targetUrl \
         ({target_origin}), not on the page's origin {}",
        elsewhere.uri()
    );
    assert_eq!(run["error"], expected, "{run}");
    let received = elsewhere.received_requests().await.unwrap_or_default();
    assert!(received.iter().any(|r| r.url.path() == "/login"), "the step list did reach the other site");
    assert!(received.iter().all(|r| r.method.as_str() == "GET"), "the other site received a form");
    assert!(received.iter().all(|r| !String::from_utf8_lossy(&r.body).contains(VALUE)));
    assert!(!run.to_string().contains(VALUE), "{run}");

    // On the target's own origin the same secret is typed and sent: the refusal was the origin's.
    let home = "type secret \"PASSWORD\" into \"password\"\nclick \"Sign in\"";
    key.patch(&format!("{AUTOMATIONS}/{id}"), json!({"instruction": home})).await.ok(200);
    let run = run_to_the_end(&key, id).await;
    assert_eq!(run["status"], "completed", "{run}");
    let posted = target.received_requests().await.unwrap_or_default();
    let login = posted.iter().find(|r| r.method.as_str() == "POST");
    let login = login.unwrap_or_else(|| panic!("the target's form was never submitted"));
    assert!(String::from_utf8_lossy(&login.body).contains(&format!("password={VALUE}")));
}

/// Starts a run and waits until it has finished; the run.
async fn run_to_the_end(client: &Client, automation: &str) -> Value {
    let runs_path = format!("{AUTOMATIONS}/{automation}/runs");
    let run = client.post(&runs_path, json!({})).await.ok(202);
    let id = str_of(&run, "id").to_owned();
    let deadline = Duration::from_secs(60);
    let done = poll_every(Duration::from_millis(250), deadline, || async {
        let runs = client.get(&runs_path).await.ok(200);
        let run = runs.as_array().into_iter().flatten().find(|r| r["id"] == id.as_str()).cloned();
        run.filter(|r| matches!(r["status"].as_str(), Some("completed" | "failed")))
    })
    .await;
    done.unwrap_or_else(|| panic!("run {id} did not finish within {deadline:?}"))
}
