//! Prowler's findings imported for an AWS connection (docs/checks.md, "Findings imported from
//! Prowler"): a file Prowler 5.46 wrote against moto (crates/domain/tests/fixtures/prowler, with
//! how it was made) becomes a finished run whose results open and resolve findings as our own
//! runs do; a bad file is a 400 naming the problem with nothing stored; roles and other
//! organizations are walled off.

use reqwest::Method;
use serde_json::{Value, json};

use crate::check_runs::connect_aws;
use crate::checks::{data, str_of};
use crate::client::Client;
use crate::harness::TestServer;

api_tests!(
    prowlers_file_becomes_a_run_whose_findings_follow_later_files,
    a_control_linked_to_a_check_shows_its_failing_resources_in_oscal,
    a_bad_file_is_refused_naming_the_problem_and_nothing_is_stored,
    roles_and_other_organizations_cannot_import,
);

const CONSOLE_MFA: &str = "aws.iam.user-console-mfa";

/// The findings file Prowler wrote against moto: 21 findings of account 123456789012.
pub fn prowler_file() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../domain/tests/fixtures/prowler/moto-ocsf.json");
    serde_json::from_slice(&std::fs::read(path).expect("the Prowler fixture")).expect("the fixture is JSON")
}

/// Imports `file` into the connection: the answer.
pub async fn import(api: &Client, connection: &str, file: &Value) -> crate::client::Response {
    api.post(&format!("/v1/integrations/connections/{connection}/check-results"), file.clone()).await
}

/// The file with the console user `user`'s finding passing instead of failing.
fn with_user_passing(mut file: Value, user: &str) -> Value {
    for finding in file.as_array_mut().unwrap() {
        let named = finding["resources"][0]["name"] == user;
        if finding["metadata"]["event_code"] == "iam_user_mfa_enabled_console_access" && named {
            finding["status_code"] = json!("PASS");
        }
    }
    file
}

async fn findings(api: &Client, query: &str) -> Vec<Value> {
    data(&api.get(&format!("/v1/findings?{query}")).await.ok(200)).clone()
}

async fn prowlers_file_becomes_a_run_whose_findings_follow_later_files(server: &TestServer) {
    let tenant = server.tenant().await;
    let connection = connect_aws(&tenant.api).await;

    let run = import(&tenant.api, &connection, &prowler_file()).await.ok(201);
    assert_eq!((run["status"].as_str(), run["source"].as_str()), (Some("finished"), Some("prowler")), "{run}");
    assert_eq!(run["trigger"], "manual");
    assert_eq!(run["requestedBy"], tenant.owner.id.as_str());
    let id = str_of(&run, "id").to_owned();
    assert_eq!(tenant.api.get(&format!("/v1/check-runs/{id}")).await.ok(200), run);
    let results = data(&tenant.api.get(&format!("/v1/check-runs/{id}/results?limit=100")).await.ok(200)).clone();
    let counts = &run["counts"];
    let sum: u64 = ["pass", "fail", "error", "notApplicable"].iter().map(|k| counts[k].as_u64().unwrap()).sum();
    assert_eq!(sum, results.len() as u64, "{counts}");

    // Prowler's check of console MFA is read as ours; a check none of ours names keeps Prowler's name.
    let alice = results.iter().find(|r| r["checkId"] == CONSOLE_MFA && r["resource"]["name"] == "alice").unwrap();
    assert_eq!(alice["outcome"], "fail", "{alice}");
    assert_eq!(alice["resource"]["id"], "arn:aws:iam::123456789012:user/alice");
    let open = findings(&tenant.api, &format!("checkId={CONSOLE_MFA}")).await;
    assert_eq!(open.len(), 1, "bob and carol pass: {open:#?}");
    assert_eq!((open[0]["severity"].as_str(), open[0]["status"].as_str()), (Some("high"), Some("open")));
    let versioning = findings(&tenant.api, "checkId=prowler.s3_bucket_object_versioning").await;
    assert_eq!(versioning.len(), 2, "both buckets fail Prowler's own check: {versioning:#?}");
    assert_eq!(versioning[0]["severity"], "medium", "Prowler's severity");

    // A later file where alice passes resolves her finding; a later file listing failures only
    // (`--status FAIL`) resolves nothing it does not list.
    let fixed = with_user_passing(prowler_file(), "alice");
    let second = import(&tenant.api, &connection, &fixed).await.ok(201);
    let alice_finding = tenant.api.get(&format!("/v1/findings/{}", str_of(&open[0], "id"))).await.ok(200);
    assert_eq!(alice_finding["status"], "resolved", "{alice_finding}");
    assert_eq!(alice_finding["resolvedAt"], second["finishedAt"]);
    let failures_only: Vec<Value> =
        prowler_file().as_array().unwrap().iter().filter(|f| f["status_code"] == "FAIL").cloned().collect();
    let only_versioning: Vec<Value> =
        failures_only.into_iter().filter(|f| f["metadata"]["event_code"] != "s3_bucket_object_versioning").collect();
    import(&tenant.api, &connection, &json!(only_versioning)).await.ok(201);
    let still = findings(&tenant.api, "checkId=prowler.s3_bucket_object_versioning&status=open").await;
    assert_eq!(still.len(), 2, "a check absent from a file of failures resolves nothing: {still:#?}");

    // The trail names the member who imported.
    let entries = tenant.api.get(&format!("/v1/audit-log?resourceId={id}")).await.ok(200);
    let entry = data(&entries).iter().find(|e| e["action"] == "check_run.finished").cloned().unwrap();
    assert_eq!(entry["actor"]["id"], tenant.owner.id.as_str(), "{entry}");
}

