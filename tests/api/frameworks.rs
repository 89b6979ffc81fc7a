//! `/v1/frameworks` and `/v1/framework-templates`: OSCAL catalog import (a catalog built by
//! compliance-trestle, NIST-model bindings from PyPI independent of our code, and a hand-written
//! fixture), invalid catalogs named by JSON path, custom frameworks, the shipped templates, the
//! list and its filter, delete, permissions, audit entries and tenant isolation.

use std::process::Command;

use serde_json::{Value, json};

use crate::checks::{assert_id, assert_timestamp, data, ids, missing_id};
use crate::client::{Client, Response};
use crate::harness::TestServer;

api_tests!(
    a_trestle_catalog_imports_with_labels_parents_and_statements,
    the_hand_written_fixture_imports_and_reads_back_in_order,
    invalid_catalogs_are_400_naming_the_json_path,
    custom_frameworks_are_validated_and_created,
    templates_are_listed_and_adopted_once,
    the_list_pages_and_filters_by_source,
    delete_removes_the_framework_and_its_requirements,
    only_owners_and_admins_write_and_every_member_reads,
    every_write_is_audited_with_a_count_not_the_requirements,
    another_organization_gets_404_everywhere_and_sees_nothing,
);

const FIXTURE: &str = include_str!("../oscal/small-catalog.json");

/// The catalog tests/oscal/make_catalog.py builds with trestle's OSCAL models, titled `title`.
fn trestle_catalog(title: &str) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/oscal/make_catalog.py");
    let output = Command::new("python3").arg(script).arg(title).output().expect(
        "python3 runs tests/oscal/make_catalog.py (`cargo xtask tools` installs compliance-trestle 5.2.0 in \
         target/tools/venv; put its bin first on PATH)",
    );
    assert!(output.status.success(), "make_catalog.py failed: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("make_catalog.py prints JSON")
}

/// A framework's read without what it adds to the created framework: the status of each
/// requirement and the roll-up (tests/api/framework_status.rs checks those).
fn without_status(mut read: Value) -> Value {
    let object = read.as_object_mut().expect("a framework");
    for key in ["asOf", "percentPassing", "counts"] {
        assert!(object.remove(key).is_some(), "{key} in a framework's read");
    }
    for requirement in read["requirements"].as_array_mut().into_iter().flatten() {
        let requirement = requirement.as_object_mut().expect("a requirement");
        assert_eq!(requirement.remove("controls"), Some(json!([])), "nothing is mapped here");
        assert_eq!(requirement.remove("status"), Some(json!("unmapped")));
    }
    read
}

fn fixture() -> Value {
    serde_json::from_str(FIXTURE).unwrap()
}

/// `(identifier, title, description, parent identifier)` of each requirement, in order.
fn requirements(framework: &Value) -> Vec<(String, String, Value, Option<String>)> {
    let list = framework["requirements"].as_array().unwrap_or_else(|| panic!("no requirements in {framework}"));
    let identifier_of =
        |id: &Value| list.iter().find(|r| r["id"] == *id).map(|r| r["identifier"].as_str().unwrap().to_owned());
    list.iter()
        .map(|r| {
            let parent = if r["parent"].is_null() {
                None
            } else {
                Some(identifier_of(&r["parent"]).expect("parent is in the list"))
            };
            (
                r["identifier"].as_str().unwrap().to_owned(),
                r["title"].as_str().unwrap().to_owned(),
                r["description"].clone(),
                parent,
            )
        })
        .collect()
}

/// Asserts a 400 whose `errors` name exactly `path`.
#[track_caller]
fn names_path(answer: Response, path: &str) -> Value {
    let body = answer.problem(400);
    let fields: Vec<&str> = body["errors"].as_array().unwrap().iter().filter_map(|e| e["field"].as_str()).collect();
    assert!(fields.contains(&path), "expected an error naming `{path}`, got {body}");
    body
}

