//! The control library (`library/` in the repository) is well formed: every file matches its
//! JSON Schema (`library/schema/`) and is named after its id; every requirement, check, policy and
//! task a control names exists; every task and policy serves some control; every requirement of
//! the shipped SOC 2 and ISO 27001 templates is answered by a control; and every policy's text
//! keeps to the Markdown the adoption converts, with `{{organization.name}}` its only placeholder.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use compliance_domain::check::reading;
use compliance_domain::framework::template;
use compliance_domain::library::{self, ORGANIZATION_NAME};
use serde_json::Value;

const FRAMEWORKS: [&str; 2] = ["soc2-2017", "iso27001-2022"];

fn library_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../library")
}

/// Every `*.json` of `library/<kind>/`, checked against `library/schema/<schema>.schema.json`,
/// by id.
fn read(kind: &str, schema: &str) -> BTreeMap<String, Value> {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(library_dir().join(format!("schema/{schema}.schema.json"))).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut read = BTreeMap::new();
    for entry in std::fs::read_dir(library_dir().join(kind)).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|ext| ext != "json") {
            continue;
        }
        let value: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let errors: Vec<String> =
            validator.iter_errors(&value).map(|e| format!("{} at {}", e, e.instance_path())).collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
        let id = value["id"].as_str().unwrap().to_owned();
        let stem = path.file_stem().unwrap().to_str().unwrap();
        if kind != "policies" {
            assert_eq!(stem, id, "{} is not named after its id", path.display());
        }
        assert!(read.insert(id.clone(), value).is_none(), "{id} twice");
    }
    assert!(!read.is_empty(), "no {kind}");
    read
}

fn strings(value: &Value) -> impl Iterator<Item = &str> {
    value.as_array().unwrap().iter().map(|v| v.as_str().unwrap())
}

#[test]
fn every_control_names_what_exists_and_every_requirement_is_answered() {
    let controls = read("controls", "control");
    let tasks = read("tasks", "task");
    let policies = read("policies", "policy");
    assert!(controls.len() >= 80 && policies.len() >= 20, "{} controls, {} policies", controls.len(), policies.len());
    let mut answered: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let (mut used_tasks, mut used_policies) = (BTreeSet::new(), BTreeSet::new());
    for (id, control) in &controls {
        for key in FRAMEWORKS {
            let known: BTreeSet<&str> =
                template(key).unwrap().draft.requirements.iter().map(|r| r.identifier.as_str()).collect();
            for requirement in strings(&control["requirements"][key]) {
                assert!(known.contains(requirement), "{id}: {key} has no requirement {requirement}");
                answered.entry(key).or_default().insert(requirement);
            }
        }
        for check in strings(&control["checks"]) {
            assert!(reading(check).is_some(), "{id}: no check {check} in checks/");
        }
        for policy in strings(&control["policies"]) {
            assert!(policies.contains_key(policy), "{id}: no policy {policy}");
            used_policies.insert(policy);
        }
        for task in strings(&control["tasks"]) {
            assert!(tasks.contains_key(task), "{id}: no task {task}");
            used_tasks.insert(task);
        }
    }
    for task in tasks.keys() {
        assert!(used_tasks.contains(task.as_str()), "task {task} serves no control");
    }
    for policy in policies.keys() {
        assert!(used_policies.contains(policy.as_str()), "policy {policy} serves no control");
    }
    for key in FRAMEWORKS {
        let missing: Vec<&str> = template(key)
            .unwrap()
            .draft
            .requirements
            .iter()
            .map(|r| r.identifier.as_str())
            .filter(|r| !answered.get(key).is_some_and(|a| a.contains(r)))
            .collect();
        assert!(missing.is_empty(), "{key}: no control answers {missing:?}");
    }
}

#[test]
fn every_policy_text_keeps_to_the_markdown_adoption_converts() {
    // Every policy file was checked against its schema above; its text is read as compiled in.
    read("policies", "policy");
    for (id, policy) in &library::library().policies {
        let (name, text) = (&policy.name, &policy.text);
        assert!(text.starts_with(&format!("# {name}\n")), "{id}: the text does not start with `# {name}`");
        for (n, line) in text.lines().enumerate() {
            let at = format!("{id}, line {}", n + 1);
            for banned in ["|", ">", "```", "<", "---", " ", "\t", "* ", "####"] {
                assert!(!line.starts_with(banned), "{at}: starts with {banned:?}: {line}");
            }
            assert!(!line.contains("]("), "{at}: a link: {line}");
            let mut rest = line;
            while let Some(start) = rest.find("{{") {
                assert!(rest[start..].starts_with(ORGANIZATION_NAME), "{at}: another placeholder: {line}");
                rest = &rest[start + 2..];
            }
        }
        assert!(text.contains(ORGANIZATION_NAME), "{id}: the organization is never named");
    }
}
