//! An OSCAL 1.1 **assessment-results** document of a framework's status at a moment: one
//! `result` whose `findings` are the framework's requirements (satisfied when passing) and whose
//! `observations` are the evidence items that decide the mapped controls' statuses.
//!
//! What it writes, and why:
//! - `import-ap` is required by OSCAL and names the assessment plan the results answer; there is
//!   none (the results are computed from recorded evidence), so it is `#`, and its `remarks` say so.
//! - A finding's `target` is an `objective-id`: the catalog's id of the control for an imported
//!   catalog (`ac-2.1`, what other OSCAL documents name it by), else the requirement's
//!   `identifier` when it is an OSCAL token (`CC6.1`, `A.5.15`), else the requirement's own id
//!   (`AC-2(1)` is not a token), with the identifier as the target's `title` always.
//! - `satisfied` only when the requirement passes; failing, stale, not started and unmapped are
//!   `not-satisfied`, with `reason` `fail` for failing and `other` for the rest (the finding's
//!   `description` says which).
//! - Every UUID is derived from what it names (the framework, the moment, the requirement or
//!   evidence id) by SHA-256, shaped as OSCAL's version-4 UUID: the same state exported twice
//!   gives the same document but for `last-modified`, so two exports diff cleanly.
//! - An observation's `relevant-evidence` is the API address of its source (or of the control's
//!   evidence list, for a file), never a signed download link: a document that is passed around
//!   must not carry credentials, and a signed link expires.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::catalog::is_token;
use crate::Timestamp;
use crate::control::{Evidence, EvidenceKind, EvidenceOutcome};
use crate::framework::Framework;
use crate::framework_status::{FrameworkStatus, RequirementState, RequirementStatus};

/// The OSCAL version the document is written against.
pub const OSCAL_VERSION: &str = "1.1.2";

/// What an assessment-results document is made from.
#[derive(Debug, Clone, Copy)]
pub struct Assessment<'a> {
    /// The framework assessed.
    pub framework: &'a Framework,
    /// Its requirements' statuses at the moment assessed.
    pub status: &'a FrameworkStatus,
    /// The evidence items that decide the mapped controls' statuses at that moment (each
    /// control's latest per source, and its latest file).
    pub evidence: &'a [Evidence],
    /// When the document is made (`metadata.last-modified`).
    pub generated_at: Timestamp,
    /// The service's public address, for the observations' links (`https://compliance.example`).
    pub base_url: &'a str,
}

/// The document, as OSCAL's JSON format writes it: `{"assessment-results": {…}}`.
pub fn document(assessment: &Assessment<'_>) -> Value {
    let framework = assessment.framework;
    let as_of = assessment.status.as_of;
    let key = format!("{}@{}", framework.id, as_of.as_unix_micros());
    let observations: Vec<Observation> =
        assessment.evidence.iter().map(|e| observation(e, assessment.base_url)).collect();
    let findings: Vec<Finding> =
        // A requirement stated not to apply is not assessed: it has no finding.
        assessment
            .status
            .requirements
            .iter()
            .filter(|r| r.status != RequirementStatus::NotApplicable)
            .map(|r| finding(&key, r, assessment.evidence))
            .collect();
    let title = format!("{} {}", framework.name, framework.version);
    let document = Document {
        assessment_results: AssessmentResults {
            uuid: uuid(&["assessment-results", &key]),
            metadata: Metadata {
                title: one_line(&format!("Assessment results: {title}")),
                last_modified: assessment.generated_at,
                version: as_of.to_string(),
                oscal_version: OSCAL_VERSION,
            },
            import_ap: ImportAp {
                href: "#",
                remarks: "No OSCAL assessment plan: these results are computed from the evidence the compliance \
                          service recorded for the controls mapped to the framework's requirements.",
            },
            results: vec![AssessmentResult {
                uuid: uuid(&["result", &key]),
                title: one_line(&format!("Status of {title} at {as_of}")),
                description: format!(
                    "{} of {} requirements passing ({}%) at {as_of}, from {} framework {}.",
                    assessment.status.counts.passing,
                    assessment.status.counts.total(),
                    assessment.status.percent_passing(),
                    framework.source,
                    framework.id,
                ),
                start: as_of,
                reviewed_controls: ReviewedControls {
                    control_selections: vec![ControlSelection { include_all: Empty {} }],
                },
                observations: non_empty(observations),
                findings: non_empty(findings),
            }],
        },
    };
    serde_json::to_value(document).unwrap_or(Value::Null)
}

