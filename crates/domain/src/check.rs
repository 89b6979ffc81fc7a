//! Checks: the named tests a provider ships, each reading a connected system (an AWS account, a
//! GitHub organization, a Google Workspace domain, the devices in FleetDM) and judging every
//! resource it sees. The catalog is the repository's `checks/` directory, one file per provider,
//! compiled in; see docs/checks.md for its table and how to add a check.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

crate::string_enum! {
    /// How much a failure of the check matters.
    CheckSeverity { Low = "low", Medium = "medium", High = "high", Critical = "critical" }
}

crate::string_enum! {
    /// What a check found of one resource. `error` is a resource (or the whole account) the check
    /// could not read: never a failure, never a pass.
    CheckOutcome { Pass = "pass", Fail = "fail", Error = "error", NotApplicable = "not_applicable" }
}

/// One check of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Check {
    /// `<provider>.<service>.<what>`, stable: results, findings and controls' links name it.
    pub id: String,
    /// The provider's slug (`aws`, `github`, `google-workspace`, `fleetdm`), from its file.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub provider: String,
    /// What holds when the check passes, in a few words.
    pub title: String,
    /// What the check reads and judges, and its population (one result per what).
    pub description: String,
    /// How much a failure of the check matters.
    pub severity: CheckSeverity,
    /// The kind of resource each result names (`aws.iam.user`, `github.repository`).
    pub resource_type: String,
    /// The API actions the check calls, so that a customer can grant exactly these.
    pub reads: Vec<String>,
    /// How to fix a failure, Markdown.
    pub remediation: String,
    /// The requirements the check suggests it proves, by framework template key (`soc2-2017`,
    /// `iso27001-2022`) and the framework's own identifiers.
    pub requirements: BTreeMap<String, Vec<String>>,
    /// Where the same test is described elsewhere.
    pub references: CheckReferences,
}

/// A check's counterparts: the CIS benchmark recommendation and the Prowler checks of the same
/// test (a Prowler finding of one of them is imported as a result of this check).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckReferences {
    /// The CIS benchmark and its recommendation numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cis: Option<String>,
    /// Prowler's check names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prowler: Vec<String>,
}

/// One provider's file of `checks/`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    provider: String,
    checks: Vec<Check>,
}

/// `(source name, JSON text)` of every file in the repository's `checks/` directory.
const CATALOG_FILES: &[(&str, &str)] = &[
    ("checks/aws.json", include_str!("../../../checks/aws.json")),
    ("checks/fleetdm.json", include_str!("../../../checks/fleetdm.json")),
    ("checks/github.json", include_str!("../../../checks/github.json")),
    ("checks/google-workspace.json", include_str!("../../../checks/google-workspace.json")),
];

/// Every shipped check, sorted by id, read once. A file that does not read is a build defect (a
/// unit test reads them all); it is left out rather than failing the service.
pub fn catalog() -> &'static [Check] {
    static CATALOG: OnceLock<Vec<Check>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let mut checks: Vec<Check> =
            CATALOG_FILES.iter().filter_map(|(_, json)| read_file(json).ok()).flatten().collect();
        checks.sort_by(|a, b| a.id.cmp(&b.id));
        checks
    })
}

/// The shipped check `id`, if there is one.
pub fn check(id: &str) -> Option<&'static Check> {
    let catalog = catalog();
    catalog.binary_search_by(|check| check.id.as_str().cmp(id)).ok().map(|at| &catalog[at])
}

/// The catalog check whose results carry one check id per FleetDM policy: Fleet's policies are
/// the organization's own, so each becomes a check of its own, `fleetdm.policy.<the policy's id>`.
pub const FLEET_POLICIES: &str = "fleetdm.policies";
const FLEET_POLICY_PREFIX: &str = "fleetdm.policy.";

/// The check id of FleetDM's policy `policy_id`, reported by a run of [`FLEET_POLICIES`].
pub fn fleet_policy_check_id(policy_id: u64) -> String {
    format!("{FLEET_POLICY_PREFIX}{policy_id}")
}

