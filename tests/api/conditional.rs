//! Conditional requests (docs/api.md, "Conditional requests"): every single resource answers with
//! a strong `ETag` that changes with each change of it; `If-None-Match` on a read answers 304; a
//! stale `If-Match` on a change or a delete answers 412 and changes nothing (neither the record
//! nor the audit trail); of two writers racing with the same `If-Match` exactly one wins; another
//! organization's record is a 404 with or without a precondition.

use reqwest::Method;
use serde_json::{Value, json};

use crate::checks::{str_of, tick};
use crate::client::{Client, Response};
use crate::harness::TestServer;
use crate::tenant::Tenant;

api_tests!(
    every_kind_answers_an_etag_that_changes_with_each_change with LOOPBACK,
    a_stale_if_match_changes_and_deletes_nothing with LOOPBACK,
    two_writers_with_the_same_if_match_one_wins with LOOPBACK,
    another_organization_gets_404_with_or_without_a_precondition with LOOPBACK,
);

/// Automations may open loopback pages (their targets here are never opened: nothing runs).
const LOOPBACK: crate::harness::Env = &[("AUTOMATION_ALLOWED_HOSTS", "127.0.0.1")];

/// Every kind of single resource with an `ETag`, in the order [`record`] makes them.
const KINDS: [Kind; 10] = [
    Kind::Risk,
    Kind::Vendor,
    Kind::Task,
    Kind::Context,
    Kind::Policy,
    Kind::Person,
    Kind::Organization,
    Kind::Webhook,
    Kind::Automation,
    Kind::Comment,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Risk,
    Vendor,
    Task,
    Context,
    Policy,
    Person,
    Organization,
    Webhook,
    Automation,
    Comment,
}

/// One record of a kind: where it is, and the tag its create answered (`None` when the CLI made it).
#[derive(Debug, Clone)]
struct Record {
    kind: Kind,
    id: String,
    path: String,
    created_tag: Option<String>,
    /// The risk a comment is on.
    on: Option<String>,
}

impl Kind {
    /// Whether `GET path` reads one record of this kind (comments are read in lists only).
    fn readable(self) -> bool {
        self != Self::Comment
    }

    /// Whether `DELETE path` deletes one (people are deactivated, the organization stays).
    fn deletable(self) -> bool {
        !matches!(self, Self::Person | Self::Organization)
    }

    /// The `n`th change of a record of this kind: each sets a value no other `n` sets.
    fn change(self, n: &str) -> (Method, Value) {
        let patch = |body: Value| (Method::PATCH, body);
        match self {
            Self::Risk => patch(json!({"title": format!("Risk {n}")})),
            Self::Vendor => patch(json!({"name": format!("Vendor {n}")})),
            Self::Task => patch(json!({"title": format!("Task {n}")})),
            Self::Context => patch(json!({"question": format!("Question {n}?")})),
            Self::Policy => patch(json!({"name": format!("Policy {n}")})),
            Self::Person => patch(json!({"role": format!("employee, team-{n}")})),
            Self::Organization => patch(json!({"name": format!("Org {n}")})),
            Self::Webhook => patch(json!({"description": format!("Hook {n}")})),
            Self::Automation => patch(json!({"name": format!("Automation {n}")})),
            Self::Comment => (Method::PUT, json!({"content": format!("Comment {n}")})),
        }
    }
}

