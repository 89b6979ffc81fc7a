//! `/v1/controls`: CRUD and validation, evidence sources of each kind, evidence recorded when
//! tasks, policies, automation runs and integration checks change, uploads with their signed
//! download, the computed status now and `asOf` a past moment, permissions, the audit trail and
//! tenant isolation (docs/controls.md).

use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::attachments::file;
use crate::checks::{assert_id, assert_timestamp, data, ids, missing_id, str_of};
use crate::client::Client;
use crate::fake_provider::{FakeProvider, HEADER_KEY, KEY_PREFIX};
use crate::harness::{TestServer, poll_every};
use crate::tenant::Tenant;

api_tests!(
    crud_validation_and_audit,
    sources_of_each_kind_are_checked_when_linked,
    a_done_task_passes_and_as_of_answers_from_history,
    a_policy_passes_once_published_and_signed_by_every_active_member,
    an_uploaded_file_is_evidence_with_a_signed_download,
    automation_runs_drive_the_status with LOOPBACK,
    roles_follow_the_matrix,
    another_organization_gets_404_on_every_route,
);

mod provider {
    provider_tests!(integration_checks_drive_the_status);
    use super::*;
}

const CONTROLS: &str = "/v1/controls";
/// Browser automations may open the pages these tests serve on loopback.
const LOOPBACK: crate::harness::Env = &[("AUTOMATION_ALLOWED_HOSTS", "127.0.0.1")];

/// Creates a control through the API; the 201 body.
pub async fn create(client: &Client, body: Value) -> Value {
    client.post(CONTROLS, body).await.ok(201)
}

fn control_path(control: &Value) -> String {
    format!("{CONTROLS}/{}", str_of(control, "id"))
}

async fn link(client: &Client, control: &Value, source: &str) -> Value {
    client.post(&format!("{}/evidence-sources", control_path(control)), json!({"sourceId": source})).await.ok(201)
}

async fn status(client: &Client, control: &Value) -> Value {
    client.get(&format!("{}/status", control_path(control))).await.ok(200)
}

async fn evidence(client: &Client, control: &Value) -> Vec<Value> {
    data(&client.get(&format!("{}/evidence", control_path(control))).await.ok(200)).clone()
}

