//! A task's lifecycle (docs/api.md, "Tasks"): submitting, approving and rejecting, who may do
//! each, the states each starts from, recurring tasks' next due date, `lastCompletedAt`, the list
//! filters of the new fields, the bulk route and another organization's tasks.

use serde_json::{Value, json};

use crate::checks::{assert_later, data, ids, str_of, tick};
use crate::client::Client;
use crate::harness::TestServer;
use crate::tenant::Tenant;

api_tests!(
    submit_reject_and_approve_with_their_audit_entries,
    transitions_refuse_the_wrong_state_naming_it,
    only_the_approver_approves_or_rejects,
    patch_and_create_keep_the_approval,
    recurring_tasks_move_to_their_next_due_date,
    an_employee_approver_reads_and_approves_their_tasks,
    lists_filter_and_sort_by_the_new_fields,
    the_bulk_route_takes_the_new_fields,
    another_organizations_task_is_not_found,
);

/// A member of `tenant` with `role`: its member id and a session of theirs.
async fn member(server: &TestServer, tenant: &Tenant, role: &str) -> (String, Client) {
    let (user, member) = server.member(tenant, role).await;
    let session = server.session(&user.id, Some(&tenant.org_id)).await;
    (str_of(&member, "id").to_owned(), session)
}

/// The actions of the task's audit entries, oldest first.
async fn audit_actions(tenant: &Tenant, task: &str) -> Vec<String> {
    let log = tenant.api.get(&format!("/v1/audit-log?resourceId={task}&limit=100")).await.ok(200);
    let mut actions: Vec<String> = data(&log).iter().map(|e| str_of(e, "action").to_owned()).collect();
    actions.reverse();
    actions
}

async fn create(api: &Client, body: Value) -> (Value, String) {
    let task = api.post("/v1/tasks", body).await.ok(201);
    let path = format!("/v1/tasks/{}", str_of(&task, "id"));
    (task, path)
}

async fn submit_reject_and_approve_with_their_audit_entries(server: &TestServer) {
    let tenant = server.tenant().await;
    let (approver, approver_session) = member(server, &tenant, "admin").await;
    let (assignee, assignee_session) = member(server, &tenant, "employee").await;
    let body = json!({"title": "Access review", "assigneeId": assignee, "approverId": approver});
    let (task, path) = create(&tenant.api, body).await;
    assert_eq!(task["approverId"], approver.as_str());
    for field in ["frequency", "dueAt", "lastCompletedAt", "rejectionReason"] {
        assert_eq!(task[field], Value::Null, "{field} in {task}");
    }

    // the assignee submits; the approver sends it back to work with a reason
    let submitted = assignee_session.post(&format!("{path}/submit"), json!({})).await;
    assert!(submitted.header("etag").is_some(), "a transition answers the new ETag");
    let submitted = submitted.ok(200);
    assert_eq!(submitted["status"], "in_review");
    assert_eq!(submitted["authType"], "session");
    let rejected = approver_session.post(&format!("{path}/reject"), json!({"reason": "no evidence"})).await.ok(200);
    assert_eq!((&rejected["status"], &rejected["rejectionReason"]), (&json!("in_progress"), &json!("no evidence")));

    // submitted again (the reason is cleared), rejected as failed, submitted from failed, approved
    let again = assignee_session.post(&format!("{path}/submit"), json!({})).await.ok(200);
    assert_eq!(again["rejectionReason"], Value::Null, "a new submission clears the reason");
    let failed = approver_session
        .post(&format!("{path}/reject"), json!({"reason": "the control failed", "status": "failed"}))
        .await
        .ok(200);
    assert_eq!(failed["status"], "failed");
    tenant.api.post(&format!("{path}/submit"), json!({})).await.ok(200);
    tick().await;
    let approved = approver_session.post(&format!("{path}/approve"), json!({})).await.ok(200);
    assert_eq!(approved["status"], "done");
    assert_eq!(approved["lastCompletedAt"], approved["updatedAt"], "completed when approved");
    assert_later(&approved["lastCompletedAt"], &task["createdAt"]);
    assert_eq!(approved["dueAt"], Value::Null, "a one-off task keeps its (absent) due date");
    let read = tenant.api.get(&path).await.ok(200);
    assert_eq!(read["status"], "done");
    assert_eq!(read["lastCompletedAt"], approved["lastCompletedAt"]);

    assert_eq!(
        audit_actions(&tenant, str_of(&task, "id")).await,
        [
            "task.created",
            "task.submitted",
            "task.rejected",
            "task.submitted",
            "task.rejected",
            "task.submitted",
            "task.approved"
        ]
    );
    let log = tenant.api.get(&format!("/v1/audit-log?resourceId={}&action=task.approved", str_of(&task, "id"))).await;
    let log = log.ok(200);
    let entry = &data(&log)[0];
    assert_eq!(entry["changes"]["status"], json!({"from": "in_review", "to": "done"}), "{entry}");
    assert_eq!(entry["actor"]["type"], "user");
}