/// A new record of `kind` in `tenant`.
async fn record(server: &TestServer, tenant: &Tenant, kind: Kind) -> Record {
    let api = &tenant.api;
    let mut on = None;
    let (collection, created) = match kind {
        Kind::Risk => (
            "/v1/risks",
            api.post("/v1/risks", json!({"title": "Risk", "description": "d", "category": "technology"})).await,
        ),
        Kind::Vendor => ("/v1/vendors", api.post("/v1/vendors", json!({"name": "Vendor", "description": "d"})).await),
        Kind::Task => ("/v1/tasks", api.post("/v1/tasks", json!({"title": "Task"})).await),
        Kind::Context => {
            ("/v1/context", api.post("/v1/context", json!({"question": "Encrypted?", "answer": "Yes."})).await)
        }
        Kind::Policy => ("/v1/policies", api.post("/v1/policies", json!({"name": "Policy", "content": []})).await),
        Kind::Person => {
            let (_, member) = server.member(tenant, "employee").await;
            let id = str_of(&member, "id").to_owned();
            return Record { kind, path: format!("/v1/people/{id}"), id, created_tag: None, on: None };
        }
        Kind::Organization => {
            let id = tenant.org_id.clone();
            return Record { kind, path: "/v1/organization".to_owned(), id, created_tag: None, on: None };
        }
        Kind::Webhook => {
            let body = json!({"url": "https://hooks.example.com/a", "events": ["risk.*"]});
            ("/v1/webhooks", api.post("/v1/webhooks", body).await)
        }
        Kind::Automation => {
            let task = api.post("/v1/tasks", json!({"title": "Evidence"})).await.ok(201);
            let body = json!({"taskId": task["id"], "name": "Automation", "targetUrl": "http://127.0.0.1:9/ok",
                              "instruction": "screenshot"});
            ("/v1/browser/automations", api.post("/v1/browser/automations", body).await)
        }
        Kind::Comment => {
            let risk = api
                .post("/v1/risks", json!({"title": "Commented", "description": "d", "category": "technology"}))
                .await
                .ok(201);
            on = Some(str_of(&risk, "id").to_owned());
            let body = json!({"entityType": "risk", "entityId": risk["id"], "content": "First",
                              "userId": tenant.owner.id});
            ("/v1/comments", api.post("/v1/comments", body).await)
        }
    };
    let created_tag = Some(strong_tag(&created));
    let body = created.ok(201);
    let id = str_of(&body, "id").to_owned();
    Record { kind, path: format!("{collection}/{id}"), id, created_tag, on }
}

/// The answer's `ETag`, asserted strong: a quoted tag without `W/`.
#[track_caller]
fn strong_tag(response: &Response) -> String {
    let tag = response.header("etag").unwrap_or_else(|| panic!("{}: no ETag", response.request()));
    assert!(tag.len() > 2 && tag.starts_with('"') && tag.ends_with('"'), "{}: ETag {tag}", response.request());
    tag
}

async fn send(client: &Client, method: Method, path: &str, headers: &[(&str, &str)], body: Option<Value>) -> Response {
    client.send_with(method, path, headers, body).await
}

/// The record's current tag, read with `GET`, or for a kind without a read, by a change that the
/// test makes anyway (`n` names it).
async fn current_tag(client: &Client, record: &Record, n: &str) -> String {
    if record.kind.readable() {
        return strong_tag(&send(client, Method::GET, &record.path, &[], None).await);
    }
    let (method, body) = record.kind.change(n);
    let changed = send(client, method, &record.path, &[], Some(body)).await;
    assert_eq!(changed.status, 200, "{}: {}", changed.request(), changed.body);
    strong_tag(&changed)
}

/// How many audit entries the organization's trail holds about the record.
async fn audit_entries(client: &Client, record: &Record) -> u64 {
    let page = client.get(&format!("/v1/audit-log?resourceId={}&limit=1", record.id)).await.ok(200);
    page["count"].as_u64().unwrap_or_else(|| panic!("no count in {page}"))
}

/// The record as a read shows it (for comments: their list on the risk), to compare before and
/// after a refused write.
async fn state(client: &Client, record: &Record) -> Value {
    if record.kind.readable() {
        return client.get(&record.path).await.ok(200);
    }
    let risk = record.on.as_deref().unwrap_or_default();
    let comments = client.get(&crate::comments::list_path("risk", risk)).await.ok(200);
    // The list of a record's comments is a bare array.
    comments
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .find(|c| c["id"] == record.id.as_str())
        .unwrap_or_else(|| panic!("{} not listed", record.id))
}

