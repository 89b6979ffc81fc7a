//! What an organization does about its findings besides exceptions (docs/checks.md, "Findings"):
//! the deadline of each severity it sets, and the task made to fix a finding, linked both ways.
//! Findings come from Prowler's file imported (tests/api/prowler_import.rs), so no AWS is needed.

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::check_runs::connect_aws;
use crate::checks::{data, str_of};
use crate::client::Client;
use crate::harness::TestServer;
use crate::prowler_import::{import, prowler_file};

api_tests!(deadlines_per_severity_set_when_findings_are_due, a_task_fixes_a_finding_linked_both_ways,);

const DEADLINES: &str = "/v1/findings/deadlines";

fn at(value: &Value) -> OffsetDateTime {
    OffsetDateTime::parse(value.as_str().unwrap_or_else(|| panic!("not a time: {value}")), &Rfc3339).unwrap()
}

/// The open finding of console MFA for alice (high), after Prowler's file is imported.
async fn alices_finding(api: &Client) -> Value {
    let connection = connect_aws(api).await;
    import(api, &connection, &prowler_file()).await.ok(201);
    let open = data(&api.get("/v1/findings?checkId=aws.iam.user-console-mfa").await.ok(200)).clone();
    assert_eq!(open.len(), 1, "{open:#?}");
    open[0].clone()
}

async fn deadlines_per_severity_set_when_findings_are_due(server: &TestServer) {
    let tenant = server.tenant().await;
    let defaults = tenant.api.get(DEADLINES).await.ok(200);
    assert_eq!(
        defaults,
        json!({"criticalDays": 7, "highDays": 30, "mediumDays": 90, "lowDays": 180, "updatedAt": null})
    );
    for (body, field) in [
        (json!({"criticalDays": 0, "highDays": 30, "mediumDays": 90, "lowDays": 180}), "criticalDays"),
        (json!({"criticalDays": 7, "highDays": 30, "mediumDays": 90, "lowDays": 366}), "lowDays"),
        (json!({"criticalDays": 7, "highDays": 30, "mediumDays": 90}), "lowDays"),
        (json!({"criticalDays": 7, "highDays": -1, "mediumDays": 90, "lowDays": 180}), "highDays"),
        (json!({"criticalDays": 7, "highDays": 30.5, "mediumDays": 90, "lowDays": 180}), "highDays"),
    ] {
        tenant.api.put(DEADLINES, body).await.invalid(field);
    }
    // A whole number with a zero fraction is an integer, as JSON Schema says.
    let ours = json!({"criticalDays": 3.0, "highDays": 10, "mediumDays": 20, "lowDays": 40});
    let set = tenant.api.put(DEADLINES, ours.clone()).await.ok(200);
    assert!(set["updatedAt"].is_string(), "{set}");
    assert_eq!(tenant.api.get(DEADLINES).await.ok(200), set);

    // Auditors read them; only owners and admins set them; another organization keeps its own.
    let (auditor, _) = server.member(&tenant, "auditor").await;
    let auditor = server.session(&auditor.id, Some(&tenant.org_id)).await;
    assert_eq!(auditor.get(DEADLINES).await.ok(200), set);
    auditor.put(DEADLINES, ours).await.problem(403);
    let other = server.tenant().await;
    assert_eq!(other.api.get(DEADLINES).await.ok(200), defaults);

    // A finding opened now is due by them: a high one ten days after it opened.
    let finding = alices_finding(&tenant.api).await;
    assert_eq!(at(&finding["dueAt"]) - at(&finding["firstSeenAt"]), time::Duration::days(10), "{finding}");
    let entries = tenant.api.get(&format!("/v1/audit-log?resourceId={}", tenant.org_id)).await.ok(200);
    let actions: Vec<&str> = data(&entries).iter().filter_map(|e| e["action"].as_str()).collect();
    assert!(actions.contains(&"finding_deadlines.updated"), "{actions:?}");
}

async fn a_task_fixes_a_finding_linked_both_ways(server: &TestServer) {
    let tenant = server.tenant().await;
    let finding = alices_finding(&tenant.api).await;
    let id = str_of(&finding, "id").to_owned();
    let path = format!("/v1/findings/{id}/task");

    // Members it names must be the organization's active members.
    tenant.api.post(&path, json!({"assigneeId": "mem_00000000000000000000000000"})).await.invalid("assigneeId");
    tenant.api.post(&path, json!({"title": ""})).await.invalid("title");

    let task = tenant.api.post(&path, json!({})).await.ok(201);
    assert_eq!(task["findingId"], id.as_str(), "{task}");
    assert!(str_of(&task, "title").contains("alice"), "{task}");
    assert!(str_of(&task, "description").contains("How to fix it"), "{task}");
    assert_eq!(task["dueAt"], finding["dueAt"], "the finding's deadline");
    let task_id = str_of(&task, "id").to_owned();
    let linked = tenant.api.get(&format!("/v1/findings/{id}")).await.ok(200);
    assert_eq!(linked["taskId"], task_id.as_str(), "{linked}");
    assert_eq!(tenant.api.get(&format!("/v1/tasks/{task_id}")).await.ok(200)["findingId"], id.as_str());
    let problem = tenant.api.post(&path, json!({})).await.problem(409);
    assert!(problem["detail"].as_str().unwrap().contains(&task_id), "{problem}");

    // Closing the task does not resolve the finding: only a passing run does.
    tenant.api.patch(&format!("/v1/tasks/{task_id}"), json!({"status": "done"})).await.ok(200);
    assert_eq!(tenant.api.get(&format!("/v1/findings/{id}")).await.ok(200)["status"], "open");

    // Deleting the task unlinks it, and another may be made.
    tenant.api.delete(&format!("/v1/tasks/{task_id}")).await.ok(200);
    let unlinked = tenant.api.get(&format!("/v1/findings/{id}")).await.ok(200);
    assert_eq!(unlinked["taskId"], Value::Null, "{unlinked}");
    assert_ne!(unlinked["updatedAt"], linked["updatedAt"], "the finding changed");
    let (_, member) = server.member(&tenant, "admin").await;
    let body = json!({"title": "Turn on MFA for alice", "assigneeId": member["id"], "dueAt": "2099-01-01T00:00:00Z"});
    let second = tenant.api.post(&path, body).await.ok(201);
    assert_eq!(
        (second["title"].as_str(), second["assigneeId"].as_str()),
        (Some("Turn on MFA for alice"), member["id"].as_str())
    );
    assert_eq!(second["dueAt"], "2099-01-01T00:00:00Z");

    // Roles and other organizations: an auditor may not, another organization finds nothing.
    let auditor = server.member(&tenant, "auditor").await.0;
    let auditor = server.session(&auditor.id, Some(&tenant.org_id)).await;
    auditor.post(&path, json!({})).await.problem(403);
    let other = server.tenant().await;
    other.api.post(&path, json!({})).await.problem(404);

    // The trail: the task's creation and the finding's link, by the member.
    let entries = tenant.api.get(&format!("/v1/audit-log?resourceId={id}")).await.ok(200);
    let actions: Vec<&str> = data(&entries).iter().filter_map(|e| e["action"].as_str()).collect();
    assert!(actions.contains(&"finding.task_created"), "{actions:?}");
}