async fn transitions_refuse_the_wrong_state_naming_it(server: &TestServer) {
    let tenant = server.tenant().await;
    let (approver, approver_session) = member(server, &tenant, "admin").await;
    let (bare, bare_path) = create(&tenant.api, json!({"title": "No approver"})).await;

    // no approver: nothing to submit to
    let none = tenant.api.post(&format!("{bare_path}/submit"), json!({})).await.problem(409);
    assert!(str_of(&none, "detail").contains("no approver"), "{none}");
    assert_eq!(tenant.api.get(&bare_path).await.ok(200)["status"], bare["status"]);

    let (_, path) = create(&tenant.api, json!({"title": "Review", "approverId": approver})).await;
    for action in ["approve", "reject"] {
        let body = json!({"reason": "x"});
        let wrong = approver_session.post(&format!("{path}/{action}"), body).await.problem(409);
        assert!(str_of(&wrong, "detail").contains("todo"), "names the current state: {wrong}");
    }
    tenant.api.post(&format!("{path}/submit"), json!({})).await.ok(200);
    let twice = tenant.api.post(&format!("{path}/submit"), json!({})).await.problem(409);
    assert!(str_of(&twice, "detail").contains("in_review"), "{twice}");
    approver_session.post(&format!("{path}/approve"), json!({})).await.ok(200);
    for (client, action) in [(&approver_session, "approve"), (&approver_session, "reject"), (&tenant.api, "submit")] {
        let wrong = client.post(&format!("{path}/{action}"), json!({"reason": "x"})).await.problem(409);
        assert!(str_of(&wrong, "detail").contains("done"), "a one-off done task is final: {wrong}");
    }

    let (_, path) = create(&tenant.api, json!({"title": "Irrelevant", "approverId": approver})).await;
    tenant.api.patch(&path, json!({"status": "not_relevant"})).await.ok(200);
    let wrong = tenant.api.post(&format!("{path}/submit"), json!({})).await.problem(409);
    assert!(str_of(&wrong, "detail").contains("not_relevant"), "{wrong}");

    // If-Match applies to the transitions as to PATCH
    let (task, path) = create(&tenant.api, json!({"title": "Tagged", "approverId": approver})).await;
    let stale = tenant.api.with_header("if-match", "\"0000000000000000\"");
    let refused = stale.post(&format!("{path}/submit"), json!({})).await;
    assert_eq!((refused.status, &refused.body["type"]), (412, &json!("/problems/precondition-failed")));
    let etag = tenant.api.get(&path).await.header("etag").expect("an ETag");
    let current = tenant.api.with_header("if-match", &etag);
    let submitted = current.post(&format!("{path}/submit"), json!({})).await.ok(200);
    assert_later(&submitted["updatedAt"], &task["updatedAt"]);
}

