//! Conformance: one real successful request of every operation of the OpenAPI document the server
//! serves (`GET /openapi.json`), each JSON body validated against the schema the document gives
//! for that operation and status (JSON Schema 2020-12, formats included); HTML pages, files and
//! redirects are checked for their status and media type. Schemathesis, in CI, mostly gets 401,
//! 403 or 404 from the operations that need a session, real ids, a FleetDM or a provider: here
//! every one of them is called with seeded data, a fake FleetDM, a fake provider and a page for a
//! browser automation. An operation the document gains without a call here fails the test, named.

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, COOKIE, LOCATION};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::attachments::file;
use crate::checks::str_of;
use crate::client::{Auth, Client, Response};
use crate::declared::{matches_template, request_path};
use crate::fake_fleet::{FakeFleet, host};
use crate::fake_provider::{self, FakeProvider, HEADER_KEY, KEY_PREFIX, OAUTH, QUERY_KEY, ScratchDir};
use crate::harness::{Backend, TestServer, poll_every, run_with_owned_env};
use crate::integrations::session_token;
use crate::moto::Moto;
use crate::tenant::Tenant;

mod sqlite {
    #[tokio::test]
    async fn every_operation_answers_as_documented() {
        super::run(crate::harness::Backend::Sqlite).await;
    }
}

mod postgres {
    #[tokio::test]
    async fn every_operation_answers_as_documented() {
        super::run(crate::harness::Backend::Postgres).await;
    }
}

/// The FleetDM label of the seeded organization and member.
const LABEL: i64 = 4242;
/// How long a browser automation run may take (the server bounds one at 30 s).
const RUN_DEADLINE: Duration = Duration::from_secs(45);

/// Starts the fakes and a server pointed at them, and runs [`every_operation`].
async fn run(backend: Backend) {
    let fake = Arc::new(FakeProvider::start().await);
    let fleet = Arc::new(FakeFleet::start().await);
    let moto = Arc::new(Moto::start().await);
    let page = Arc::new(status_page().await);
    let providers = ScratchDir::new("compliance-providers");
    for (name, manifest) in fake_provider::manifests(&fake.uri()) {
        std::fs::write(providers.path().join(name), manifest.to_string()).expect("write a manifest");
    }
    let env = vec![
        ("PROVIDERS_DIR".to_owned(), providers.path().display().to_string()),
        ("FLEET_URL".to_owned(), fleet.uri()),
        ("FLEET_TOKEN".to_owned(), fleet.token.clone()),
        // The automation opens the page served on loopback.
        ("AUTOMATION_ALLOWED_HOSTS".to_owned(), "127.0.0.1".to_owned()),
        ("CHECKS_AWS_ENDPOINT_URL".to_owned(), moto.endpoint.clone()),
    ];
    run_with_owned_env(backend, env, move |server| async move {
        every_operation(&server, &fake, &fleet, &page, &moto).await;
    })
    .await;
    drop(providers);
}

/// A page on loopback for the browser automation to open: `GET /ok`.
async fn status_page() -> MockServer {
    let server = MockServer::start().await;
    let html = "<!doctype html><html><head><title>Status</title></head><body><h1>Up</h1></body></html>";
    let answer = ResponseTemplate::new(200).set_body_raw(html.as_bytes().to_vec(), "text/html");
    Mock::given(method("GET")).and(path("/ok")).respond_with(answer).mount(&server).await;
    server
}