async fn a_trestle_catalog_imports_with_labels_parents_and_statements(server: &TestServer) {
    let tenant = server.tenant().await;
    let framework = tenant.api.post("/v1/frameworks/import", trestle_catalog("Trestle catalog")).await.ok(201);
    assert_id(&framework["id"], "fwk_");
    assert_eq!(framework["organizationId"], tenant.org_id.as_str());
    assert_eq!(framework["name"], "Trestle catalog");
    assert_eq!(framework["version"], "2.0");
    assert_eq!(framework["source"], "oscal");
    assert_eq!(framework["requirementCount"], 5);
    assert_timestamp(&framework["createdAt"]);
    let got = requirements(&framework);
    let summary: Vec<(&str, &str, Option<&str>)> =
        got.iter().map(|(i, t, _, p)| (i.as_str(), t.as_str(), p.as_deref())).collect();
    assert_eq!(
        summary,
        [
            ("SC-7", "Boundary protection", None),
            ("SC-7(3)", "Access points", Some("SC-7")),
            ("AC-1", "Access policy", None),
            ("AC-1(1)", "Automated review", Some("AC-1")),
            // no label: the control's id; groups are not requirements
            ("ac-2", "Account management", None),
        ]
    );
    assert_eq!(
        got[2].2,
        "The organization:\n  a. writes an access policy;\n    1. and reviews it.\n  b. names its owner."
    );
    assert_eq!(got[3].2, "Review the policy automatically.");
    assert_eq!(got[1].2, Value::Null, "an enhancement without a statement has no description");
    for requirement in framework["requirements"].as_array().unwrap() {
        assert_id(&requirement["id"], "req_");
    }
    // Each keeps the catalog's id of its control, what other OSCAL documents name it by.
    let catalog_ids: Vec<&str> =
        framework["requirements"].as_array().unwrap().iter().map(|r| r["catalogId"].as_str().unwrap()).collect();
    assert_eq!(catalog_ids, ["sc-7", "sc-7.3", "ac-1", "ac-1.1", "ac-2"]);
    // What the import answered is what reads answer.
    let read = tenant.api.get(&format!("/v1/frameworks/{}", framework["id"].as_str().unwrap())).await.ok(200);
    assert_eq!(without_status(read), framework);
}

async fn the_hand_written_fixture_imports_and_reads_back_in_order(server: &TestServer) {
    let tenant = server.tenant().await;
    let framework = tenant.session.post("/v1/frameworks/import", fixture()).await.ok(201);
    assert_eq!(framework["name"], "Small hand-written catalog");
    assert_eq!(framework["version"], "1.0");
    let got = requirements(&framework);
    assert_eq!(got.len(), 3);
    assert_eq!((got[0].0.as_str(), got[0].1.as_str(), got[0].3.as_deref()), ("OPS-1", "Backups", None));
    assert_eq!(got[0].2, "a. Back up data every {{ insert: param, ops-1_prm_1 }};\nb. test restores.");
    assert_eq!((got[1].0.as_str(), got[1].3.as_deref()), ("OPS-1(1)", Some("OPS-1")));
    assert_eq!((got[2].0.as_str(), &got[2].2), ("OPS-2", &Value::Null));
    let id = framework["id"].as_str().unwrap();
    assert_eq!(without_status(tenant.api.get(&format!("/v1/frameworks/{id}")).await.ok(200)), framework);
    // The same catalog (name and version) again is a conflict, and nothing is added.
    tenant.api.post("/v1/frameworks/import", fixture()).await.problem(409);
    assert_eq!(tenant.api.get("/v1/frameworks").await.ok(200)["count"], 1);
}