async fn only_the_approver_approves_or_rejects(server: &TestServer) {
    let tenant = server.tenant().await;
    let (approver, approver_session) = member(server, &tenant, "admin").await;
    let (assignee, assignee_session) = member(server, &tenant, "employee").await;
    let (_, other_employee) = member(server, &tenant, "employee").await;
    let (_, auditor) = member(server, &tenant, "auditor").await;
    let body = json!({"title": "Backups", "assigneeId": assignee, "approverId": approver});
    let (_, path) = create(&tenant.api, body).await;

    // submitting: owners, admins and the assignee; not another employee, an auditor or the approver
    other_employee.post(&format!("{path}/submit"), json!({})).await.problem(403);
    auditor.post(&format!("{path}/submit"), json!({})).await.problem(403);
    let own = approver_session.post(&format!("{path}/submit"), json!({})).await.problem(409);
    assert!(str_of(&own, "detail").contains("approver"), "{own}");
    assignee_session.post(&format!("{path}/submit"), json!({})).await.ok(200);

    // approving and rejecting: the approver only, not the owner, the assignee or an auditor
    for client in [&tenant.api, &tenant.session, &assignee_session, &auditor, &other_employee] {
        for action in ["approve", "reject"] {
            client.post(&format!("{path}/{action}"), json!({"reason": "x"})).await.problem(403);
        }
    }
    assert_eq!(tenant.api.get(&path).await.ok(200)["status"], "in_review", "refusals change nothing");

    // the reject body is checked: a reason, and a status of in_progress or failed
    approver_session.post(&format!("{path}/reject"), json!({})).await.invalid("reason");
    approver_session.post(&format!("{path}/reject"), json!({"reason": ""})).await.invalid("reason");
    approver_session.post(&format!("{path}/reject"), json!({"reason": "x".repeat(2001)})).await.invalid("reason");
    let body = json!({"reason": "x", "status": "done"});
    approver_session.post(&format!("{path}/reject"), body).await.invalid("status");
    approver_session.post(&format!("{path}/reject"), json!({"reason": "x", "note": 1})).await.invalid("note");
    approver_session.post(&format!("{path}/approve"), json!({})).await.ok(200);
}

async fn patch_and_create_keep_the_approval(server: &TestServer) {
    let tenant = server.tenant().await;
    let (approver, approver_session) = member(server, &tenant, "admin").await;
    let (other, _) = member(server, &tenant, "admin").await;

    // done directly only without an approver; in_review only by submitting
    let body = json!({"title": "t", "status": "done", "approverId": approver});
    let skipped = tenant.api.post("/v1/tasks", body).await.problem(409);
    assert!(str_of(&skipped, "detail").contains("submit"), "{skipped}");
    tenant.api.post("/v1/tasks", json!({"title": "t", "status": "in_review"})).await.invalid("status");
    let (task, path) = create(&tenant.api, json!({"title": "Keys", "approverId": approver})).await;
    let direct = tenant.api.patch(&path, json!({"status": "done"})).await.problem(409);
    assert!(str_of(&direct, "detail").contains("approver"), "{direct}");
    tenant.api.patch(&path, json!({"status": "in_review"})).await.invalid("status");
    for field in ["lastCompletedAt", "rejectionReason"] {
        tenant.api.patch(&path, json!({field: null})).await.invalid(field);
    }
    tenant.api.patch(&path, json!({"frequency": "weekly"})).await.invalid("frequency");
    tenant.api.patch(&path, json!({"dueAt": "tomorrow"})).await.invalid("dueAt");
    tenant.api.patch(&path, json!({"approverId": "bob"})).await.invalid("approverId");
    let foreign = server.tenant().await;
    tenant.api.patch(&path, json!({"approverId": foreign.owner_member_id})).await.invalid("approverId");
    assert_eq!(tenant.api.get(&path).await.ok(200)["updatedAt"], task["updatedAt"], "refusals change nothing");

    // in review, the approver stays until the review ends; withdrawing frees it
    tenant.api.post(&format!("{path}/submit"), json!({})).await.ok(200);
    let swap = tenant.api.patch(&path, json!({"approverId": other})).await.problem(409);
    assert!(str_of(&swap, "detail").contains("in_review"), "{swap}");
    tenant.api.patch(&path, json!({"approverId": null})).await.problem(409);
    tenant.api.patch(&path, json!({"title": "Keys, rotated"})).await.ok(200);
    let withdrawn = tenant.api.patch(&path, json!({"status": "in_progress", "approverId": other})).await.ok(200);
    assert_eq!((&withdrawn["status"], &withdrawn["approverId"]), (&json!("in_progress"), &json!(other)));
    approver_session.post(&format!("{path}/approve"), json!({})).await.problem(403);

    // without an approver, done is set directly and completes the task; created done likewise
    let cleared = tenant.api.patch(&path, json!({"approverId": null, "status": "done"})).await.ok(200);
    assert_eq!(cleared["status"], "done");
    assert_eq!(cleared["lastCompletedAt"], cleared["updatedAt"]);
    let (done, _) = create(&tenant.api, json!({"title": "Done at once", "status": "done"})).await;
    assert_eq!(done["lastCompletedAt"], done["createdAt"]);
    let (todo, _) = create(&tenant.api, json!({"title": "Later"})).await;
    assert_eq!(todo["lastCompletedAt"], Value::Null);
}