/// A record resource with the usual five operations, and a body for its create and its update.
struct Records {
    path: &'static str,
    create: Value,
    update: Value,
    /// list, create, get, update and delete.
    operations: [&'static str; 5],
}

fn records(tenant: &Tenant) -> Vec<Records> {
    let assignee = json!(tenant.owner_member_id);
    vec![
        Records {
            path: "/v1/tasks",
            create: json!({"title": "Review access", "description": "Quarterly.", "assigneeId": assignee}),
            update: json!({"status": "in_progress"}),
            operations: ["listTasks", "createTask", "getTask", "updateTask", "deleteTask"],
        },
        Records {
            path: "/v1/context",
            create: json!({"question": "Who owns backups?", "answer": "IT.", "tags": ["backup"]}),
            update: json!({"answer": "The IT team."}),
            operations: ["listContext", "createContext", "getContext", "updateContext", "deleteContext"],
        },
        Records {
            path: "/v1/policies",
            create: json!({"name": "Access policy", "content": [{"type": "paragraph"}], "assigneeId": assignee,
                           "reviewDate": "2030-01-01T00:00:00Z"}),
            update: json!({"status": "published"}),
            operations: ["listPolicies", "createPolicy", "getPolicy", "updatePolicy", "deletePolicy"],
        },
        Records {
            path: "/v1/vendors",
            create: json!({"name": "Hosting Co", "description": "Our cloud.", "category": "cloud",
                           "website": "https://hosting.example.test", "assigneeId": assignee}),
            update: json!({"status": "assessed"}),
            operations: ["listVendors", "createVendor", "getVendor", "updateVendor", "deleteVendor"],
        },
        Records {
            path: "/v1/risks",
            create: json!({"title": "Data loss", "description": "Backups fail.", "category": "technology",
                           "department": "it", "assigneeId": assignee}),
            update: json!({"treatmentStrategyDescription": "Test restores monthly."}),
            operations: ["listRisks", "createRisk", "getRisk", "updateRisk", "deleteRisk"],
        },
    ]
}

/// The export operation of a list operation: `listRisks` → `exportRisks`.
fn export_operation(list: &str) -> String {
    list.replacen("list", "export", 1)
}

/// Calls every operation once with a successful request, in an order that gives each the data it
/// needs, checks each answer against the document, then compares the operations called with the
/// document's.
async fn every_operation(server: &TestServer, fake: &FakeProvider, fleet: &FakeFleet, page: &MockServer, moto: &Moto) {
    let anonymous = server.anonymous();
    let served = anonymous.get("/openapi.json").await;
    let mut c = Conformance::new(served.body.clone());
    c.check("openapi", served);
    c.check("health", anonymous.get("/health").await);
    c.check("ready", anonymous.get("/ready").await);
    c.check("metrics", anonymous.get("/metrics").await);
    c.check("docs", anonymous.get("/docs").await);
    c.check("explorer", anonymous.get("/explorer").await);
    c.check("explorerFile", anonymous.get("/explorer/swagger-ui.css").await);

    let tenant = server.tenant().await;
    let api = &tenant.api;
    let token = session_token(server, &tenant.owner).await;
    let session = server.client(Auth::Session(token.clone()), Some(&tenant.org_id));
    fleet.set_hosts(LABEL, vec![host(1, LABEL), host(2, LABEL)]);

    // Records: create, list, read, update; deleted at the end.
    let mut created = Vec::new();
    for records in records(&tenant) {
        let [list, create, get, update, _] = records.operations;
        let record = c.check(create, api.post(records.path, records.create.clone()).await);
        let one = format!("{}/{}", records.path, str_of(&record, "id"));
        c.check(list, api.get(records.path).await);
        c.check(&export_operation(list), api.get(&format!("{}/export", records.path)).await);
        c.check(get, api.get(&one).await);
        c.check(update, api.patch(&one, records.update.clone()).await);
        created.push((records.operations[4], one));
    }
    // Bulk: a create and an update that apply, and an update of no record answered in its place.
    for records in records(&tenant) {
        let operation = match records.path {
            "/v1/tasks" => "bulkTasks",
            "/v1/vendors" => "bulkVendors",
            "/v1/risks" => "bulkRisks",
            _ => continue,
        };
        let one = &created.iter().find(|(delete, _)| *delete == records.operations[4]).unwrap().1;
        let id = one.rsplit('/').next().unwrap();
        let body = json!({"operations": [
            {"op": "create", "body": records.create},
            {"op": "update", "id": id, "body": records.update},
            {"op": "update", "id": crate::checks::missing_id(&id[..4]), "body": records.update},
        ]});
        let answer = c.check(operation, api.post(&format!("{}/bulk?atomic=false", records.path), body).await);
        let statuses: Vec<&Value> = answer["results"].as_array().unwrap().iter().map(|r| &r["status"]).collect();
        assert_eq!(statuses, [&json!(201), &json!(200), &json!(404)], "{answer}");
    }
    // The tasks come first in `records`: comments and automations belong to this one.
    let task_id = created[0].1.trim_start_matches("/v1/tasks/").to_owned();

    // People, the organization and their devices (FleetDM label `LABEL`).
    // People join through the operator or an invitation; the operator assigns the labels.
    let (user, member) = server.member(&tenant, "auditor").await;
    let operator = server.admin().clone().with_env("FLEET_URL", &fleet.uri()).with_env("FLEET_TOKEN", &fleet.token);
    let member_id = str_of(&member, "id");
    operator.try_set_device_label(&tenant.org_id, Some(member_id), Some(LABEL)).await.unwrap();
    operator.try_set_device_label(&tenant.org_id, None, Some(LABEL)).await.unwrap();
    let member_path = format!("/v1/people/{}", str_of(&member, "id"));
    c.check("listPeople", api.get("/v1/people?includeInactive=true").await);
    c.check("exportPeople", api.get("/v1/people/export?includeInactive=true&format=json").await);
    c.check("getPerson", api.get(&member_path).await);
    c.check("updatePerson", api.patch(&member_path, json!({"department": "hr"})).await);
    let body = json!({"operations": [
        {"op": "update", "id": member["id"], "body": {"department": "it"}},
        {"op": "delete", "id": member["id"]},
    ]});
    let answer = c.check("bulkPeople", api.post("/v1/people/bulk?atomic=false", body).await);
    let statuses: Vec<&Value> = answer["results"].as_array().unwrap().iter().map(|r| &r["status"]).collect();
    assert_eq!(statuses, [&json!(200), &json!(400)], "{answer}");
    c.check("listPersonDevices", api.get(&format!("{member_path}/devices")).await);
    c.check("getOrganization", api.get("/v1/organization").await);
    let label = json!({"deviceManagerLabelId": LABEL, "hasAccess": true, "website": "https://org.example.test"});
    c.check("updateOrganization", api.patch("/v1/organization", label).await);
    c.check("listDevices", api.get("/v1/devices").await);

    // A policy's life, with the new member as its approver: submitted, rejected, submitted again,
    // approved (version 1), signed; its versions and signatures.
    let approver = server.session(&user.id, Some(&tenant.org_id)).await;
    let body = json!({"name": "Approved policy", "content": [{"type": "paragraph"}], "approverId": member["id"]});
    let policy = api.post("/v1/policies", body).await.ok(201);
    let policy_path = format!("/v1/policies/{}", str_of(&policy, "id"));
    let submit = format!("{policy_path}/submit");
    c.check("submitPolicy", api.post(&submit, json!({"changeNote": "First version."})).await);
    c.check("rejectPolicy", approver.post(&format!("{policy_path}/reject"), json!({"reason": "Too short."})).await);
    api.post(&submit, json!({})).await.ok(200);
    c.check("approvePolicy", approver.post(&format!("{policy_path}/approve"), json!({})).await);
    c.check("signPolicy", api.post(&format!("{policy_path}/sign"), json!({})).await);
    c.check("getPolicySignatures", api.get(&format!("{policy_path}/signatures")).await);
    c.check("listPolicyVersions", api.get(&format!("{policy_path}/versions")).await);
    c.check("getPolicyVersion", api.get(&format!("{policy_path}/versions/1")).await);
    c.check("getPolicyVersionDocument", api.get(&format!("{policy_path}/versions/1/document")).await);
    c.check("getPolicyVersionDocument", api.get(&format!("{policy_path}/versions/1/document?format=pdf")).await);
    c.check("diffPolicyVersions", api.get(&format!("{policy_path}/versions/1/diff/draft")).await);

    // A task's review, with the same approver: submitted, rejected, submitted again, approved.
    let task = api.post("/v1/tasks", json!({"title": "Reviewed task", "approverId": member["id"]})).await.ok(201);
    let task_path = format!("/v1/tasks/{}", str_of(&task, "id"));
    c.check("submitTask", api.post(&format!("{task_path}/submit"), json!({})).await);
    c.check("rejectTask", approver.post(&format!("{task_path}/reject"), json!({"reason": "Redo."})).await);
    api.post(&format!("{task_path}/submit"), json!({})).await.ok(200);
    c.check("approveTask", approver.post(&format!("{task_path}/approve"), json!({})).await);
    c.check("listPersonPolicies", api.get(&format!("/v1/people/{}/policies", tenant.owner_member_id)).await);

    // A comment with an attachment on the task, and the attachment's signed download.
    let comment = json!({"content": "See attached.", "entityId": task_id, "entityType": "task",
                         "userId": tenant.owner.id, "attachments": [file("evidence.pdf", "application/pdf", b"%PDF-1.4")]});
    let comment = c.check("createComment", api.post("/v1/comments", comment).await);
    let comment_path = format!("/v1/comments/{}", str_of(&comment, "id"));
    c.check("listComments", api.get(&format!("/v1/comments?entityId={task_id}&entityType=task")).await);
    c.check("exportComments", api.get(&format!("/v1/comments/export?entityId={task_id}&entityType=task")).await);
    c.check("updateComment", api.put(&comment_path, json!({"content": "See the attached PDF."})).await);
    let attachment = str_of(&comment["attachments"][0], "id").to_owned();
    let link = c.check("getAttachmentDownloadLink", api.get(&format!("/v1/attachments/{attachment}/download")).await);
    c.check("downloadAttachment", anonymous.get_url(str_of(&link, "downloadUrl")).await);

    // API keys: made (its text shown once), listed, revoked.
    let key = c.check(
        "createApiKey",
        api.post("/v1/api-keys", json!({"name": "ci", "scopes": ["risks:read", "*:read"]})).await,
    );
    c.check("listApiKeys", api.get("/v1/api-keys?limit=10").await);
    c.check("revokeApiKey", api.delete(&format!("/v1/api-keys/{}", str_of(&key, "id"))).await);

    // The assistant chat: a session only.
    let message = json!({"id": "m1", "role": "user", "text": "Hello", "createdAt": 1_700_000_000_000_i64});
    c.check("replaceChatHistory", session.put("/v1/assistant-chat/history", json!({"messages": [message]})).await);
    c.check("getChatHistory", session.get("/v1/assistant-chat/history").await);
    c.check("clearChatHistory", session.delete("/v1/assistant-chat/history").await);

    // The signed-in user (a session needs no organization here) and invitations.
    let signed_in = server.client(Auth::Session(token.clone()), None);
    c.check("getMe", signed_in.get("/v1/me").await);
    c.check("createOrganization", signed_in.post("/v1/organizations", json!({"name": "Conformance Two"})).await);
    let spare = server.client(Auth::Session(session_token(server, &tenant.owner).await), None);
    let sessions = c.check("listSessions", spare.get("/v1/sessions").await);
    let own = sessions["data"].as_array().unwrap().iter().find(|s| s["current"] == true).expect("the current session");
    c.check("deleteSession", spare.delete(&format!("/v1/sessions/{}", str_of(own, "id"))).await);
    let invitation = c.check(
        "createInvitation",
        api.post("/v1/invitations", json!({"email": "new@example.test", "role": "employee"})).await,
    );
    let invitation = format!("/v1/invitations/{}", str_of(&invitation, "id"));
    c.check("listInvitations", api.get("/v1/invitations").await);
    c.check("getInvitation", api.get(&invitation).await);
    c.check("deleteInvitation", api.delete(&invitation).await);
    // The audit trail (by now it holds the entries of everything above). A history answers for
    // any well-formed id, a deleted record's too.
    c.check("listAuditLog", api.get("/v1/audit-log?limit=5").await);
    c.check("verifyAuditLog", api.get("/v1/audit-log/verify").await);
    c.check("getAuditTreeHead", api.get("/v1/audit-log/tree-head").await);
    c.check("getAuditInclusionProof", api.get("/v1/audit-log/1/proof").await);
    c.check("getAuditConsistencyProof", api.get("/v1/audit-log/consistency?from=1").await);
    c.check("getRiskHistory", api.get("/v1/risks/rsk_conformance/history").await);
    c.check("getVendorHistory", api.get("/v1/vendors/vnd_conformance/history").await);
    c.check("getTaskHistory", api.get("/v1/tasks/tsk_conformance/history").await);
    c.check("getPolicyHistory", api.get("/v1/policies/pol_conformance/history").await);
    // Frameworks: a template, our own shape and an OSCAL catalog (tests/oscal/small-catalog.json).
    c.check("listFrameworkTemplates", api.get("/v1/framework-templates").await);
    c.check("getLibraryComponentDefinition", api.get("/v1/library/component-definition").await);
    // The framework alone here (a framework with mapped controls is not deleted below); the
    // whole program from the library after the delete.
    let bare = json!({"withControls": false});
    let adopted = c.check("adoptFrameworkTemplate", api.post("/v1/framework-templates/soc2-2017/adopt", bare).await);
    let custom = json!({"name": "Own", "version": "1", "requirements": [
        {"identifier": "O-1", "title": "One", "description": "The first."},
        {"identifier": "O-1.1", "title": "One, refined", "parent": "O-1"}]});
    c.check("createFramework", api.post("/v1/frameworks", custom).await);
    let catalog: Value = serde_json::from_str(include_str!("../oscal/small-catalog.json")).unwrap();
    c.check("importFramework", api.post("/v1/frameworks/import", catalog).await);
    c.check("listFrameworks", api.get("/v1/frameworks?limit=2").await);
    let requirement = str_of(&adopted["requirements"][0], "id").to_owned();
    let adopted = format!("/v1/frameworks/{}", str_of(&adopted, "id"));
    c.check("getFramework", api.get(&adopted).await);
    // A control mapped to one of its requirements, the roll-up, the OSCAL export, then unmapped.
    let mapped = c.check("createControl", api.post("/v1/controls", json!({"name": "Mapped"})).await);
    let mapped = format!("/v1/controls/{}", str_of(&mapped, "id"));
    let body = json!({"requirementId": requirement});
    c.check("mapControlRequirement", api.post(&format!("{mapped}/requirements"), body).await);
    c.check("listControlRequirements", api.get(&format!("{mapped}/requirements")).await);
    c.check("getFrameworkStatus", api.get(&format!("{adopted}/status")).await);
    let statement = json!({"applicable": false, "justification": "Not offered to customers."});
    let applicability = format!("{adopted}/requirements/{requirement}/applicability");
    c.check("stateRequirementApplicability", api.put(&applicability, statement).await);
    c.check("getStatementOfApplicability", api.get(&format!("{adopted}/soa")).await);
    c.check("getFrameworkAssessmentResults", api.get(&format!("{adopted}/assessment-results")).await);
    c.check("unmapControlRequirement", api.delete(&format!("{mapped}/requirements/{requirement}")).await);
    c.check("deleteControl", api.delete(&mapped).await);
    c.check("deleteFramework", api.delete(&adopted).await);
    c.check("adoptFrameworkTemplate", api.post("/v1/framework-templates/iso27001-2022/adopt", json!({})).await);
    // Webhooks are checked against a real receiver in tests/api/webhooks.rs.
    for operation in [
        "createWebhook",
        "listWebhooks",
        "getWebhook",
        "updateWebhook",
        "deleteWebhook",
        "rotateWebhookSecret",
        "testWebhook",
        "listWebhookDeliveries",
        "retryWebhookDelivery",
    ] {
        c.exercised_elsewhere(operation);
    }
    // These need a real OpenID provider (sign-in not configured here answers 404, and accepting
    // needs an address the provider verified): tests/api/sign_in.rs calls each against one.
    for operation in ["startSignIn", "finishSignIn", "signOut", "acceptInvitation"] {
        c.exercised_elsewhere(operation);
    }

    // A control linked to the task, with an uploaded file as evidence and its signed download.
    let control =
        c.check("createControl", api.post("/v1/controls", json!({"name": "Backups", "frequency": "monthly"})).await);
    let control_path = format!("/v1/controls/{}", str_of(&control, "id"));
    c.check("listControls", api.get("/v1/controls?frequency=monthly").await);
    c.check("getControl", api.get(&control_path).await);
    c.check("updateControl", api.patch(&control_path, json!({"description": "Nightly backups."})).await);
    let source = json!({"sourceId": task_id});
    c.check("addControlEvidenceSource", api.post(&format!("{control_path}/evidence-sources"), source).await);
    let upload = file("restore-test.pdf", "application/pdf", b"%PDF-1.4");
    let item = c.check("uploadControlEvidence", api.post(&format!("{control_path}/evidence"), upload).await);
    c.check("listControlEvidence", api.get(&format!("{control_path}/evidence")).await);
    c.check("downloadEvidence", anonymous.get_url(str_of(&item, "link")).await);
    c.check("getControlStatus", api.get(&format!("{control_path}/status?asOf=2026-01-01T00:00:00Z")).await);
    c.check("removeControlEvidenceSource", api.delete(&format!("{control_path}/evidence-sources/{task_id}")).await);
    c.check("deleteControl", api.delete(&control_path).await);

    integrations(&mut c, server, fake, &tenant, &session, &token).await;
    check_runs(&mut c, &tenant, moto).await;
    let automation = automations(&mut c, server, api, &task_id, page).await;

    // Deletes, last: the comment and the automation before the task they belong to.
    c.check("deleteComment", api.delete(&comment_path).await);
    c.check("deleteAutomation", api.delete(&automation).await);
    for (operation, one) in created.iter().rev() {
        c.check(operation, api.delete(one).await);
    }

    c.assert_every_operation_checked();
}

/// A connection's checks run against moto, the run's results and the finding it opens.
async fn check_runs(c: &mut Conformance, tenant: &Tenant, moto: &Moto) {
    let api = &tenant.api;
    crate::check_runs::console_users(moto, &[("conformance", false)]);
    let connection = crate::check_runs::connect_aws(api).await;
    let path = format!("/v1/integrations/connections/{connection}/checks/run");
    let queued = c.check("runConnectionChecks", api.post(&path, json!({})).await);
    let run = str_of(&queued, "id").to_owned();
    crate::check_runs::wait_done(api, &run).await;
    c.check("getCheckRun", api.get(&format!("/v1/check-runs/{run}")).await);
    c.check("listCheckRuns", api.get(&format!("/v1/check-runs?connectionId={connection}&status=finished")).await);
    c.check("exportCheckRuns", api.get("/v1/check-runs/export?format=json").await);
    c.check("listCheckResults", api.get(&format!("/v1/check-runs/{run}/results?limit=5")).await);
    let findings = c.check("listFindings", api.get("/v1/findings?checkId=aws.iam.user-console-mfa").await);
    let finding = str_of(&findings["data"][0], "id").to_owned();
    c.check("getFinding", api.get(&format!("/v1/findings/{finding}")).await);
    c.check("exportFindings", api.get("/v1/findings/export?format=json").await);
    let until = (time::OffsetDateTime::now_utc() + time::Duration::days(7))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let exception = json!({"reason": "conformance", "expiresAt": until});
    c.check("exceptFinding", api.post(&format!("/v1/findings/{finding}/exception"), exception).await);
    c.check("createFindingTask", api.post(&format!("/v1/findings/{finding}/task"), json!({})).await);
    c.check("getFindingDeadlines", api.get("/v1/findings/deadlines").await);
    let deadlines = json!({"criticalDays": 5, "highDays": 20, "mediumDays": 60, "lowDays": 120});
    c.check("setFindingDeadlines", api.put("/v1/findings/deadlines", deadlines).await);
    let prowler = crate::prowler_import::prowler_file();
    let imported = crate::prowler_import::import(api, &connection, &prowler).await;
    c.check("importConnectionCheckResults", imported);
}

/// Providers, the OAuth app and flow, connections, and the connect page with its two forms.
async fn integrations(
    c: &mut Conformance,
    server: &TestServer,
    fake: &FakeProvider,
    tenant: &Tenant,
    session: &Client,
    token: &str,
) {
    let api = &tenant.api;
    let app = format!("/v1/integrations/oauth-apps/{OAUTH}");
    c.check("listProviders", api.get("/v1/integrations/providers").await);
    c.check("getProvider", api.get(&format!("/v1/integrations/providers/{OAUTH}")).await);
    c.check("listChecks", api.get("/v1/checks?provider=aws&severity=critical").await);
    c.check("getCheck", api.get("/v1/checks/github.org.two-factor-required").await);
    let secret = fake.secret("clientsecret");
    fake.accept_client("conformance-client", &secret);
    c.check("putOAuthApp", api.put(&app, json!({"clientId": "conformance-client", "clientSecret": secret})).await);
    c.check("getOAuthApp", api.get(&app).await);

    // The OAuth flow: start, the provider's authorize endpoint, the callback (a redirect).
    let started =
        c.check("startOAuth", session.post("/v1/integrations/oauth/start", json!({"providerSlug": OAUTH})).await);
    let at_provider = send(reqwest::Method::GET, str_of(&started, "authorizationUrl"), None, None).await;
    assert_eq!(at_provider.status, 302, "the fake provider's authorize endpoint: {at_provider:?}");
    let callback = at_provider.location.clone().expect("the provider redirects to the callback");
    let back = c.check_redirect("oauthCallback", send(reqwest::Method::GET, &callback, Some(token), None).await);
    assert!(back.contains("status=connected"), "the callback did not connect: {back}");

    // A connection with an API key in a header.
    let key = fake.secret("apikey");
    fake.accept(&format!("{KEY_PREFIX}{key}"));
    let body = json!({"providerSlug": HEADER_KEY, "credentials": {"api_key": key}});
    let connection = c.check("createConnection", api.post("/v1/integrations/connections", body).await);
    let connection_path = format!("/v1/integrations/connections/{}", str_of(&connection, "id"));
    c.check("listConnections", api.get("/v1/integrations/connections").await);
    c.check("exportConnections", api.get("/v1/integrations/connections/export?format=json").await);
    c.check("getConnection", api.get(&connection_path).await);
    let checked = c.check("checkConnection", api.post(&format!("{connection_path}/check"), json!({})).await);
    assert_eq!(checked["check"]["ok"], true, "the provider refused the check: {checked}");

    // The connect page, its credentials form (another provider) and its OAuth button.
    let connect =
        |slug: &str| format!("{}/integrations/{slug}/connect?organizationId={}", server.base_url(), tenant.org_id);
    let form_page =
        c.check("showConnectPage", send(reqwest::Method::GET, &connect(QUERY_KEY), Some(token), None).await);
    let query_key = fake.secret("apikey");
    fake.accept(&query_key);
    let form = [("csrf_token", csrf_token(&form_page)), ("cred.api_key", query_key)];
    let submitted = send(reqwest::Method::POST, &connect(QUERY_KEY), Some(token), Some(&form)).await;
    c.check("submitConnectForm", submitted);
    let oauth_page = c.check("showConnectPage", send(reqwest::Method::GET, &connect(OAUTH), Some(token), None).await);
    let form = [("csrf_token", csrf_token(&oauth_page))];
    let oauth_button =
        format!("{}/integrations/{OAUTH}/connect/oauth?organizationId={}", server.base_url(), tenant.org_id);
    let to_provider = send(reqwest::Method::POST, &oauth_button, Some(token), Some(&form)).await;
    let to_provider = c.check_redirect("submitConnectOAuth", to_provider);
    assert!(to_provider.starts_with(&fake.uri()), "the OAuth button leads to {to_provider}, not to the provider");

    c.check("deleteConnection", api.delete(&connection_path).await);
    c.check("deleteOAuthApp", api.delete(&app).await);
}

/// An automation of the task that opens `page`, one manual run of its steps to completion and its
/// final and step screenshots; the automation's path, for the delete at the end.
async fn automations(c: &mut Conformance, server: &TestServer, api: &Client, task: &str, page: &MockServer) -> String {
    let body = json!({"taskId": task, "name": "Status page", "targetUrl": format!("{}/ok", page.uri()),
                      "instruction": "expect text \"Up\"\nscreenshot", "schedule": "0 0 3 * * *"});
    let automation = c.check("createAutomation", api.post("/v1/browser/automations", body).await);
    let one = format!("/v1/browser/automations/{}", str_of(&automation, "id"));
    c.check("listTaskAutomations", api.get(&format!("/v1/browser/automations/task/{task}")).await);
    c.check("getAutomation", api.get(&one).await);
    c.check("updateAutomation", api.patch(&one, json!({"description": "Daily at three."})).await);
    let secret = format!("{one}/secrets/password");
    c.check("putAutomationSecret", api.put(&secret, json!({"value": "correct horse"})).await);
    c.check("listAutomationSecrets", api.get(&format!("{one}/secrets")).await);
    c.check("deleteAutomationSecret", api.delete(&secret).await);
    c.check("startAutomationRun", api.post(&format!("{one}/runs"), json!({})).await);

    // Polled until the run has finished, so that the list checked holds every field of a run.
    let runs_path = format!("{one}/runs");
    let finished = poll_every(Duration::from_millis(250), RUN_DEADLINE, || async {
        let runs = api.get(&runs_path).await;
        matches!(runs.body[0]["status"].as_str(), Some("completed" | "failed")).then_some(runs)
    })
    .await;
    let runs = finished.unwrap_or_else(|| panic!("the run did not finish within {RUN_DEADLINE:?}"));
    let runs = c.check("listAutomationRuns", runs);
    let exported = c.check("exportAutomationRuns", api.get(&format!("{runs_path}/export?format=json")).await);
    // One JSON line: the body is that object, the run as the list shows it.
    assert_eq!(exported["id"], runs[0]["id"], "the exported run: {exported}");
    assert_eq!(runs[0]["status"], "completed", "the run: {runs}");
    assert_eq!(runs[0]["verdict"]["outcome"], "passed", "the run: {runs}");
    let screenshot = str_of(&runs[0], "screenshotUrl");
    c.check("getRunScreenshot", server.anonymous().get_url(screenshot).await);
    let step_screenshot = str_of(&runs[0]["steps"][1], "screenshotUrl");
    c.check("getRunScreenshot", server.anonymous().get_url(step_screenshot).await);
    one
}

/// The `csrf_token` a connect page rendered into its form.
fn csrf_token(page: &Value) -> String {
    let html = page.as_str().unwrap_or_else(|| panic!("the connect page is not text: {page}"));
    let marker = r#"name="csrf_token" value=""#;
    let start = html.find(marker).unwrap_or_else(|| panic!("no csrf_token in the page:\n{html}")) + marker.len();
    html[start..].split('"').next().unwrap_or_default().to_owned()
}

/// What the server answered to one request, as the conformance check reads it.
#[derive(Debug)]
struct Answer {
    /// `METHOD PATH`, without scheme, host and query.
    request: String,
    status: u16,
    content_type: String,
    location: Option<String>,
    /// JSON when the body is JSON, a string holding the text otherwise, `Null` when empty.
    body: Value,
}

impl From<Response> for Answer {
    fn from(response: Response) -> Self {
        let request = response.request().to_owned();
        Answer {
            request,
            status: response.status,
            content_type: response.content_type,
            location: None,
            body: response.body,
        }
    }
}

/// A request as a browser sends it (the session cookie, an optional form), following no redirect.
async fn send(method: reqwest::Method, url: &str, token: Option<&str>, form: Option<&[(&str, String)]>) -> Answer {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("reqwest client");
    let mut request = http.request(method.clone(), url);
    if let Some(token) = token {
        request = request.header(COOKIE, format!("session_token={token}"));
    }
    if let Some(form) = form {
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        request = request.header(CONTENT_TYPE, "application/x-www-form-urlencoded").body(body);
    }
    let response = request.send().await.unwrap_or_else(|err| panic!("{method} {url}: {err}"));
    let header = |name| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let (content_type, location) = (header(CONTENT_TYPE).unwrap_or_default(), header(LOCATION));
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_else(|err| panic!("{method} {url}: reading the body: {err}"));
    let body = if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
    Answer { request: format!("{method} {url}"), status, content_type, location, body }
}

/// The served document, and the operations checked so far.
struct Conformance {
    document: Value,
    /// operationId → (method, path template).
    operations: BTreeMap<String, (String, String)>,
    checked: BTreeSet<String>,
}

impl Conformance {
    fn new(document: Value) -> Self {
        let mut operations = BTreeMap::new();
        let paths = document["paths"].as_object().unwrap_or_else(|| panic!("no `paths` in the document"));
        for (template, item) in paths {
            for (method, operation) in item.as_object().into_iter().flatten() {
                if let Some(id) = operation["operationId"].as_str() {
                    operations.insert(id.to_owned(), (method.to_uppercase(), template.clone()));
                }
            }
        }
        Self { document, operations, checked: BTreeSet::new() }
    }

