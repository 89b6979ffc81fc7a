//! The Statement of Applicability (docs/frameworks.md): stating whether a requirement applies,
//! its effect on the roll-up, and the statement in JSON, CSV and PDF (read back with poppler's
//! `pdftotext`), now and as it stood at a past moment; on SQLite and PostgreSQL.

use serde_json::{Value, json};

use crate::checks::{data, missing_id, str_of};
use crate::client::{Auth, Client};
use crate::harness::TestServer;
use crate::policy_document::pdf_text;

api_tests!(
    the_statement_comes_in_three_formats,
    a_past_moment_answers_the_statement_then,
    bad_statements_are_named_and_nothing_changes,
    who_may_state_and_read_and_another_organization_may_not,
);

/// The organization's ISO 27001 framework adopted with the library's controls; its id.
async fn iso(api: &Client) -> Value {
    api.post("/v1/framework-templates/iso27001-2022/adopt", json!({})).await.ok(201)
}

fn requirement<'a>(framework: &'a Value, identifier: &str) -> &'a str {
    let found = framework["requirements"].as_array().unwrap().iter().find(|r| r["identifier"] == identifier);
    str_of(found.unwrap(), "id")
}

fn applicability_path(framework: &Value, identifier: &str) -> String {
    format!(
        "/v1/frameworks/{}/requirements/{}/applicability",
        str_of(framework, "id"),
        requirement(framework, identifier)
    )
}

async fn state(api: &Client, framework: &Value, identifier: &str, applicable: bool, why: &str) -> Value {
    let body = json!({"applicable": applicable, "justification": why});
    api.put(&applicability_path(framework, identifier), body).await.ok(200)
}

fn line<'a>(statement: &'a Value, identifier: &str) -> &'a Value {
    statement["requirements"].as_array().unwrap().iter().find(|l| l["identifier"] == identifier).unwrap()
}

const NO_OFFICE: &str = "We have no offices: everyone works remotely; A.7.4 has nothing to monitor.";

async fn the_statement_comes_in_three_formats(server: &TestServer) {
    let tenant = server.tenant().await;
    let framework = iso(&tenant.api).await;
    let id = str_of(&framework, "id");
    let stated = state(&tenant.api, &framework, "A.7.4", false, NO_OFFICE).await;
    assert_eq!((stated["applicable"].as_bool(), stated["justification"].as_str()), (Some(false), Some(NO_OFFICE)));
    assert_eq!(stated["requirementId"], requirement(&framework, "A.7.4"));
    state(&tenant.api, &framework, "A.5.1", true, "Policies are the base of the program.").await;

    // The roll-up leaves it out: counted apart, not passing.
    let status = tenant.api.get(&format!("/v1/frameworks/{id}/status")).await.ok(200);
    assert_eq!(status["counts"]["notApplicable"], 1, "{}", status["counts"]);
    let a74 = status["requirements"].as_array().unwrap().iter().find(|r| r["identifier"] == "A.7.4").unwrap();
    assert_eq!(a74["status"], "not_applicable");
    let counted: u64 = ["passing", "failing", "stale", "notStarted", "unmapped"]
        .iter()
        .map(|k| status["counts"][k].as_u64().unwrap())
        .sum();
    assert_eq!(counted, 92);

    // JSON: every requirement, applicable unless stated, with its controls.
    let statement = tenant.api.get(&format!("/v1/frameworks/{id}/soa")).await.ok(200);
    assert_eq!(statement["requirements"].as_array().unwrap().len(), 93);
    assert_eq!((statement["applicable"].as_u64(), statement["notApplicable"].as_u64()), (Some(92), Some(1)));
    let excluded = line(&statement, "A.7.4");
    assert_eq!(
        (excluded["applicable"].as_bool(), excluded["implementation"].as_str()),
        (Some(false), Some("not_applicable"))
    );
    assert_eq!(excluded["justification"], NO_OFFICE);
    let included = line(&statement, "A.5.1");
    assert_eq!(included["justification"], "Policies are the base of the program.");
    assert_eq!(included["implementation"], "not_started");
    assert!(!included["controls"].as_array().unwrap().is_empty(), "{included}");
    assert_eq!(line(&statement, "A.8.1")["justification"], Value::Null);

    // CSV: a header and a row per requirement, read by a CSV reader.
    let csv = tenant.api.get(&format!("/v1/frameworks/{id}/soa?format=csv")).await;
    assert_eq!(csv.status, 200);
    assert!(csv.content_type.starts_with("text/csv"), "{}", csv.content_type);
    assert_eq!(
        csv.content_disposition.as_deref(),
        Some("attachment; filename=\"soa-iso-iec-27001-2022-annex-a-2022.csv\"")
    );
    let mut reader = csv::Reader::from_reader(csv.bytes.as_slice());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_owned).collect();
    assert_eq!(header, ["identifier", "title", "applicable", "justification", "implementation", "controls"]);
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 93);
    let row = rows.iter().find(|r| &r[0] == "A.7.4").unwrap();
    assert_eq!((&row[2], &row[3], &row[4]), ("false", NO_OFFICE, "not_applicable"));
    let row = rows.iter().find(|r| &r[0] == "A.5.1").unwrap();
    assert!(row[5].contains(" (not_started)"), "{row:?}");

    // PDF: printed by the headless Chromium, read back by pdftotext.
    let pdf = tenant.api.get(&format!("/v1/frameworks/{id}/soa?format=pdf")).await;
    assert_eq!(pdf.status, 200, "{}", pdf.body);
    assert_eq!(pdf.content_type, "application/pdf");
    let text = pdf_text(&pdf.bytes).await;
    assert!(text.contains("Statement of Applicability"), "{text:.500}");
    // A table's cells wrap and interleave: the justification's words are each there.
    assert!(text.contains("A.7.4") && text.contains("not_applicable"), "{text}");
    assert!(NO_OFFICE.split_whitespace().all(|word| text.contains(word)), "{text}");
}