async fn recurring_tasks_move_to_their_next_due_date(server: &TestServer) {
    let tenant = server.tenant().await;
    let (approver, approver_session) = member(server, &tenant, "admin").await;

    // a month end stays a month end: Jan 31 → Feb 28, then → Mar 31
    let body = json!({"title": "Monthly check", "frequency": "monthly", "dueAt": "2099-01-31T17:00:00+02:00"});
    let (task, _) = create(&tenant.api, body).await;
    assert_eq!(task["dueAt"], "2099-01-31T15:00:00Z", "stored in UTC");
    let body = json!({"title": "Monthly check", "frequency": "monthly", "dueAt": "2099-01-31T17:00:00Z"});
    let (task, path2) = create(&tenant.api, body).await;
    let done = tenant.api.patch(&path2, json!({"status": "done"})).await.ok(200);
    assert_eq!(done["status"], "done", "a recurring task stays done until its next round");
    assert_eq!(done["dueAt"], "2099-02-28T17:00:00Z");
    assert_later(&done["lastCompletedAt"], &task["createdAt"]);
    tenant.api.patch(&path2, json!({"status": "in_progress"})).await.ok(200);
    let again = tenant.api.patch(&path2, json!({"status": "done"})).await.ok(200);
    assert_eq!(again["dueAt"], "2099-03-31T17:00:00Z");
    assert_later(&again["lastCompletedAt"], &done["lastCompletedAt"]);

    // through approval: a due date long past moves to the first quarter end after the approval
    let body = json!({"title": "Quarterly review", "frequency": "quarterly", "dueAt": "2000-03-31T00:00:00Z",
                      "approverId": approver});
    let (_, path) = create(&tenant.api, body).await;
    tenant.api.post(&format!("{path}/submit"), json!({})).await.ok(200);
    let approved = approver_session.post(&format!("{path}/approve"), json!({})).await.ok(200);
    assert_eq!(approved["status"], "done");
    assert_later(&approved["dueAt"], &approved["lastCompletedAt"]);
    let due = str_of(&approved, "dueAt");
    let quarter_ends = ["-03-31T00:00:00Z", "-06-30T00:00:00Z", "-09-30T00:00:00Z", "-12-31T00:00:00Z"];
    assert!(quarter_ends.iter().any(|end| due.ends_with(end)), "{due}");
    // the next round starts from done; a one-off done task could not
    let next = tenant.api.post(&format!("{path}/submit"), json!({})).await.ok(200);
    assert_eq!(next["status"], "in_review");
    assert_eq!(next["lastCompletedAt"], approved["lastCompletedAt"], "kept until the next completion");

    // without a due date, the next is one period after the completion
    let (_, path) = create(&tenant.api, json!({"title": "Yearly", "frequency": "yearly"})).await;
    let done = tenant.api.patch(&path, json!({"status": "done"})).await.ok(200);
    let (completed, due) = (str_of(&done, "lastCompletedAt"), str_of(&done, "dueAt"));
    let year: i32 = completed[..4].parse().unwrap();
    assert!(due.starts_with(&(year + 1).to_string()), "{completed} → {due}");
    assert_eq!(&due[4..], &completed[4..], "same day and time, a year later: {completed} → {due}");
}