async fn crud_validation_and_audit(server: &TestServer) {
    let tenant = server.tenant().await;
    let control = create(&tenant.api, json!({"name": "Encrypted backups"})).await;
    assert_id(&control["id"], "ctl_");
    assert_eq!(control["organizationId"], tenant.org_id.as_str());
    assert_eq!(control["description"], "");
    assert_eq!(control["ownerId"], Value::Null);
    assert_eq!(control["frequency"], Value::Null);
    assert_eq!(control["status"], "not_started");
    assert_eq!(control["explanation"]["decidedBy"], Value::Null, "{control}");
    assert_eq!(control["explanation"]["sources"], json!([]));
    assert_timestamp(&control["createdAt"]);

    let full = json!({"name": "Access reviews", "description": "Quarterly review of access.",
                      "ownerId": tenant.owner_member_id, "frequency": "quarterly"});
    let reviewed = create(&tenant.api, full.clone()).await;
    for (key, value) in full.as_object().into_iter().flatten() {
        assert_eq!(&reviewed[key], value, "{key} in {reviewed}");
    }

    let post = |body: Value| tenant.api.post(CONTROLS, body);
    post(json!({"description": "d"})).await.invalid("name");
    post(json!({"name": " "})).await.invalid("name");
    post(json!({"name": "n".repeat(256)})).await.invalid("name");
    post(json!({"name": "n", "frequency": "weekly"})).await.invalid("frequency");
    post(json!({"name": "n", "ownerId": missing_id("mem_")})).await.invalid("ownerId");
    post(json!({"name": "n", "status": "passing"})).await.invalid("status");

    let path = control_path(&reviewed);
    let changed = tenant.api.patch(&path, json!({"frequency": null, "name": "Access review"})).await.ok(200);
    assert_eq!(changed["frequency"], Value::Null);
    assert_eq!(changed["name"], "Access review");
    assert_eq!(changed["description"], "Quarterly review of access.");
    tenant.api.patch(&path, json!({"name": null})).await.invalid("name");
    tenant.api.patch(&path, json!({"frequency": "daily"})).await.invalid("frequency");
    assert_eq!(tenant.api.get(&path).await.ok(200)["name"], "Access review");

    let monthly = create(&tenant.api, json!({"name": "Patching", "frequency": "monthly"})).await;
    let list = tenant.api.get(CONTROLS).await.ok(200);
    assert_eq!(list["count"], 3, "{list}");
    assert_eq!(data(&list)[0]["id"], monthly["id"], "newest first");
    assert_eq!(data(&list)[0]["status"], "not_started");
    assert_eq!(ids(&tenant.api.get(&format!("{CONTROLS}?frequency=monthly")).await.ok(200)), [str_of(&monthly, "id")]);
    let owned = tenant.api.get(&format!("{CONTROLS}?ownerId={}", tenant.owner_member_id)).await.ok(200);
    assert_eq!(ids(&owned), [str_of(&reviewed, "id")]);
    let paged = tenant.api.get(&format!("{CONTROLS}?limit=2")).await.ok(200);
    let next = str_of(&paged, "nextCursor");
    assert_eq!(data(&tenant.api.get(&format!("{CONTROLS}?limit=2&cursor={next}")).await.ok(200)).len(), 1);
    tenant.api.get(&format!("{CONTROLS}?status=passing")).await.invalid("status");
    tenant.api.get(&format!("{CONTROLS}?frequency=weekly")).await.invalid("frequency");
    tenant.api.get(&format!("{CONTROLS}?ownerId=bob")).await.invalid("ownerId");

    let deleted = tenant.api.delete(&path).await.ok(200);
    assert_eq!(deleted["deletedControl"]["id"], reviewed["id"]);
    tenant.api.get(&path).await.problem(404);
    tenant.api.delete(&path).await.problem(404);
    tenant.api.get(&format!("{CONTROLS}/ctl_nonsense")).await.problem(404);

    let entries = tenant
        .api
        .get(&format!("/v1/audit-log?resourceType=control&resourceId={}", str_of(&reviewed, "id")))
        .await
        .ok(200);
    let actions: Vec<&str> = data(&entries).iter().map(|e| str_of(e, "action")).collect();
    assert_eq!(actions, ["control.deleted", "control.updated", "control.created"], "{entries}");
}

async fn sources_of_each_kind_are_checked_when_linked(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let control = create(&tenant.api, json!({"name": "Change management"})).await;
    let task = crate::tasks::create(&tenant.api, "Review changes").await;
    let policy = crate::policies::create(&tenant.api, "Change policy").await;
    let automation_task = crate::tasks::create(&tenant.api, "Check the status page").await;
    let automation = tenant
        .api
        .post(
            "/v1/browser/automations",
            json!({"taskId": automation_task["id"], "name": "Status", "targetUrl": "https://example.com/",
                   "instruction": "expect text \"Up\""}),
        )
        .await
        .ok(201);
    for (source, kind) in [(&task, "task"), (&policy, "policy"), (&automation, "automation")] {
        let linked = link(&tenant.api, &control, str_of(source, "id")).await;
        assert_eq!(linked["kind"], kind, "{linked}");
        assert_eq!(linked["controlId"], control["id"]);
        assert_eq!(linked["sourceId"], source["id"]);
        assert_timestamp(&linked["createdAt"]);
    }
    let sources_path = format!("{}/evidence-sources", control_path(&control));
    tenant.api.post(&sources_path, json!({"sourceId": task["id"]})).await.problem(409);
    tenant.api.post(&sources_path, json!({"sourceId": missing_id("tsk_")})).await.problem(404);
    tenant.api.post(&sources_path, json!({"sourceId": missing_id("con_")})).await.problem(404);
    tenant.api.post(&sources_path, json!({"sourceId": missing_id("vnd_")})).await.invalid("sourceId");
    tenant.api.post(&sources_path, json!({})).await.invalid("sourceId");
    let foreign = crate::tasks::create(&other.api, "Theirs").await;
    tenant.api.post(&sources_path, json!({"sourceId": foreign["id"]})).await.problem(404);

    let report = status(&tenant.api, &control).await;
    assert_eq!(report["status"], "not_started", "{report}");
    let kinds: Vec<&str> = report["sources"].as_array().unwrap().iter().map(|s| str_of(s, "kind")).collect();
    assert_eq!(kinds, ["task", "policy", "automation"], "{report}");
    assert!(report["sources"].as_array().unwrap().iter().all(|s| s["status"] == "not_started"));

    let removed = tenant.api.delete(&format!("{sources_path}/{}", str_of(&policy, "id"))).await.ok(200);
    assert_eq!(removed["kind"], "policy");
    tenant.api.delete(&format!("{sources_path}/{}", str_of(&policy, "id"))).await.problem(404);
    assert_eq!(status(&tenant.api, &control).await["sources"].as_array().unwrap().len(), 2);

    let entries = tenant
        .api
        .get(&format!("/v1/audit-log?resourceType=control&resourceId={}", str_of(&control, "id")))
        .await
        .ok(200);
    let actions: Vec<&str> = data(&entries).iter().map(|e| str_of(e, "action")).collect();
    assert_eq!(actions.iter().filter(|a| **a == "control.evidence_source_added").count(), 3, "{actions:?}");
    assert_eq!(actions[0], "control.evidence_source_removed", "{actions:?}");
}