async fn a_past_moment_answers_the_statement_then(server: &TestServer) {
    let tenant = server.tenant().await;
    let framework = iso(&tenant.api).await;
    let id = str_of(&framework, "id");
    let first = state(&tenant.api, &framework, "A.7.4", false, NO_OFFICE).await;
    let then = str_of(&first, "createdAt").to_owned();
    let second = state(&tenant.api, &framework, "A.7.4", true, "We opened an office in Lyon.").await;
    assert!(str_of(&second, "createdAt") > then.as_str());

    let now = tenant.api.get(&format!("/v1/frameworks/{id}/soa")).await.ok(200);
    assert_eq!(line(&now, "A.7.4")["justification"], "We opened an office in Lyon.");
    assert_ne!(line(&now, "A.7.4")["implementation"], "not_applicable");
    let past = tenant.api.get(&format!("/v1/frameworks/{id}/soa?asOf={then}")).await.ok(200);
    assert_eq!((line(&past, "A.7.4")["applicable"].as_bool(), past["notApplicable"].as_u64()), (Some(false), Some(1)));
    assert_eq!(line(&past, "A.7.4")["justification"], NO_OFFICE);
    let status = tenant.api.get(&format!("/v1/frameworks/{id}/status?asOf={then}")).await.ok(200);
    assert_eq!(status["counts"]["notApplicable"], 1);

    // Each statement has its entry, the one replaced as its "before".
    let entries = tenant.api.get("/v1/audit-log?action=framework.applicability_stated").await.ok(200);
    assert_eq!(data(&entries).len(), 2, "{entries}");
}