fn observation(evidence: &Evidence, base_url: &str) -> Observation {
    let base = base_url.trim_end_matches('/');
    let source = evidence.source_id.as_deref().unwrap_or_default();
    let (what, href) = match evidence.kind {
        EvidenceKind::Policy => (format!("policy {source}"), format!("{base}/v1/policies/{source}")),
        EvidenceKind::Task => (format!("task {source}"), format!("{base}/v1/tasks/{source}")),
        EvidenceKind::Connection => {
            (format!("integration check of {source}"), format!("{base}/v1/integrations/connections/{source}"))
        }
        EvidenceKind::Automation => {
            (format!("browser automation {source}"), format!("{base}/v1/browser/automations/{source}"))
        }
        EvidenceKind::Check => {
            let run = evidence.detail.get("checkRunId").and_then(Value::as_str).unwrap_or_default();
            (format!("check {source}"), format!("{base}/v1/check-runs/{run}/results"))
        }
        EvidenceKind::File => {
            ("uploaded file".to_owned(), format!("{base}/v1/controls/{}/evidence", evidence.control_id))
        }
    };
    let outcome = match evidence.outcome {
        EvidenceOutcome::Pass => "passed",
        EvidenceOutcome::Fail => "failed",
    };
    let reason = evidence.detail.get("reason").and_then(Value::as_str).unwrap_or("no reason recorded");
    // Checks and runs test the control; a policy, a task or a file is examined.
    let method = match evidence.kind {
        EvidenceKind::Connection | EvidenceKind::Automation | EvidenceKind::Check => "TEST",
        EvidenceKind::Policy | EvidenceKind::Task | EvidenceKind::File => "EXAMINE",
    };
    Observation {
        uuid: uuid(&["observation", evidence.id.as_str()]),
        title: format!("The {what} {outcome} for control {}", evidence.control_id),
        description: one_line(reason),
        methods: vec![method],
        subjects: non_empty(subjects(evidence, source)),
        collected: evidence.collected_at,
        relevant_evidence: vec![RelevantEvidence {
            href,
            description: format!(
                "Evidence item {} of control {} ({}).",
                evidence.id, evidence.control_id, evidence.outcome
            ),
        }],
    }
}

/// The resources a check's run failed, and those it failed whose finding is excepted, named by
/// the evidence item (at most the first few of each, as the item keeps them).
fn subjects(evidence: &Evidence, source: &str) -> Vec<Subject> {
    if evidence.kind != EvidenceKind::Check {
        return Vec::new();
    }
    let named = |field: &str, remarks: &'static str| {
        let names = evidence.detail.get(field).and_then(Value::as_array).cloned().unwrap_or_default();
        names
            .into_iter()
            .filter_map(|name| name.as_str().map(str::to_owned))
            .map(move |name| Subject {
                subject_uuid: uuid(&["resource", source, &name]),
                kind: "inventory-item",
                title: one_line(&name),
                remarks,
            })
            .collect::<Vec<_>>()
    };
    let mut subjects = named("failing", "Failed the check.");
    subjects.extend(named(
        "excepted",
        "Failed the check; its finding is excepted (the risk is accepted until the exception ends).",
    ));
    subjects
}

