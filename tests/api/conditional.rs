//! Conditional requests (docs/api.md, "Conditional requests"): every single resource answers with
//! a strong `ETag` that changes with each change of it; `If-None-Match` on a read answers 304; a
//! stale `If-Match` on a change or a delete answers 412 and changes nothing (neither the record
//! nor the audit trail); of two writers racing with the same `If-Match` exactly one wins; another
//! organization's record is a 404 with or without a precondition.

use reqwest::Method;
use serde_json::{Value, json};

use crate::checks::{str_of, tick};
use crate::client::{Client, Response};
use crate::fake_provider::{FakeProvider, HEADER_KEY, KEY_PREFIX, OAUTH};
use crate::harness::TestServer;
use crate::integrations::CONNECTIONS;
use crate::tenant::Tenant;

api_tests!(
    every_kind_answers_an_etag_that_changes_with_each_change with LOOPBACK,
    a_stale_if_match_changes_and_deletes_nothing with LOOPBACK,
    two_writers_with_the_same_if_match_one_wins with LOOPBACK,
    another_organization_gets_404_with_or_without_a_precondition with LOOPBACK,
);

/// The tests that need a provider (their own `sqlite` and `postgres` modules).
mod with_provider {
    use super::connections_and_oauth_apps_honour_preconditions;
    provider_tests!(connections_and_oauth_apps_honour_preconditions);
}

/// Automations may open loopback pages (their targets here are never opened: nothing runs).
const LOOPBACK: crate::harness::Env = &[("AUTOMATION_ALLOWED_HOSTS", "127.0.0.1")];

/// Every kind of single resource with an `ETag`, in the order [`record`] makes them (the
/// integrations' connections and OAuth apps, which need a provider, are tested in
/// [`connections_and_oauth_apps_honour_preconditions`]).
const KINDS: [Kind; 14] = [
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
    Kind::Control,
    Kind::Invitation,
    Kind::Framework,
    Kind::AutomationSecret,
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
    Control,
    Invitation,
    Framework,
    AutomationSecret,
}

/// One record of a kind: where it is, and the tag its create answered (`None` when the CLI made it).
#[derive(Debug, Clone)]
struct Record {
    kind: Kind,
    /// The id its audit entries name (an automation secret's are the automation's).
    id: String,
    path: String,
    created_tag: Option<String>,
    /// The risk a comment is on.
    on: Option<String>,
}

impl Kind {
    /// Whether `GET path` reads one record of this kind (comments are read in lists only, an
    /// automation's secrets too).
    fn readable(self) -> bool {
        !matches!(self, Self::Comment | Self::AutomationSecret)
    }

    /// Whether its read honours `If-None-Match`: not a control's or a framework's, whose
    /// statuses change without the record (docs/api.md).
    fn cacheable(self) -> bool {
        self.readable() && !matches!(self, Self::Control | Self::Framework)
    }

    /// Whether `DELETE path` deletes one (people are deactivated, the organization stays).
    fn deletable(self) -> bool {
        !matches!(self, Self::Person | Self::Organization)
    }