async fn a_bad_file_is_refused_naming_the_problem_and_nothing_is_stored(server: &TestServer) {
    let tenant = server.tenant().await;
    let connection = connect_aws(&tenant.api).await;
    let path = format!("/v1/integrations/connections/{connection}/check-results");
    let mut two_accounts = prowler_file();
    two_accounts[3]["cloud"]["account"]["uid"] = json!("210987654321");
    let mut no_check_name = prowler_file();
    no_check_name[2]["metadata"].as_object_mut().unwrap().remove("event_code");
    for (body, says) in [
        ("not json".to_owned(), "not JSON"),
        ("{}".to_owned(), "not a JSON array of findings"),
        ("[]".to_owned(), "no findings"),
        (json!([{"class_uid": 2003}]).to_string(), "not an OCSF Detection Finding"),
        (two_accounts.to_string(), "more than one AWS account"),
        (no_check_name.to_string(), "finding 2: metadata.event_code is missing"),
    ] {
        let problem = tenant.api.raw(Method::POST, &path, Some("application/json"), &body).await;
        let problem = if body == "not json" { problem.problem(400) } else { problem.invalid("file") };
        assert!(problem.to_string().contains(says), "{says}: {problem}");
    }
    tenant.api.raw(Method::POST, &path, Some("text/csv"), "a,b").await.problem(415);
    let mut crowded = prowler_file();
    crowded[0]["resources"] = json!(vec![crowded[0]["resources"][0].clone(); 101]);
    tenant.api.post(&path, crowded).await.invalid("file");
    let mut long = prowler_file();
    long[0]["resources"][0]["uid"] = json!("a".repeat(3_000));
    tenant.api.post(&path, long).await.invalid("file");
    assert_eq!(tenant.api.get("/v1/check-runs").await.ok(200)["count"], 0, "nothing stored");
    assert_eq!(tenant.api.get("/v1/findings").await.ok(200)["count"], 0, "nothing stored");

    // A finding on an AWS-managed policy (`arn:aws:iam::aws:policy/…`) names no account.
    let mut managed = prowler_file();
    managed[0]["metadata"]["event_code"] = json!("iam_aws_attached_policy_no_administrative_privileges");
    managed[0]["resources"][0]["uid"] = json!("arn:aws:iam::aws:policy/AdministratorAccess");
    import(&tenant.api, &connection, &json!([managed[0].clone()])).await.ok(201);
    assert_eq!(data(&tenant.api.get("/v1/findings?checkId=aws.iam.no-full-admin-policy").await.ok(200)).len(), 1);
    // Once the connection's findings name account 123456789012, another account's file is refused.
    import(&tenant.api, &connection, &prowler_file()).await.ok(201);
    let other_account = prowler_file().to_string().replace("123456789012", "210987654321");
    let problem = tenant.api.raw(Method::POST, &path, Some("application/json"), &other_account).await.problem(409);
    assert!(problem["detail"].as_str().unwrap().contains("210987654321"), "{problem}");

    // Only an AWS connection takes one, and only while connected.
    let shodan = tenant.api.get("/v1/integrations/providers/shodan").await.ok(200);
    let key_field = str_of(&shodan["credentialFields"][0], "id").to_owned();
    let shodan = tenant
        .api
        .post("/v1/integrations/connections", json!({"providerSlug": "shodan", "credentials": {key_field: "k-123"}}))
        .await
        .ok(201);
    let problem = import(&tenant.api, str_of(&shodan, "id"), &prowler_file()).await.problem(409);
    assert!(problem["detail"].as_str().unwrap().contains("AWS"), "{problem}");
    tenant.api.delete(&format!("/v1/integrations/connections/{connection}")).await.ok(200);
    import(&tenant.api, &connection, &prowler_file()).await.problem(409);
}

