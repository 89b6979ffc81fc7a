//! Roles and API-key scopes over HTTP: one walk of every operation of the served `/openapi.json`
//! by every role (owner, admin, auditor, employee) and by an API key with limited scopes. Allowed
//! is anything but 403; denied is a 403 whose detail names the rule. The permission matrix below
//! is docs/api.md's ("Roles and permissions"), the contract; each operation is one row of `ROWS`.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::checks::missing_id;
use crate::client::{Auth, Client, Response};
use crate::harness::TestServer;

api_tests!(every_operation_answers_each_role_as_the_matrix_says);

/// docs/api.md's matrix: per family, what owner, admin, auditor and employee may do (`r`, `w`).
/// An "own" grant counts as allowed here; where it refuses a record, the row says so.
const MATRIX: &[(&str, [&str; 4])] = &[
    ("risks", ["rw", "rw", "r", ""]),
    ("vendors", ["rw", "rw", "r", ""]),
    ("people", ["rw", "rw", "r", ""]),
    ("policies", ["rw", "rw", "r", "r"]),
    ("context", ["rw", "rw", "r", ""]),
    ("tasks", ["rw", "rw", "r", "r"]),
    ("comments", ["rw", "rw", "r", "rw"]),
    ("devices", ["rw", "rw", "r", "r"]),
    ("automations", ["rw", "rw", "r", ""]),
    ("integrations", ["rw", "rw", "r", ""]),
    ("organization", ["rw", "rw", "r", ""]),
    ("api-keys", ["rw", "rw", "rw", "rw"]),
    ("audit", ["r", "r", "r", ""]),
    ("webhooks", ["rw", "rw", "r", ""]),
    ("frameworks", ["rw", "rw", "r", "r"]),
    ("controls", ["rw", "rw", "r", ""]),
    ("checks", ["rw", "rw", "r", ""]),
    ("findings", ["rw", "rw", "r", ""]),
];

const ROLES: [&str; 4] = ["owner", "admin", "auditor", "employee"];

/// The scopes of the walk's API key (made by the owner).
const KEY_SCOPES: [&str; 3] = ["risks:read", "tasks:write", "automations:write"];