async fn an_employee_approver_reads_and_approves_their_tasks(server: &TestServer) {
    let tenant = server.tenant().await;
    let (approver, approver_session) = member(server, &tenant, "employee").await;
    let (_, stranger) = member(server, &tenant, "employee").await;
    let (task, path) = create(&tenant.api, json!({"title": "Laptop audit", "approverId": approver})).await;
    create(&tenant.api, json!({"title": "Someone else's"})).await;

    let listed = approver_session.get("/v1/tasks").await.ok(200);
    assert_eq!(ids(&listed), [str_of(&task, "id")], "their own: assigned to them or awaiting their approval");
    approver_session.get(&path).await.ok(200);
    stranger.get(&path).await.problem(403);
    assert_eq!(stranger.get("/v1/tasks").await.ok(200)["count"], 0);

    tenant.api.post(&format!("{path}/submit"), json!({})).await.ok(200);
    stranger.post(&format!("{path}/approve"), json!({})).await.problem(403);
    let approved = approver_session.post(&format!("{path}/approve"), json!({})).await.ok(200);
    assert_eq!(approved["status"], "done");
}

async fn lists_filter_and_sort_by_the_new_fields(server: &TestServer) {
    let tenant = server.tenant().await;
    let (approver, _) = member(server, &tenant, "admin").await;
    let api = &tenant.api;
    let (early, _) = create(api, json!({"title": "a", "dueAt": "2030-01-01T00:00:00Z", "frequency": "monthly"})).await;
    let (late, _) = create(api, json!({"title": "b", "dueAt": "2031-01-01T00:00:00Z", "approverId": approver})).await;
    let (undated, _) = create(api, json!({"title": "c", "frequency": "yearly"})).await;
    let (review, review_path) = create(api, json!({"title": "d", "approverId": approver})).await;
    api.post(&format!("{review_path}/submit"), json!({})).await.ok(200);
    let (failed, failed_path) = create(api, json!({"title": "e"})).await;
    api.patch(&failed_path, json!({"status": "failed"})).await.ok(200);
    let id = |task: &Value| str_of(task, "id").to_owned();

    assert_eq!(listed(api, &format!("approverId={approver}")).await, sorted(vec![id(&late), id(&review)]));
    assert_eq!(listed(api, "approverId=none").await, sorted(vec![id(&early), id(&undated), id(&failed)]));
    assert_eq!(listed(api, "frequency=monthly&frequency=yearly").await, sorted(vec![id(&early), id(&undated)]));
    assert_eq!(listed(api, "status=in_review").await, [id(&review)]);
    assert_eq!(listed(api, "status=failed").await, [id(&failed)]);
    assert_eq!(listed(api, "dueBefore=2030-06-01T00:00:00Z").await, [id(&early)]);
    assert_eq!(listed(api, "dueAfter=2030-01-01T00:00:00Z").await, sorted(vec![id(&early), id(&late)]));
    let between = listed(api, "dueAfter=2030-01-01T00:00:01Z&dueBefore=2031-01-01T00:00:00Z").await;
    assert!(between.is_empty(), "{between:?}");

    // by due date: undated last going up, first going down; pages follow the same order
    let up = ids(&api.get("/v1/tasks?sort=dueAt,title").await.ok(200));
    assert_eq!(up[..2], [id(&early), id(&late)]);
    assert_eq!(up[2..], [id(&undated), id(&review), id(&failed)]);
    let down = ids(&api.get("/v1/tasks?sort=-dueAt,-title").await.ok(200));
    assert_eq!(down, up.iter().rev().cloned().collect::<Vec<_>>());
    let first = api.get("/v1/tasks?sort=dueAt,title&limit=2").await.ok(200);
    let cursor = str_of(&first, "nextCursor");
    let rest = api.get(&format!("/v1/tasks?sort=dueAt,title&limit=10&cursor={cursor}")).await.ok(200);
    assert_eq!([ids(&first), ids(&rest)].concat(), up);

    for (name, value) in [("frequency", "weekly"), ("approverId", "bob"), ("dueBefore", "soon"), ("status", "open")] {
        api.get(&format!("/v1/tasks?{name}={value}")).await.invalid(name);
    }

    // the export has the new columns
    let csv = api.get("/v1/tasks/export?format=csv&status=in_review").await;
    assert_eq!(csv.status, 200);
    let text = String::from_utf8(csv.bytes).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "id,organizationId,title,description,status,assigneeId,approverId,frequency,dueAt,lastCompletedAt,\
         rejectionReason,findingId,libraryId,libraryVersion,createdAt,updatedAt"
    );
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[1].starts_with(&format!("{},{},d,,in_review,,{approver},,,,,", id(&review), tenant.org_id)),
        "{text}"
    );
}

