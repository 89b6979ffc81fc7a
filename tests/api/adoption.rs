//! Adopting a framework template with the control library (docs/library.md): the controls,
//! mappings, policies, tasks and evidence links it makes, in one transaction, once per
//! organization. What is expected is read from the repository's `library/` files here, not from
//! the service's reading of them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::check_runs::control_status;
use crate::checks::{data, str_of};
use crate::client::Client;
use crate::harness::TestServer;

api_tests!(
    adopting_soc2_makes_its_program,
    iso_after_soc2_reuses_the_controls_and_maps_them,
    a_connection_links_the_checks_its_controls_suggest,
    the_body_chooses_what_is_made,
    a_key_needs_every_family_the_adoption_writes,
);

/// A control template as the library's file says it.
struct ControlFile {
    id: String,
    requirements: BTreeMap<String, Vec<String>>,
    checks: Vec<String>,
    policies: Vec<String>,
    tasks: Vec<String>,
}

fn library_controls() -> Vec<ControlFile> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../library/controls");
    let mut controls: Vec<ControlFile> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let file: Value = serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
            let list = |key: &str| -> Vec<String> {
                file[key].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect()
            };
            ControlFile {
                id: str_of(&file, "id").to_owned(),
                requirements: serde_json::from_value(file["requirements"].clone()).unwrap(),
                checks: list("checks"),
                policies: list("policies"),
                tasks: list("tasks"),
            }
        })
        .collect();
    controls.sort_by(|a, b| a.id.cmp(&b.id));
    controls
}

/// The library's controls answering a requirement of framework template `key`.
fn answering(key: &str) -> Vec<ControlFile> {
    library_controls().into_iter().filter(|c| c.requirements.get(key).is_some_and(|r| !r.is_empty())).collect()
}

fn union(controls: &[ControlFile], of: fn(&ControlFile) -> &Vec<String>) -> BTreeSet<String> {
    controls.iter().flat_map(|c| of(c).iter().cloned()).collect()
}

async fn adopt(api: &Client, key: &str, body: Value) -> Value {
    api.post(&format!("/v1/framework-templates/{key}/adopt"), body).await.ok(201)
}

fn library_ids(records: &Value) -> BTreeSet<String> {
    records.as_array().unwrap().iter().map(|r| str_of(r, "libraryId").to_owned()).collect()
}

/// How many rows the list at `path` holds (the policies' list, in the reference's shape, has no
/// `count`: its rows are counted, asked for with a `limit` above the library's size).
async fn count(api: &Client, path: &str) -> u64 {
    let list = api.get(path).await.ok(200);
    list["count"].as_u64().unwrap_or_else(|| data(&list).len() as u64)
}

