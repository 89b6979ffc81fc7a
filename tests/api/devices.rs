//! `/v1/devices` and `/v1/people/{id}/devices`: the hosts of a label read from a fake FleetDM
//! (a real local HTTP server), passed through as FleetDM returns them, paged, with its failures
//! mapped to 502/504 and a missing configuration to 503 (docs/devices-and-automations.md, the
//! Device table of shared/spec/rest-api.md). The FleetDM token reaches no response and no log line.

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::checks::{assert_acting_user, data, missing_id, str_of};
use crate::cli::Admin;
use crate::client::{Client, Response};
use crate::fake_fleet::{Answer, FakeFleet, HOSTS_PATH, host};
use crate::harness::TestServer;
use crate::tenant::Tenant;

fleet_tests!(
    lists_the_hosts_of_the_organizations_label_as_fleet_returns_them,
    pages_are_read_one_after_another_until_a_short_page,
    a_members_devices_use_the_members_label,
    a_null_label_gives_no_devices_and_asks_nothing,
    not_configured_is_503 on Unconfigured,
    upstream_errors_are_502_without_the_token,
    a_slow_upstream_is_504,
    an_unreachable_upstream_is_502 on ClosedPort,
    organizations_see_only_the_hosts_of_their_label,
    a_label_belongs_to_one_organization,
    no_tenant_sees_another_tenants_hosts_through_a_label,
);

const INTEGERS: [&str; 9] = [
    "id",
    "uptime",
    "memory",
    "cpu_physical_cores",
    "cpu_logical_cores",
    "distributed_interval",
    "config_tls_refresh",
    "logger_tls_period",
    "team_id",
];
const NUMBERS: [&str; 3] = ["gigs_disk_space_available", "percent_disk_space_available", "gigs_total_disk_space"];
const BOOLEANS: [&str; 3] = ["refetch_requested", "scripts_enabled", "disk_encryption_enabled"];
const TIMESTAMPS: [&str; 12] = [
    "created_at",
    "updated_at",
    "software_updated_at",
    "detail_updated_at",
    "label_updated_at",
    "policy_updated_at",
    "last_enrolled_at",
    "seen_time",
    "refetch_critical_queries_until",
    "last_restarted_at",
    "last_mdm_enrolled_at",
    "last_mdm_checked_in_at",
];
const STRINGS: [&str; 25] = [
    "hostname",
    "uuid",
    "platform",
    "platform_like",
    "os_version",
    "build",
    "code_name",
    "query_agent_version",
    "updater_version",
    "desktop_app_version",
    "cpu_type",
    "cpu_subtype",
    "cpu_brand",
    "hardware_vendor",
    "hardware_model",
    "hardware_version",
    "hardware_serial",
    "computer_name",
    "public_ip",
    "primary_ip",
    "primary_mac",
    "team_name",
    "status",
    "display_text",
    "display_name",
];
const ARRAYS_OF_OBJECTS: [&str; 7] = ["software", "pack_stats", "users", "labels", "packs", "batteries", "end_users"];
const OBJECTS: [&str; 2] = ["issues", "mdm"];

/// A label id unlikely to collide with another test's.
pub(crate) fn label() -> i64 {
    1000 + i64::from(rand::random::<u16>())
}

/// The hosts `first..=last` of `label`.
fn hosts(label: i64, ids: std::ops::RangeInclusive<i64>) -> Vec<Value> {
    ids.map(|id| host(id, label)).collect()
}

/// The operator's CLI, asking the fake FleetDM about the labels it assigns.
pub(crate) fn operator(server: &TestServer, fleet: &FakeFleet) -> Admin {
    server.admin().clone().with_env("FLEET_URL", &fleet.uri()).with_env("FLEET_TOKEN", &fleet.token)
}

/// The operator assigns the organization's label (`admin set-device-label`).
pub(crate) async fn set_org_label(server: &TestServer, fleet: &FakeFleet, tenant: &Tenant, label: Option<i64>) {
    let assigned = operator(server, fleet).try_set_device_label(&tenant.org_id, None, label).await;
    let org = assigned.unwrap_or_else(|error| panic!("set-device-label: {error}"));
    assert_eq!(org["organization"]["deviceManagerLabelId"], json!(label), "{org}");
}