async fn invalid_catalogs_are_400_naming_the_json_path(server: &TestServer) {
    let tenant = server.tenant().await;
    let import = |body: Value| tenant.api.post("/v1/frameworks/import", body);
    let broken = |change: &dyn Fn(&mut Value)| {
        let mut catalog = fixture();
        change(&mut catalog);
        catalog
    };
    names_path(import(json!({})).await, "catalog");
    names_path(import(broken(&|c| drop(c["catalog"].as_object_mut().unwrap().remove("uuid")))).await, "catalog.uuid");
    names_path(
        import(broken(&|c| drop(c["catalog"].as_object_mut().unwrap().remove("metadata")))).await,
        "catalog.metadata",
    );
    names_path(import(broken(&|c| c["catalog"]["uuid"] = json!("not-a-uuid"))).await, "catalog.uuid");
    // a wrong type deep inside: the enhancement's id is a number
    names_path(
        import(broken(&|c| c["catalog"]["groups"][0]["controls"][0]["controls"][0]["id"] = json!(7))).await,
        "catalog.groups[0].controls[0].controls[0].id",
    );
    names_path(
        import(broken(&|c| c["catalog"]["groups"][0]["controls"][1]["props"][0]["value"] = json!(["OPS-2"]))).await,
        "catalog.groups[0].controls[1].props[0].value",
    );
    // a duplicate label names the second one, and says where the first is
    let duplicate = names_path(
        import(broken(&|c| c["catalog"]["groups"][0]["controls"][1]["props"][0]["value"] = json!("OPS-1"))).await,
        "catalog.groups[0].controls[1].props[0].value",
    );
    assert!(duplicate.to_string().contains("catalog.groups[0].controls[0].props[1].value"), "{duplicate}");
    names_path(
        import(broken(&|c| c["catalog"]["metadata"]["oscal-version"] = json!("2.0.0"))).await,
        "catalog.metadata.oscal-version",
    );
    names_path(
        import(broken(&|c| c["catalog"]["groups"][0]["controls"][1]["title"] = json!("  "))).await,
        "catalog.groups[0].controls[1].title",
    );
    names_path(import(broken(&|c| c["catalog"]["groups"] = json!([]))).await, "catalog");
    names_path(
        import(broken(&|c| c["catalog"]["groups"][0]["controls"][1]["id"] = json!("2bad"))).await,
        "catalog.groups[0].controls[1].id",
    );
    tenant
        .api
        .raw(reqwest::Method::POST, "/v1/frameworks/import", Some("application/json"), "{\"catalog\":")
        .await
        .problem(400);
    tenant.api.raw(reqwest::Method::POST, "/v1/frameworks/import", Some("text/plain"), FIXTURE).await.problem(415);
    let huge = format!("{{\"catalog\":{{\"pad\":\"{}\"}}}}", "x".repeat(16 * 1024 * 1024));
    tenant.api.raw(reqwest::Method::POST, "/v1/frameworks/import", Some("application/json"), &huge).await.problem(413);
    assert_eq!(tenant.api.get("/v1/frameworks").await.ok(200)["count"], 0, "nothing invalid was kept");
}

