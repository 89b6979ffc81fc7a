//! Tenant isolation: another organization's records are invisible, and every `{id}` route answers
//! for them exactly as for a record that does not exist.

use reqwest::Method;
use serde_json::{Value, json};

use crate::checks::{data, missing_id, str_of};
use crate::client::{Client, Response};
use crate::harness::TestServer;
use crate::tenant::Tenant;
use crate::{context, policies, risks, vendors};

api_tests!(
    context_entries_of_another_organization_are_404,
    policies_of_another_organization_are_404,
    people_of_another_organization_are_404,
    vendors_of_another_organization_are_404,
    risks_of_another_organization_are_404,
    lists_show_only_the_callers_records,
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
