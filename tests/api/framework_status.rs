//! Controls mapped to framework requirements (`/v1/controls/{id}/requirements`), a framework's
//! status per requirement and rolled up, now and `asOf` a past moment, deleting a framework that
//! is mapped, the OSCAL assessment-results export read back by compliance-trestle (NIST-model
//! bindings from PyPI, independent of our code), permissions and tenant isolation
//! (docs/frameworks.md).

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::checks::{assert_timestamp, data, missing_id, str_of};
use crate::client::Client;
use crate::harness::TestServer;

api_tests!(
    controls_map_to_two_frameworks_and_roll_up,
    as_of_answers_the_past_and_the_export_is_valid_oscal,
    roles_and_other_organizations,
);

/// A custom framework of `requirements` (`[(identifier, parent identifier)]`); the 201 body.
pub(crate) async fn framework(client: &Client, name: &str, requirements: &[(&str, Option<&str>)]) -> Value {
    let requirements: Vec<Value> = requirements
        .iter()
        .map(|(identifier, parent)| json!({"identifier": identifier, "title": format!("{identifier} title"), "parent": parent}))
        .collect();
    client.post("/v1/frameworks", json!({"name": name, "version": "1", "requirements": requirements})).await.ok(201)
}

/// The id of the framework's requirement `identifier`.
pub(crate) fn requirement(framework: &Value, identifier: &str) -> String {
    let list = framework["requirements"].as_array().expect("requirements");
    let found =
        list.iter().find(|r| r["identifier"] == identifier).unwrap_or_else(|| panic!("{identifier} in {framework}"));
    str_of(found, "id").to_owned()
}

pub(crate) fn path_of(record: &Value, collection: &str) -> String {
    format!("{collection}/{}", str_of(record, "id"))
}

pub(crate) async fn map(client: &Client, control: &Value, requirement: &str) -> Value {
    let path = format!("{}/requirements", path_of(control, "/v1/controls"));
    client.post(&path, json!({"requirementId": requirement})).await.ok(201)
}

/// `{identifier: (status, [control ids])}` of a framework's detail or status answer.
fn statuses(answer: &Value) -> Vec<(String, String, Vec<String>)> {
    answer["requirements"]
        .as_array()
        .unwrap_or_else(|| panic!("no requirements in {answer}"))
        .iter()
        .map(|r| {
            let controls = r["controls"].as_array().unwrap().iter().map(|c| str_of(c, "id").to_owned()).collect();
            (str_of(r, "identifier").to_owned(), str_of(r, "status").to_owned(), controls)
        })
        .collect()
}

fn status_of(answer: &Value, identifier: &str) -> (String, Vec<String>) {
    let found = statuses(answer).into_iter().find(|(i, _, _)| i == identifier);
    let (_, status, controls) = found.unwrap_or_else(|| panic!("{identifier} in {answer}"));
    (status, controls)
}

/// Reads the document with compliance-trestle (tests/oscal/check_assessment_results.py), which
/// fails on anything OSCAL's models refuse; what it found.
pub(crate) fn trestle_reads(document: &Value) -> Value {
    trestle("check_assessment_results.py", document)
}

/// Runs `tests/oscal/<script>` (compliance-trestle's models of OSCAL) on `document`; what it
/// printed. Fails the test when trestle refuses the document.
pub(crate) fn trestle(script: &str, document: &Value) -> Value {
    let path = format!("{}/../../tests/oscal/{script}", env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new("python3")
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("python3 runs {path} (`cargo xtask tools` installs compliance-trestle): {e}"));
    child.stdin.take().unwrap().write_all(document.to_string().as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "trestle refused the document: {}\n{document}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{script} prints JSON: {e}"))
}