async fn a_done_task_passes_and_as_of_answers_from_history(server: &TestServer) {
    let tenant = server.tenant().await;
    let control = create(&tenant.api, json!({"name": "Incident drills", "frequency": "yearly"})).await;
    let task = crate::tasks::create(&tenant.api, "Run the incident drill").await;
    let task_path = format!("/v1/tasks/{}", str_of(&task, "id"));
    // Done before the link proves nothing for the control: evidence is recorded when it happens.
    tenant.api.patch(&task_path, json!({"status": "done"})).await.ok(200);
    tenant.api.patch(&task_path, json!({"status": "todo"})).await.ok(200);
    link(&tenant.api, &control, str_of(&task, "id")).await;
    assert!(evidence(&tenant.api, &control).await.is_empty());
    let before = status(&tenant.api, &control).await;
    assert_eq!(before["status"], "not_started");
    let before_done = str_of(&before, "asOf").to_owned();

    tenant.api.patch(&task_path, json!({"title": "Run the yearly incident drill"})).await.ok(200);
    assert!(evidence(&tenant.api, &control).await.is_empty(), "a change that is not to done proves nothing");
    tenant.api.patch(&task_path, json!({"status": "done"})).await.ok(200);
    let items = evidence(&tenant.api, &control).await;
    assert_eq!(items.len(), 1, "{items:?}");
    let item = &items[0];
    assert_id(&item["id"], "evd_");
    assert_eq!((item["kind"].as_str(), item["outcome"].as_str()), (Some("task"), Some("pass")), "{item}");
    assert_eq!(item["sourceId"], task["id"]);
    assert_timestamp(&item["collectedAt"]);
    assert!(str_of(item, "link").ends_with(&task_path), "{item}");

    let now = tenant.api.get(&control_path(&control)).await.ok(200);
    assert_eq!(now["status"], "passing", "{now}");
    assert_eq!(now["explanation"]["decidedBy"]["kind"], "task");
    assert_eq!(now["explanation"]["decidedBy"]["id"], task["id"]);
    assert_eq!(now["explanation"]["sources"][0]["lastEvidenceAt"], item["collectedAt"]);

    // As of a moment before the evidence: not started, from the recorded history.
    let past = tenant.api.get(&format!("{}/status?asOf={before_done}", control_path(&control))).await.ok(200);
    assert_eq!(past["status"], "not_started", "{past}");
    assert_eq!(past["asOf"], before_done.as_str());
    let as_of_get = tenant.api.get(&format!("{}?asOf={before_done}", control_path(&control))).await.ok(200);
    assert_eq!(as_of_get["status"], "not_started");
    let exact = tenant
        .api
        .get(&format!("{}/status?asOf={}", control_path(&control), str_of(item, "collectedAt")))
        .await
        .ok(200);
    assert_eq!(exact["status"], "passing", "evidence counts from the moment it was collected");
    tenant.api.get(&format!("{}/status?asOf=2999-01-01T00:00:00Z", control_path(&control))).await.invalid("asOf");
    tenant.api.get(&format!("{}/status?asOf=yesterday", control_path(&control))).await.invalid("asOf");
    tenant.api.get(&format!("{}?asOf=2026-13-01T00:00:00Z", control_path(&control))).await.invalid("asOf");

    // Deleting the source fails the control from then on, and the past stays as it was.
    tenant.api.delete(&task_path).await.ok(200);
    let failing = status(&tenant.api, &control).await;
    assert_eq!(failing["status"], "failing", "{failing}");
    assert!(str_of(&failing["decidedBy"], "reason").contains("deleted"), "{failing}");
    let exact = tenant
        .api
        .get(&format!("{}/status?asOf={}", control_path(&control), str_of(item, "collectedAt")))
        .await
        .ok(200);
    assert_eq!(exact["status"], "passing", "{exact}");
    assert_eq!(evidence(&tenant.api, &control).await.len(), 2);
}