/// The ids `GET /v1/tasks?{query}` lists, sorted.
async fn listed(api: &Client, query: &str) -> Vec<String> {
    sorted(ids(&api.get(&format!("/v1/tasks?{query}")).await.ok(200)))
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

async fn the_bulk_route_takes_the_new_fields(server: &TestServer) {
    let tenant = server.tenant().await;
    let (approver, _) = member(server, &tenant, "admin").await;
    let operations = json!({"operations": [
        {"op": "create", "body": {"title": "a", "approverId": approver, "frequency": "quarterly",
                                  "dueAt": "2030-03-31T00:00:00Z"}},
        {"op": "create", "body": {"title": "b", "status": "done", "frequency": "monthly",
                                  "dueAt": "2030-01-31T00:00:00Z"}},
    ]});
    let results = tenant.api.post("/v1/tasks/bulk", operations).await.ok(200);
    let first = &results["results"][0]["body"];
    assert_eq!((&first["approverId"], &first["frequency"]), (&json!(approver), &json!("quarterly")));
    let second = &results["results"][1]["body"];
    assert_eq!((&second["dueAt"], &second["lastCompletedAt"]), (&json!("2030-02-28T00:00:00Z"), &second["createdAt"]));
    let id = str_of(first, "id");

    // atomic: a done without approval fails the request, naming the operation; nothing is written
    let operations = json!({"operations": [
        {"op": "update", "id": str_of(second, "id"), "body": {"title": "b2"}},
        {"op": "update", "id": id, "body": {"status": "done"}},
    ]});
    let failed = tenant.api.post("/v1/tasks/bulk", operations.clone()).await.problem(400);
    assert_eq!(failed["operations"][0]["index"], 1, "{failed}");
    assert_eq!(failed["operations"][0]["status"], 409, "{failed}");
    assert_eq!(tenant.api.get(&format!("/v1/tasks/{}", str_of(second, "id"))).await.ok(200)["title"], "b");
    let results = tenant.api.post("/v1/tasks/bulk?atomic=false", operations).await.ok(200);
    assert_eq!((&results["results"][0]["status"], &results["results"][1]["status"]), (&json!(200), &json!(409)));
    let bad = json!({"operations": [{"op": "create", "body": {"title": "c", "approverId": "bob"}}]});
    tenant.api.post("/v1/tasks/bulk", bad).await.problem(400);
}

async fn another_organizations_task_is_not_found(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let (approver, approver_session) = member(server, &tenant, "admin").await;
    let (task, path) = create(&tenant.api, json!({"title": "Ours", "approverId": approver})).await;
    tenant.api.post(&format!("{path}/submit"), json!({})).await.ok(200);

    for action in ["submit", "approve", "reject"] {
        let body = json!({"reason": "x"});
        let missing = other.api.post(&format!("{path}/{action}"), body.clone()).await.problem(404);
        assert!(!missing.to_string().contains(str_of(&task, "title")), "{missing}");
        other.session.post(&format!("{path}/{action}"), body).await.problem(404);
    }
    let malformed = format!("/v1/tasks/{}/approve", crate::checks::missing_id("rsk_"));
    approver_session.post(&malformed, json!({})).await.problem(404);
    assert_eq!(tenant.api.get(&path).await.ok(200)["status"], "in_review", "untouched");
    let theirs = other.api.get(&format!("/v1/tasks?approverId={approver}")).await.ok(200);
    assert_eq!(theirs["count"], 0);
}