fn finding(key: &str, state: &RequirementState, evidence: &[Evidence]) -> Finding {
    let requirement = &state.requirement;
    let related: Vec<RelatedObservation> = evidence
        .iter()
        .filter(|e| state.controls.iter().any(|c| c.control_id == e.control_id))
        .map(|e| RelatedObservation { observation_uuid: uuid(&["observation", e.id.as_str()]) })
        .collect();
    let controls: Vec<String> =
        state.controls.iter().map(|c| format!("{} ({}, {})", c.name, c.control_id, c.status)).collect();
    let description = match state.status {
        RequirementStatus::Unmapped => format!("{} is not met: no control is mapped to it.", requirement.identifier),
        status => format!("{} is {status}, from its controls: {}.", requirement.identifier, controls.join("; ")),
    };
    let (state_value, reason) = match state.status {
        RequirementStatus::Passing => ("satisfied", "pass"),
        RequirementStatus::Failing => ("not-satisfied", "fail"),
        RequirementStatus::Stale
        | RequirementStatus::NotStarted
        | RequirementStatus::Unmapped
        | RequirementStatus::NotApplicable => ("not-satisfied", "other"),
    };
    let target_id = match &requirement.catalog_id {
        Some(catalog_id) => catalog_id.clone(),
        None if is_token(&requirement.identifier) => requirement.identifier.clone(),
        None => requirement.id.to_string(),
    };
    Finding {
        uuid: uuid(&["finding", key, requirement.id.as_str()]),
        title: one_line(&format!("{} {}", requirement.identifier, requirement.title)),
        description,
        target: FindingTarget {
            target_type: "objective-id",
            target_id,
            title: one_line(&requirement.identifier),
            status: ObjectiveStatus { state: state_value, reason },
        },
        related_observations: non_empty(related),
    }
}

/// A UUID of OSCAL's shape (version 4, RFC 4122 variant) derived from `parts`.
pub(super) fn uuid(parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    let digest = hash.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// OSCAL's titles are one line.
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() { "-".to_owned() } else { line }
}

/// OSCAL's arrays hold at least one item: an empty one is left out.
fn non_empty<T>(items: Vec<T>) -> Option<Vec<T>> {
    if items.is_empty() { None } else { Some(items) }
}