async fn a_policy_passes_once_published_and_signed_by_every_active_member(server: &TestServer) {
    let tenant = server.tenant().await;
    let control = create(&tenant.api, json!({"name": "Security awareness"})).await;
    let policy = crate::policies::create(&tenant.api, "Acceptable use").await;
    let policy_path = format!("/v1/policies/{}", str_of(&policy, "id"));
    link(&tenant.api, &control, str_of(&policy, "id")).await;
    let (admin, _) = server.member(&tenant, "admin").await;
    tenant.api.patch(&policy_path, json!({"status": "published"})).await.ok(200);
    let outcomes =
        |items: Vec<Value>| items.iter().map(|i| i["outcome"].as_str().unwrap_or("?").to_owned()).collect::<Vec<_>>();
    let items = evidence(&tenant.api, &control).await;
    assert_eq!(outcomes(items), ["fail"], "a new version that nobody signed yet");
    assert_eq!(status(&tenant.api, &control).await["status"], "failing");
    tenant.api.post(&format!("{policy_path}/sign"), json!({})).await.ok(200);
    assert_eq!(evidence(&tenant.api, &control).await.len(), 1, "one of two active members signed: nothing new");
    let admin_key = server.api_key(&tenant, &admin.id).await;
    admin_key.post(&format!("{policy_path}/sign"), json!({})).await.ok(200);
    let items = evidence(&tenant.api, &control).await;
    let mut seen = outcomes(items.clone());
    seen.sort();
    assert_eq!(seen, ["fail", "pass"], "{items:?}");
    assert!(items.iter().all(|item| item["kind"] == "policy"), "{items:?}");
    assert_eq!(status(&tenant.api, &control).await["status"], "passing");

    // An edit that decides nothing records nothing; archiving takes the policy out of force.
    tenant.api.patch(&policy_path, json!({"description": "Read it."})).await.ok(200);
    assert_eq!(evidence(&tenant.api, &control).await.len(), 2, "an edit proves nothing new");
    tenant.api.patch(&policy_path, json!({"isArchived": true})).await.ok(200);
    assert_eq!(evidence(&tenant.api, &control).await.len(), 3);
    assert_eq!(status(&tenant.api, &control).await["status"], "failing", "an archived policy proves nothing");
}

async fn an_uploaded_file_is_evidence_with_a_signed_download(server: &TestServer) {
    let tenant = server.tenant().await;
    let control = create(&tenant.api, json!({"name": "Penetration test", "frequency": "yearly"})).await;
    let upload_path = format!("{}/evidence", control_path(&control));
    let bytes = b"%PDF-1.4 the pentest report";
    let mut body = file("pentest.pdf", "application/pdf", bytes);
    body["description"] = json!("2026 report");
    let item = tenant.api.post(&upload_path, body).await.ok(201);
    assert_id(&item["id"], "evd_");
    assert_eq!((item["kind"].as_str(), item["outcome"].as_str()), (Some("file"), Some("pass")), "{item}");
    assert_eq!(item["sourceId"], Value::Null);
    assert_eq!(item["detail"]["fileName"], "pentest.pdf");
    assert_eq!(item["detail"]["size"], bytes.len());
    let fetched = server.anonymous().get_url(str_of(&item, "link")).await;
    assert_eq!(fetched.status, 200);
    assert_eq!(fetched.bytes, bytes);
    assert_eq!(fetched.content_type, "application/pdf");
    assert_eq!(fetched.header("content-security-policy").as_deref(), Some("sandbox"));
    let tampered = str_of(&item, "link").replace("signature=", "signature=00");
    server.anonymous().get_url(&tampered).await.problem(403);

    let listed = evidence(&tenant.api, &control).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], item["id"]);
    let report = status(&tenant.api, &control).await;
    assert_eq!(report["status"], "passing", "{report}");
    assert_eq!(report["decidedBy"]["kind"], "file");

    tenant
        .api
        .post(&upload_path, json!({"fileName": "a.pdf", "fileType": "application/pdf", "fileData": "%%%"}))
        .await
        .invalid("fileData");
    tenant.api.post(&upload_path, file("run.sh", "text/x-shellscript", b"echo")).await.invalid("fileName");
    tenant.api.post(&upload_path, json!({"fileType": "text/plain", "fileData": "aGk="})).await.invalid("fileName");

    let key = format!("{}/{}", tenant.org_id, str_of(&item, "id"));
    assert!(server.blob_files().contains(&key), "{:?}", server.blob_files());
    tenant.api.delete(&control_path(&control)).await.ok(200);
    assert!(!server.blob_files().contains(&key), "the file goes with its control");
    server.anonymous().get_url(str_of(&item, "link")).await.problem(404);
}

