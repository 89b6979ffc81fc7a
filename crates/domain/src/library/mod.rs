//! The control library: the control, policy and evidence task templates of the repository's
//! `library/` directory (its README says their format and rules), compiled in. Adopting a
//! framework makes an organization's records from them; each record will keep its template's id
//! and version.
//!
//! - [`library`]: every template, read once; [`Library::control`], [`Library::policy`],
//!   [`Library::task`] find one by id; [`Library::controls_for`] the controls answering one of a
//!   framework template's requirements.
//! - [`PolicyTemplate::rich_text`]: a policy's Markdown as the policies' rich text
//!   ([`markdown`]), with the organization's name filled in.

pub mod adoption;
pub mod markdown;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::Department;
use crate::frequency::Frequency;
use crate::policy::RichText;
use crate::validation::FieldError;

include!(concat!(env!("OUT_DIR"), "/library_files.rs"));

/// Which template of the library a record was made from, and which version of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryOrigin {
    /// The template's id (`LIB-AC-01`).
    pub id: String,
    /// Its version when the record was made (or last updated from it).
    pub version: u32,
}

/// The placeholder a policy's text holds for the organization's name.
pub const ORGANIZATION_NAME: &str = "{{organization.name}}";

crate::string_enum! {
    /// What a control is about.
    ControlCategory {
        Access = "access",
        ChangeManagement = "change-management",
        Operations = "operations",
        Hr = "hr",
        Vendors = "vendors",
        IncidentResponse = "incident-response",
        BusinessContinuity = "business-continuity",
        AssetManagement = "asset-management",
        Cryptography = "cryptography",
        LoggingAndMonitoring = "logging-and-monitoring",
        SecureDevelopment = "secure-development",
        Physical = "physical",
        Privacy = "privacy",
        Governance = "governance",
    }
}

/// A control template: what an organization does, and what it answers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlTemplate {
    /// `LIB-AC-01`.
    pub id: String,
    /// Raised when the template's meaning changes.
    pub version: u32,
    /// What it is called.
    pub name: String,
    /// What is done, by whom, how often.
    pub description: String,
    /// What it achieves.
    pub objective: String,
    /// How often it operates (`continuous`, `per-event`, `daily` … `yearly`): descriptive.
    pub frequency: String,
    /// What it is about.
    #[serde(deserialize_with = "from_text")]
    pub category: ControlCategory,
    /// Requirement identifiers by framework template key (`soc2-2017`, `iso27001-2022`).
    pub requirements: BTreeMap<String, Vec<String>>,
    /// Check ids of the catalog that prove it.
    pub checks: Vec<String>,
    /// Policy template ids it relies on.
    pub policies: Vec<String>,
    /// Evidence task template ids it relies on.
    pub tasks: Vec<String>,
}

/// An evidence task template: a recurring task collecting what an auditor asks for.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskTemplate {
    /// `LIB-TASK-AC-ACCESS-REVIEW`.
    pub id: String,
    /// Raised when the template's meaning changes.
    pub version: u32,
    /// The task's title.
    pub title: String,
    /// What to do and which evidence to attach.
    pub description: String,
    /// How often the task recurs.
    #[serde(deserialize_with = "from_text")]
    pub frequency: Frequency,
    /// Who does it.
    #[serde(deserialize_with = "from_text")]
    pub department: Department,
}

/// A policy template: its metadata (`<slug>.json`) and its Markdown text (`<slug>.md`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyTemplate {
    /// `LIB-POL-ACCESS`.
    pub id: String,
    /// Raised when the template's meaning changes.
    pub version: u32,
    /// The policy's name.
    pub name: String,
    /// What it governs.
    pub description: String,
    /// How often it is reviewed.
    #[serde(deserialize_with = "from_text")]
    pub frequency: Frequency,
    /// Who owns it.
    #[serde(deserialize_with = "from_text")]
    pub department: Department,
    /// The file name without extension (`access-control`).
    #[serde(skip)]
    pub slug: String,
    /// The Markdown text, with [`ORGANIZATION_NAME`] where the name goes.
    #[serde(skip)]
    pub text: String,
}

impl PolicyTemplate {
    /// The text as the policies' rich text, `organization` filling the placeholder.
    pub fn rich_text(&self, organization: &str) -> Result<RichText, FieldError> {
        RichText::parse(markdown::to_nodes(&self.text.replace(ORGANIZATION_NAME, organization)))
    }
}

/// Every template of the library.
#[derive(Debug, Default)]
pub struct Library {
    /// The control templates by id, in id order.
    pub controls: BTreeMap<String, ControlTemplate>,
    /// The policy templates by id.
    pub policies: BTreeMap<String, PolicyTemplate>,
    /// The evidence task templates by id.
    pub tasks: BTreeMap<String, TaskTemplate>,
}