/// The operator assigns a member's label (`admin set-device-label --member`).
async fn set_member_label(
    server: &TestServer,
    fleet: &FakeFleet,
    tenant: &Tenant,
    member_id: &str,
    label: Option<i64>,
) {
    let assigned = operator(server, fleet).try_set_device_label(&tenant.org_id, Some(member_id), label).await;
    let member = assigned.unwrap_or_else(|error| panic!("set-device-label: {error}"));
    assert_eq!(member["member"]["deviceManagerLabelId"], json!(label), "{member}");
}

async fn get(fleet: &FakeFleet, client: &Client, path: &str) -> Response {
    fleet.clean(client.get(path).await)
}

/// Asserts an RFC 9457 problem with `status` and `type`, without the token; returns it.
#[track_caller]
fn problem(fleet: &FakeFleet, response: Response, status: u16, kind: &str) -> Value {
    let body = &response.body;
    assert_eq!(response.status, status, "expected {status}, got {}: {body}", response.status);
    assert!(
        response.content_type.starts_with("application/problem+json"),
        "Content-Type is {:?}, expected application/problem+json ({body})",
        response.content_type
    );
    assert_eq!(body["type"], kind, "problem type in {body}");
    assert_eq!(body["status"], status, "problem status in {body}");
    assert!(body["title"].is_string(), "problem title in {body}");
    assert!(body["detail"].is_string(), "problem detail in {body}");
    fleet.assert_no_token_in("a problem", &String::from_utf8_lossy(&response.bytes));
    response.body
}

/// The `data` of an envelope, sorted by id.
fn sorted(envelope: &Value) -> Vec<Value> {
    let mut devices = data(envelope).clone();
    devices.sort_by_key(|device| device["id"].as_i64());
    devices
}

/// Every field of the spec's Device table is there with its JSON type.
#[track_caller]
fn assert_device_types(device: &Value) {
    let id = &device["id"];
    let check = |keys: &[&str], what: &str, ok: fn(&Value) -> bool| {
        for key in keys {
            let value = &device[*key];
            assert!(ok(value), "device {id}: `{key}` is {value}, expected {what}");
        }
    };
    check(&INTEGERS, "an integer", |v| v.is_i64() || v.is_u64());
    check(&NUMBERS, "a number", |v| v.is_number());
    check(&BOOLEANS, "a boolean", Value::is_boolean);
    check(&TIMESTAMPS, "an RFC 3339 string", |v| v.as_str().is_some_and(|s| s.len() >= 20 && s.contains('T')));
    check(&STRINGS, "a string", Value::is_string);
    check(&ARRAYS_OF_OBJECTS, "an array of objects", |v| {
        v.as_array().is_some_and(|items| !items.is_empty() && items.iter().all(Value::is_object))
    });
    check(&OBJECTS, "an object", Value::is_object);
    let policies = device["policies"].as_array().unwrap_or_else(|| panic!("device {id}: no `policies` array"));
    assert!(!policies.is_empty(), "device {id}: no policies");
    for policy in policies {
        for key in ["id", "author_id", "team_id"] {
            assert!(policy[key].is_i64(), "device {id}: policy `{key}` is {}, expected an integer", policy[key]);
        }
        for key in ["critical", "calendar_events_enabled"] {
            assert!(policy[key].is_boolean(), "device {id}: policy `{key}` is {}, expected a boolean", policy[key]);
        }
        let strings = [
            "name",
            "query",
            "description",
            "author_name",
            "author_email",
            "resolution",
            "platform",
            "created_at",
            "updated_at",
            "response",
        ];
        for key in strings {
            assert!(policy[key].is_string(), "device {id}: policy `{key}` is {}, expected a string", policy[key]);
        }
    }
}

/// The request the server sent FleetDM for `label`, page `page`, is the documented one.
#[track_caller]
fn assert_hosts_request(fleet: &FakeFleet, seen: &crate::fake_fleet::Seen, label: i64, page: &str) {
    assert_eq!(seen.method, "GET", "{seen:?}");
    assert_eq!(seen.path, HOSTS_PATH, "{seen:?}");
    let bearer = format!("Bearer {}", fleet.token);
    assert_eq!(seen.header("authorization"), Some(bearer.as_str()), "the Authorization header of {seen:?}");
    assert_eq!(seen.param("label_id"), Some(label.to_string().as_str()), "label_id in {:?}", seen.query);
    assert_eq!(seen.param("populate_policies"), Some("true"), "populate_policies in {:?}", seen.query);
    assert_eq!(seen.param("populate_software"), Some("true"), "populate_software in {:?}", seen.query);
    assert_eq!(seen.param("per_page"), Some("100"), "per_page in {:?}", seen.query);
    assert_eq!(seen.param("order_key"), Some("id"), "order_key in {:?}", seen.query);
    assert_eq!(seen.param("page"), Some(page), "page in {:?}", seen.query);
}