/// A page that says the systems are up.
async fn status_page() -> MockServer {
    let server = MockServer::start().await;
    let html =
        "<!doctype html><html><head><title>Status</title></head><body><h1>All systems operational</h1></body></html>";
    let answer = ResponseTemplate::new(200).set_body_raw(html.as_bytes().to_vec(), "text/html");
    Mock::given(method("GET")).and(path("/status")).respond_with(answer).mount(&server).await;
    server
}

/// Runs the automation and waits until its run is recorded as evidence of `control`.
async fn run_into(tenant: &Tenant, automation: &Value, control: &Value) -> Vec<Value> {
    let runs = format!("/v1/browser/automations/{}/runs", str_of(automation, "id"));
    tenant.api.post(&runs, json!({})).await.ok(202);
    let found = poll_every(Duration::from_millis(200), Duration::from_secs(60), || async {
        let items = evidence(&tenant.api, control).await;
        (!items.is_empty()).then_some(items)
    })
    .await;
    match found {
        Some(items) => items,
        None => panic!("no evidence from the run: {}", tenant.api.get(&runs).await.ok(200)),
    }
}

async fn automation_runs_drive_the_status(server: &TestServer) {
    let page = status_page().await;
    let tenant = server.tenant().await;
    let task = crate::tasks::create(&tenant.api, "Status page").await;
    let automation = |instruction: &str| {
        json!({"taskId": task["id"], "name": "Status", "targetUrl": format!("{}/status", page.uri()),
               "instruction": instruction})
    };
    let passing = tenant.api.post("/v1/browser/automations", automation("expect text \"operational\"")).await.ok(201);
    let failing = tenant.api.post("/v1/browser/automations", automation("expect text \"degraded\"")).await.ok(201);
    let up = create(&tenant.api, json!({"name": "Availability", "frequency": "monthly"})).await;
    let down = create(&tenant.api, json!({"name": "Degradation watch", "frequency": "monthly"})).await;
    link(&tenant.api, &up, str_of(&passing, "id")).await;
    link(&tenant.api, &down, str_of(&failing, "id")).await;

    let items = run_into(&tenant, &passing, &up).await;
    assert_eq!((items[0]["kind"].as_str(), items[0]["outcome"].as_str()), (Some("automation"), Some("pass")));
    assert_id(&items[0]["runId"], "run_");
    let screenshot = server.anonymous().get_url(str_of(&items[0], "link")).await;
    assert_eq!((screenshot.status, screenshot.content_type.as_str()), (200, "image/png"));
    let report = status(&tenant.api, &up).await;
    assert_eq!(report["status"], "passing", "{report}");
    assert_eq!(report["decidedBy"]["id"], passing["id"]);

    let items = run_into(&tenant, &failing, &down).await;
    assert_eq!(items[0]["outcome"], "fail", "{items:?}");
    let report = status(&tenant.api, &down).await;
    assert_eq!(report["status"], "failing", "{report}");
    assert!(str_of(&report["decidedBy"], "reason").contains("degraded"), "{report}");
    assert!(evidence(&tenant.api, &up).await.len() == 1, "a run proves only the controls linked to its automation");
}