    /// Asserts that `answer` is a documented success of `operation_id` (the request being that
    /// operation's method and path) and that a JSON body validates against the documented schema;
    /// returns the body.
    #[track_caller]
    fn check(&mut self, operation_id: &str, answer: impl Into<Answer>) -> Value {
        let answer = answer.into();
        let Some((method, template)) = self.operations.get(operation_id) else {
            panic!("`{operation_id}` is not an operation of the document");
        };
        let request = request_path(&answer.request);
        assert!(
            request.0 == *method && matches_template(template, &request.1),
            "`{operation_id}` is {method} {template}, but the test sent {}",
            answer.request
        );
        let status = answer.status;
        let documented = &self.document["paths"][template][method.to_lowercase()]["responses"][status.to_string()];
        assert!(
            (200..400).contains(&status) && documented.is_object(),
            "{operation_id}: {} answered {status}, not a documented success: {}",
            answer.request,
            answer.body
        );
        match documented["content"].as_object() {
            Some(content) if content.contains_key("application/json") => {
                assert!(
                    answer.content_type.starts_with("application/json"),
                    "{operation_id} {status}: Content-Type {:?}, documented application/json",
                    answer.content_type
                );
                let schema = &content["application/json"]["schema"];
                validate(operation_id, status, &self.schema(schema), &answer.body);
            }
            Some(content) => {
                let media_type = answer.content_type.split(';').next().unwrap_or_default().trim();
                assert!(
                    content.contains_key(media_type) || content.contains_key("*/*"),
                    "{operation_id} {status}: Content-Type {:?}, documented {:?}",
                    answer.content_type,
                    content.keys().collect::<Vec<_>>()
                );
            }
            None if (300..400).contains(&status) => {
                assert!(answer.location.is_some(), "{operation_id}: a {status} without a Location")
            }
            None => assert_eq!(answer.body, Value::Null, "{operation_id} {status}: a body where none is documented"),
        }
        self.checked.insert(operation_id.to_owned());
        answer.body
    }