async fn custom_frameworks_are_validated_and_created(server: &TestServer) {
    let tenant = server.tenant().await;
    let body = json!({"name": "Our baseline", "version": "2026.1", "requirements": [
        {"identifier": "BL-1", "title": "Laptops encrypted", "description": "Full-disk encryption on."},
        {"identifier": "BL-1.a", "title": "Recovery keys escrowed", "parent": "BL-1"},
        {"identifier": "BL-2", "title": "MFA everywhere"},
    ]});
    let framework = tenant.api.post("/v1/frameworks", body.clone()).await.ok(201);
    assert_eq!(framework["source"], "custom");
    assert_eq!(framework["requirementCount"], 3);
    let got = requirements(&framework);
    assert_eq!(got[0].2, "Full-disk encryption on.");
    assert_eq!(got[1].3.as_deref(), Some("BL-1"));
    assert_eq!(got[2].2, Value::Null);
    tenant.api.post("/v1/frameworks", body).await.problem(409);

    let post = |body: Value| tenant.api.post("/v1/frameworks", body);
    let one = |requirement: Value| json!({"name": "N", "version": "1", "requirements": [requirement]});
    names_path(post(json!({"version": "1", "requirements": [{"identifier": "A", "title": "a"}]})).await, "name");
    names_path(post(json!({"name": "N", "version": "1"})).await, "requirements");
    names_path(post(json!({"name": "N", "version": "1", "requirements": []})).await, "requirements");
    names_path(post(one(json!({"title": "a"}))).await, "requirements[0].identifier");
    names_path(post(one(json!({"identifier": "A", "title": ""}))).await, "requirements[0].title");
    names_path(post(one(json!({"identifier": "A", "title": "a", "parent": "Z"}))).await, "requirements[0].parent");
    names_path(post(one(json!({"identifier": "A", "title": "a", "colour": "red"}))).await, "requirements[0].colour");
    names_path(post(one(json!({"identifier": "A", "title": 5}))).await, "requirements[0].title");
    names_path(
        post(json!({"name": "N", "version": "1", "requirements": [
            {"identifier": "A", "title": "a"}, {"identifier": "A", "title": "b"}]}))
        .await,
        "requirements[1].identifier",
    );
    names_path(post(one(json!({"identifier": "A".repeat(101), "title": "a"}))).await, "requirements[0].identifier");
    names_path(
        post(json!({"name": "N".repeat(256), "version": "1", "requirements": [{"identifier": "A", "title": "a"}]}))
            .await,
        "name",
    );
    assert_eq!(tenant.api.get("/v1/frameworks").await.ok(200)["count"], 1);
}