/// `body` is a device envelope holding exactly `expected` (in any order).
#[track_caller]
fn assert_devices(body: &Value, expected: &[Value]) {
    assert_eq!(body["count"], expected.len(), "count in {body}");
    let got = sorted(body);
    assert_eq!(got.len(), expected.len(), "data length");
    for (got, want) in got.iter().zip(expected) {
        assert_eq!(got, want, "device {} is not passed through as FleetDM returned it", want["id"]);
    }
}

// ---------------------------------------------------------------------------------------------

async fn lists_the_hosts_of_the_organizations_label_as_fleet_returns_them(server: &TestServer, fleet: &FakeFleet) {
    let tenant = server.tenant().await;
    let (ours, theirs) = (label(), label() + 70_000);
    let expected = hosts(ours, 1..=3);
    fleet.set_hosts(ours, expected.clone());
    fleet.set_hosts(theirs, hosts(theirs, 50..=52));
    set_org_label(server, fleet, &tenant, Some(ours)).await;

    let body = get(fleet, &tenant.api, "/v1/devices").await.ok(200);
    assert_eq!(body["authType"], "api-key", "{body}");
    assert_acting_user(&body, &tenant.owner);
    assert_devices(&body, &expected);
    for device in data(&body) {
        assert_device_types(device);
    }
    let uptime = &data(&body).iter().find(|d| d["id"] == 1).expect("host 1")["uptime"];
    assert_eq!(uptime.as_i64(), Some(9_007_199_254_740_994), "a large integer lost precision: {uptime}");

    let requests = fleet.requests();
    assert_eq!(requests.len(), 1, "three hosts fit one page: {requests:?}");
    assert_hosts_request(fleet, &requests[0], ours, "0");

    let body = get(fleet, &tenant.session, "/v1/devices").await.ok(200);
    assert_eq!(body["authType"], "session", "{body}");
    assert_acting_user(&body, &tenant.owner);
    assert_devices(&body, &expected);
}

async fn pages_are_read_one_after_another_until_a_short_page(server: &TestServer, fleet: &FakeFleet) {
    let tenant = server.tenant().await;
    let big = label();
    let expected = hosts(big, 1..=150);
    fleet.set_hosts(big, expected.clone());
    set_org_label(server, fleet, &tenant, Some(big)).await;

    let body = get(fleet, &tenant.api, "/v1/devices").await.ok(200);
    assert_devices(&body, &expected);
    let requests = fleet.requests();
    assert_eq!(
        requests.len(),
        2,
        "150 hosts are two pages of 100: {:?}",
        requests.iter().map(|r| &r.query).collect::<Vec<_>>()
    );
    assert_hosts_request(fleet, &requests[0], big, "0");
    assert_hosts_request(fleet, &requests[1], big, "1");

    // Exactly one full page: the walk needs an empty second page to know it is over.
    let full = big + 1;
    let expected = hosts(full, 201..=300);
    fleet.set_hosts(full, expected.clone());
    set_org_label(server, fleet, &tenant, Some(full)).await;
    let body = get(fleet, &tenant.api, "/v1/devices").await.ok(200);
    assert_devices(&body, &expected);
    let requests = fleet.requests();
    assert_eq!(requests.len(), 4, "100 hosts: a full page and an empty one");
    assert_hosts_request(fleet, &requests[2], full, "0");
    assert_hosts_request(fleet, &requests[3], full, "1");
}