    /// [`Self::check`] of a redirect; its `Location`.
    #[track_caller]
    fn check_redirect(&mut self, operation_id: &str, answer: Answer) -> String {
        let location = answer.location.clone().unwrap_or_else(|| panic!("{operation_id}: no Location in {answer:?}"));
        self.check(operation_id, answer);
        location
    }

    /// `schema` with the document's components beside it, so that `#/components/…` resolves.
    fn schema(&self, schema: &Value) -> Value {
        let mut root =
            schema.as_object().cloned().unwrap_or_else(|| panic!("a schema that is not an object: {schema}"));
        root.insert("components".to_owned(), self.document["components"].clone());
        Value::Object(root)
    }

    /// An operation whose successful call needs a real OpenID provider: tests/api/sign_in.rs
    /// makes it against one.
    fn exercised_elsewhere(&mut self, operation_id: &str) {
        self.checked.insert(operation_id.to_owned());
    }

    /// Fails naming every operation of the document this test did not call, and any it called
    /// that the document does not have.
    fn assert_every_operation_checked(&self) {
        let documented: BTreeSet<String> = self.operations.keys().cloned().collect();
        let missing: Vec<_> = documented.difference(&self.checked).collect();
        let unknown: Vec<_> = self.checked.difference(&documented).collect();
        assert!(
            missing.is_empty() && unknown.is_empty(),
            "operations of the document without a conformance check: {missing:?}; checked but not documented: {unknown:?}"
        );
    }
}

/// Fails naming the operation, the status, and for each error the JSON pointer of the failing
/// instance, the schema keyword's location and the error.
#[track_caller]
fn validate(operation_id: &str, status: u16, schema: &Value, body: &Value) {
    let validator = jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(schema)
        .unwrap_or_else(|err| panic!("{operation_id} {status}: the documented schema does not compile: {err}"));
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|err| format!("  at `{}` (schema `{}`): {err}", err.instance_path(), err.schema_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{operation_id} answered {status} with a body its documented schema refuses:\n{}\nbody: {body}",
        errors.join("\n")
    );
}