async fn templates_are_listed_and_adopted_once(server: &TestServer) {
    let tenant = server.tenant().await;
    let templates = tenant.api.get("/v1/framework-templates").await.ok(200);
    let keys: Vec<&str> = data(&templates).iter().map(|t| t["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["soc2-2017", "iso27001-2022"]);
    assert_eq!(data(&templates)[0]["requirementCount"], 61);
    assert_eq!(data(&templates)[1]["requirementCount"], 93);

    let soc2 = tenant.api.post("/v1/framework-templates/soc2-2017/adopt", json!({})).await.ok(201);
    assert_eq!(soc2["source"], "template");
    let identifiers: Vec<String> = requirements(&soc2).into_iter().map(|r| r.0).collect();
    assert_eq!(identifiers.first().map(String::as_str), Some("CC1.1"));
    for expected in ["CC6.1", "CC9.2", "A1.3", "C1.2", "PI1.5", "P8.1"] {
        assert!(identifiers.iter().any(|i| i == expected), "{expected} in {identifiers:?}");
    }
    let iso = tenant.api.post("/v1/framework-templates/iso27001-2022/adopt", json!({})).await.ok(201);
    let identifiers: Vec<String> = requirements(&iso).into_iter().map(|r| r.0).collect();
    assert_eq!((identifiers[0].as_str(), identifiers[92].as_str()), ("A.5.1", "A.8.34"));
    assert!(identifiers.iter().any(|i| i == "A.5.15"));

    tenant.api.post("/v1/framework-templates/soc2-2017/adopt", json!({})).await.problem(409);
    tenant.api.post("/v1/framework-templates/hipaa/adopt", json!({})).await.problem(404);
    assert_eq!(tenant.api.get("/v1/frameworks").await.ok(200)["count"], 2);
}

async fn the_list_pages_and_filters_by_source(server: &TestServer) {
    let tenant = server.tenant().await;
    let custom =
        |name: &str| json!({"name": name, "version": "1", "requirements": [{"identifier": "A", "title": "a"}]});
    let first = tenant.api.post("/v1/frameworks", custom("One")).await.ok(201);
    let second = tenant.api.post("/v1/frameworks", custom("Two")).await.ok(201);
    let imported = tenant.api.post("/v1/frameworks/import", fixture()).await.ok(201);
    let list = tenant.api.get("/v1/frameworks").await.ok(200);
    assert_eq!(list["count"], 3);
    assert_eq!(ids(&list), [&imported["id"], &second["id"], &first["id"]].map(|v| v.as_str().unwrap().to_owned()));
    assert!(data(&list).iter().all(|f| f.get("requirements").is_none()), "a list holds no requirements: {list}");

    let page = tenant.api.get("/v1/frameworks?limit=2").await.ok(200);
    assert_eq!((data(&page).len(), &page["count"]), (2, &json!(3)));
    let cursor = page["nextCursor"].as_str().unwrap();
    let rest = tenant.api.get(&format!("/v1/frameworks?limit=2&cursor={cursor}")).await.ok(200);
    assert_eq!(ids(&rest), [first["id"].as_str().unwrap()]);
    assert!(rest.get("nextCursor").is_none());

    let oscal = tenant.api.get("/v1/frameworks?source=oscal").await.ok(200);
    assert_eq!(ids(&oscal), [imported["id"].as_str().unwrap()]);
    let both = tenant.api.get("/v1/frameworks?source=oscal&source=custom").await.ok(200);
    assert_eq!(both["count"], 3);
    assert_eq!(tenant.api.get("/v1/frameworks?source=template").await.ok(200)["count"], 0);
    tenant.api.get("/v1/frameworks?source=nist").await.invalid("source");
    tenant.api.get("/v1/frameworks?q=one").await.invalid("q");
    tenant.api.get("/v1/frameworks?sort=name").await.invalid("sort");
    tenant.api.get("/v1/frameworks?colour=red").await.invalid("colour");
    tenant.api.get(&format!("/v1/frameworks?source=oscal&cursor={cursor}")).await.invalid("cursor");
}

async fn delete_removes_the_framework_and_its_requirements(server: &TestServer) {
    let tenant = server.tenant().await;
    let framework = tenant.api.post("/v1/frameworks/import", fixture()).await.ok(201);
    let id = framework["id"].as_str().unwrap();
    let deleted = tenant.api.delete(&format!("/v1/frameworks/{id}")).await;
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    tenant.api.get(&format!("/v1/frameworks/{id}")).await.problem(404);
    tenant.api.delete(&format!("/v1/frameworks/{id}")).await.problem(404);
    tenant.api.delete("/v1/frameworks/not-an-id").await.problem(404);
    assert_eq!(tenant.api.get("/v1/frameworks").await.ok(200)["count"], 0);
    // The same catalog (name, version and identifiers) imports again.
    let again = tenant.api.post("/v1/frameworks/import", fixture()).await.ok(201);
    assert_eq!(again["requirementCount"], 3);
}

async fn only_owners_and_admins_write_and_every_member_reads(server: &TestServer) {
    let tenant = server.tenant().await;
    let framework =
        tenant.api.post("/v1/framework-templates/soc2-2017/adopt", json!({"withControls": false})).await.ok(201);
    let path = format!("/v1/frameworks/{}", framework["id"].as_str().unwrap());
    for role in ["admin", "auditor", "employee"] {
        let (user, _) = server.member(&tenant, role).await;
        let client = server.session(&user.id, Some(&tenant.org_id)).await;
        let listed = ids(&client.get("/v1/frameworks").await.ok(200));
        assert!(listed.iter().any(|id| *id == framework["id"]), "{role} lists {listed:?}");
        client.get(&path).await.ok(200);
        client.get("/v1/framework-templates").await.ok(200);
        let custom =
            json!({"name": format!("By {role}"), "version": "1", "requirements": [{"identifier": "A", "title": "a"}]});
        let writes = [
            client.post("/v1/frameworks", custom).await,
            client.post("/v1/frameworks/import", json!({"catalog": {}})).await,
            client.post("/v1/framework-templates/iso27001-2022/adopt", json!({"withControls": false})).await,
        ];
        for answer in writes {
            match role {
                "admin" => assert!(answer.status == 201 || answer.status == 400, "{role}: {}", answer.body),
                _ => {
                    let body = answer.problem(403);
                    assert!(
                        body["detail"].as_str().unwrap().contains(&format!("role {role} may not write frameworks"))
                    );
                }
            }
        }
        if role != "admin" {
            client.delete(&path).await.problem(403);
        }
    }
    let reader =
        tenant.session.post("/v1/api-keys", json!({"name": "read", "scopes": ["frameworks:read"]})).await.ok(201);
    let key = server.client(crate::client::Auth::ApiKey(reader["key"].as_str().unwrap().to_owned()), None);
    key.get(&path).await.ok(200);
    let body = key.delete(&path).await.problem(403);
    assert!(body["detail"].as_str().unwrap().contains("lacks scope frameworks:write"), "{body}");
    let (admin, _) = server.member(&tenant, "admin").await;
    let admin = server.session(&admin.id, Some(&tenant.org_id)).await;
    assert_eq!(admin.delete(&path).await.status, 204);
}

async fn every_write_is_audited_with_a_count_not_the_requirements(server: &TestServer) {
    let tenant = server.tenant().await;
    let framework =
        tenant.api.post("/v1/framework-templates/iso27001-2022/adopt", json!({"withControls": false})).await.ok(201);
    let id = framework["id"].as_str().unwrap();
    assert_eq!(tenant.api.delete(&format!("/v1/frameworks/{id}")).await.status, 204);
    let log = tenant.api.get(&format!("/v1/audit-log?resourceType=framework&resourceId={id}")).await.ok(200);
    let entries = data(&log);
    let actions: Vec<&str> = entries.iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["framework.deleted", "framework.created"], "newest first: {log}");
    let created = &entries[1]["changes"];
    assert_eq!(created["name"]["to"], "ISO/IEC 27001:2022 Annex A");
    assert_eq!(created["requirementCount"], json!({"from": null, "to": 93}));
    assert_eq!(created["source"]["to"], "template");
    assert!(created.get("requirements").is_none(), "the entry holds a count, not the requirements: {created}");
    assert_eq!(entries[0]["changes"]["requirementCount"], json!({"from": 93, "to": null}));
    let verified = tenant.api.get("/v1/audit-log/verify").await.ok(200);
    assert_eq!(verified["valid"], true, "{verified}");
    // A refused import writes nothing.
    tenant.api.post("/v1/frameworks/import", json!({"catalog": {}})).await.problem(400);
    let all = tenant.api.get("/v1/audit-log?action=framework.").await.ok(200);
    assert_eq!(all["count"], 2);
}

async fn another_organization_gets_404_everywhere_and_sees_nothing(server: &TestServer) {
    let mine = server.tenant().await;
    let theirs = server.tenant().await;
    let framework = mine.api.post("/v1/frameworks/import", fixture()).await.ok(201);
    let path = format!("/v1/frameworks/{}", framework["id"].as_str().unwrap());
    let other: &Client = &theirs.api;
    other.get(&path).await.problem(404);
    other.delete(&path).await.problem(404);
    other.get(&format!("/v1/frameworks/{}", missing_id("fwk_"))).await.problem(404);
    let list = other.get("/v1/frameworks").await.ok(200);
    assert_eq!((list["count"].clone(), data(&list).len()), (json!(0), 0), "{list}");
    // The other organization may import the very same catalog: catalogs are per organization.
    let theirs_too = other.post("/v1/frameworks/import", fixture()).await.ok(201);
    assert_ne!(theirs_too["id"], framework["id"]);
    assert_eq!(mine.api.get("/v1/frameworks").await.ok(200)["count"], 1);
    // Mine is untouched by their attempts.
    assert_eq!(without_status(mine.api.get(&path).await.ok(200)), framework);
    // Their session, naming my organization, is refused before anything is read.
    let theirs_in_mine = server.session(&theirs.owner.id, Some(&mine.org_id)).await;
    theirs_in_mine.get(&path).await.problem(403);
}
