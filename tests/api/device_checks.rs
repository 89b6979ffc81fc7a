//! The FleetDM checks end to end: an organization connects `fleetdm` (no credential: the
//! deployment's FleetDM is the operator's), and the server's worker reads the hosts of the label
//! the operator assigned the organization from a fake FleetDM (a real local HTTP server). Each
//! Fleet policy is a check of its own over active members' devices; findings and linked controls
//! follow the devices' answers; another organization's label is never read.

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;

use crate::check_runs::{all_results, control_status, findings, run_checks};
use crate::checks::str_of;
use crate::client::Client;
use crate::devices::{label, set_org_label};
use crate::fake_fleet::{FakeFleet, HOSTS_PATH, host};
use crate::harness::TestServer;

fleet_tests!(
    fleet_policies_judge_active_members_devices_and_findings_follow,
    a_run_reads_only_its_own_organizations_label,
    without_fleetdm_every_check_is_an_error on Unconfigured,
);

const POLICY_7: &str = "fleetdm.policy.7";
const SEEN: &str = "fleetdm.hosts.seen-recently";
const ENROLLED: &str = "fleetdm.members.enrolled";

/// Connects the organization's devices; the connection's id.
async fn connect_fleet(api: &Client) -> String {
    let body = json!({"providerSlug": "fleetdm", "credentials": {}});
    let connection = api.post("/v1/integrations/connections", body).await.ok(201);
    str_of(&connection, "id").to_owned()
}

/// `days` days before now, as FleetDM writes times.
fn days_ago(days: i64) -> String {
    (time::OffsetDateTime::now_utc() - time::Duration::days(days)).format(&Rfc3339).unwrap()
}

/// A host of `label` used by `email` (none when empty), last seen `seen`, answering `policies`
/// (`(id, response)`; policy 7 is critical).
fn device(id: i64, label: i64, email: &str, seen: &str, policies: &[(u64, &str)]) -> Value {
    let mut device = host(id, label);
    device["display_name"] = json!(format!("Laptop {id}"));
    device["seen_time"] = json!(seen);
    device["end_users"] = match email {
        "" => json!([]),
        email => json!([{"idp_username": email, "idp_full_name": "", "other_emails": null}]),
    };
    device["policies"] = policies
        .iter()
        .map(|(id, response)| {
            json!({"id": id, "name": format!("Policy {id}"), "critical": *id == 7, "response": response,
                   "resolution": "Turn it on in System Settings.", "query": "SELECT 1;", "platform": "darwin"})
        })
        .collect();
    device
}

fn result<'a>(results: &'a [Value], check: &str, name: &str) -> &'a Value {
    results
        .iter()
        .find(|r| r["checkId"] == check && r["resource"]["name"] == name)
        .unwrap_or_else(|| panic!("no {check} result for {name}: {results:#?}"))
}

/// A control linked to `source`; its id.
async fn control_linked_to(api: &Client, name: &str, source: &str) -> String {
    let control = api.post("/v1/controls", json!({"name": name})).await.ok(201);
    let id = str_of(&control, "id").to_owned();
    api.post(&format!("/v1/controls/{id}/evidence-sources"), json!({"sourceId": source})).await.ok(201);
    id
}