/// What an operation needs.
#[derive(Clone, Copy)]
enum Rule {
    /// Reading (`r`) or writing (`w`) the family.
    Needs(char, &'static str),
    /// As `Needs`, and then the second family too (an automation's connection: integrations).
    AlsoNeeds(char, &'static str, char, &'static str),
    /// As `Needs`, but an employee is refused this record: their "own" reach does not cover it.
    NotOwn(char, &'static str, &'static str),
    /// The caller's own data, sessions only (the assistant chat history).
    SessionOnly,
    /// Needs no credentials (signed links, health, the document).
    Public,
    /// Not walked, for the reason given.
    Skip(&'static str),
}

use Rule::{AlsoNeeds, Needs, NotOwn, Public, SessionOnly, Skip};

/// One row per operation: its id, the request (`{rsk}` etc. stand for well-formed ids of no
/// record: an allowed caller gets a 404, a denied one the 403 before any look-up), the body of
/// writes, and the rule.
const ROWS: &[(&str, &str, &str, Rule)] = &[
    ("health", "/health", "", Public),
    ("ready", "/ready", "", Public),
    ("metrics", "/metrics", "", Public),
    ("openapi", "/openapi.json", "", Public),
    ("docs", "/docs", "", Public),
    ("explorer", "/explorer", "", Public),
    ("explorerFile", "/explorer/swagger-ui.css", "", Public),
    ("listContext", "/v1/context", "", Needs('r', "context")),
    ("exportContext", "/v1/context/export", "", Needs('r', "context")),
    ("createContext", "/v1/context", "{}", Needs('w', "context")),
    ("getContext", "/v1/context/{ctx}", "", Needs('r', "context")),
    ("updateContext", "/v1/context/{ctx}", "{}", Needs('w', "context")),
    ("deleteContext", "/v1/context/{ctx}", "", Needs('w', "context")),
    ("listPolicies", "/v1/policies", "", Needs('r', "policies")),
    ("exportPolicies", "/v1/policies/export", "", Needs('r', "policies")),
    ("createPolicy", "/v1/policies", "{}", Needs('w', "policies")),
    ("getPolicy", "/v1/policies/{pol}", "", Needs('r', "policies")),
    ("updatePolicy", "/v1/policies/{pol}", "{}", Needs('w', "policies")),
    ("deletePolicy", "/v1/policies/{pol}", "", Needs('w', "policies")),
    // a policy's life: who may act is decided from the record (a 404 here), after reading
    ("submitPolicy", "/v1/policies/{pol}/submit", "{}", Needs('r', "policies")),
    ("approvePolicy", "/v1/policies/{pol}/approve", "{}", Needs('r', "policies")),
    ("rejectPolicy", "/v1/policies/{pol}/reject", r#"{"reason":"x"}"#, Needs('r', "policies")),
    ("signPolicy", "/v1/policies/{pol}/sign", "{}", Needs('r', "policies")),
    ("getPolicySignatures", "/v1/policies/{pol}/signatures", "", Needs('r', "policies")),
    ("listPolicyVersions", "/v1/policies/{pol}/versions", "", Needs('r', "policies")),
    ("getPolicyVersion", "/v1/policies/{pol}/versions/1", "", Needs('r', "policies")),
    ("diffPolicyVersions", "/v1/policies/{pol}/versions/1/diff/2", "", Needs('r', "policies")),
    ("getPolicyVersionDocument", "/v1/policies/{pol}/versions/1/document", "", Needs('r', "policies")),
    ("listPersonPolicies", "/v1/people/{mem}/policies", "", NotOwn('r', "policies", "may not read people")),
    ("listVendors", "/v1/vendors", "", Needs('r', "vendors")),
    ("exportVendors", "/v1/vendors/export", "", Needs('r', "vendors")),
    ("createVendor", "/v1/vendors", "{}", Needs('w', "vendors")),
    ("getVendor", "/v1/vendors/{vnd}", "", Needs('r', "vendors")),
    ("updateVendor", "/v1/vendors/{vnd}", "{}", Needs('w', "vendors")),
    ("deleteVendor", "/v1/vendors/{vnd}", "", Needs('w', "vendors")),
    ("bulkVendors", "/v1/vendors/bulk", r#"{"operations":[]}"#, Needs('w', "vendors")),
    ("listRisks", "/v1/risks", "", Needs('r', "risks")),
    ("exportRisks", "/v1/risks/export", "", Needs('r', "risks")),
    ("createRisk", "/v1/risks", "{}", Needs('w', "risks")),
    ("getRisk", "/v1/risks/{rsk}", "", Needs('r', "risks")),
    ("updateRisk", "/v1/risks/{rsk}", "{}", Needs('w', "risks")),
    ("deleteRisk", "/v1/risks/{rsk}", "", Needs('w', "risks")),
    ("bulkRisks", "/v1/risks/bulk", r#"{"operations":[]}"#, Needs('w', "risks")),
    ("listTasks", "/v1/tasks", "", Needs('r', "tasks")),
    ("exportTasks", "/v1/tasks/export", "", Needs('r', "tasks")),
    ("createTask", "/v1/tasks", "{}", Needs('w', "tasks")),
    ("getTask", "/v1/tasks/{tsk}", "", Needs('r', "tasks")),
    ("updateTask", "/v1/tasks/{tsk}", "{}", Needs('w', "tasks")),
    ("deleteTask", "/v1/tasks/{tsk}", "", Needs('w', "tasks")),
    ("bulkTasks", "/v1/tasks/bulk", r#"{"operations":[]}"#, Needs('w', "tasks")),
    ("submitTask", "/v1/tasks/{tsk}/submit", "{}", Needs('r', "tasks")),
    ("approveTask", "/v1/tasks/{tsk}/approve", "{}", Needs('r', "tasks")),
    ("rejectTask", "/v1/tasks/{tsk}/reject", r#"{"reason":"x"}"#, Needs('r', "tasks")),
    ("listComments", "/v1/comments?entityType=policy&entityId={pol}", "", Needs('r', "comments")),
    ("exportComments", "/v1/comments/export?entityType=policy&entityId={pol}", "", Needs('r', "comments")),
    // A key writes as its creator only (a `userId` naming anyone else is a 400): tests/api/comments.rs.
    (
        "createComment",
        "/v1/comments",
        r#"{"content":"x","entityType":"policy","entityId":"{pol}"}"#,
        Needs('w', "comments"),
    ),
    ("updateComment", "/v1/comments/{cmt}", r#"{"content":"x"}"#, Needs('w', "comments")),
    ("deleteComment", "/v1/comments/{cmt}", "", Needs('w', "comments")),
    ("getAttachmentDownloadLink", "/v1/attachments/{att}/download", "", Needs('r', "comments")),
    ("downloadAttachment", "/v1/attachments/{att}/content", "", Public),
    ("getChatHistory", "/v1/assistant-chat/history", "", SessionOnly),
    ("replaceChatHistory", "/v1/assistant-chat/history", r#"{"messages":[]}"#, SessionOnly),
    ("clearChatHistory", "/v1/assistant-chat/history", "", SessionOnly),
    ("listPeople", "/v1/people", "", Needs('r', "people")),
    ("exportPeople", "/v1/people/export", "", Needs('r', "people")),
    ("getPerson", "/v1/people/{mem}", "", Needs('r', "people")),
    ("updatePerson", "/v1/people/{mem}", "{}", Needs('w', "people")),
    ("bulkPeople", "/v1/people/bulk", r#"{"operations":[]}"#, Needs('w', "people")),
    ("getOrganization", "/v1/organization", "", Needs('r', "organization")),
    ("updateOrganization", "/v1/organization", "{}", Needs('w', "organization")),
    ("listProviders", "/v1/integrations/providers", "", Needs('r', "integrations")),
    ("getProvider", "/v1/integrations/providers/github", "", Needs('r', "integrations")),
    ("listChecks", "/v1/checks", "", Needs('r', "checks")),
    ("getCheck", "/v1/checks/aws.iam.root-mfa", "", Needs('r', "checks")),
    ("runConnectionChecks", "/v1/integrations/connections/{con}/checks/run", "{}", Needs('w', "checks")),
    ("importConnectionCheckResults", "/v1/integrations/connections/{con}/check-results", "[]", Needs('w', "checks")),
    ("listCheckRuns", "/v1/check-runs", "", Needs('r', "checks")),
    ("exportCheckRuns", "/v1/check-runs/export", "", Needs('r', "checks")),
    ("getCheckRun", "/v1/check-runs/{chr}", "", Needs('r', "checks")),
    ("listCheckResults", "/v1/check-runs/{chr}/results", "", Needs('r', "checks")),
    ("listFindings", "/v1/findings", "", Needs('r', "findings")),
    ("exportFindings", "/v1/findings/export", "", Needs('r', "findings")),
    ("getFinding", "/v1/findings/{fnd}", "", Needs('r', "findings")),
    ("createFindingTask", "/v1/findings/{fnd}/task", "{}", AlsoNeeds('w', "findings", 'w', "tasks")),
    ("getFindingDeadlines", "/v1/findings/deadlines", "", Needs('r', "findings")),
    (
        "setFindingDeadlines",
        "/v1/findings/deadlines",
        r#"{"criticalDays":7,"highDays":30,"mediumDays":90,"lowDays":180}"#,
        Needs('w', "findings"),
    ),
    (
        "exceptFinding",
        "/v1/findings/{fnd}/exception",
        r#"{"reason":"x","expiresAt":"2099-01-01T00:00:00Z"}"#,
        Needs('w', "findings"),
    ),
    ("getOAuthApp", "/v1/integrations/oauth-apps/github", "", Needs('r', "integrations")),
    ("putOAuthApp", "/v1/integrations/oauth-apps/github", r#"{"clientId":"x"}"#, Needs('w', "integrations")),
    ("deleteOAuthApp", "/v1/integrations/oauth-apps/github", "", Needs('w', "integrations")),
    ("startOAuth", "/v1/integrations/oauth/start", r#"{"providerSlug":"github"}"#, Needs('w', "integrations")),
    ("oauthCallback", "", "", Skip("the single-use state is checked before the caller; tests/api/integrations.rs")),
    ("listConnections", "/v1/integrations/connections", "", Needs('r', "integrations")),
    ("exportConnections", "/v1/integrations/connections/export", "", Needs('r', "integrations")),
    (
        "createConnection",
        "/v1/integrations/connections",
        r#"{"providerSlug":"github","credentials":{}}"#,
        Needs('w', "integrations"),
    ),
    ("getConnection", "/v1/integrations/connections/{con}", "", Needs('r', "integrations")),
    ("deleteConnection", "/v1/integrations/connections/{con}", "", Needs('w', "integrations")),
    ("checkConnection", "/v1/integrations/connections/{con}/check", "{}", Needs('w', "integrations")),
    ("showConnectPage", "", "", Skip("an HTML page; its refusals are pages, tests/api/connect_page.rs")),
    ("submitConnectForm", "", "", Skip("needs the page's signed form token first; tests/api/connect_page.rs")),
    ("submitConnectOAuth", "", "", Skip("needs the page's signed form token first; tests/api/connect_page.rs")),
    ("listDevices", "/v1/devices", "", NotOwn('r', "devices", "may read only their own devices")),
    ("listPersonDevices", "/v1/people/{mem}/devices", "", NotOwn('r', "devices", "may read only their own devices")),
    // handing an automation a connection's credentials writes integrations too
    (
        "createAutomation",
        "/v1/browser/automations",
        r#"{"connectionId":"{con}"}"#,
        AlsoNeeds('w', "automations", 'w', "integrations"),
    ),
    ("listTaskAutomations", "/v1/browser/automations/task/{tsk}", "", Needs('r', "automations")),
    ("getAutomation", "/v1/browser/automations/{aut}", "", Needs('r', "automations")),
    (
        "updateAutomation",
        "/v1/browser/automations/{aut}",
        r#"{"connectionId":"{con}"}"#,
        AlsoNeeds('w', "automations", 'w', "integrations"),
    ),
    ("deleteAutomation", "/v1/browser/automations/{aut}", "", Needs('w', "automations")),
    ("listAutomationRuns", "/v1/browser/automations/{aut}/runs", "", Needs('r', "automations")),
    ("exportAutomationRuns", "/v1/browser/automations/{aut}/runs/export", "", Needs('r', "automations")),
    ("startAutomationRun", "/v1/browser/automations/{aut}/runs", "{}", Needs('w', "automations")),
    ("getRunScreenshot", "/v1/browser/runs/{run}/screenshot", "", Public),
    ("listApiKeys", "/v1/api-keys", "", Needs('r', "api-keys")),
    ("createApiKey", "/v1/api-keys", r#"{"name":"walk","scopes":["policies:read"]}"#, Needs('w', "api-keys")),
    ("revokeApiKey", "/v1/api-keys/{apk}", "", Needs('w', "api-keys")),
    ("listAutomationSecrets", "/v1/browser/automations/{aut}/secrets", "", Needs('r', "automations")),
    (
        "putAutomationSecret",
        "/v1/browser/automations/{aut}/secrets/PASSWORD",
        r#"{"value":"x"}"#,
        Needs('w', "automations"),
    ),
    ("deleteAutomationSecret", "/v1/browser/automations/{aut}/secrets/PASSWORD", "", Needs('w', "automations")),
    ("listInvitations", "/v1/invitations", "", Needs('r', "people")),
    ("createInvitation", "/v1/invitations", "{}", Needs('w', "people")),
    ("getInvitation", "/v1/invitations/{inv}", "", Needs('r', "people")),
    ("deleteInvitation", "/v1/invitations/{inv}", "", Needs('w', "people")),
    ("listAuditLog", "/v1/audit-log", "", Needs('r', "audit")),
    ("verifyAuditLog", "/v1/audit-log/verify", "", Needs('r', "audit")),
    ("getAuditTreeHead", "/v1/audit-log/tree-head", "", Needs('r', "audit")),
    ("getAuditInclusionProof", "/v1/audit-log/1/proof", "", Needs('r', "audit")),
    ("getAuditConsistencyProof", "/v1/audit-log/consistency?from=1", "", Needs('r', "audit")),
    ("getRiskHistory", "/v1/risks/{rsk}/history", "", Needs('r', "audit")),
    ("getVendorHistory", "/v1/vendors/{vnd}/history", "", Needs('r', "audit")),
    ("getTaskHistory", "/v1/tasks/{tsk}/history", "", Needs('r', "audit")),
    ("getPolicyHistory", "/v1/policies/{pol}/history", "", Needs('r', "audit")),
    ("listWebhooks", "/v1/webhooks", "", Needs('r', "webhooks")),
    ("createWebhook", "/v1/webhooks", "{}", Needs('w', "webhooks")),
    ("getWebhook", "/v1/webhooks/{whk}", "", Needs('r', "webhooks")),
    ("updateWebhook", "/v1/webhooks/{whk}", "{}", Needs('w', "webhooks")),
    ("deleteWebhook", "/v1/webhooks/{whk}", "", Needs('w', "webhooks")),
    ("rotateWebhookSecret", "/v1/webhooks/{whk}/rotate-secret", "{}", Needs('w', "webhooks")),
    ("testWebhook", "/v1/webhooks/{whk}/test", "{}", Needs('w', "webhooks")),
    ("listWebhookDeliveries", "/v1/webhooks/{whk}/deliveries", "", Needs('r', "webhooks")),
    ("retryWebhookDelivery", "/v1/webhooks/{whk}/deliveries/{msg}/retry", "{}", Needs('w', "webhooks")),
    ("listFrameworks", "/v1/frameworks", "", Needs('r', "frameworks")),
    ("createFramework", "/v1/frameworks", "{}", Needs('w', "frameworks")),
    ("importFramework", "/v1/frameworks/import", "{}", Needs('w', "frameworks")),
    // Without controls read (employees) the requirements come without their mapped controls:
    // tests/api/framework_status.rs `roles_and_other_organizations`.
    ("getFramework", "/v1/frameworks/{fwk}", "", Needs('r', "frameworks")),
    ("deleteFramework", "/v1/frameworks/{fwk}", "", Needs('w', "frameworks")),
    ("getFrameworkStatus", "/v1/frameworks/{fwk}/status", "", Needs('r', "frameworks")),
    ("getStatementOfApplicability", "/v1/frameworks/{fwk}/soa", "", Needs('r', "frameworks")),
    (
        "stateRequirementApplicability",
        "/v1/frameworks/{fwk}/requirements/{req}/applicability",
        "{}",
        AlsoNeeds('w', "frameworks", 'w', "controls"),
    ),
    // controls read too (the evidence's reasons); every role that reads controls reads frameworks
    ("getFrameworkAssessmentResults", "/v1/frameworks/{fwk}/assessment-results", "", Needs('r', "controls")),
    ("listFrameworkTemplates", "/v1/framework-templates", "", Needs('r', "frameworks")),
    ("getLibraryComponentDefinition", "/v1/library/component-definition", "", Needs('r', "frameworks")),
    // a key no template has: an allowed caller gets the 404, a denied one the 403 first
    (
        "adoptFrameworkTemplate",
        "/v1/framework-templates/none/adopt",
        "{}",
        AlsoNeeds('w', "frameworks", 'w', "controls"),
    ),
    ("listControls", "/v1/controls", "", Needs('r', "controls")),
    ("createControl", "/v1/controls", "{}", Needs('w', "controls")),
    ("getControl", "/v1/controls/{ctl}", "", Needs('r', "controls")),
    ("updateControl", "/v1/controls/{ctl}", "{}", Needs('w', "controls")),
    ("deleteControl", "/v1/controls/{ctl}", "", Needs('w', "controls")),
    ("getControlStatus", "/v1/controls/{ctl}/status", "", Needs('r', "controls")),
    ("addControlEvidenceSource", "/v1/controls/{ctl}/evidence-sources", "{}", Needs('w', "controls")),
    ("removeControlEvidenceSource", "/v1/controls/{ctl}/evidence-sources/{tsk}", "", Needs('w', "controls")),
    ("listControlEvidence", "/v1/controls/{ctl}/evidence", "", Needs('r', "controls")),
    ("listControlRequirements", "/v1/controls/{ctl}/requirements", "", Needs('r', "controls")),
    ("mapControlRequirement", "/v1/controls/{ctl}/requirements", "{}", Needs('w', "controls")),
    ("unmapControlRequirement", "/v1/controls/{ctl}/requirements/{req}", "", Needs('w', "controls")),
    ("uploadControlEvidence", "/v1/controls/{ctl}/evidence", "{}", Needs('w', "controls")),
    ("downloadEvidence", "/v1/evidence/{evd}/content", "", Public),
    ("startSignIn", "", "", Skip(SIGNED_IN_USER)),
    ("finishSignIn", "", "", Skip(SIGNED_IN_USER)),
    ("signOut", "", "", Skip(SIGNED_IN_USER)),
    ("getMe", "", "", Skip(SIGNED_IN_USER)),
    ("listSessions", "", "", Skip(SIGNED_IN_USER)),
    ("deleteSession", "", "", Skip(SIGNED_IN_USER)),
    ("createOrganization", "", "", Skip(SIGNED_IN_USER)),
    ("acceptInvitation", "", "", Skip(SIGNED_IN_USER)),
];

/// Sign-in and the signed-in user's own sessions, memberships and organizations are the user's,
/// not an organization's: outside the matrix, walked against a real provider in sign_in.rs.
const SIGNED_IN_USER: &str = "the signed-in user's own, outside the organization matrix; tests/api/sign_in.rs";

/// The 403 detail a caller must get, or `None` when it is allowed.
fn expected(rule: Rule, role: Option<&str>) -> Option<String> {
    let (action, family, not_own) = match rule {
        AlsoNeeds(action, family, then, other) => {
            return expected(Needs(action, family), role).or_else(|| expected(Needs(then, other), role));
        }
        Needs(action, family) => (action, family, None),
        NotOwn(action, family, why) => (action, family, Some(why)),
        SessionOnly => return role.is_none().then(|| "signed-in user".to_owned()),
        Public | Skip(_) => return None,
    };
    let word = if action == 'r' { "read" } else { "write" };
    let Some(role) = role else {
        // The key, made by the owner: what its scopes cover (write includes read).
        let covered = KEY_SCOPES.iter().any(|scope| {
            let (f, a) = scope.split_once(':').unwrap_or_default();
            f == family && (a == word || a == "write")
        });
        return (!covered).then(|| format!("the API key lacks scope {family}:{word}"));
    };
    let column = ROLES.iter().position(|r| *r == role).unwrap_or(0);
    let grants = MATRIX.iter().find(|(f, _)| *f == family).map(|(_, g)| g[column]).unwrap_or("");
    if !grants.contains(action) {
        return Some(format!("role {role} may not {word} {family}"));
    }
    not_own.filter(|_| role == "employee").map(|why| format!("role employee {why}"))
}

fn fill(template: &str) -> String {
    let mut text = template.to_owned();
    for prefix in [
        "ctx", "pol", "vnd", "rsk", "tsk", "cmt", "att", "mem", "con", "aut", "run", "apk", "inv", "whk", "msg", "fwk",
        "ctl", "evd", "req", "chr", "fnd",
    ] {
        text = text.replace(&format!("{{{prefix}}}"), &missing_id(&format!("{prefix}_")));
    }
    text
}

async fn call(client: &Client, method: &str, path: &str, body: &str) -> Response {
    let body: Value = if body.is_empty() { json!({}) } else { serde_json::from_str(body).unwrap() };
    match method {
        "get" => client.get(path).await,
        "post" => client.post(path, body).await,
        "put" => client.put(path, body).await,
        "patch" => client.patch(path, body).await,
        "delete" => client.delete(path).await,
        other => panic!("no call for method {other}"),
    }
}

async fn every_operation_answers_each_role_as_the_matrix_says(server: &TestServer) {
    let tenant = server.tenant().await;
    let mut callers: Vec<(Option<&str>, Client)> = vec![(Some("owner"), tenant.session.clone())];
    for role in &ROLES[1..] {
        let (user, _) = server.member(&tenant, role).await;
        callers.push((Some(role), server.session(&user.id, Some(&tenant.org_id)).await));
    }
    let key = tenant.session.post("/v1/api-keys", json!({"name": "walk", "scopes": KEY_SCOPES})).await.ok(201);
    callers.push((None, server.client(Auth::ApiKey(key["key"].as_str().unwrap().to_owned()), None)));

    let document = server.anonymous().get("/openapi.json").await.ok(200);
    let mut operations = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if let Some(id) = operation["operationId"].as_str() {
                operations.push((id.to_owned(), method.clone(), path.clone()));
            }
        }
    }
    let served: BTreeSet<&str> = operations.iter().map(|(id, _, _)| id.as_str()).collect();
    let stale: Vec<&str> = ROWS.iter().map(|row| row.0).filter(|id| !served.contains(id)).collect();
    assert!(stale.is_empty(), "rows of operations /openapi.json does not have: {stale:?}");

    let mut missing = Vec::new();
    let mut wrong = Vec::new();
    let (mut allowed, mut refused) = (0, 0);
    for (id, method, _) in &operations {
        let Some(&(_, template, body, rule)) = ROWS.iter().find(|row| row.0 == id) else {
            missing.push(id.clone());
            continue;
        };
        match rule {
            Skip(reason) => assert!(!reason.is_empty(), "{id}: a skipped row says why"),
            Public => {}
            _ => {}
        }
        if matches!(rule, Public | Skip(_)) {
            continue;
        }
        for (role, client) in &callers {
            let answer = call(client, method, &fill(template), &fill(body)).await;
            let who = role.unwrap_or("key");
            match expected(rule, *role) {
                None => allowed += 1,
                Some(_) => refused += 1,
            }
            match expected(rule, *role) {
                None if answer.status == 403 => wrong.push(format!("{id} as {who}: 403 {}", answer.body)),
                Some(rule_text) => {
                    let detail = answer.body["detail"].as_str().unwrap_or_default();
                    if answer.status != 403 || !detail.contains(&rule_text) {
                        wrong.push(format!(
                            "{id} as {who}: expected 403 naming `{rule_text}`, got {} {}",
                            answer.status, answer.body
                        ));
                    }
                }
                None => {}
            }
        }
    }
    assert!(missing.is_empty(), "operations of /openapi.json without a row in tests/api/access.rs ROWS: {missing:?}");
    assert!(wrong.is_empty(), "answers against the matrix:\n{}", wrong.join("\n"));
    // 63 walked operations × 5 callers; the counts prove the walk is not vacuous.
    assert!(allowed > 150 && refused > 100, "allowed {allowed}, refused {refused}");
}