async fn every_kind_answers_an_etag_that_changes_with_each_change(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    for kind in KINDS {
        let record = record(server, &tenant, kind).await;
        let first = current_tag(api, &record, "0").await;
        if kind.readable() {
            if let Some(created) = &record.created_tag {
                assert_eq!(&first, created, "{kind:?}: a read answers the tag its create answered");
            }
            // The client's copy is current: 304 without a body, the tag repeated (weak comparison).
            let weak = format!("W/{first}");
            for held in [first.as_str(), weak.as_str(), "*", &format!("\"other\", {first}")] {
                let answer = send(api, Method::GET, &record.path, &[("If-None-Match", held)], None).await;
                assert_eq!(answer.status, 304, "{kind:?} with If-None-Match {held}: {}", answer.body);
                assert!(answer.bytes.is_empty(), "{kind:?}: a 304 has no body");
                assert_eq!(answer.header("etag").as_deref(), Some(first.as_str()), "{kind:?}: the 304's ETag");
            }
            let other = send(api, Method::GET, &record.path, &[("If-None-Match", "\"other\"")], None).await;
            assert_eq!((other.status, strong_tag(&other)), (200, first.clone()), "{kind:?}: another tag reads");
        }
        let mut seen = vec![first];
        for n in 1..=3 {
            tick().await;
            let (method, body) = kind.change(&n.to_string());
            let changed = send(api, method, &record.path, &[], Some(body)).await;
            assert_eq!(changed.status, 200, "{kind:?}: {}", changed.body);
            let tag = strong_tag(&changed);
            assert!(!seen.contains(&tag), "{kind:?}: change {n} answered a tag seen before: {tag} in {seen:?}");
            if kind.readable() {
                let read = send(api, Method::GET, &record.path, &[("If-None-Match", &seen[0])], None).await;
                assert_eq!((read.status, strong_tag(&read)), (200, tag.clone()), "{kind:?}: the read after change {n}");
            }
            seen.push(tag);
        }
    }
}

async fn a_stale_if_match_changes_and_deletes_nothing(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    for kind in KINDS {
        let record = record(server, &tenant, kind).await;
        let stale = current_tag(api, &record, "0").await;
        tick().await;
        let (method, body) = kind.change("1");
        let current = strong_tag(&send(api, method, &record.path, &[], Some(body)).await);
        assert_ne!(stale, current, "{kind:?}");
        let (before, entries) = (state(api, &record).await, audit_entries(api, &record).await);

        let (method, body) = kind.change("2");
        let refused = send(api, method.clone(), &record.path, &[("If-Match", &stale)], Some(body.clone())).await;
        assert_precondition_failed(&refused, &current, kind);
        // A weak tag never matches by strong comparison, even the current one's.
        let weak = format!("W/{current}");
        let refused = send(api, method.clone(), &record.path, &[("If-Match", &weak)], Some(body.clone())).await;
        assert_precondition_failed(&refused, &current, kind);
        if kind.deletable() {
            let refused = send(api, Method::DELETE, &record.path, &[("If-Match", &stale)], None).await;
            assert_precondition_failed(&refused, &current, kind);
        }
        assert_eq!(state(api, &record).await, before, "{kind:?}: a refused write changed the record");
        assert_eq!(audit_entries(api, &record).await, entries, "{kind:?}: a refused write wrote an audit entry");

        // The current tag (alone or in a list) and `*` match.
        tick().await;
        let list = format!("{stale}, {current}");
        let changed = send(api, method.clone(), &record.path, &[("If-Match", &list)], Some(body)).await;
        assert_eq!(changed.status, 200, "{kind:?} with If-Match {list}: {}", changed.body);
        let after = strong_tag(&changed);
        assert_ne!(after, current, "{kind:?}");
        tick().await;
        let (method, body) = kind.change("3");
        let any = send(api, method, &record.path, &[("If-Match", "*")], Some(body)).await;
        assert_eq!(any.status, 200, "{kind:?} with If-Match *: {}", any.body);
        let latest = strong_tag(&any);
        assert_eq!(audit_entries(api, &record).await, entries + 2, "{kind:?}: one entry per change");
        if kind.deletable() {
            let deleted = send(api, Method::DELETE, &record.path, &[("If-Match", &latest)], None).await;
            assert!(matches!(deleted.status, 200 | 204), "{kind:?}: delete with the current tag: {}", deleted.body);
            if kind.readable() {
                api.get(&record.path).await.problem(404);
            }
        }
    }
}

