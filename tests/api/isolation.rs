//! Tenant isolation: another organization's records are invisible, and every `{id}` route answers
//! for them exactly as for a record that does not exist.

use reqwest::Method;
use serde_json::{Value, json};

use crate::attachments::{attachment_id, file};
use crate::checks::{data, missing_id, str_of};
use crate::client::{Client, Response};
use crate::comments::{self, ENTITY_TYPES, with};
use crate::harness::TestServer;
use crate::tenant::Tenant;
use crate::{context, policies, risks, tasks, vendors};

api_tests!(
    context_entries_of_another_organization_are_404,
    policies_of_another_organization_are_404,
    people_of_another_organization_are_404,
    vendors_of_another_organization_are_404,
    risks_of_another_organization_are_404,
    lists_show_only_the_callers_records,
    tasks_of_another_organization_are_404,
    comments_of_another_organization_are_404,
    comments_on_entities_of_another_organization_are_404,
    attachments_of_another_organization_are_404,
    tasks_comments_and_chat_show_only_the_callers_records,
);

/// A `{id}` route family: its collection path, id prefix, whether it has DELETE, and a PATCH body.
struct Route {
    base: &'static str,
    prefix: &'static str,
    has_delete: bool,
    patch: Value,
}

async fn call(client: &Client, method: &Method, path: &str, route: &Route) -> Response {
    match *method {
        Method::PATCH => client.patch(path, route.patch.clone()).await,
        Method::DELETE => client.delete(path).await,
        _ => client.get(path).await,
    }
}

/// `intruder` (API key and session of another organization) gets for `owner`'s record `id` the
/// same 404 as for a missing id, on GET, PATCH and DELETE; the record is unchanged afterwards.
async fn assert_hidden(owner: &Tenant, intruder: &Tenant, route: Route, id: &str) {
    let path = format!("{}/{id}", route.base);
    let missing = format!("{}/{}", route.base, missing_id(route.prefix));
    let before = owner.api.get(&path).await.ok(200);
    let mut methods = vec![Method::GET, Method::PATCH];
    if route.has_delete {
        methods.push(Method::DELETE);
    }
    for client in [&intruder.api, &intruder.session] {
        for method in &methods {
            let absent = call(client, method, &missing, &route).await.problem(404);
            let foreign = call(client, method, &path, &route).await.problem(404);
            assert_eq!(
                (&foreign["type"], &foreign["title"]),
                (&absent["type"], &absent["title"]),
                "{method} {path} from another organization must look like a missing record"
            );
        }
    }
    assert_eq!(owner.api.get(&path).await.ok(200), before, "{path} changed through another organization");
}

async fn two_tenants(server: &crate::harness::TestServer) -> (Tenant, Tenant) {
    (server.tenant().await, server.tenant().await)
}

async fn context_entries_of_another_organization_are_404(server: &TestServer) {
    let (owner, intruder) = two_tenants(server).await;
    let entry = context::create(&owner.api, "Secret?").await;
    let route = Route { base: "/v1/context", prefix: "ctx_", has_delete: true, patch: json!({"answer": "leaked"}) };
    assert_hidden(&owner, &intruder, route, str_of(&entry, "id")).await;
}

async fn policies_of_another_organization_are_404(server: &TestServer) {
    let (owner, intruder) = two_tenants(server).await;
    let policy = policies::create(&owner.api, "Secret").await;
    let route = Route { base: "/v1/policies", prefix: "pol_", has_delete: true, patch: json!({"name": "leaked"}) };
    assert_hidden(&owner, &intruder, route, str_of(&policy, "id")).await;
}

async fn people_of_another_organization_are_404(server: &TestServer) {
    let (owner, intruder) = two_tenants(server).await;
    let route = Route { base: "/v1/people", prefix: "mem_", has_delete: false, patch: json!({"isActive": false}) };
    assert_hidden(&owner, &intruder, route, &owner.owner_member_id).await;
}

async fn vendors_of_another_organization_are_404(server: &TestServer) {
    let (owner, intruder) = two_tenants(server).await;
    let vendor = vendors::create(&owner.api, "Secret").await;
    let route = Route { base: "/v1/vendors", prefix: "vnd_", has_delete: true, patch: json!({"name": "leaked"}) };
    assert_hidden(&owner, &intruder, route, str_of(&vendor, "id")).await;
}

async fn risks_of_another_organization_are_404(server: &TestServer) {
    let (owner, intruder) = two_tenants(server).await;
    let risk = risks::create(&owner.api, "Secret").await;
    let route = Route { base: "/v1/risks", prefix: "rsk_", has_delete: true, patch: json!({"title": "leaked"}) };
    assert_hidden(&owner, &intruder, route, str_of(&risk, "id")).await;
}