async fn fleet_policies_judge_active_members_devices_and_findings_follow(server: &TestServer, fleet: &FakeFleet) {
    let tenant = server.tenant().await;
    let (bo, _) = server.member(&tenant, "employee").await;
    let (cy, cy_member) = server.member(&tenant, "employee").await;
    tenant.deactivate(str_of(&cy_member, "id")).await;
    let ours = label();
    set_org_label(server, fleet, &tenant, Some(ours)).await;
    let owner = tenant.owner.email.to_uppercase();
    fleet.set_hosts(
        ours,
        vec![
            device(1, ours, &owner, &days_ago(1), &[(7, "fail"), (9, "pass"), (11, "")]),
            device(2, ours, &cy.email, &days_ago(40), &[(7, "fail")]),
            device(3, ours, "", &days_ago(1), &[(7, "fail")]),
        ],
    );
    let connection = connect_fleet(&tenant.api).await;
    let one_policy = control_linked_to(&tenant.api, "Disks encrypted", &format!("{connection}:{POLICY_7}")).await;
    let all_policies =
        control_linked_to(&tenant.api, "Devices hardened", &format!("{connection}:fleetdm.policies")).await;
    // A policy's check is this connection's provider's; an unknown check is no source.
    let sources = format!("/v1/controls/{one_policy}/evidence-sources");
    for wrong in [format!("{connection}:fleetdm.policy.x"), format!("{connection}:aws.iam.root-mfa")] {
        let problem = tenant.api.post(&sources, json!({"sourceId": wrong})).await.problem(400);
        assert_eq!(problem["errors"][0]["field"], "sourceId", "{problem}");
    }

    let run = run_checks(&tenant.api, &connection).await;
    assert_eq!(run["status"], "finished", "{run}");
    let results = all_results(&tenant.api, str_of(&run, "id")).await;
    fleet.assert_no_token_in("the results", &serde_json::to_string(&results).unwrap());
    let failing = result(&results, POLICY_7, "Laptop 1");
    assert_eq!(failing["outcome"], "fail", "{failing}");
    assert_eq!(failing["detail"], "Policy 7: fails (critical in Fleet). Resolution: Turn it on in System Settings.");
    assert_eq!(result(&results, "fleetdm.policy.9", "Laptop 1")["outcome"], "pass");
    assert_eq!(result(&results, "fleetdm.policy.11", "Laptop 1")["outcome"], "not_applicable");
    let former = result(&results, POLICY_7, "Laptop 2");
    assert_eq!(former["outcome"], "not_applicable", "{former}");
    assert!(former["detail"].as_str().unwrap().contains("no longer an active member"), "{former}");
    assert_eq!(result(&results, POLICY_7, "Laptop 3")["outcome"], "not_applicable");
    assert_eq!(result(&results, SEEN, "Laptop 1")["outcome"], "pass");
    assert_eq!(result(&results, SEEN, "Laptop 2")["outcome"], "not_applicable");
    let owner_name = format!("{} <{}>", tenant.owner.name, tenant.owner.email);
    assert_eq!(result(&results, ENROLLED, &owner_name)["outcome"], "pass");
    let bo_name = format!("{} <{}>", bo.name, bo.email);
    assert_eq!(result(&results, ENROLLED, &bo_name)["outcome"], "fail");
    assert!(!results.iter().any(|r| r["resource"]["name"].as_str().unwrap().contains(&cy.email)), "{results:#?}");
    // 3 hosts' answers to policy 7, 2 more of host 1, 3 hosts seen, 2 active members.
    assert_eq!(results.len(), 10, "{results:#?}");

    let open = findings(&tenant.api, &format!("checkId={POLICY_7}&status=open")).await;
    assert_eq!(open.len(), 1, "{open:#?}");
    assert_eq!(open[0]["resource"]["name"], "Laptop 1");
    assert_eq!(open[0]["connectionId"], json!(connection));
    assert_eq!(findings(&tenant.api, &format!("checkId={ENROLLED}&status=open")).await.len(), 1);
    for control in [&one_policy, &all_policies] {
        assert_eq!(control_status(&tenant.api, control).await["status"], "failing", "{control}");
    }

    // Fixed: the owner's laptop passes policy 7 and Bo enrolls one; the policy 9 Fleet deleted
    // leaves no result.
    fleet.set_hosts(
        ours,
        vec![
            device(1, ours, &owner, &days_ago(0), &[(7, "pass")]),
            device(2, ours, &cy.email, &days_ago(40), &[(7, "fail")]),
            device(4, ours, &bo.email, &days_ago(0), &[(7, "pass")]),
        ],
    );
    run_checks(&tenant.api, &connection).await;
    let open = findings(&tenant.api, "status=open").await;
    assert!(open.is_empty(), "{open:#?}");
    let resolved = findings(&tenant.api, &format!("checkId={POLICY_7}&status=resolved")).await;
    assert_eq!(resolved.len(), 1, "{resolved:#?}");
    for control in [&one_policy, &all_policies] {
        assert_eq!(control_status(&tenant.api, control).await["status"], "passing", "{control}");
    }
    let requests = fleet.requests();
    assert!(!requests.is_empty());
    for seen in requests.iter().filter(|seen| seen.path == HOSTS_PATH) {
        assert_eq!(seen.param("label_id"), Some(ours.to_string().as_str()), "{seen:?}");
    }
}

async fn a_run_reads_only_its_own_organizations_label(server: &TestServer, fleet: &FakeFleet) {
    let (owner, stranger) = (server.tenant().await, server.tenant().await);
    let ours = label();
    set_org_label(server, fleet, &owner, Some(ours)).await;
    fleet.set_hosts(ours, vec![device(1, ours, &stranger.owner.email, &days_ago(1), &[(7, "fail")])]);
    let before = fleet.requests().len();

    // The stranger connects its devices without a label of its own: nothing is read, and its
    // owner's e-mail on the other organization's host changes nothing.
    let connection = connect_fleet(&stranger.api).await;
    let run = run_checks(&stranger.api, &connection).await;
    assert_eq!(run["status"], "finished", "{run}");
    let results = all_results(&stranger.api, str_of(&run, "id")).await;
    assert_eq!(results.len(), 3, "one error per check: {results:#?}");
    for result in &results {
        assert_eq!(result["outcome"], "error", "{result}");
        assert_eq!(result["failure"]["code"], "no_label", "{result}");
    }
    assert_eq!(fleet.requests().len(), before, "no hosts were listed for the stranger");
    assert!(findings(&stranger.api, "").await.is_empty());

    // A connection is its organization's: the other one cannot run it or link its checks.
    let path = format!("/v1/integrations/connections/{connection}/checks/run");
    owner.api.post(&path, json!({})).await.problem(404);
    let control = owner.api.post("/v1/controls", json!({"name": "Theirs"})).await.ok(201);
    let sources = format!("/v1/controls/{}/evidence-sources", str_of(&control, "id"));
    owner.api.post(&sources, json!({"sourceId": format!("{connection}:{POLICY_7}")})).await.problem(404);
}

async fn without_fleetdm_every_check_is_an_error(server: &TestServer, fleet: &FakeFleet) {
    let tenant = server.tenant().await;
    // The operator's CLI knows the fake; the server has no FleetDM configured.
    set_org_label(server, fleet, &tenant, Some(label())).await;
    let connection = connect_fleet(&tenant.api).await;
    let run = run_checks(&tenant.api, &connection).await;
    let results = all_results(&tenant.api, str_of(&run, "id")).await;
    assert_eq!(results.len(), 3, "{results:#?}");
    for result in &results {
        assert_eq!(result["outcome"], "error", "{result}");
        assert_eq!(result["failure"]["code"], "not_configured", "{result}");
        assert!(result["failure"]["message"].as_str().unwrap().contains("FLEET_URL"), "{result}");
    }
    assert!(fleet.requests().is_empty());
}