#[track_caller]
fn assert_precondition_failed(answer: &Response, current: &str, kind: Kind) {
    let body = &answer.body;
    assert_eq!(answer.status, 412, "{kind:?}: {}: {body}", answer.request());
    assert!(answer.content_type.starts_with("application/problem+json"), "{kind:?}: {}", answer.content_type);
    assert_eq!(body["type"], "/problems/precondition-failed", "{kind:?}: {body}");
    assert_eq!(body["status"], 412, "{kind:?}: {body}");
    assert_eq!(body["currentEtag"], current, "{kind:?}: the problem names the current tag: {body}");
    assert!(str_of(body, "detail").contains("If-Match"), "{kind:?}: the detail names the header: {body}");
    assert_eq!(answer.header("etag").as_deref(), Some(current), "{kind:?}: the 412's ETag");
}

async fn two_writers_with_the_same_if_match_one_wins(server: &TestServer) {
    let tenant = server.tenant().await;
    for kind in KINDS {
        let record = record(server, &tenant, kind).await;
        for round in 0..3 {
            let tag = current_tag(&tenant.api, &record, &format!("r{round}")).await;
            tick().await;
            let writers = ["a", "b"].map(|writer| {
                let (client, path, tag) = (tenant.api.clone(), record.path.clone(), tag.clone());
                let (method, body) = kind.change(&format!("{writer}{round}"));
                tokio::spawn(async move { client.send_with(method, &path, &[("If-Match", &tag)], Some(body)).await })
            });
            let mut statuses = Vec::new();
            for writer in writers {
                let answer = writer.await.unwrap();
                if answer.status == 412 {
                    assert_eq!(answer.body["type"], "/problems/precondition-failed", "{kind:?}: {}", answer.body);
                }
                statuses.push(answer.status);
            }
            statuses.sort_unstable();
            assert_eq!(statuses, [200, 412], "{kind:?}, round {round}: exactly one writer wins");
        }
    }
}

async fn another_organization_gets_404_with_or_without_a_precondition(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    for kind in KINDS {
        if kind == Kind::Organization {
            continue; // `/v1/organization` is always the caller's own
        }
        let record = record(server, &tenant, kind).await;
        let tag = current_tag(&tenant.api, &record, "0").await;
        let entries = audit_entries(&tenant.api, &record).await;
        if kind.readable() {
            for held in [None, Some(tag.as_str()), Some("*")] {
                let headers: Vec<(&str, &str)> = held.map(|h| ("If-None-Match", h)).into_iter().collect();
                send(&other.api, Method::GET, &record.path, &headers, None).await.problem(404);
            }
        }
        for held in [None, Some(tag.as_str()), Some("*")] {
            let headers: Vec<(&str, &str)> = held.map(|h| ("If-Match", h)).into_iter().collect();
            let (method, body) = kind.change("theirs");
            send(&other.api, method, &record.path, &headers, Some(body)).await.problem(404);
            if kind.deletable() {
                send(&other.api, Method::DELETE, &record.path, &headers, None).await.problem(404);
            }
        }
        // Untouched: the owner's tag still matches.
        assert_eq!(audit_entries(&tenant.api, &record).await, entries, "{kind:?}");
        if kind.readable() {
            let read = send(&tenant.api, Method::GET, &record.path, &[("If-None-Match", &tag)], None).await;
            assert_eq!(read.status, 304, "{kind:?}: {}", read.body);
        }
    }
}