/// The shipped check a run reads to report `id`: the check itself, or for a FleetDM policy's
/// check (`fleetdm.policy.7`) the catalog's [`FLEET_POLICIES`]. Its severity, title and provider
/// stand for the reported check's; whether it was read decides whether the reported check's
/// findings may resolve.
pub fn reading(id: &str) -> Option<&'static Check> {
    match id.strip_prefix(FLEET_POLICY_PREFIX) {
        // The canonical decimal only: `fleetdm.policy.007` would be a second name for policy 7.
        Some(policy) if policy.parse::<u64>().is_ok_and(|n| n.to_string() == policy) => check(FLEET_POLICIES),
        _ => check(id),
    }
}

/// A file's checks, each given the file's provider: a check of the file names none of its own
/// (`provider` is in [`Check`] for the API's answers).
fn read_file(json: &str) -> Result<Vec<Check>, String> {
    let file: CatalogFile = serde_json::from_str(json).map_err(|e| e.to_string())?;
    if let Some(check) = file.checks.iter().find(|check| !check.provider.is_empty()) {
        return Err(format!("{}: the file names the provider, not its checks", check.id));
    }
    Ok(file.checks.into_iter().map(|check| Check { provider: file.provider.clone(), ..check }).collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use std::collections::BTreeSet;
    use std::path::Path;

    use super::*;
    use crate::framework::template;

    #[test]
    fn every_file_in_the_checks_directory_is_compiled_in_and_reads() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checks");
        let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".json"))
            .map(|name| format!("checks/{name}"))
            .collect();
        let compiled: BTreeSet<String> = CATALOG_FILES.iter().map(|(source, _)| (*source).to_owned()).collect();
        assert_eq!(on_disk, compiled, "checks/ and CATALOG_FILES differ");
        for (source, json) in CATALOG_FILES {
            let on_disk = std::fs::read_to_string(dir.join(source.trim_start_matches("checks/"))).unwrap();
            assert_eq!(&on_disk, json, "{source} is compiled from another file");
            let checks = read_file(json).unwrap_or_else(|e| panic!("{source}: {e}"));
            let provider = source.trim_start_matches("checks/").trim_end_matches(".json");
            for check in &checks {
                assert_eq!(check.provider, provider, "{source}: the file names another provider");
            }
        }
        let read: usize = CATALOG_FILES.iter().map(|(_, json)| read_file(json).unwrap().len()).sum();
        assert_eq!(catalog().len(), read, "a file was left out");
    }

    #[test]
    fn ids_are_unique_and_named_for_their_provider() {
        let mut seen = BTreeSet::new();
        for check in catalog() {
            assert!(seen.insert(&check.id), "{} twice", check.id);
            assert!(check.id.starts_with(&format!("{}.", check.provider)), "{} is not {}'s", check.id, check.provider);
            assert!(
                check.id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-'),
                "{}: lowercase letters, digits, dots and hyphens only",
                check.id
            );
        }
        assert_eq!(check("aws.iam.root-mfa").map(|c| c.severity), Some(CheckSeverity::Critical));
        assert!(check("aws.iam.nothing").is_none());
    }

    #[test]
    fn a_fleet_policy_check_is_read_by_the_fleet_policies_check() {
        assert_eq!(reading("fleetdm.policy.7").map(|c| c.id.as_str()), Some(FLEET_POLICIES));
        assert_eq!(reading(&fleet_policy_check_id(u64::MAX)).map(|c| c.id.as_str()), Some(FLEET_POLICIES));
        assert_eq!(reading("aws.iam.root-mfa").map(|c| c.id.as_str()), Some("aws.iam.root-mfa"));
        for not_one in [
            "fleetdm.policy.",
            "fleetdm.policy.7a",
            "fleetdm.policy.-1",
            "fleetdm.policy.99999999999999999999",
            "fleetdm.policy.+7",
            "fleetdm.policy.007",
        ] {
            assert!(reading(not_one).is_none(), "{not_one}");
        }
    }

    #[test]
    fn a_check_naming_its_own_provider_is_refused() {
        let json = r#"{"provider": "aws", "checks": [{"id": "aws.x", "provider": "github", "title": "t",
            "description": "d", "severity": "low", "resourceType": "aws.account", "reads": ["iam:GetUser"],
            "remediation": "r", "requirements": {}, "references": {}}]}"#;
        assert_eq!(read_file(json), Err("aws.x: the file names the provider, not its checks".to_owned()));
        assert_eq!(
            read_file(&json.replace(r#""provider": "github", "#, "")).map(|c| c[0].provider.clone()),
            Ok("aws".into())
        );
    }

    #[test]
    fn every_check_says_what_it_reads_how_to_fix_it_and_what_it_proves() {
        for check in catalog() {
            assert!(!check.title.is_empty() && !check.description.is_empty(), "{}", check.id);
            assert!(!check.reads.is_empty(), "{}: a customer must know what to grant", check.id);
            for read in &check.reads {
                // AWS: an IAM action (`service:Action`), as a policy names it; the others: a
                // method and an absolute path of the provider's API.
                let well_formed = match check.provider.as_str() {
                    "aws" => read.split_once(':').is_some_and(|(service, action)| {
                        !service.is_empty()
                            && service.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                            && action.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                            && action.chars().all(|c| c.is_ascii_alphanumeric())
                    }),
                    _ => read.starts_with("GET /"),
                };
                assert!(well_formed, "{}: `{read}` is not what a customer can grant", check.id);
            }
            assert!(!check.remediation.is_empty(), "{}", check.id);
            assert!(!check.requirements.is_empty(), "{}: suggests no requirement", check.id);
        }
    }

    /// The catalog's table in docs/checks.md.
    fn catalog_markdown() -> String {
        let mut text =
            String::from("| check | severity | passes when | reads | also known as |\n|---|---|---|---|---|\n");
        for check in catalog() {
            let reads: Vec<String> = check.reads.iter().map(|read| format!("`{read}`")).collect();
            let mut references: Vec<String> = check.references.cis.iter().cloned().collect();
            references.extend(check.references.prowler.iter().map(|name| format!("Prowler `{name}`")));
            let references = if references.is_empty() { "—".to_owned() } else { references.join("; ") };
            text += &format!(
                "| `{}` | {} | {} | {} | {references} |\n",
                check.id,
                check.severity,
                check.title,
                reads.join(", ")
            );
        }
        text
    }

    /// The read-only IAM policy of docs/checks.md: every action the AWS checks read.
    fn aws_policy() -> String {
        let actions: BTreeSet<&str> =
            catalog().iter().filter(|c| c.provider == "aws").flat_map(|c| c.reads.iter().map(String::as_str)).collect();
        #[derive(Serialize)]
        #[serde(rename_all = "PascalCase")]
        struct Policy<'a> {
            version: &'a str,
            statement: [Statement<'a>; 1],
        }
        #[derive(Serialize)]
        #[serde(rename_all = "PascalCase")]
        struct Statement<'a> {
            sid: &'a str,
            effect: &'a str,
            action: BTreeSet<&'a str>,
            resource: &'a str,
        }
        let statement = Statement { sid: "ComplianceChecksReadOnly", effect: "Allow", action: actions, resource: "*" };
        serde_json::to_string_pretty(&Policy { version: "2012-10-17", statement: [statement] }).unwrap()
    }

    #[test]
    fn docs_checks_md_shows_this_catalog_and_the_aws_policy_it_needs() {
        let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/checks.md")).unwrap();
        let table = catalog_markdown();
        assert!(
            doc.contains(&format!("<!-- check-catalog -->\n{table}<!-- /check-catalog -->")),
            "docs/checks.md's catalog differs from checks/; paste between its markers:\n{table}"
        );
        let policy = aws_policy();
        assert!(
            doc.contains(&format!("<!-- aws-policy -->\n```json\n{policy}\n```\n<!-- /aws-policy -->")),
            "docs/checks.md's AWS policy differs from the checks' reads; paste between its markers:\n{policy}"
        );
    }

    #[test]
    fn suggested_requirements_exist_in_the_shipped_frameworks() {
        for check in catalog() {
            for (framework, identifiers) in &check.requirements {
                let template = template(framework).unwrap_or_else(|| panic!("{}: no framework {framework}", check.id));
                for identifier in identifiers {
                    assert!(
                        template.draft.requirements.iter().any(|r| &r.identifier == identifier),
                        "{}: {framework} has no {identifier}",
                        check.id
                    );
                }
            }
        }
    }
}