async fn roles_and_other_organizations_cannot_import(server: &TestServer) {
    let tenant = server.tenant().await;
    let connection = connect_aws(&tenant.api).await;
    let (auditor, _) = server.member(&tenant, "auditor").await;
    let auditor = server.session(&auditor.id, Some(&tenant.org_id)).await;
    import(&auditor, &connection, &prowler_file()).await.problem(403);
    let other = server.tenant().await;
    import(&other.api, &connection, &prowler_file()).await.problem(404);
    assert_eq!(tenant.api.get("/v1/check-runs").await.ok(200)["count"], 0);
    assert_eq!(other.api.get("/v1/findings").await.ok(200)["count"], 0);
}

/// A control linked to the console-MFA check of the connection, mapped to a requirement: Prowler's
/// file fails it naming alice, in the control's status and in the OSCAL assessment results (read
/// back by compliance-trestle) with alice as the observation's subject; excepted, it passes and
/// says so.
async fn a_control_linked_to_a_check_shows_its_failing_resources_in_oscal(server: &TestServer) {
    use crate::framework_status::{framework, map, path_of, requirement, trestle_reads};
    let tenant = server.tenant().await;
    let api = &tenant.api;
    let connection = connect_aws(api).await;
    let own = framework(api, "Own", &[("MFA-1", None)]).await;
    let control = crate::controls::create(api, json!({"name": "MFA for console users"})).await;
    let sources = format!("{}/evidence-sources", path_of(&control, "/v1/controls"));
    api.post(&sources, json!({"sourceId": format!("{connection}:{CONSOLE_MFA}")})).await.ok(201);
    map(api, &control, &requirement(&own, "MFA-1")).await;

    import(api, &connection, &prowler_file()).await.ok(201);
    let status = api.get(&format!("{}/status", path_of(&control, "/v1/controls"))).await.ok(200);
    assert_eq!(status["status"], "failing", "{status}");
    let results = format!("{}/assessment-results", path_of(&own, "/v1/frameworks"));
    let read = trestle_reads(&api.get(&results).await.ok(200));
    let finding = &read["findings"][0];
    assert_eq!(finding["state"], "not-satisfied", "{read}");
    let observation = &finding["observations"][0];
    assert_eq!(observation["methods"], json!(["TEST"]));
    assert_eq!(observation["subjects"][0]["title"], "alice", "{observation}");
    assert_eq!(observation["subjects"][0]["type"], "inventory-item");

    // Excepted: the next file passes the control, and the export says alice is excepted.
    let alice = findings(api, &format!("checkId={CONSOLE_MFA}")).await.remove(0);
    let until = (time::OffsetDateTime::now_utc() + time::Duration::days(30))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let body = json!({"reason": "alice leaves on Friday", "expiresAt": until});
    api.post(&format!("/v1/findings/{}/exception", str_of(&alice, "id")), body).await.ok(200);
    import(api, &connection, &prowler_file()).await.ok(201);
    let read = trestle_reads(&api.get(&results).await.ok(200));
    let finding = &read["findings"][0];
    assert_eq!(finding["state"], "satisfied", "{read}");
    let subject = &finding["observations"][0]["subjects"][0];
    assert_eq!(subject["title"], "alice", "{read}");
    assert!(subject["remarks"].as_str().unwrap().contains("excepted"), "{subject}");
}