async fn controls_map_to_two_frameworks_and_roll_up(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    let soc2 = api.post("/v1/framework-templates/soc2-2017/adopt", json!({"withControls": false})).await.ok(201);
    let own = framework(api, "Baseline", &[("BL-1", None), ("BL-1.a", Some("BL-1"))]).await;
    let backups = crate::controls::create(api, json!({"name": "Encrypted backups", "frequency": "yearly"})).await;
    let reviews = crate::controls::create(api, json!({"name": "Access reviews"})).await;
    let task = crate::tasks::create(api, "Restore drill").await;
    let backups_path = path_of(&backups, "/v1/controls");
    api.post(&format!("{backups_path}/evidence-sources"), json!({"sourceId": task["id"]})).await.ok(201);

    // One control serves a requirement of each framework; another shares BL-1.
    let (cc61, bl1, bl1a) = (requirement(&soc2, "CC6.1"), requirement(&own, "BL-1"), requirement(&own, "BL-1.a"));
    let mapped = map(api, &backups, &cc61).await;
    assert_eq!(mapped["controlId"], backups["id"]);
    assert_eq!(mapped["requirementId"], cc61.as_str());
    assert_eq!(mapped["frameworkId"], soc2["id"]);
    assert_timestamp(&mapped["createdAt"]);
    map(api, &backups, &bl1).await;
    map(api, &backups, &bl1a).await;
    map(api, &reviews, &bl1).await;

    let list = api.get(&format!("{backups_path}/requirements")).await.ok(200);
    let identifiers: Vec<&str> = data(&list).iter().map(|m| str_of(m, "identifier")).collect();
    assert_eq!(identifiers, ["CC6.1", "BL-1", "BL-1.a"], "oldest mapping first: {list}");
    assert_eq!(data(&list)[1]["frameworkId"], own["id"]);
    assert_eq!(data(&list)[1]["title"], "BL-1 title");

    // Bad mappings: each named, nothing written.
    let requirements = format!("{backups_path}/requirements");
    let again = api.post(&requirements, json!({"requirementId": cc61})).await.problem(409);
    assert!(str_of(&again, "detail").contains("already mapped"), "{again}");
    api.post(&requirements, json!({"requirementId": missing_id("req_")})).await.problem(404);
    api.post(&requirements, json!({"requirementId": "CC6.1"})).await.invalid("requirementId");
    api.post(&requirements, json!({})).await.invalid("requirementId");
    api.post(&requirements, json!({"requirementId": cc61, "extra": 1})).await.invalid("extra");
    api.post(&format!("/v1/controls/{}/requirements", missing_id("ctl_")), json!({"requirementId": cc61}))
        .await
        .problem(404);
    assert_eq!(data(&api.get(&requirements).await.ok(200)).len(), 3);

    // Nothing proven yet: the mapped requirements are not started, the rest unmapped.
    let detail = api.get(&path_of(&soc2, "/v1/frameworks")).await.ok(200);
    assert_eq!(status_of(&detail, "CC6.1"), ("not_started".into(), vec![str_of(&backups, "id").to_owned()]));
    assert_eq!(status_of(&detail, "CC1.1").0, "unmapped");
    assert_eq!(detail["counts"]["notStarted"], 1, "{}", detail["counts"]);
    assert_eq!(detail["counts"]["unmapped"], 60);
    assert_eq!(detail["percentPassing"], 0.0);
    assert_eq!(detail["requirementCount"], 61);
    assert_eq!(
        detail["requirements"][0]["title"], soc2["requirements"][0]["title"],
        "the detail keeps each requirement"
    );

    // The task done: the control passes, and so does every requirement it alone serves.
    api.patch(&path_of(&task, "/v1/tasks"), json!({"status": "done"})).await.ok(200);
    let detail = api.get(&path_of(&soc2, "/v1/frameworks")).await.ok(200);
    assert_eq!(status_of(&detail, "CC6.1").0, "passing");
    assert_eq!(
        detail["requirements"].as_array().unwrap().iter().find(|r| r["identifier"] == "CC6.1").unwrap()["controls"][0]
            ["status"],
        "passing"
    );
    assert_eq!(detail["percentPassing"], 1.6, "1 of 61, rounded down: {}", detail["percentPassing"]);
    let status = api.get(&format!("{}/status", path_of(&own, "/v1/frameworks"))).await.ok(200);
    assert_eq!(status["frameworkId"], own["id"]);
    assert_timestamp(&status["asOf"]);
    // BL-1 takes its worst control (reviews has no evidence); BL-1.a stands on its own.
    assert_eq!(status_of(&status, "BL-1").0, "not_started");
    assert_eq!(status_of(&status, "BL-1").1.len(), 2);
    assert_eq!(status_of(&status, "BL-1.a").0, "passing");
    assert_eq!(status["percentPassing"], 50.0);
    assert_eq!(
        status["counts"],
        json!({"passing": 1, "failing": 0, "stale": 0, "notStarted": 1, "unmapped": 0, "notApplicable": 0})
    );

    // A failing source fails every requirement its control serves.
    api.patch(&path_of(&task, "/v1/tasks"), json!({"status": "failed"})).await.ok(200);
    let status = api.get(&format!("{}/status", path_of(&own, "/v1/frameworks"))).await.ok(200);
    assert_eq!((status_of(&status, "BL-1").0, status_of(&status, "BL-1.a").0), ("failing".into(), "failing".into()));

    // A mapped framework is not deleted; unmapped, it is.
    let refused = api.delete(&path_of(&own, "/v1/frameworks")).await.problem(409);
    assert!(str_of(&refused, "detail").contains("unmap"), "{refused}");
    api.get(&path_of(&own, "/v1/frameworks")).await.ok(200);
    let removed = api.delete(&format!("{requirements}/{bl1}")).await.ok(200);
    assert_eq!(removed["requirementId"], bl1.as_str());
    api.delete(&format!("{requirements}/{bl1}")).await.problem(404);
    api.delete(&format!("{requirements}/{bl1a}")).await.ok(200);
    api.delete(&path_of(&own, "/v1/frameworks")).await.problem(409);
    api.delete(&format!("{}/requirements/{bl1}", path_of(&reviews, "/v1/controls"))).await.ok(200);
    assert_eq!(api.delete(&path_of(&own, "/v1/frameworks")).await.status, 204);

    // Deleting a control removes its mappings with it.
    api.delete(&backups_path).await.ok(200);
    let detail = api.get(&path_of(&soc2, "/v1/frameworks")).await.ok(200);
    assert_eq!(status_of(&detail, "CC6.1"), ("unmapped".into(), vec![]));
    assert_eq!(api.delete(&path_of(&soc2, "/v1/frameworks")).await.status, 204);

    // Each mapping and unmapping is in the control's history.
    let entries =
        api.get(&format!("/v1/audit-log?resourceType=control&resourceId={}", str_of(&reviews, "id"))).await.ok(200);
    let actions: Vec<&str> = data(&entries).iter().map(|e| str_of(e, "action")).collect();
    assert_eq!(actions[..2], ["control.requirement_unmapped", "control.requirement_mapped"], "{actions:?}");
    assert_eq!(data(&entries)[1]["changes"]["requirementId"]["to"], bl1.as_str(), "{entries}");
}