async fn bad_statements_are_named_and_nothing_changes(server: &TestServer) {
    let tenant = server.tenant().await;
    let framework = iso(&tenant.api).await;
    let id = str_of(&framework, "id");
    let path = applicability_path(&framework, "A.7.4");
    tenant.api.put(&path, json!({"applicable": false})).await.invalid("justification");
    tenant.api.put(&path, json!({"applicable": true, "justification": "   "})).await.invalid("justification");
    tenant.api.put(&path, json!({"justification": "why"})).await.invalid("applicable");
    tenant.api.put(&path, json!({"applicable": "no", "justification": "why"})).await.invalid("applicable");
    tenant
        .api
        .put(&path, json!({"applicable": false, "justification": "x".repeat(2001)}))
        .await
        .invalid("justification");
    tenant.api.put(&path, json!({"applicable": false, "justification": "why", "extra": 1})).await.invalid("extra");
    // A requirement of another framework, or of none.
    let soc2 = tenant.api.post("/v1/framework-templates/soc2-2017/adopt", json!({"withControls": false})).await.ok(201);
    let other = format!("/v1/frameworks/{id}/requirements/{}/applicability", requirement(&soc2, "CC6.1"));
    tenant.api.put(&other, json!({"applicable": false, "justification": "why"})).await.problem(404);
    let none = format!("/v1/frameworks/{id}/requirements/{}/applicability", missing_id("req_"));
    tenant.api.put(&none, json!({"applicable": false, "justification": "why"})).await.problem(404);
    // A bad format or moment.
    tenant.api.get(&format!("/v1/frameworks/{id}/soa?format=xml")).await.invalid("format");
    tenant.api.get(&format!("/v1/frameworks/{id}/soa?asOf=yesterday")).await.invalid("asOf");
    tenant.api.get(&format!("/v1/frameworks/{id}/soa?asOf=2999-01-01T00:00:00Z")).await.invalid("asOf");
    tenant.api.get(&format!("/v1/frameworks/{id}/soa?sort=name")).await.problem(400);
    let statement = tenant.api.get(&format!("/v1/frameworks/{id}/soa")).await.ok(200);
    assert_eq!(statement["notApplicable"], 0);
    assert_eq!(data(&tenant.api.get("/v1/audit-log?action=framework.applicability_stated").await.ok(200)).len(), 0);
}

async fn who_may_state_and_read_and_another_organization_may_not(server: &TestServer) {
    let tenant = server.tenant().await;
    let framework = iso(&tenant.api).await;
    let id = str_of(&framework, "id");
    let path = applicability_path(&framework, "A.7.4");
    let body = json!({"applicable": false, "justification": NO_OFFICE});
    state(&tenant.api, &framework, "A.7.4", false, NO_OFFICE).await;

    // An auditor reads the statement with its controls but may not state; an employee reads it
    // without the controls (employees do not read controls).
    let (auditor, _) = server.member(&tenant, "auditor").await;
    let auditor = server.session(&auditor.id, Some(&tenant.org_id)).await;
    auditor.put(&path, body.clone()).await.problem(403);
    let read = auditor.get(&format!("/v1/frameworks/{id}/soa")).await.ok(200);
    assert!(!line(&read, "A.5.1")["controls"].as_array().unwrap().is_empty());
    let (employee, _) = server.member(&tenant, "employee").await;
    let employee = server.session(&employee.id, Some(&tenant.org_id)).await;
    employee.put(&path, body.clone()).await.problem(403);
    let read = employee.get(&format!("/v1/frameworks/{id}/soa")).await.ok(200);
    assert_eq!(line(&read, "A.7.4")["justification"], NO_OFFICE);
    assert!(line(&read, "A.5.1")["controls"].as_array().unwrap().is_empty());

    // A key needs controls:write besides frameworks:write.
    let made =
        tenant.session.post("/v1/api-keys", json!({"name": "soa", "scopes": ["frameworks:write"]})).await.ok(201);
    let key = server.client(Auth::ApiKey(str_of(&made, "key").to_owned()), None);
    let problem = key.put(&path, body.clone()).await.problem(403);
    assert!(problem.to_string().contains("controls:write"), "{problem}");

    // Another organization sees none of it and changes nothing.
    let other = server.tenant().await;
    other.api.get(&format!("/v1/frameworks/{id}/soa")).await.problem(404);
    other.api.put(&path, json!({"applicable": true, "justification": "ours now"})).await.problem(404);
    let mine = tenant.api.get(&format!("/v1/frameworks/{id}/soa")).await.ok(200);
    assert_eq!(line(&mine, "A.7.4")["justification"], NO_OFFICE);
}