async fn roles_follow_the_matrix(server: &TestServer) {
    let tenant = server.tenant().await;
    let control = create(&tenant.api, json!({"name": "Logging"})).await;
    let (auditor, _) = server.member(&tenant, "auditor").await;
    let (employee, _) = server.member(&tenant, "employee").await;
    let auditor = server.api_key(&tenant, &auditor.id).await;
    let employee = server.api_key(&tenant, &employee.id).await;
    auditor.get(&control_path(&control)).await.ok(200);
    auditor.get(CONTROLS).await.ok(200);
    auditor.get(&format!("{}/evidence", control_path(&control))).await.ok(200);
    let denied = auditor.post(CONTROLS, json!({"name": "x"})).await.problem(403);
    assert!(str_of(&denied, "detail").contains("may not write controls"), "{denied}");
    auditor.post(&format!("{}/evidence", control_path(&control)), file("a.txt", "text/plain", b"a")).await.problem(403);
    let denied = employee.get(CONTROLS).await.problem(403);
    assert!(str_of(&denied, "detail").contains("may not read controls"), "{denied}");
    employee.get(&format!("{}/status", control_path(&control))).await.problem(403);
}

async fn another_organization_gets_404_on_every_route(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let control = create(&tenant.api, json!({"name": "Secrets rotation"})).await;
    let task = crate::tasks::create(&tenant.api, "Rotate").await;
    link(&tenant.api, &control, str_of(&task, "id")).await;
    let item = tenant
        .api
        .post(&format!("{}/evidence", control_path(&control)), file("r.txt", "text/plain", b"r"))
        .await
        .ok(201);
    let path = control_path(&control);
    let theirs = crate::tasks::create(&other.api, "Theirs").await;
    other.api.get(&path).await.problem(404);
    other.api.get(&format!("{path}/status")).await.problem(404);
    other.api.patch(&path, json!({"name": "mine"})).await.problem(404);
    other.api.get(&format!("{path}/evidence")).await.problem(404);
    other.api.post(&format!("{path}/evidence"), file("x.txt", "text/plain", b"x")).await.problem(404);
    other.api.post(&format!("{path}/evidence-sources"), json!({"sourceId": theirs["id"]})).await.problem(404);
    other.api.delete(&format!("{path}/evidence-sources/{}", str_of(&task, "id"))).await.problem(404);
    other.api.delete(&path).await.problem(404);
    assert_eq!(other.api.get(CONTROLS).await.ok(200)["count"], 0);
    // A signed link names its organization: moved to another, it is refused.
    let moved = str_of(&item, "link").replace(&tenant.org_id, &other.org_id);
    server.anonymous().get_url(&moved).await.problem(403);
    // Nothing changed for the owner.
    assert_eq!(tenant.api.get(&path).await.ok(200)["name"], "Secrets rotation");
    assert_eq!(evidence(&tenant.api, &control).await.len(), 1);
    assert_eq!(status(&tenant.api, &control).await["sources"].as_array().unwrap().len(), 2);
}

async fn integration_checks_drive_the_status(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let key = fake.secret("apikey");
    fake.accept(&format!("{KEY_PREFIX}{key}"));
    let body = json!({"providerSlug": HEADER_KEY, "credentials": {"api_key": key}});
    let connection = fake.clean(tenant.api.post(crate::integrations::CONNECTIONS, body).await).ok(201);
    let id = str_of(&connection, "id").to_owned();
    let control = create(&tenant.api, json!({"name": "Provider reachable", "frequency": "monthly"})).await;
    assert_eq!(link(&tenant.api, &control, &id).await["kind"], "connection");
    let check = format!("{}/{id}/check", crate::integrations::CONNECTIONS);

    let checked = fake.clean(tenant.api.post(&check, json!({})).await).ok(200);
    assert_eq!(checked["check"]["ok"], true, "{checked}");
    let items = evidence(&tenant.api, &control).await;
    assert_eq!((items[0]["kind"].as_str(), items[0]["outcome"].as_str()), (Some("connection"), Some("pass")));
    assert_eq!(items[0]["detail"]["ok"], true, "{items:?}");
    assert!(str_of(&items[0], "link").ends_with(&format!("/v1/integrations/connections/{id}")));
    assert_eq!(status(&tenant.api, &control).await["status"], "passing");

    fake.state().verify_status = Some(500);
    let checked = fake.clean(tenant.api.post(&check, json!({})).await).ok(200);
    assert_eq!(checked["check"]["ok"], false, "{checked}");
    let items = evidence(&tenant.api, &control).await;
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["outcome"], "fail", "newest first: {items:?}");
    let report = status(&tenant.api, &control).await;
    assert_eq!(report["status"], "failing", "{report}");
    assert_eq!(report["decidedBy"]["id"], id.as_str());
}