async fn lists_show_only_the_callers_records(server: &TestServer) {
    let (a, b) = two_tenants(server).await;
    context::create(&a.api, "A?").await;
    policies::create(&a.api, "A").await;
    vendors::create(&a.api, "A").await;
    risks::create(&a.api, "A").await;
    server.member(&a, "auditor").await;
    context::create(&b.api, "B?").await;

    for client in [&b.api, &b.session] {
        let contexts = client.get("/v1/context").await.ok(200);
        assert_eq!(data(&contexts).len(), 1);
        assert_eq!(contexts["data"][0]["question"], "B?");
        assert_eq!(contexts["count"], 1);
        assert!(data(&client.get("/v1/policies").await.ok(200)).is_empty());
        for path in ["/v1/vendors", "/v1/risks"] {
            let list = client.get(path).await.ok(200);
            assert!(data(&list).is_empty(), "{path}: {list}");
            assert_eq!(list["count"], 0, "{path}: {list}");
        }
        let people = client.get("/v1/people?includeInactive=true").await.ok(200);
        let members: Vec<&str> = data(&people).iter().map(|m| str_of(m, "id")).collect();
        assert_eq!(members, [b.owner_member_id.as_str()]);
        assert_eq!(client.get("/v1/organization").await.ok(200)["id"], b.org_id.as_str());
    }

    assert_eq!(a.api.get("/v1/context").await.ok(200)["count"], 1);
    assert_eq!(data(&a.api.get("/v1/policies").await.ok(200)).len(), 1);
    assert_eq!(a.api.get("/v1/vendors").await.ok(200)["count"], 1);
    assert_eq!(a.api.get("/v1/risks").await.ok(200)["count"], 1);
    assert_eq!(a.api.get("/v1/people").await.ok(200)["count"], 2);
}

async fn tasks_of_another_organization_are_404(server: &TestServer) {
    let (owner, intruder) = two_tenants(server).await;
    let task = tasks::create(&owner.api, "Secret").await;
    let route = Route { base: "/v1/tasks", prefix: "tsk_", has_delete: true, patch: json!({"title": "leaked"}) };
    assert_hidden(&owner, &intruder, route, str_of(&task, "id")).await;
}

/// The same 404 for `path` as for the same route with a missing id (`missing`).
async fn assert_same_404(foreign: Response, absent: Response, what: &str) {
    let foreign = foreign.problem(404);
    let absent = absent.problem(404);
    assert_eq!(
        (&foreign["type"], &foreign["title"]),
        (&absent["type"], &absent["title"]),
        "{what} from another organization must look like a missing record"
    );
}

async fn comments_of_another_organization_are_404(server: &TestServer) {
    let (owner, intruder) = two_tenants(server).await;
    let risk = comments::entity(&owner.api, "risk").await;
    let comment = comments::create(&owner, "risk", &risk, "Secret").await;
    let path = format!("/v1/comments/{}", str_of(&comment, "id"));
    let missing = format!("/v1/comments/{}", missing_id("cmt_"));
    // The intruder's owner shares no organization with the author, and acts as itself.
    for client in [&intruder.api, &intruder.session] {
        let edit = json!({"content": "leaked"});
        assert_same_404(client.put(&path, edit.clone()).await, client.put(&missing, edit).await, "PUT").await;
        assert_same_404(client.delete(&path).await, client.delete(&missing).await, "DELETE").await;
    }
    assert_eq!(comments::list(&owner.api, "risk", &risk).await, [comment]);
}

async fn comments_on_entities_of_another_organization_are_404(server: &TestServer) {
    let (owner, intruder) = two_tenants(server).await;
    for entity_type in ENTITY_TYPES {
        let id = comments::entity(&owner.api, entity_type).await;
        comments::create(&owner, entity_type, &id, "Secret").await;
        let absent = comments::entity(&intruder.api, entity_type).await;
        intruder.api.delete(&comments::entity_path(entity_type, &absent)).await.ok(200);
        for client in [&intruder.api, &intruder.session] {
            let (foreign, missing) = (comments::list_path(entity_type, &id), comments::list_path(entity_type, &absent));
            assert_same_404(client.get(&foreign).await, client.get(&missing).await, "GET /v1/comments").await;
            let post = |entity: &str| {
                let body = comments::body(entity_type, entity, "planted");
                with(body, "userId", json!(intruder.owner.id))
            };
            let (foreign, missing) = (post(&id), post(&absent));
            let foreign = client.post("/v1/comments", foreign).await;
            assert_same_404(foreign, client.post("/v1/comments", missing).await, "POST /v1/comments").await;
        }
        assert_eq!(comments::list(&owner.api, entity_type, &id).await.len(), 1, "{entity_type}");
    }
}

async fn attachments_of_another_organization_are_404(server: &TestServer) {
    let (owner, intruder) = two_tenants(server).await;
    let task = comments::entity(&owner.api, "task").await;
    let body = with(comments::body("task", &task, "Secret"), "attachments", json!([file("s.txt", "text/plain", b"S")]));
    let comment = owner.api.post("/v1/comments", with(body, "userId", json!(owner.owner.id))).await.ok(201);
    let id = attachment_id(&comment, "s.txt");
    let path = format!("/v1/attachments/{id}/download");
    let missing = format!("/v1/attachments/{}/download", missing_id("att_"));
    for client in [&intruder.api, &intruder.session] {
        assert_same_404(client.get(&path).await, client.get(&missing).await, "GET download").await;
    }
    owner.api.get(&path).await.ok(200);
}

async fn tasks_comments_and_chat_show_only_the_callers_records(server: &TestServer) {
    let (a, b) = two_tenants(server).await;
    let task = tasks::create(&a.api, "A").await;
    comments::create(&a, "task", str_of(&task, "id"), "A").await;
    let history = json!({"messages": [{"id": "1", "role": "user", "text": "A", "createdAt": 1}]});
    a.session.put("/v1/assistant-chat/history", history).await.ok(200);
    tasks::create(&b.api, "B").await;

    for client in [&b.api, &b.session] {
        let list = client.get("/v1/tasks").await.ok(200);
        assert_eq!(list["count"], 1, "{list}");
        assert_eq!(data(&list)[0]["title"], "B");
    }
    let chat = b.session.get("/v1/assistant-chat/history").await.ok(200);
    assert_eq!(chat, json!({"messages": []}));
    assert_eq!(a.api.get("/v1/tasks").await.ok(200)["count"], 1);
}