async fn as_of_answers_the_past_and_the_export_is_valid_oscal(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    // `AC-2(1)` is not an OSCAL token: its finding targets the requirement's id instead.
    let own = framework(api, "Own", &[("BL-1", None), ("AC-2(1)", None), ("BL-3", None)]).await;
    let framework_path = path_of(&own, "/v1/frameworks");
    let control = crate::controls::create(api, json!({"name": "Backups", "frequency": "monthly"})).await;
    let task = crate::tasks::create(api, "Restore drill").await;
    api.post(&format!("{}/evidence-sources", path_of(&control, "/v1/controls")), json!({"sourceId": task["id"]}))
        .await
        .ok(201);

    let before_mapping = str_of(&api.get(&format!("{framework_path}/status")).await.ok(200), "asOf").to_owned();
    map(api, &control, &requirement(&own, "BL-1")).await;
    map(api, &control, &requirement(&own, "AC-2(1)")).await;
    let before_done = str_of(&api.get(&format!("{framework_path}/status")).await.ok(200), "asOf").to_owned();
    api.patch(&path_of(&task, "/v1/tasks"), json!({"status": "done"})).await.ok(200);

    let now = api.get(&format!("{framework_path}/status")).await.ok(200);
    assert_eq!(status_of(&now, "BL-1").0, "passing");
    let status_path = format!("{framework_path}/status");
    let at = async |moment: &str| api.get(&format!("{status_path}?asOf={moment}")).await;
    let past = at(&before_done).await.ok(200);
    assert_eq!(past["asOf"], before_done.as_str());
    assert_eq!(status_of(&past, "BL-1").0, "not_started", "before the task was done: {past}");
    let earlier = at(&before_mapping).await.ok(200);
    assert_eq!(status_of(&earlier, "BL-1"), ("unmapped".into(), vec![]), "before the mapping: {earlier}");
    at("2999-01-01T00:00:00Z").await.invalid("asOf");
    at("yesterday").await.invalid("asOf");
    api.get(&format!("{framework_path}/status?asof={before_done}")).await.problem(400);

    // The export now, read back by trestle.
    let document = api.get(&format!("{framework_path}/assessment-results")).await.ok(200);
    let read = trestle_reads(&document);
    assert_eq!(read["observations"], 1, "{read}");
    let findings = read["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 3);
    assert_eq!((findings[0]["targetId"].as_str(), findings[0]["state"].as_str()), (Some("BL-1"), Some("satisfied")));
    let observation = &findings[0]["observations"][0];
    assert_eq!(observation["methods"], json!(["EXAMINE"]));
    let href = observation["hrefs"][0].as_str().unwrap();
    assert!(href.ends_with(&path_of(&task, "/v1/tasks")), "{href}");
    assert_eq!(findings[1]["targetId"], requirement(&own, "AC-2(1)").as_str());
    assert_eq!(findings[1]["title"], "AC-2(1)");
    assert_eq!(findings[1]["state"], "satisfied");
    assert_eq!(findings[1]["observations"], findings[0]["observations"], "one observation, related from both");
    assert_eq!((findings[2]["state"].as_str(), findings[2]["reason"].as_str()), (Some("not-satisfied"), Some("other")));
    assert!(!document.to_string().contains("signature="), "no signed link in an export");

    // An imported catalog's requirement is targeted by the catalog's own control id.
    let catalog: Value = serde_json::from_str(include_str!("../oscal/small-catalog.json")).unwrap();
    let imported = api.post("/v1/frameworks/import", catalog).await.ok(201);
    let offsite = requirement(&imported, "OPS-1(1)");
    assert_eq!(imported["requirements"][1]["catalogId"], "ops-1.1", "{imported}");
    map(api, &control, &offsite).await;
    let document = api.get(&format!("{}/assessment-results", path_of(&imported, "/v1/frameworks"))).await.ok(200);
    let read = trestle_reads(&document);
    let targets: Vec<(&str, &str)> = read["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["targetId"].as_str().unwrap(), f["state"].as_str().unwrap()))
        .collect();
    assert_eq!(targets, [("ops-1", "not-satisfied"), ("ops-1.1", "satisfied"), ("ops-2", "not-satisfied")]);

    // The export of the past: nothing was proven then.
    let past = api.get(&format!("{framework_path}/assessment-results?asOf={before_done}")).await.ok(200);
    let read = trestle_reads(&past);
    assert_eq!(read["observations"], 0, "{read}");
    assert_eq!(read["findings"][0]["state"], "not-satisfied");
    assert_eq!(read["start"].as_str().map(|s| s.starts_with(&before_done[..19])), Some(true), "{read}");
    api.get(&format!("{framework_path}/assessment-results?asOf=soon")).await.invalid("asOf");

    // Unlinked and unmapped since, the task and BL-1 still count for the moments before
    // (docs/decisions/2026-12-06-links-and-mappings-keep-their-history.md); made again, each
    // starts over.
    let control_path = path_of(&control, "/v1/controls");
    let before_removal = str_of(&api.get(&status_path).await.ok(200), "asOf").to_owned();
    api.delete(&format!("{control_path}/evidence-sources/{}", str_of(&task, "id"))).await.ok(200);
    api.delete(&format!("{control_path}/requirements/{}", requirement(&own, "BL-1"))).await.ok(200);
    let now = api.get(&status_path).await.ok(200);
    assert_eq!(status_of(&now, "BL-1"), ("unmapped".into(), vec![]));
    assert_eq!(status_of(&now, "AC-2(1)").0, "not_started", "no source linked now: {now}");
    let then = at(&before_removal).await.ok(200);
    assert_eq!(status_of(&then, "BL-1"), ("passing".into(), vec![str_of(&control, "id").to_owned()]), "{then}");
    let control_then = api.get(&format!("{control_path}/status?asOf={before_removal}")).await.ok(200);
    assert_eq!(
        (control_then["status"].as_str(), control_then["sources"].as_array().map(Vec::len)),
        (Some("passing"), Some(1))
    );
    let document = api.get(&format!("{framework_path}/assessment-results?asOf={before_removal}")).await.ok(200);
    assert_eq!(trestle_reads(&document)["observations"], 1, "the removed link's evidence decided it then");
    api.post(&format!("{control_path}/evidence-sources"), json!({"sourceId": task["id"]})).await.ok(201);
    map(api, &control, &requirement(&own, "BL-1")).await;
    let again = api.get(&status_path).await.ok(200);
    assert_eq!(
        status_of(&again, "BL-1").0,
        "not_started",
        "the task's evidence of its first link does not count: {again}"
    );
}

async fn roles_and_other_organizations(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let own = framework(&tenant.api, "Own", &[("BL-1", None)]).await;
    let bl1 = requirement(&own, "BL-1");
    let control = crate::controls::create(&tenant.api, json!({"name": "Backups"})).await;
    map(&tenant.api, &control, &bl1).await;
    let (framework_path, control_path) = (path_of(&own, "/v1/frameworks"), path_of(&control, "/v1/controls"));

    // An auditor reads the status and the export, and maps nothing; an employee reads frameworks
    // but not controls.
    let (auditor, _) = server.member(&tenant, "auditor").await;
    let auditor = server.api_key(&tenant, &auditor.id).await;
    auditor.get(&format!("{framework_path}/status")).await.ok(200);
    auditor.get(&format!("{framework_path}/assessment-results")).await.ok(200);
    auditor.get(&format!("{control_path}/requirements")).await.ok(200);
    let denied =
        auditor.post(&format!("{control_path}/requirements"), json!({"requirementId": bl1})).await.problem(403);
    assert!(str_of(&denied, "detail").contains("may not write controls"), "{denied}");
    auditor.delete(&format!("{control_path}/requirements/{bl1}")).await.problem(403);
    assert_eq!(status_of(&auditor.get(&framework_path).await.ok(200), "BL-1").1, [str_of(&control, "id")]);
    let (employee, _) = server.member(&tenant, "employee").await;
    let employee = server.api_key(&tenant, &employee.id).await;
    // The requirement's status, but not the mapped controls' names and statuses (no controls read).
    for path in [framework_path.clone(), format!("{framework_path}/status")] {
        let seen = employee.get(&path).await.ok(200);
        assert_eq!(status_of(&seen, "BL-1"), ("not_started".into(), vec![]), "{path}: {seen}");
        assert!(!seen.to_string().contains("Backups"), "{path}: {seen}");
    }
    let narrow =
        tenant.session.post("/v1/api-keys", json!({"name": "fw", "scopes": ["frameworks:read"]})).await.ok(201);
    let narrow = server.client(crate::client::Auth::ApiKey(str_of(&narrow, "key").to_owned()), None);
    assert_eq!(status_of(&narrow.get(&framework_path).await.ok(200), "BL-1").1, Vec::<String>::new());
    let denied = employee.get(&format!("{framework_path}/assessment-results")).await.problem(403);
    assert!(str_of(&denied, "detail").contains("may not read controls"), "{denied}");
    employee.get(&format!("{control_path}/requirements")).await.problem(403);

    // Another organization: every route is a 404, and it cannot map our requirement to its control.
    other.api.get(&framework_path).await.problem(404);
    other.api.get(&format!("{framework_path}/status")).await.problem(404);
    other.api.get(&format!("{framework_path}/assessment-results")).await.problem(404);
    other.api.get(&format!("{control_path}/requirements")).await.problem(404);
    other.api.post(&format!("{control_path}/requirements"), json!({"requirementId": bl1})).await.problem(404);
    other.api.delete(&format!("{control_path}/requirements/{bl1}")).await.problem(404);
    other.api.delete(&framework_path).await.problem(404);
    let theirs = crate::controls::create(&other.api, json!({"name": "Theirs"})).await;
    let theirs_path = format!("{}/requirements", path_of(&theirs, "/v1/controls"));
    let refused = other.api.post(&theirs_path, json!({"requirementId": bl1})).await.problem(404);
    assert!(str_of(&refused, "detail").contains("requirement"), "{refused}");
    // Nothing changed for the owner.
    let status = tenant.api.get(&format!("{framework_path}/status")).await.ok(200);
    assert_eq!(status_of(&status, "BL-1"), ("not_started".into(), vec![str_of(&control, "id").to_owned()]));
    assert_eq!(data(&tenant.api.get(&format!("{control_path}/requirements")).await.ok(200)).len(), 1);
}