impl Library {
    /// The control template `id`.
    pub fn control(&self, id: &str) -> Option<&ControlTemplate> {
        self.controls.get(id)
    }

    /// The policy template `id`.
    pub fn policy(&self, id: &str) -> Option<&PolicyTemplate> {
        self.policies.get(id)
    }

    /// The evidence task template `id`.
    pub fn task(&self, id: &str) -> Option<&TaskTemplate> {
        self.tasks.get(id)
    }

    /// The controls answering at least one requirement of framework template `key`, in id order.
    pub fn controls_for<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a ControlTemplate> {
        self.controls.values().filter(move |control| control.requirements.get(key).is_some_and(|r| !r.is_empty()))
    }
}

/// The library, read once. A file that does not read is a build defect (tests/library.rs and the
/// unit test below read them all); it is left out rather than failing the service.
pub fn library() -> &'static Library {
    static LIBRARY: OnceLock<Library> = OnceLock::new();
    LIBRARY.get_or_init(|| read(LIBRARY_FILES).unwrap_or_default())
}

/// The library of `files` (`(path under library/, text)`), or the first file that does not read.
fn read(files: &[(&str, &str)]) -> Result<Library, String> {
    let mut library = Library::default();
    let texts: BTreeMap<&str, &str> = files.iter().copied().collect();
    for (path, text) in files {
        let parse_error = |e: serde_json::Error| format!("library/{path}: {e}");
        match path.split_once('/') {
            Some(("controls", _)) => {
                let control: ControlTemplate = serde_json::from_str(text).map_err(parse_error)?;
                library.controls.insert(control.id.clone(), control);
            }
            Some(("tasks", _)) => {
                let task: TaskTemplate = serde_json::from_str(text).map_err(parse_error)?;
                library.tasks.insert(task.id.clone(), task);
            }
            Some(("policies", name)) if name.ends_with(".json") => {
                let mut policy: PolicyTemplate = serde_json::from_str(text).map_err(parse_error)?;
                policy.slug = name.trim_end_matches(".json").to_owned();
                let markdown = format!("policies/{}.md", policy.slug);
                policy.text =
                    (*texts.get(markdown.as_str()).ok_or(format!("library/{markdown} is missing"))?).to_owned();
                library.policies.insert(policy.id.clone(), policy);
            }
            _ => {}
        }
    }
    Ok(library)
}

/// A closed vocabulary's value from its text.
fn from_text<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: std::str::FromStr<Err = crate::UnknownValue>,
{
    let text = String::deserialize(deserializer)?;
    text.parse().map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    #[test]
    fn every_file_of_the_library_reads() {
        let read = read(LIBRARY_FILES).unwrap();
        assert_eq!(read.controls.len(), library().controls.len());
        assert!(read.controls.len() >= 80 && read.policies.len() >= 20 && !read.tasks.is_empty());
        let access = library().policy("LIB-POL-ACCESS").unwrap();
        assert_eq!((access.slug.as_str(), access.frequency), ("access-control", Frequency::Yearly));
        assert!(access.text.starts_with("# Access Control Policy"));
        let mfa = library().control("LIB-AC-01").unwrap();
        assert_eq!(mfa.category, ControlCategory::Access);
        assert!(library().controls_for("soc2-2017").any(|c| c.id == "LIB-AC-01"));
    }

    #[test]
    fn a_policy_becomes_rich_text_with_the_organizations_name() {
        let policy = library().policy("LIB-POL-ACCESS").unwrap();
        let text = policy.rich_text("Acme & Co").unwrap();
        let json = text.json().get();
        assert!(json.contains("Acme & Co") && !json.contains("{{"), "{json:.300}");
        let nodes: Vec<serde_json::Value> = serde_json::from_str(json).unwrap();
        assert_eq!((nodes[0]["type"].as_str(), nodes[0]["attrs"]["level"].as_u64()), (Some("heading"), Some(1)));
        assert!(nodes.iter().any(|node| node["type"] == "bulletList"), "{json:.300}");
    }

    #[test]
    fn every_policy_becomes_valid_rich_text() {
        for policy in library().policies.values() {
            let text = policy.rich_text("Acme").unwrap_or_else(|e| panic!("{}: {e}", policy.id));
            assert!(!text.json().get().contains("{{"), "{}", policy.id);
        }
    }

    #[test]
    fn a_file_that_does_not_read_is_named() {
        let error = read(&[("controls/LIB-AC-01.json", "{}")]).unwrap_err();
        assert!(error.starts_with("library/controls/LIB-AC-01.json: missing field"), "{error}");
        let error = read(&[(
            "policies/x.json",
            r#"{"id":"LIB-POL-X","version":1,"name":"X","description":"d","frequency":"yearly","department":"it"}"#,
        )])
        .unwrap_err();
        assert_eq!(error, "library/policies/x.md is missing");
    }
}