async fn a_members_devices_use_the_members_label(server: &TestServer, fleet: &FakeFleet) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let (org_label, member_label) = (label(), label() + 70_000);
    fleet.set_hosts(org_label, hosts(org_label, 1..=4));
    let expected = hosts(member_label, 10..=11);
    fleet.set_hosts(member_label, expected.clone());
    set_org_label(server, fleet, &tenant, Some(org_label)).await;
    let (_, member) = server.member(&tenant, "employee").await;
    let member_id = str_of(&member, "id");
    set_member_label(server, fleet, &tenant, member_id, Some(member_label)).await;

    let path = format!("/v1/people/{member_id}/devices");
    let body = get(fleet, &tenant.api, &path).await.ok(200);
    assert_eq!(body["authType"], "api-key", "{body}");
    assert_acting_user(&body, &tenant.owner);
    assert_devices(&body, &expected);
    let requests = fleet.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_hosts_request(fleet, &requests[0], member_label, "0");

    let body = get(fleet, &tenant.session, &path).await.ok(200);
    assert_eq!(body["authType"], "session", "{body}");
    assert_devices(&body, &expected);

    // The owner has no label of their own: none, whatever the organization's label.
    let body = get(fleet, &tenant.api, &format!("/v1/people/{}/devices", tenant.owner_member_id)).await.ok(200);
    assert_eq!((&body["count"], &body["data"]), (&json!(0), &json!([])), "{body}");

    // Another organization's member, and a member that does not exist.
    problem(fleet, get(fleet, &other.api, &path).await, 404, "/problems/not-found");
    problem(fleet, get(fleet, &other.session, &path).await, 404, "/problems/not-found");
    let missing = format!("/v1/people/{}/devices", missing_id("mem_"));
    problem(fleet, get(fleet, &tenant.api, &missing).await, 404, "/problems/not-found");
    assert_eq!(fleet.requests().len(), 2, "no FleetDM request for a person the caller may not see");
}

async fn a_null_label_gives_no_devices_and_asks_nothing(server: &TestServer, fleet: &FakeFleet) {
    let tenant = server.tenant().await;
    fleet.set_hosts(1, hosts(1, 1..=2));
    let (_, member) = server.member(&tenant, "employee").await;
    let member_devices = format!("/v1/people/{}/devices", str_of(&member, "id"));

    for client in [&tenant.api, &tenant.session] {
        for path in ["/v1/devices", member_devices.as_str()] {
            let body = get(fleet, client, path).await.ok(200);
            assert_eq!((&body["count"], &body["data"]), (&json!(0), &json!([])), "{path}: {body}");
            assert!(body["authType"].is_string(), "{body}");
            assert_acting_user(&body, &tenant.owner);
        }
    }

    let all = fleet.all_requests().await;
    assert!(all.is_empty(), "no request may reach FleetDM without a label: {all:?}");

    // A label set and then cleared again (the operator's CLI asks FleetDM about the label).
    set_org_label(server, fleet, &tenant, Some(label())).await;
    set_org_label(server, fleet, &tenant, None).await;
    let before = fleet.all_requests().await.len();
    let body = get(fleet, &tenant.api, "/v1/devices").await.ok(200);
    assert_eq!((&body["count"], &body["data"]), (&json!(0), &json!([])), "{body}");
    assert_eq!(fleet.all_requests().await.len(), before, "no request may reach FleetDM without a label");
}

async fn not_configured_is_503(server: &TestServer, fleet: &FakeFleet) {
    let tenant = server.tenant().await;
    set_org_label(server, fleet, &tenant, Some(label())).await;
    let (_, member) = server.member(&tenant, "employee").await;
    let member_id = str_of(&member, "id");
    set_member_label(server, fleet, &tenant, member_id, Some(label())).await;

    // Only the operator's CLI (which has FLEET_URL) asked FleetDM, about the labels; the server has none.
    let before = fleet.all_requests().await.len();
    for path in ["/v1/devices".to_owned(), format!("/v1/people/{member_id}/devices")] {
        let response = get(fleet, &tenant.api, &path).await;
        assert_eq!(response.retry_after, None, "{path}: a missing configuration is not worth retrying");
        problem(fleet, response, 503, "/problems/not-configured");
    }
    assert_eq!(fleet.all_requests().await.len(), before);
    assert!(fleet.requests().is_empty());
}