    /// The `n`th change of a record of this kind: each sets a value no other `n` sets. `None`
    /// for the kinds that have no change but `DELETE` (invitations, frameworks).
    fn change(self, n: &str) -> Option<(Method, Value)> {
        let patch = |body: Value| Some((Method::PATCH, body));
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
            Self::Control => patch(json!({"name": format!("Control {n}")})),
            Self::Comment => Some((Method::PUT, json!({"content": format!("Comment {n}")}))),
            Self::AutomationSecret => Some((Method::PUT, json!({"value": format!("s3cret-{n}")}))),
            Self::Invitation | Self::Framework => None,
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
        Kind::Automation => ("/v1/browser/automations", new_automation(api).await),
        Kind::Control => ("/v1/controls", api.post("/v1/controls", json!({"name": "Control"})).await),
        Kind::Invitation => {
            let body = json!({"email": "invited@example.test", "role": "employee"});
            ("/v1/invitations", api.post("/v1/invitations", body).await)
        }
        Kind::Framework => {
            let body = json!({"name": "Framework", "version": "1",
                              "requirements": [{"identifier": "R1", "title": "First"}]});
            ("/v1/frameworks", api.post("/v1/frameworks", body).await)
        }
        Kind::AutomationSecret => {
            let id = str_of(&new_automation(api).await.ok(201), "id").to_owned();
            let path = format!("/v1/browser/automations/{id}/secrets/password");
            let created = api.put(&path, json!({"value": "first"})).await;
            let created_tag = Some(strong_tag(&created));
            created.ok(201);
            return Record { kind, id, path, created_tag, on: None };
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

/// A new browser automation (its target is never opened: nothing runs it).
async fn new_automation(api: &Client) -> Response {
    let task = api.post("/v1/tasks", json!({"title": "Evidence"})).await.ok(201);
    let body = json!({"taskId": task["id"], "name": "Automation", "targetUrl": "http://127.0.0.1:9/ok",
                      "instruction": "screenshot"});
    api.post("/v1/browser/automations", body).await
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
    let (method, body) = record.kind.change(n).expect("a kind without a read has a change");
    let changed = send(client, method, &record.path, &[], Some(body)).await;
    assert_eq!(changed.status, 200, "{}: {}", changed.request(), changed.body);
    strong_tag(&changed)
}

/// How many audit entries the organization's trail holds about the record.
async fn audit_entries(client: &Client, record: &Record) -> u64 {
    let page = client.get(&format!("/v1/audit-log?resourceId={}&limit=1", record.id)).await.ok(200);
    page["count"].as_u64().unwrap_or_else(|| panic!("no count in {page}"))
}

/// The record as a read shows it (for comments: their list on the risk; for a secret: its
/// automation's list), to compare before and after a refused write.
async fn state(client: &Client, record: &Record) -> Value {
    let (list, key, id) = match record.kind {
        Kind::Comment => {
            let risk = record.on.as_deref().unwrap_or_default();
            (crate::comments::list_path("risk", risk), "id", record.id.as_str())
        }
        Kind::AutomationSecret => {
            let automation = record.path.rsplit_once("/secrets/").map_or("", |(automation, _)| automation);
            (format!("{automation}/secrets"), "name", "password")
        }
        _ => return client.get(&record.path).await.ok(200),
    };
    // Both lists are bare arrays.
    let listed = client.get(&list).await.ok(200);
    listed
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .find(|item| item[key] == id)
        .unwrap_or_else(|| panic!("{id} not listed in {list}"))
}

/// The record as a read shows it, without the moment a read computes its statuses at (a
/// framework's and a control's `asOf`, at any depth), to compare two reads.
async fn stored_state(client: &Client, record: &Record) -> Value {
    fn without_as_of(value: &mut Value) {
        match value {
            Value::Object(fields) => {
                fields.remove("asOf");
                fields.values_mut().for_each(without_as_of);
            }
            Value::Array(items) => items.iter_mut().for_each(without_as_of),
            _ => {}
        }
    }
    let mut shown = state(client, record).await;
    without_as_of(&mut shown);
    shown
}

/// A tag no record has.
const UNKNOWN_TAG: &str = "\"0000000000000000\"";

async fn every_kind_answers_an_etag_that_changes_with_each_change(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    for kind in KINDS {
        let record = record(server, &tenant, kind).await;
        let first = current_tag(api, &record, "0").await;
        if kind.readable()
            && let Some(created) = &record.created_tag
        {
            assert_eq!(&first, created, "{kind:?}: a read answers the tag its create answered");
        }
        if kind.cacheable() {
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
        } else if kind.readable() {
            // Computed statuses: the read answers in full even when the tag is the client's.
            let read = send(api, Method::GET, &record.path, &[("If-None-Match", &first)], None).await;
            assert_eq!((read.status, strong_tag(&read)), (200, first.clone()), "{kind:?}: no 304");
        }
        let mut seen = vec![first];
        for n in 1..=3 {
            let Some((method, body)) = kind.change(&n.to_string()) else { break };
            tick().await;
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
        let (stale, current) = match kind.change("1") {
            Some((method, body)) => {
                let stale = current_tag(api, &record, "0").await;
                tick().await;
                let current = strong_tag(&send(api, method, &record.path, &[], Some(body)).await);
                (stale, current)
            }
            // Nothing changes it but its delete: any other tag is stale.
            None => (UNKNOWN_TAG.to_owned(), current_tag(api, &record, "0").await),
        };
        assert_ne!(stale, current, "{kind:?}");
        if kind == Kind::AutomationSecret {
            // A conditional PUT creates nothing: with no secret of that name, any If-Match fails.
            let missing = record.path.replace("/secrets/password", "/secrets/missing");
            for held in ["*", current.as_str()] {
                let refused =
                    send(api, Method::PUT, &missing, &[("If-Match", held)], Some(json!({"value": "v"}))).await;
                assert_eq!(refused.status, 412, "If-Match {held} on no secret: {}", refused.body);
                assert!(refused.body.get("currentEtag").is_none(), "{}", refused.body);
            }
        }
        let (before, entries) = (stored_state(api, &record).await, audit_entries(api, &record).await);

        let change = kind.change("2");
        if let Some((method, body)) = change.clone() {
            let refused = send(api, method.clone(), &record.path, &[("If-Match", &stale)], Some(body.clone())).await;
            assert_precondition_failed(&refused, &current, kind);
            // A weak tag never matches by strong comparison, even the current one's.
            let weak = format!("W/{current}");
            let refused = send(api, method, &record.path, &[("If-Match", &weak)], Some(body)).await;
            assert_precondition_failed(&refused, &current, kind);
        }
        if kind.deletable() {
            let refused = send(api, Method::DELETE, &record.path, &[("If-Match", &stale)], None).await;
            assert_precondition_failed(&refused, &current, kind);
            let weak = format!("W/{current}");
            let refused = send(api, Method::DELETE, &record.path, &[("If-Match", &weak)], None).await;
            assert_precondition_failed(&refused, &current, kind);
        }
        assert_eq!(stored_state(api, &record).await, before, "{kind:?}: a refused write changed the record");
        assert_eq!(audit_entries(api, &record).await, entries, "{kind:?}: a refused write wrote an audit entry");

        let mut latest = current.clone();
        if let Some((method, body)) = change {
            // The current tag (alone or in a list) and `*` match.
            tick().await;
            let list = format!("{stale}, {current}");
            let changed = send(api, method, &record.path, &[("If-Match", &list)], Some(body)).await;
            assert_eq!(changed.status, 200, "{kind:?} with If-Match {list}: {}", changed.body);
            let after = strong_tag(&changed);
            assert_ne!(after, current, "{kind:?}");
            tick().await;
            let (method, body) = kind.change("3").expect("a kind with a change has many");
            let any = send(api, method, &record.path, &[("If-Match", "*")], Some(body)).await;
            assert_eq!(any.status, 200, "{kind:?} with If-Match *: {}", any.body);
            latest = strong_tag(&any);
            assert_eq!(audit_entries(api, &record).await, entries + 2, "{kind:?}: one entry per change");
        }
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
fn assert_precondition_failed(answer: &Response, current: &str, kind: impl std::fmt::Debug) {
    let body = &answer.body;
    assert_eq!(answer.status, 412, "{kind:?}: {}: {body}", answer.request());
    assert!(answer.content_type.starts_with("application/problem+json"), "{kind:?}: {}", answer.content_type);
    assert_eq!(body["type"], "/problems/precondition-failed", "{kind:?}: {body}");
    assert_eq!(body["status"], 412, "{kind:?}: {body}");
    assert_eq!(body["currentEtag"], current, "{kind:?}: the problem names the current tag: {body}");
    assert!(str_of(body, "detail").contains("If-Match"), "{kind:?}: the detail names the header: {body}");
    assert_eq!(answer.header("etag").as_deref(), Some(current), "{kind:?}: the 412's ETag");
}

/// Two writers send the same `If-Match` at once, `rounds` times: exactly one wins each round, the
/// other gets the 412. For a kind without a change they race to delete it (once): the loser
/// finds it gone (404).
async fn two_writers_with_the_same_if_match_one_wins(server: &TestServer) {
    let tenant = server.tenant().await;
    for kind in KINDS {
        let record = record(server, &tenant, kind).await;
        let rounds = if kind.change("r").is_some() { 3 } else { 1 };
        for round in 0..rounds {
            let tag = current_tag(&tenant.api, &record, &format!("r{round}")).await;
            tick().await;
            let writers = ["a", "b"].map(|writer| {
                let (client, path, tag) = (tenant.api.clone(), record.path.clone(), tag.clone());
                let (method, body) = match kind.change(&format!("{writer}{round}")) {
                    Some((method, body)) => (method, Some(body)),
                    None => (Method::DELETE, None),
                };
                tokio::spawn(async move { client.send_with(method, &path, &[("If-Match", &tag)], body).await })
            });
            let mut statuses = Vec::new();
            for writer in writers {
                let answer = writer.await.unwrap();
                if answer.status == 412 {
                    assert_eq!(answer.body["type"], "/problems/precondition-failed", "{kind:?}: {}", answer.body);
                }
                statuses.push(answer.status);
            }
            let won = statuses.iter().filter(|status| (200..300).contains(*status)).count();
            let lost = statuses.iter().filter(|status| matches!(status, 404 | 412)).count();
            assert_eq!((won, lost), (1, 1), "{kind:?}, round {round}: exactly one writer wins: {statuses:?}");
            let loser = if kind.change("r").is_some() { 412 } else { 404 };
            assert!(statuses.contains(&loser), "{kind:?}: the loser gets the {loser}: {statuses:?}");
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
            if let Some((method, body)) = kind.change("theirs") {
                send(&other.api, method, &record.path, &headers, Some(body)).await.problem(404);
            }
            if kind.deletable() {
                send(&other.api, Method::DELETE, &record.path, &headers, None).await.problem(404);
            }
        }
        // Untouched: the owner's tag still matches.
        assert_eq!(audit_entries(&tenant.api, &record).await, entries, "{kind:?}");
        if kind.cacheable() {
            let read = send(&tenant.api, Method::GET, &record.path, &[("If-None-Match", &tag)], None).await;
            assert_eq!(read.status, 304, "{kind:?}: {}", read.body);
        } else if kind.readable() {
            assert_eq!(current_tag(&tenant.api, &record, "0").await, tag, "{kind:?}");
        }
    }
}

/// The integrations' records: an OAuth app (kept sealed in the vault; a first one is configured
/// only by an unconditional `PUT`) and a connection (whose `DELETE` disconnects it and answers its
/// new tag).
async fn connections_and_oauth_apps_honour_preconditions(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let api = &tenant.api;

    // The provider shows whether the organization configured its app: its tag moves with that.
    let provider = format!("/v1/integrations/providers/{OAUTH}");
    let unconfigured = strong_tag(&api.get(&provider).await);
    let cached = send(api, Method::GET, &provider, &[("If-None-Match", &unconfigured)], None).await;
    assert_eq!((cached.status, cached.bytes.len()), (304, 0), "{}", cached.body);

    let app = format!("/v1/integrations/oauth-apps/{OAUTH}");
    let secret = fake.secret("clientsecret");
    let body = |client: &str| json!({"clientId": client, "clientSecret": secret});
    for held in ["*", UNKNOWN_TAG] {
        let refused = send(api, Method::PUT, &app, &[("If-Match", held)], Some(body("first"))).await;
        assert_eq!(refused.status, 412, "If-Match {held} with no app: {}", refused.body);
        assert_eq!(refused.body["type"], "/problems/precondition-failed", "{}", refused.body);
        assert!(refused.body.get("currentEtag").is_none(), "no app, no current tag: {}", refused.body);
        assert!(str_of(&refused.body, "detail").contains("does not exist"), "{}", refused.body);
        assert_eq!(refused.header("etag"), None);
    }
    api.get(&app).await.problem(404);
    let configured = api.put(&app, body("first")).await;
    let first = strong_tag(&configured);
    configured.ok(200);
    assert_eq!(strong_tag(&api.get(&app).await), first, "the read answers the tag the PUT answered");
    let configured = send(api, Method::GET, &provider, &[("If-None-Match", &unconfigured)], None).await;
    assert_eq!(configured.status, 200, "configuring the app changed the provider: {}", configured.body);
    assert_eq!(configured.body["oauth"]["configured"], true, "{}", configured.body);
    assert_ne!(strong_tag(&configured), unconfigured);
    let cached = send(api, Method::GET, &app, &[("If-None-Match", &first)], None).await;
    assert_eq!((cached.status, cached.bytes.len()), (304, 0), "{}", cached.body);
    tick().await;
    let replaced = send(api, Method::PUT, &app, &[("If-Match", &first)], Some(body("second"))).await;
    let second = strong_tag(&replaced);
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    assert_ne!(first, second);
    let stale = send(api, Method::PUT, &app, &[("If-Match", &first)], Some(body("third"))).await;
    assert_precondition_failed(&stale, &second, "a stale PUT of the OAuth app");
    let stale = send(api, Method::DELETE, &app, &[("If-Match", &first)], None).await;
    assert_precondition_failed(&stale, &second, "a stale DELETE of the OAuth app");
    assert_eq!(api.get(&app).await.ok(200)["clientId"], "second", "refused writes changed nothing");
    // Another organization has no app of its own: nothing to read, delete or match.
    other.api.get(&app).await.problem(404);
    send(&other.api, Method::DELETE, &app, &[("If-Match", &second)], None).await.problem(404);
    let theirs = send(&other.api, Method::PUT, &app, &[("If-Match", &second)], Some(body("theirs"))).await;
    assert_eq!(theirs.status, 412, "another organization's conditional PUT: {}", theirs.body);
    assert!(theirs.body.get("currentEtag").is_none(), "it names no tag of ours: {}", theirs.body);
    let removed = send(api, Method::DELETE, &app, &[("If-Match", &second)], None).await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    api.get(&app).await.problem(404);

    let key = fake.secret("apikey");
    fake.accept(&format!("{KEY_PREFIX}{key}"));
    let created = api.post(CONNECTIONS, json!({"providerSlug": HEADER_KEY, "credentials": {"api_key": key}})).await;
    let tag = strong_tag(&created);
    let path = format!("{CONNECTIONS}/{}", str_of(&created.ok(201), "id"));
    let cached = send(api, Method::GET, &path, &[("If-None-Match", &tag)], None).await;
    assert_eq!(cached.status, 304, "{}", cached.body);
    for held in [None, Some(tag.as_str()), Some("*")] {
        let headers: Vec<(&str, &str)> = held.map(|h| ("If-Match", h)).into_iter().collect();
        send(&other.api, Method::DELETE, &path, &headers, None).await.problem(404);
    }
    let stale = send(api, Method::DELETE, &path, &[("If-Match", UNKNOWN_TAG)], None).await;
    assert_precondition_failed(&stale, &tag, "a stale disconnect");
    let still = api.get(&path).await;
    assert_eq!(strong_tag(&still), tag, "a refused disconnect changed the connection: {}", still.body);
    assert_ne!(still.body["status"], "disconnected");
    // Two disconnects with the same tag: one disconnects, the other finds it changed.
    let writers = [0, 1].map(|_| {
        let (client, path, tag) = (api.clone(), path.clone(), tag.clone());
        tokio::spawn(async move { client.send_with(Method::DELETE, &path, &[("If-Match", &tag)], None).await })
    });
    let mut answers = Vec::new();
    for writer in writers {
        answers.push(writer.await.unwrap());
    }
    answers.sort_by_key(|answer| answer.status);
    assert_eq!(answers.iter().map(|a| a.status).collect::<Vec<_>>(), [200, 412], "exactly one disconnects");
    let disconnected = strong_tag(&answers[0]);
    assert_eq!(answers[0].body["connection"]["status"], "disconnected", "{}", answers[0].body);
    assert_precondition_failed(&answers[1], &disconnected, "the second disconnect");
    assert_eq!(strong_tag(&api.get(&path).await), disconnected, "the disconnect answered the new tag");
}