async fn adopting_soc2_makes_its_program(server: &TestServer) {
    let tenant = server.tenant().await;
    let expected = answering("soc2-2017");
    let policies = union(&expected, |c| &c.policies);
    let tasks = union(&expected, |c| &c.tasks);
    let adopted = adopt(&tenant.api, "soc2-2017", json!({})).await;
    let created = &adopted["library"]["created"];
    assert_eq!(library_ids(&created["controls"]), expected.iter().map(|c| c.id.clone()).collect());
    assert_eq!(library_ids(&created["policies"]), policies);
    assert_eq!(library_ids(&created["tasks"]), tasks);
    let mappings: usize = expected.iter().map(|c| c.requirements["soc2-2017"].len()).sum();
    assert_eq!(created["mappings"], mappings);
    // No connection yet: each control is linked to its policies and tasks.
    let links: usize = expected.iter().map(|c| c.policies.len() + c.tasks.len()).sum();
    assert_eq!(created["evidenceSources"], links);
    assert_eq!(adopted["library"]["reused"], json!({"controls": [], "policies": [], "tasks": []}));

    // The records are the organization's, as the lists show them.
    assert_eq!(count(&tenant.api, "/v1/controls?limit=1").await, expected.len() as u64);
    assert_eq!(count(&tenant.api, "/v1/policies?limit=500").await, policies.len() as u64);
    assert_eq!(count(&tenant.api, "/v1/tasks?limit=1").await, tasks.len() as u64);

    // Every requirement of the framework has a mapped control.
    let framework = tenant.api.get(&format!("/v1/frameworks/{}", str_of(&adopted, "id"))).await.ok(200);
    for requirement in framework["requirements"].as_array().unwrap() {
        assert!(
            !requirement["controls"].as_array().unwrap().is_empty(),
            "{} has no control",
            requirement["identifier"]
        );
    }

    // A control keeps its template, its policies and tasks as evidence sources.
    let mfa = created["controls"].as_array().unwrap().iter().find(|c| c["libraryId"] == "LIB-AC-01").unwrap();
    let control = tenant.api.get(&format!("/v1/controls/{}", str_of(mfa, "id"))).await.ok(200);
    assert_eq!((control["libraryId"].as_str(), control["libraryVersion"].as_u64()), (Some("LIB-AC-01"), Some(1)));
    assert_eq!(control["frequency"], "monthly");
    assert!(str_of(&control, "description").contains("\n\nObjective: "), "{control}");
    let status = control_status(&tenant.api, str_of(mfa, "id")).await;
    let kinds: Vec<&str> = status["sources"].as_array().unwrap().iter().map(|s| str_of(s, "kind")).collect();
    assert_eq!(kinds, ["policy", "policy"], "{status}");

    // A policy is a draft written for the organization; a task recurs and is due.
    let access = created["policies"].as_array().unwrap().iter().find(|p| p["libraryId"] == "LIB-POL-ACCESS").unwrap();
    let policy = tenant.api.get(&format!("/v1/policies/{}", str_of(access, "id"))).await.ok(200);
    assert_eq!(
        (policy["status"].as_str(), policy["policyTemplateId"].as_str()),
        (Some("draft"), Some("LIB-POL-ACCESS"))
    );
    let content = policy["content"].to_string();
    let name = str_of(&tenant.org, "name");
    assert!(content.contains(name) && !content.contains("{{"), "{content:.400}");
    let task = &created["tasks"][0];
    let task = tenant.api.get(&format!("/v1/tasks/{}", str_of(task, "id"))).await.ok(200);
    assert!(task["frequency"].is_string() && task["dueAt"].is_string() && task["libraryId"].is_string(), "{task}");

    // Each record has its audit entry.
    let entries = |action: &str| {
        let path = format!("/v1/audit-log?action={action}&limit=1");
        let api = tenant.api.clone();
        async move { count(&api, &path).await }
    };
    assert_eq!(entries("control.created").await, expected.len() as u64);
    assert_eq!(entries("policy.created").await, policies.len() as u64);
    assert_eq!(entries("control.requirement_mapped").await, mappings as u64);
    assert_eq!(entries("framework.created").await, 1);

    // Adopting again is refused and makes nothing.
    tenant.api.post("/v1/framework-templates/soc2-2017/adopt", json!({})).await.problem(409);
    assert_eq!(count(&tenant.api, "/v1/controls?limit=1").await, expected.len() as u64);
    assert_eq!(entries("control.created").await, expected.len() as u64);

    // Another organization has none of it.
    let other = server.tenant().await;
    assert_eq!(count(&other.api, "/v1/controls?limit=1").await, 0);
    other.api.get(&format!("/v1/controls/{}", str_of(mfa, "id"))).await.problem(404);
}