#[derive(Serialize)]
struct Document {
    #[serde(rename = "assessment-results")]
    assessment_results: AssessmentResults,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct AssessmentResults {
    uuid: String,
    metadata: Metadata,
    import_ap: ImportAp,
    results: Vec<AssessmentResult>,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct Metadata {
    title: String,
    last_modified: Timestamp,
    version: String,
    oscal_version: &'static str,
}

#[derive(Serialize)]
struct ImportAp {
    href: &'static str,
    remarks: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct AssessmentResult {
    uuid: String,
    title: String,
    description: String,
    start: Timestamp,
    reviewed_controls: ReviewedControls,
    #[serde(skip_serializing_if = "Option::is_none")]
    observations: Option<Vec<Observation>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    findings: Option<Vec<Finding>>,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct ReviewedControls {
    control_selections: Vec<ControlSelection>,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct ControlSelection {
    include_all: Empty,
}

#[derive(Serialize)]
struct Empty {}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct Observation {
    uuid: String,
    title: String,
    description: String,
    methods: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subjects: Option<Vec<Subject>>,
    collected: Timestamp,
    relevant_evidence: Vec<RelevantEvidence>,
}

/// A resource a check observed failing (or excepted): the observation's subject.
#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct Subject {
    subject_uuid: String,
    #[serde(rename = "type")]
    kind: &'static str,
    title: String,
    remarks: &'static str,
}

#[derive(Serialize)]
struct RelevantEvidence {
    href: String,
    description: String,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct Finding {
    uuid: String,
    title: String,
    description: String,
    target: FindingTarget,
    #[serde(skip_serializing_if = "Option::is_none")]
    related_observations: Option<Vec<RelatedObservation>>,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct FindingTarget {
    #[serde(rename = "type")]
    target_type: &'static str,
    target_id: String,
    title: String,
    status: ObjectiveStatus,
}

#[derive(Serialize)]
struct ObjectiveStatus {
    state: &'static str,
    reason: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct RelatedObservation {
    observation_uuid: String,
}

#[cfg(test)]
mod tests {
    use super::super::catalog::is_uuid;
    use super::*;
    use crate::control::ControlStatus;
    use crate::framework::{FrameworkSource, Requirement};
    use crate::framework_status::{MappedControl, roll_up};
    use crate::{ControlId, EvidenceId, FrameworkId, OrganizationId};

    fn requirement(identifier: &str) -> Requirement {
        Requirement::named(identifier, "A title\nover two lines")
    }

    #[test]
    fn findings_name_each_requirement_and_observations_each_deciding_item() {
        let org = OrganizationId::generate();
        let now = Timestamp::now();
        let framework = Framework {
            id: FrameworkId::generate(),
            organization_id: org.clone(),
            name: "Base\nline".into(),
            version: "1".into(),
            source: FrameworkSource::Custom,
            requirement_count: 2,
            created_at: now,
            updated_at: now,
        };
        let (token, not_token) = (requirement("CC6.1"), requirement("AC-2(1)"));
        let from_catalog = Requirement { catalog_id: Some("ac-2.2".into()), ..requirement("AC-2(2)") };
        let control = ControlId::generate();
        let mapped = [MappedControl {
            requirement_id: token.id.clone(),
            control_id: control.clone(),
            name: "Backups".into(),
            status: ControlStatus::Passing,
        }];
        let status = roll_up(vec![token.clone(), not_token.clone(), from_catalog], &mapped, &Default::default(), now);
        let item = Evidence {
            id: EvidenceId::generate(),
            organization_id: org,
            control_id: control,
            kind: EvidenceKind::Task,
            source_id: Some("tsk_x".into()),
            outcome: EvidenceOutcome::Pass,
            collected_at: now,
            detail: serde_json::json!({"reason": "the task is done"}),
            blob_key: None,
            run_id: None,
        };
        let evidence = [item];
        let assessment = Assessment {
            framework: &framework,
            status: &status,
            evidence: &evidence,
            generated_at: now,
            base_url: "http://x/",
        };
        let doc = document(&assessment);
        let results = &doc["assessment-results"];
        assert!(is_uuid(results["uuid"].as_str().unwrap()));
        assert_eq!(results["metadata"]["title"], "Assessment results: Base line 1", "titles are one line");
        assert!(!results["results"][0]["title"].as_str().unwrap().contains('\n'));
        let result = &results["results"][0];
        let findings = result["findings"].as_array().unwrap();
        assert_eq!(findings[0]["target"]["target-id"], "CC6.1");
        assert_eq!(findings[0]["target"]["status"]["state"], "satisfied");
        assert_eq!(findings[0]["title"], "CC6.1 A title over two lines");
        assert_eq!(findings[1]["target"]["target-id"], not_token.id.as_str());
        assert_eq!(findings[1]["target"]["title"], "AC-2(1)");
        assert_eq!(findings[1]["target"]["status"]["state"], "not-satisfied");
        assert!(findings[1].get("related-observations").is_none(), "an empty array is left out");
        assert_eq!(findings[2]["target"]["target-id"], "ac-2.2", "an imported control is named by its catalog id");
        assert_eq!(findings[2]["target"]["title"], "AC-2(2)");
        let observation = &result["observations"][0];
        assert_eq!(findings[0]["related-observations"][0]["observation-uuid"], observation["uuid"]);
        assert_eq!(observation["relevant-evidence"][0]["href"], "http://x/v1/tasks/tsk_x");
        assert_eq!(observation["methods"][0], "EXAMINE");
        // The same state gives the same document.
        assert_eq!(document(&assessment), doc);
    }
}