async fn upstream_errors_are_502_without_the_token(server: &TestServer, fleet: &FakeFleet) {
    let tenant = server.tenant().await;
    let ours = label();
    fleet.set_hosts(ours, hosts(ours, 1..=2));
    set_org_label(server, fleet, &tenant, Some(ours)).await;
    let (_, member) = server.member(&tenant, "employee").await;
    let member_id = str_of(&member, "id");
    set_member_label(server, fleet, &tenant, member_id, Some(ours)).await;
    let member_devices = format!("/v1/people/{member_id}/devices");

    let answers = [
        Answer::Status(500),
        Answer::Status(401),
        Answer::Status(403),
        Answer::Status(404),
        Answer::Body(r#"{"message": "maintenance"}"#.to_owned()),
        Answer::Body(r#"{"hosts": "none"}"#.to_owned()),
        Answer::Body("<html>proxy error</html>".to_owned()),
        Answer::Redirect,
    ];
    for answer in answers {
        fleet.answer(answer.clone());
        for path in ["/v1/devices", member_devices.as_str()] {
            let response = get(fleet, &tenant.api, path).await;
            let body = problem(fleet, response, 502, "/problems/upstream-error");
            assert!(!str_of(&body, "detail").is_empty(), "{answer:?}: {body}");
        }
    }
    let stolen: Vec<_> = fleet.all_requests().await.into_iter().filter(|r| r.path == "/stolen").collect();
    assert!(stolen.is_empty(), "a redirect was followed (with the token?): {stolen:?}");

    // The server recovers once FleetDM does.
    fleet.answer(Answer::Normal);
    let body = get(fleet, &tenant.api, "/v1/devices").await.ok(200);
    assert_eq!(body["count"], 2, "{body}");
}

/// The server's FleetDM timeout is 10 s with no setting to shorten it, so FleetDM here answers
/// after 11 s.
async fn a_slow_upstream_is_504(server: &TestServer, fleet: &FakeFleet) {
    let tenant = server.tenant().await;
    let ours = label();
    fleet.set_hosts(ours, hosts(ours, 1..=2));
    set_org_label(server, fleet, &tenant, Some(ours)).await;
    fleet.answer(Answer::Delay(Duration::from_secs(11)));

    let started = Instant::now();
    let response = get(fleet, &tenant.api, "/v1/devices").await;
    let elapsed = started.elapsed();
    problem(fleet, response, 504, "/problems/upstream-timeout");
    assert!(elapsed >= Duration::from_secs(5), "the 504 came after {elapsed:?}, before the upstream could answer");
    assert!(elapsed < Duration::from_secs(11), "the 504 came after {elapsed:?}: the timeout is 10 s");
}

async fn an_unreachable_upstream_is_502(server: &TestServer, fleet: &FakeFleet) {
    let tenant = server.tenant().await;
    set_org_label(server, fleet, &tenant, Some(label())).await;
    let (_, member) = server.member(&tenant, "employee").await;
    let member_id = str_of(&member, "id");
    set_member_label(server, fleet, &tenant, member_id, Some(label())).await;
    for path in ["/v1/devices".to_owned(), format!("/v1/people/{member_id}/devices")] {
        let started = Instant::now();
        let response = get(fleet, &tenant.api, &path).await;
        problem(fleet, response, 502, "/problems/upstream-error");
        assert!(started.elapsed() < Duration::from_secs(10), "a refused connection took {:?}", started.elapsed());
    }
}

async fn organizations_see_only_the_hosts_of_their_label(server: &TestServer, fleet: &FakeFleet) {
    let a = server.tenant().await;
    let b = server.tenant().await;
    let (label_a, label_b) = (label(), label() + 70_000);
    let hosts_a = hosts(label_a, 1..=3);
    let hosts_b = hosts(label_b, 11..=12);
    fleet.set_hosts(label_a, hosts_a.clone());
    fleet.set_hosts(label_b, hosts_b.clone());
    set_org_label(server, fleet, &a, Some(label_a)).await;
    set_org_label(server, fleet, &b, Some(label_b)).await;

    assert_devices(&get(fleet, &b.api, "/v1/devices").await.ok(200), &hosts_b);
    assert_devices(&get(fleet, &b.session, "/v1/devices").await.ok(200), &hosts_b);
    assert_devices(&get(fleet, &a.api, "/v1/devices").await.ok(200), &hosts_a);
    let requests = fleet.requests();
    assert_hosts_request(fleet, &requests[0], label_b, "0");
    assert_hosts_request(fleet, &requests[1], label_b, "0");
    assert_hosts_request(fleet, &requests[2], label_a, "0");

    // B's session naming A in X-Organization-Id is refused, and A's people are not B's.
    let b_as_a = b.session.with_org(Some(&a.org_id));
    problem(fleet, get(fleet, &b_as_a, "/v1/devices").await, 403, "/problems/forbidden");
    let path = format!("/v1/people/{}/devices", a.owner_member_id);
    problem(fleet, get(fleet, &b.api, &path).await, 404, "/problems/not-found");
    assert_eq!(fleet.requests().len(), 3, "refused requests asked FleetDM nothing");
}

/// With one FleetDM token for every tenant, a label another organization uses would show its
/// devices: only the operator assigns labels, one organization's at a time; a label that is not a
/// positive id is refused.
async fn a_label_belongs_to_one_organization(server: &TestServer, fleet: &FakeFleet) {
    let a = server.tenant().await;
    let b = server.tenant().await;
    let taken = label();
    set_org_label(server, fleet, &a, Some(taken)).await;
    let operator = operator(server, fleet);
    let refused = operator.try_set_device_label(&b.org_id, None, Some(taken)).await.unwrap_err();
    assert!(refused.contains("another organization"), "{refused}");
    let refused = operator.try_set_device_label(&b.org_id, Some(&b.owner_member_id), Some(taken)).await.unwrap_err();
    assert!(refused.contains("another organization"), "{refused}");
    for bad in [0, -5] {
        let refused = operator.try_set_device_label(&b.org_id, None, Some(bad)).await.unwrap_err();
        assert!(refused.contains("label"), "{refused}");
    }
    // A's own member may share A's label, and once A lets it go, B may take it.
    set_member_label(server, fleet, &a, &a.owner_member_id, Some(taken)).await;
    set_member_label(server, fleet, &a, &a.owner_member_id, None).await;
    set_org_label(server, fleet, &a, None).await;
    set_org_label(server, fleet, &b, Some(taken)).await;
    assert!(fleet.requests().is_empty(), "assigning labels lists no hosts");
}

/// Issue 42, finding 1: a tenant chose FleetDM's built-in `All Hosts` label and listed every
/// customer's hosts. No tenant sets a label, the operator never assigns a built-in one, and the
/// refusal says nothing about which labels other tenants use.
async fn no_tenant_sees_another_tenants_hosts_through_a_label(server: &TestServer, fleet: &FakeFleet) {
    let (victim, attacker) = (server.tenant().await, server.tenant().await);
    let (all_hosts, victims) = (label(), label() + 70_000);
    fleet.set_builtin(all_hosts, "All Hosts");
    fleet.set_hosts(all_hosts, hosts(all_hosts, 1..=5));
    fleet.set_hosts(victims, hosts(victims, 1..=2));
    set_org_label(server, fleet, &victim, Some(victims)).await;

    // The same answer for every label, whoever uses it: nothing tells one tenant another's.
    let mut answers = std::collections::BTreeSet::new();
    for label in [all_hosts, victims, label() + 140_000] {
        let refused = attacker.api.patch("/v1/organization", json!({"deviceManagerLabelId": label})).await;
        let on_org = problem(fleet, refused, 403, "/problems/forbidden");
        let path = format!("/v1/people/{}", attacker.owner_member_id);
        let refused = attacker.session.patch(&path, json!({"deviceManagerLabelId": label})).await;
        let on_member = problem(fleet, refused, 403, "/problems/forbidden");
        for body in [&on_org, &on_member] {
            let detail = body["detail"].as_str().unwrap_or_default();
            assert!(detail.contains("deviceManagerLabelId") && detail.contains("operator"), "{body}");
        }
        answers.insert((on_org["detail"].to_string(), on_member["detail"].to_string()));
    }
    assert_eq!(answers.len(), 1, "{answers:?}");
    let org = attacker.api.get("/v1/organization").await.ok(200);
    assert_eq!(org["deviceManagerLabelId"], Value::Null, "{org}");
    assert_devices(&get(fleet, &attacker.api, "/v1/devices").await.ok(200), &[]);
    // What it read it may write back unchanged.
    attacker.api.patch("/v1/organization", json!({"deviceManagerLabelId": null, "hasAccess": true})).await.ok(200);

    let refused = operator(server, fleet).try_set_device_label(&attacker.org_id, None, Some(all_hosts)).await;
    let refused = refused.unwrap_err();
    assert!(refused.contains("All Hosts") && refused.contains("built-in"), "{refused}");
    assert!(fleet.requests().is_empty(), "no hosts were listed");
}