async fn iso_after_soc2_reuses_the_controls_and_maps_them(server: &TestServer) {
    let tenant = server.tenant().await;
    let soc2: BTreeSet<String> = answering("soc2-2017").into_iter().map(|c| c.id).collect();
    let iso = answering("iso27001-2022");
    adopt(&tenant.api, "soc2-2017", json!({})).await;
    let adopted = adopt(&tenant.api, "iso27001-2022", json!({})).await;
    let created = library_ids(&adopted["library"]["created"]["controls"]);
    let expected: BTreeSet<String> = iso.iter().map(|c| c.id.clone()).filter(|id| !soc2.contains(id)).collect();
    assert_eq!(created, expected);
    let reused = adopted["library"]["reused"]["controls"].as_array().unwrap().len();
    assert_eq!(reused, iso.len() - expected.len());
    let mappings: usize = iso.iter().map(|c| c.requirements["iso27001-2022"].len()).sum();
    assert_eq!(adopted["library"]["created"]["mappings"], mappings);

    // One control per template: no duplicate.
    let all = tenant.api.get("/v1/controls?limit=500").await.ok(200);
    let ids: Vec<&str> = data(&all).iter().filter_map(|c| c["libraryId"].as_str()).collect();
    let distinct: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(ids.len(), distinct.len());
    assert_eq!(distinct.len(), soc2.union(&expected).count());

    // A reused control answers both frameworks now.
    let both = iso.iter().find(|c| soc2.contains(&c.id)).unwrap();
    let control = data(&all).iter().find(|c| c["libraryId"] == both.id.as_str()).unwrap();
    let mapped = tenant.api.get(&format!("/v1/controls/{}/requirements", str_of(control, "id"))).await.ok(200);
    let frameworks: BTreeSet<&str> = data(&mapped).iter().map(|m| str_of(m, "frameworkId")).collect();
    assert_eq!(frameworks.len(), 2, "{mapped}");
}

/// The fleetdm provider's checks that a control suggests, by template.
fn fleet_checks() -> Vec<(String, Vec<String>)> {
    answering("soc2-2017")
        .into_iter()
        .map(|c| (c.id, c.checks.into_iter().filter(|check| check.starts_with("fleetdm.")).collect::<Vec<_>>()))
        .filter(|(_, checks)| !checks.is_empty())
        .collect()
}

/// The check sources of the organization's control made from `template`.
async fn check_sources(api: &Client, template: &str) -> BTreeSet<String> {
    let all = api.get("/v1/controls?limit=500").await.ok(200);
    let control = data(&all).iter().find(|c| c["libraryId"] == template).unwrap();
    let status = control_status(api, str_of(control, "id")).await;
    status["sources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "check")
        .map(|s| str_of(s, "id").to_owned())
        .collect()
}

async fn connect_fleet(api: &Client) -> String {
    let body = json!({"providerSlug": "fleetdm", "credentials": {}});
    str_of(&api.post("/v1/integrations/connections", body).await.ok(201), "id").to_owned()
}

async fn a_connection_links_the_checks_its_controls_suggest(server: &TestServer) {
    let suggested = fleet_checks();
    assert!(!suggested.is_empty(), "the library suggests FleetDM checks");

    // A connection made before the adoption: the controls made are linked to its checks.
    let before = server.tenant().await;
    let connection = connect_fleet(&before.api).await;
    let adopted = adopt(&before.api, "soc2-2017", json!({})).await;
    let links: usize = suggested.iter().map(|(_, checks)| checks.len()).sum();
    let expected = answering("soc2-2017").iter().map(|c| c.policies.len() + c.tasks.len()).sum::<usize>() + links;
    assert_eq!(adopted["library"]["created"]["evidenceSources"], expected);
    for (template, checks) in &suggested {
        let want: BTreeSet<String> = checks.iter().map(|check| format!("{connection}:{check}")).collect();
        assert_eq!(check_sources(&before.api, template).await, want, "{template}");
    }

    // A connection made after it: its creation links them, with their entries.
    let after = server.tenant().await;
    adopt(&after.api, "soc2-2017", json!({})).await;
    let (template, checks) = &suggested[0];
    assert!(check_sources(&after.api, template).await.is_empty());
    let connection = connect_fleet(&after.api).await;
    let want: BTreeSet<String> = checks.iter().map(|check| format!("{connection}:{check}")).collect();
    assert_eq!(check_sources(&after.api, template).await, want);
    let entries = after.api.get("/v1/audit-log?action=control.evidence_source_added&limit=500").await.ok(200);
    let linked = data(&entries).iter().filter(|e| e.to_string().contains(&connection)).count();
    assert_eq!(linked, links);

    // An organization without the library's controls gets a connection and nothing else.
    let bare = server.tenant().await;
    connect_fleet(&bare.api).await;
    assert_eq!(count(&bare.api, "/v1/audit-log?action=control.evidence_source_added&limit=1").await, 0);
}

async fn the_body_chooses_what_is_made(server: &TestServer) {
    // Without controls: the framework alone, as before the library.
    let tenant = server.tenant().await;
    let adopted = adopt(&tenant.api, "soc2-2017", json!({"withControls": false})).await;
    assert_eq!(adopted["library"]["created"]["controls"], json!([]));
    assert_eq!(count(&tenant.api, "/v1/controls?limit=1").await, 0);
    // No body at all, or `null`, is everything.
    let tenant_null = server.tenant().await;
    let adopted = adopt(&tenant_null.api, "soc2-2017", Value::Null).await;
    assert_eq!(library_ids(&adopted["library"]["created"]["controls"]).len(), answering("soc2-2017").len());
    let response =
        tenant.api.send_with(reqwest::Method::POST, "/v1/framework-templates/iso27001-2022/adopt", &[], None).await;
    let adopted = response.ok(201);
    assert_eq!(library_ids(&adopted["library"]["created"]["controls"]).len(), answering("iso27001-2022").len());

    // Controls without policies or tasks: no policy, no task, links only to what exists.
    let tenant = server.tenant().await;
    let adopted = adopt(&tenant.api, "soc2-2017", json!({"policies": false, "tasks": false})).await;
    assert_eq!(adopted["library"]["created"]["policies"], json!([]));
    assert_eq!(adopted["library"]["created"]["evidenceSources"], 0);
    assert_eq!(count(&tenant.api, "/v1/policies?limit=500").await, 0);
    // A later adoption makes the policies and links the controls that rely on them.
    let adopted = adopt(&tenant.api, "iso27001-2022", json!({})).await;
    let policies = union(&answering("iso27001-2022"), |c| &c.policies);
    assert_eq!(library_ids(&adopted["library"]["created"]["policies"]), policies);
    let mfa = data(&tenant.api.get("/v1/controls?limit=500").await.ok(200))
        .iter()
        .find(|c| c["libraryId"] == "LIB-AC-01")
        .cloned()
        .unwrap();
    let status = control_status(&tenant.api, str_of(&mfa, "id")).await;
    assert_eq!(status["sources"].as_array().unwrap().len(), 2, "{status}");

    // A bad body names the problem and makes nothing.
    let tenant = server.tenant().await;
    let problem =
        tenant.api.post("/v1/framework-templates/soc2-2017/adopt", json!({"controls": true})).await.problem(400);
    assert!(problem.to_string().contains("controls"), "{problem}");
    tenant.api.post("/v1/framework-templates/soc2-2017/adopt", json!({"policies": "yes"})).await.problem(400);
    assert_eq!(count(&tenant.api, "/v1/frameworks").await, 0);
}

async fn a_key_needs_every_family_the_adoption_writes(server: &TestServer) {
    let tenant = server.tenant().await;
    let key = |scopes: &'static [&'static str]| {
        let session = tenant.session.clone();
        async move {
            let made = session.post("/v1/api-keys", json!({"name": "adopt", "scopes": scopes})).await.ok(201);
            server.client(crate::client::Auth::ApiKey(str_of(&made, "key").to_owned()), None)
        }
    };
    let frameworks_only = key(&["frameworks:write"]).await;
    let problem = frameworks_only.post("/v1/framework-templates/soc2-2017/adopt", json!({})).await.problem(403);
    assert!(problem.to_string().contains("controls:write"), "{problem}");
    let no_policies = key(&["frameworks:write", "controls:write", "tasks:write"]).await;
    let problem = no_policies.post("/v1/framework-templates/soc2-2017/adopt", json!({})).await.problem(403);
    assert!(problem.to_string().contains("policies:write"), "{problem}");
    // Asking only for what it may write is allowed.
    let body = json!({"policies": false});
    let adopted = no_policies.post("/v1/framework-templates/soc2-2017/adopt", body).await.ok(201);
    assert!(!adopted["library"]["created"]["controls"].as_array().unwrap().is_empty());
    assert_eq!(count(&tenant.api, "/v1/policies?limit=500").await, 0);

    // An auditor may not adopt.
    let (auditor, _) = server.member(&tenant, "auditor").await;
    let auditor = server.session(&auditor.id, Some(&tenant.org_id)).await;
    auditor.post("/v1/framework-templates/iso27001-2022/adopt", json!({})).await.problem(403);
}
