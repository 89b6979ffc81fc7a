//! Prowler's findings file read as check results of an AWS connection: the OCSF JSON that
//! `prowler aws --output-formats json-ocsf` writes, a JSON array of OCSF Detection Findings
//! (class 2004), one per check and resource.
//!
//! A finding of a Prowler check that one of our checks names in `references.prowler` becomes a
//! result of that check; any other becomes a result of a check of Prowler's own,
//! `prowler.<Prowler's check name>`, so that nothing Prowler found is dropped.
//!
//! The fields read, and nothing else (the rest of a finding is skipped unread):
//!
//! | field | use |
//! |---|---|
//! | `class_uid` | must be 2004 (Detection Finding): tells OCSF JSON from Prowler's other outputs |
//! | `metadata.event_code` | Prowler's check name |
//! | `metadata.product.version` | Prowler's version, if given |
//! | `status_code` | `PASS` → pass, `FAIL` → fail, `MANUAL` → not applicable |
//! | `status` | `Suppressed` is a muted finding: it keeps its outcome, its detail says it was muted |
//! | `status_detail`, else `message` | the result's detail |
//! | `cloud.provider`, `cloud.account.uid` | must be `aws`, and one account for the whole file |
//! | `cloud.region` | the region of a check per region, when the resource has none |
//! | `resources[].uid`, `.name`, `.region`, `.type` | the result's resource, one result each |
//! | `severity`, `finding_info.title` | a check of Prowler's own only (ours have their own) |
//!
//! Everything here is pure: the caller reads the upload (and bounds its size), compares
//! [`ProwlerImport::account_id`] with the connection's account and stores the results.

use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};
use serde_path_to_error::Segment;

use crate::check::{Check, CheckOutcome, CheckSeverity, catalog};
use crate::check_result::{CheckResult, CheckedResource, normalize};

/// The most findings a file may hold. The file's size is checked by the caller; this bounds the
/// work (and the results kept) for a file of many tiny findings.
pub const MAX_FINDINGS: usize = 50_000;

/// The most resources a file may name in all, each a result (Prowler names one per finding): the
/// results, findings and entries of one import are stored in one transaction.
pub const MAX_RESOURCES: usize = 50_000;

/// The most resources one finding may name, read before the file's total is known.
const RESOURCES_PER_FINDING: usize = 100;

/// The longest resource id or name kept, in characters (an ARN is at most 2,048 bytes, and those
/// Prowler writes are far shorter); a longer one is refused rather than cut, which could make two
/// resources one.
const RESOURCE_TEXT_MAX: usize = 1_024;

/// The longest resource type, in characters (`AwsEc2SecurityGroup`).
const RESOURCE_TYPE_MAX: usize = 128;

/// The longest detail a result keeps, in characters: Prowler's `status_detail` is a sentence,
/// but nothing stops a file from holding a book there.
pub const DETAIL_MAX: usize = 1_000;

/// The longest title an imported check of Prowler's own keeps, in characters.
pub const TITLE_MAX: usize = 300;

/// The longest Prowler check name read (Prowler's longest is under 100).
const CHECK_NAME_MAX: usize = 128;

/// The OCSF class of a Detection Finding, which is what Prowler writes.
const DETECTION_FINDING: u64 = 2004;

/// How to make the file this module reads, for the errors that a person reads.
const HOW_TO_MAKE_IT: &str = "upload the file `prowler aws --output-formats json-ocsf` writes (`*.ocsf.json`)";

/// What a Prowler findings file held: the account it is of and a result per resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProwlerImport {
    /// The AWS account every finding is of (`cloud.account.uid`); the caller compares it with
    /// the connection's.
    pub account_id: String,
    /// One result per (check, resource type, resource id, region), made one by
    /// [`normalize`]: two of Prowler's checks that map to one of ours (the password policy's
    /// length and reuse) give that check one result, the worse.
    pub results: Vec<ImportedResult>,
    /// The Prowler that wrote the file (`metadata.product.version`), if it said.
    pub prowler_version: Option<String>,
}

/// A result and the check it is of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedResult {
    /// Ours, or one of Prowler's own that none of ours matches.
    pub check: ImportedCheck,
    /// Its `check_id` is [`ImportedCheck::id`].
    pub result: CheckResult,
}

/// The check a Prowler finding is a result of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportedCheck {
    /// Prowler's check name is in this check's `references.prowler`.
    Ours(&'static Check),
    /// A Prowler check none of ours names: kept under Prowler's name, so that an import loses
    /// nothing Prowler found.
    Prowler {
        /// `prowler.<Prowler's check name>` (`prowler.s3_bucket_object_versioning`).
        id: String,
        /// Prowler's title of the check (`finding_info.title`).
        title: String,
        /// Prowler's severity, `informational` read as low.
        severity: CheckSeverity,
    },
}

impl ImportedCheck {
    /// The check's id: ours (`aws.iam.user-console-mfa`) or `prowler.<name>`.
    pub fn id(&self) -> &str {
        match self {
            Self::Ours(check) => &check.id,
            Self::Prowler { id, .. } => id,
        }
    }
}

/// Why a file is not an importable Prowler findings file. Each message names the problem (and
/// the finding, by its 0-based index in the array, as `jq '.[3]'` shows it) and can be shown to
/// the person who uploaded the file as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProwlerFileError {
    /// The bytes are not JSON.
    #[error("the file is not JSON: {message} at line {line}, column {column}")]
    NotJson {
        /// serde_json's message, without its position.
        message: String,
        /// 1-based line of the first fault.
        line: usize,
        /// 1-based column of the first fault.
        column: usize,
    },
    /// JSON, but not an array.
    #[error("the file is not a JSON array of findings: {}", HOW_TO_MAKE_IT)]
    NotFindings,
    /// An element that is not an OCSF Detection Finding (another output of Prowler, such as
    /// `json-asff`, or another tool's).
    #[error("finding {index} is not an OCSF Detection Finding (class_uid 2004): {}", HOW_TO_MAKE_IT)]
    NotDetectionFinding {
        /// Its index in the array.
        index: usize,
    },
    /// A field this import needs is absent or null (or, for `resources`, empty).
    #[error("finding {index}: {field} is missing")]
    MissingField {
        /// The finding's index in the array.
        index: usize,
        /// The field's JSON path in the finding (`metadata.event_code`).
        field: String,
    },
    /// A field of the wrong JSON type, or a value this import cannot use.
    #[error("finding {index}: {field} {problem}")]
    InvalidField {
        /// The finding's index in the array.
        index: usize,
        /// The field's JSON path in the finding.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A `status_code` other than Prowler's three.
    #[error("finding {index}: status_code `{value}` is not PASS, FAIL or MANUAL")]
    UnknownStatus {
        /// The finding's index in the array.
        index: usize,
        /// The value given.
        value: String,
    },
    /// A finding of another cloud than AWS.
    #[error("finding {index}: cloud.provider is `{provider}`; only a scan of an AWS account can be imported")]
    NotAws {
        /// The finding's index in the array.
        index: usize,
        /// The provider given.
        provider: String,
    },
    /// Findings of two accounts: a file is imported into one connection, which is one account.
    #[error(
        "the findings are of more than one AWS account: {first} and {second} (finding {index}); \
         run Prowler on one account per file"
    )]
    SeveralAccounts {
        /// The first finding's account.
        first: String,
        /// The other account.
        second: String,
        /// The first finding of the other account.
        index: usize,
    },
    /// An empty array: nothing to import, which is more likely a failed scan than a clean one.
    #[error("the file holds no findings")]
    NoFindings,
    /// More than [`MAX_RESOURCES`] resources in all.
    #[error("the file names more than {max} resources; run Prowler on fewer checks or regions per file")]
    TooManyResources {
        /// [`MAX_RESOURCES`].
        max: usize,
    },
    /// More than [`MAX_FINDINGS`] findings.
    #[error("the file holds more than {max} findings; run Prowler on fewer checks or regions per file")]
    TooManyFindings {
        /// [`MAX_FINDINGS`].
        max: usize,
    },
}

/// Reads Prowler's OCSF JSON findings file into results of our checks and of Prowler's own.
///
/// Every finding must be an AWS finding of one account, with a check name, a known status and a
/// resource; the first one that is not makes the whole file an error, so an import is all or
/// nothing. A muted finding (`status` `Suppressed`, from Prowler's mutelist) keeps its outcome:
/// muting is Prowler's local triage, and an accepted failure is recorded here as an exception to
/// a finding, not by hiding the result; its detail starts with "Muted in Prowler".
pub fn parse_ocsf(bytes: &[u8]) -> Result<ProwlerImport, ProwlerFileError> {
    let findings = read_findings(bytes)?;
    if findings.is_empty() {
        return Err(ProwlerFileError::NoFindings);
    }
    let ours = our_checks_by_prowler_name();
    let mut account_id: Option<String> = None;
    let mut prowler_version = None;
    let mut checks: HashMap<String, ImportedCheck> = HashMap::new();
    let mut results = Vec::with_capacity(findings.len());
    for (index, finding) in findings.into_iter().enumerate() {
        let read = read_finding(index, finding, &ours)?;
        match &account_id {
            None => account_id = Some(read.account_id.clone()),
            Some(first) if *first != read.account_id => {
                return Err(ProwlerFileError::SeveralAccounts { first: first.clone(), second: read.account_id, index });
            }
            Some(_) => {}
        }
        if prowler_version.is_none() {
            prowler_version = read.prowler_version;
        }
        checks.entry(read.check.id().to_owned()).or_insert(read.check);
        results.extend(read.results);
    }
    let results = normalize(results)
        .into_iter()
        .filter_map(|result| checks.get(&result.check_id).map(|check| ImportedResult { check: check.clone(), result }))
        .collect();
    // Not empty: it was checked above and every finding gives at least one result.
    let account_id = account_id.unwrap_or_default();
    Ok(ProwlerImport { account_id, results, prowler_version })
}

/// Our AWS checks by the Prowler check names they reference.
fn our_checks_by_prowler_name() -> HashMap<&'static str, &'static Check> {
    catalog()
        .iter()
        .filter(|check| check.provider == "aws")
        .flat_map(|check| check.references.prowler.iter().map(move |name| (name.as_str(), check)))
        .collect()
}

/// One finding read: its account, its check and a result per resource.
struct ReadFinding {
    account_id: String,
    prowler_version: Option<String>,
    check: ImportedCheck,
    results: Vec<CheckResult>,
}

fn read_finding(
    index: usize,
    finding: RawFinding,
    ours: &HashMap<&'static str, &'static Check>,
) -> Result<ReadFinding, ProwlerFileError> {
    let missing = |field: &str| ProwlerFileError::MissingField { index, field: field.to_owned() };
    if finding.class_uid != Some(DETECTION_FINDING) {
        return Err(ProwlerFileError::NotDetectionFinding { index });
    }
    let metadata = finding.metadata.unwrap_or_default();
    let name = present(metadata.event_code).ok_or_else(|| missing("metadata.event_code"))?;
    if name.chars().count() > CHECK_NAME_MAX || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(ProwlerFileError::InvalidField {
            index,
            field: "metadata.event_code".into(),
            problem: format!(
                "is not a Prowler check name (at most {CHECK_NAME_MAX} letters, digits and underscores): `{}`",
                one_line(&name, 100)
            ),
        });
    }
    let cloud = finding.cloud.unwrap_or_default();
    let provider = present(cloud.provider).ok_or_else(|| missing("cloud.provider"))?;
    if provider != "aws" {
        return Err(ProwlerFileError::NotAws { index, provider: one_line(&provider, 100) });
    }
    let account_id = present(cloud.account.unwrap_or_default().uid).ok_or_else(|| missing("cloud.account.uid"))?;
    let status_code = present(finding.status_code).ok_or_else(|| missing("status_code"))?;
    let outcome = match status_code.to_ascii_uppercase().as_str() {
        "PASS" => CheckOutcome::Pass,
        "FAIL" => CheckOutcome::Fail,
        // Prowler could not judge it and asks a person to: neither a pass nor a failure.
        "MANUAL" => CheckOutcome::NotApplicable,
        _ => return Err(ProwlerFileError::UnknownStatus { index, value: one_line(&status_code, 100) }),
    };
    let check = match ours.get(name.as_str()) {
        Some(&check) => ImportedCheck::Ours(check),
        None => {
            let severity_text = present(finding.severity).ok_or_else(|| missing("severity"))?;
            let severity = severity_of(&severity_text).ok_or_else(|| ProwlerFileError::InvalidField {
                index,
                field: "severity".into(),
                problem: format!(
                    "`{}` is not Informational, Low, Medium, High or Critical",
                    one_line(&severity_text, 100)
                ),
            })?;
            let title = finding.finding_info.and_then(|info| present(info.title)).map(|t| one_line(&t, TITLE_MAX));
            let title = title.filter(|t| !t.is_empty()).ok_or_else(|| missing("finding_info.title"))?;
            ImportedCheck::Prowler { id: format!("prowler.{name}"), title, severity }
        }
    };
    let muted = finding.status.is_some_and(|status| status.eq_ignore_ascii_case("Suppressed"));
    let detail = detail(&name, &status_code, outcome, muted, finding.status_detail.or(finding.message));
    let resources = finding.resources.ok_or_else(|| missing("resources"))?;
    if resources.is_empty() {
        return Err(missing("resources[0]"));
    }
    let cloud_region = present(cloud.region).filter(|region| !is_global(region));
    let mut results = Vec::with_capacity(resources.len());
    for (at, raw) in resources.into_iter().enumerate() {
        for (field, text, max) in [
            ("uid", &raw.uid, RESOURCE_TEXT_MAX),
            ("name", &raw.name, RESOURCE_TEXT_MAX),
            ("type", &raw.kind, RESOURCE_TYPE_MAX),
            ("region", &raw.region, RESOURCE_TYPE_MAX),
        ] {
            if text.as_ref().is_some_and(|text| text.chars().count() > max) {
                return Err(ProwlerFileError::InvalidField {
                    index,
                    field: format!("resources[{at}].{field}"),
                    problem: format!("is longer than {max} characters"),
                });
            }
        }
        let resource = resource(&check, &account_id, cloud_region.as_deref(), raw)
            .map_err(|field| missing(&format!("resources[{at}].{field}")))?;
        results.push(CheckResult::judged(check.id(), resource, outcome, detail.clone()));
    }
    let prowler_version = metadata.product.and_then(|product| present(product.version));
    Ok(ReadFinding { account_id, prowler_version, check, results })
}

/// Prowler's severity (OCSF's `severity`, capitalised) as ours: we have no informational, and
/// OCSF's `Fatal` (which Prowler does not write) is at least critical.
fn severity_of(text: &str) -> Option<CheckSeverity> {
    match text.to_ascii_lowercase().as_str() {
        "informational" | "low" => Some(CheckSeverity::Low),
        "medium" => Some(CheckSeverity::Medium),
        "high" => Some(CheckSeverity::High),
        "critical" | "fatal" => Some(CheckSeverity::Critical),
        _ => None,
    }
}

/// The result's detail: Prowler's sentence, said to be muted or undecided where it was, on one
/// line and at most [`DETAIL_MAX`] characters.
fn detail(name: &str, status_code: &str, outcome: CheckOutcome, muted: bool, said: Option<String>) -> String {
    let said = said.map(|text| one_line(&text, DETAIL_MAX)).filter(|text| !text.is_empty());
    let said = said.unwrap_or_else(|| format!("Prowler's {name} gave {status_code} without a detail."));
    let said = if outcome == CheckOutcome::NotApplicable {
        format!("Prowler could not decide this itself and asks for a manual review: {said}")
    } else {
        said
    };
    let said = if muted { format!("Muted in Prowler: {said}") } else { said };
    one_line(&said, DETAIL_MAX)
}

/// The resource a finding names, shaped as our own readers shape it: the account for a check of
/// the account (Prowler names the password policy, the root user, …), the region for a check per
/// region, otherwise Prowler's ARN and name. IAM is global: Prowler files its resources under the
/// region it called IAM in, our readers under none. `Err` names the field that is missing.
fn resource(
    check: &ImportedCheck,
    account_id: &str,
    cloud_region: Option<&str>,
    raw: RawResource,
) -> Result<CheckedResource, &'static str> {
    let region = present(raw.region).filter(|region| !is_global(region));
    let kind = match check {
        ImportedCheck::Ours(ours) => ours.resource_type.clone(),
        ImportedCheck::Prowler { .. } => present(raw.kind).ok_or("type")?,
    };
    if kind == "aws.account" {
        return Ok(CheckedResource { kind, id: account_id.to_owned(), name: account_id.to_owned(), region: None });
    }
    if kind == "aws.region"
        && let Some(region) = region.clone().or_else(|| cloud_region.map(str::to_owned))
    {
        return Ok(CheckedResource { kind, id: region.clone(), name: region.clone(), region: Some(region) });
    }
    let uid = present(raw.uid);
    let name = present(raw.name);
    let id = uid.clone().or_else(|| name.clone()).ok_or("uid")?;
    let name = name.or(uid).unwrap_or_else(|| id.clone());
    let global = kind.starts_with("aws.iam.") || kind.starts_with("AwsIam");
    Ok(CheckedResource { kind, id, name, region: if global { None } else { region } })
}

/// Prowler's name for the region of a global resource, or none.
fn is_global(region: &str) -> bool {
    region.is_empty() || region.eq_ignore_ascii_case("global")
}

/// A string given and not blank, trimmed.
fn present(text: Option<String>) -> Option<String> {
    text.map(|text| text.trim().to_owned()).filter(|text| !text.is_empty())
}

/// The text on one line (control characters made spaces), trimmed, cut to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let line: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    line.trim().chars().take(max).collect::<String>().trim_end().to_owned()
}

// ---------------------------------------------------------------------------------------------
// The file, deserialized: only the fields read, each optional so that a missing one is reported
// by its name here rather than by serde's "missing field".

#[derive(Deserialize)]
struct RawFinding {
    class_uid: Option<u64>,
    metadata: Option<RawMetadata>,
    status_code: Option<String>,
    status: Option<String>,
    status_detail: Option<String>,
    message: Option<String>,
    severity: Option<String>,
    finding_info: Option<RawFindingInfo>,
    #[serde(default, deserialize_with = "at_most_per_finding")]
    resources: Option<Vec<RawResource>>,
    cloud: Option<RawCloud>,
}

#[derive(Deserialize, Default)]
struct RawMetadata {
    event_code: Option<String>,
    product: Option<RawProduct>,
}

#[derive(Deserialize)]
struct RawProduct {
    version: Option<String>,
}

#[derive(Deserialize)]
struct RawFindingInfo {
    title: Option<String>,
}

#[derive(Deserialize)]
struct RawResource {
    uid: Option<String>,
    name: Option<String>,
    region: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
}

#[derive(Deserialize, Default)]
struct RawCloud {
    provider: Option<String>,
    region: Option<String>,
    account: Option<RawAccount>,
}

#[derive(Deserialize, Default)]
struct RawAccount {
    uid: Option<String>,
}

/// A finding's resources, at most [`RESOURCES_PER_FINDING`]: reading stops at the one past it, so
/// that one finding cannot hold the whole file's worth.
fn at_most_per_finding<'de, D: de::Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<RawResource>>, D::Error> {
    struct Bounded;
    impl<'de> Visitor<'de> for Bounded {
        type Value = Option<Vec<RawResource>>;

        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(formatter, "an array of at most {RESOURCES_PER_FINDING} resources")
        }

        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut resources = Vec::new();
            while let Some(resource) = seq.next_element::<RawResource>()? {
                if resources.len() == RESOURCES_PER_FINDING {
                    return Err(de::Error::custom(format!("more than {RESOURCES_PER_FINDING} resources")));
                }
                resources.push(resource);
            }
            Ok(Some(resources))
        }
    }
    deserializer.deserialize_any(Bounded)
}

/// Why reading the array stopped early.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TooMany {
    Not,
    Findings,
    Resources,
}

/// The file's array, at most [`MAX_FINDINGS`] findings naming at most [`MAX_RESOURCES`]
/// resources: deserializing stops at the finding past either.
fn read_findings(bytes: &[u8]) -> Result<Vec<RawFinding>, ProwlerFileError> {
    let mut too_many = TooMany::Not;
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let mut track = serde_path_to_error::Track::new();
    let read = Findings { too_many: &mut too_many }
        .deserialize(serde_path_to_error::Deserializer::new(&mut deserializer, &mut track))
        .and_then(|findings| deserializer.end().map(|()| findings));
    match read {
        Ok(findings) => Ok(findings),
        Err(_) if too_many == TooMany::Findings => Err(ProwlerFileError::TooManyFindings { max: MAX_FINDINGS }),
        Err(_) if too_many == TooMany::Resources => Err(ProwlerFileError::TooManyResources { max: MAX_RESOURCES }),
        Err(error) if error.is_data() => Err(data_error(track.path(), &error)),
        Err(error) => Err(ProwlerFileError::NotJson {
            message: without_position(&error.to_string()),
            line: error.line(),
            column: error.column(),
        }),
    }
}

/// A value of the wrong type, as an error naming the finding and the field.
fn data_error(path: serde_path_to_error::Path, error: &serde_json::Error) -> ProwlerFileError {
    let mut segments = path.iter();
    let Some(Segment::Seq { index }) = segments.next() else {
        return ProwlerFileError::NotFindings;
    };
    let mut field = String::new();
    for segment in segments {
        match segment {
            Segment::Seq { index } => field += &format!("[{index}]"),
            Segment::Map { key } => {
                if !field.is_empty() {
                    field.push('.');
                }
                field += key;
            }
            Segment::Enum { variant } => field += &format!("::{variant}"),
            Segment::Unknown => field += "?",
        }
    }
    if field.is_empty() {
        // The element itself is no object.
        return ProwlerFileError::NotDetectionFinding { index: *index };
    }
    ProwlerFileError::InvalidField {
        index: *index,
        field,
        problem: format!("is {}", without_position(&error.to_string())),
    }
}

/// serde_json's message without its " at line L column C" (given apart).
fn without_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

/// Reads the top-level array one finding at a time, and sets `too_many` (then fails) at the
/// finding past [`MAX_FINDINGS`] instead of reading the rest.
struct Findings<'a> {
    too_many: &'a mut TooMany,
}

impl<'de> DeserializeSeed<'de> for Findings<'_> {
    type Value = Vec<RawFinding>;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Findings<'_> {
    type Value = Vec<RawFinding>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON array of findings")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut findings = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1_024));
        let mut resources = 0;
        while let Some(finding) = seq.next_element::<RawFinding>()? {
            if findings.len() == MAX_FINDINGS {
                *self.too_many = TooMany::Findings;
                return Err(de::Error::custom(format!("more than {MAX_FINDINGS} findings")));
            }
            resources += finding.resources.as_ref().map_or(0, Vec::len);
            if resources > MAX_RESOURCES {
                *self.too_many = TooMany::Resources;
                return Err(de::Error::custom(format!("more than {MAX_RESOURCES} resources")));
            }
            findings.push(finding);
        }
        Ok(findings)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use serde_json::{Value, json};

    use super::*;

    /// Prowler 5.46.0's own output against moto (tests/fixtures/prowler/README.md).
    const MOTO: &[u8] = include_bytes!("../tests/fixtures/prowler/moto-ocsf.json");

    fn moto() -> ProwlerImport {
        parse_ocsf(MOTO).unwrap()
    }

    fn result<'a>(import: &'a ProwlerImport, check_id: &str, resource_id: &str) -> &'a ImportedResult {
        let found: Vec<_> = import
            .results
            .iter()
            .filter(|r| r.result.check_id == check_id && r.result.resource.id == resource_id)
            .collect();
        assert_eq!(found.len(), 1, "{check_id} on {resource_id}: {found:?}");
        found[0]
    }

    /// The fixture's first finding (the trail's log validation, a check of the account), changed
    /// by `change`, as a one-finding file.
    fn one(change: impl FnOnce(&mut Value)) -> Vec<u8> {
        one_of(0, change)
    }

    /// The fixture's finding `index`, changed by `change`, as a one-finding file.
    fn one_of(index: usize, change: impl FnOnce(&mut Value)) -> Vec<u8> {
        let findings: Vec<Value> = serde_json::from_slice(MOTO).unwrap();
        let mut finding = findings[index].clone();
        change(&mut finding);
        serde_json::to_vec(&[finding]).unwrap()
    }

    fn message(bytes: &[u8]) -> String {
        parse_ocsf(bytes).unwrap_err().to_string()
    }

    #[test]
    fn prowlers_own_file_reads_as_one_accounts_results() {
        let import = moto();
        assert_eq!(import.account_id, "123456789012");
        assert_eq!(import.prowler_version.as_deref(), Some("5.46.0"));
        // 21 findings; the password policy's two (length, reuse) and the trail's two (multi-region,
        // validation) are one result each of our check on the account.
        assert_eq!(import.results.len(), 19, "{:#?}", import.results);
        for imported in &import.results {
            assert_eq!(imported.check.id(), imported.result.check_id);
            assert!(imported.result.failure.is_none());
            assert!(!imported.result.detail.is_empty());
        }
    }

    #[test]
    fn a_console_user_without_mfa_fails_our_check_and_the_one_with_mfa_passes() {
        let import = moto();
        let alice = result(&import, "aws.iam.user-console-mfa", "arn:aws:iam::123456789012:user/alice");
        assert!(matches!(alice.check, ImportedCheck::Ours(check) if check.id == "aws.iam.user-console-mfa"));
        assert_eq!(alice.result.outcome, CheckOutcome::Fail);
        assert_eq!(
            alice.result.resource,
            CheckedResource {
                kind: "aws.iam.user".into(),
                id: "arn:aws:iam::123456789012:user/alice".into(),
                name: "alice".into(),
                region: None,
            }
        );
        assert_eq!(alice.result.detail, "User alice has Console Password enabled but MFA disabled.");
        let bob = result(&import, "aws.iam.user-console-mfa", "arn:aws:iam::123456789012:user/bob");
        assert_eq!(bob.result.outcome, CheckOutcome::Pass);
    }

    #[test]
    fn buckets_security_groups_and_account_wide_checks_take_our_resource_shapes() {
        let import = moto();
        let open = result(&import, "aws.s3.bucket-encryption", "arn:aws:s3:::fixture-open-bucket");
        assert_eq!(open.result.outcome, CheckOutcome::Fail);
        assert_eq!(open.result.resource.kind, "aws.s3.bucket");
        assert_eq!(open.result.resource.region.as_deref(), Some("us-east-1"));
        let locked = result(&import, "aws.s3.bucket-public-access-block", "arn:aws:s3:::fixture-locked-bucket");
        assert_eq!(locked.result.outcome, CheckOutcome::Pass);
        let ssh: Vec<_> = import
            .results
            .iter()
            .filter(|r| {
                r.result.check_id == "aws.ec2.security-group-admin-ports" && r.result.outcome == CheckOutcome::Fail
            })
            .collect();
        assert_eq!(ssh.len(), 1);
        assert!(ssh[0].result.detail.starts_with("Security group fixture-ssh-open (sg-"), "{}", ssh[0].result.detail);
        // Prowler names the password policy's ARN; our check's resource is the account. Length
        // and reuse both failed: one failing result.
        let policy = result(&import, "aws.iam.password-policy", "123456789012");
        assert_eq!(policy.result.outcome, CheckOutcome::Fail);
        assert_eq!(policy.result.resource.kind, "aws.account");
        assert_eq!(policy.result.resource.region, None);
        // The trail is single-region (Prowler passes that: it logs) without log validation
        // (failed): the worse is kept.
        let trail = result(&import, "aws.cloudtrail.multi-region-trail", "123456789012");
        assert_eq!(trail.result.outcome, CheckOutcome::Fail);
        assert!(trail.result.detail.contains("log file validation disabled"), "{}", trail.result.detail);
        let guardduty = result(&import, "aws.guardduty.enabled", "us-east-1");
        assert_eq!(guardduty.result.outcome, CheckOutcome::Fail);
        assert_eq!(guardduty.result.resource.region.as_deref(), Some("us-east-1"));
    }

    #[test]
    fn a_prowler_check_none_of_ours_names_is_imported_under_prowlers_name() {
        let import = moto();
        let versioning = result(&import, "prowler.s3_bucket_object_versioning", "arn:aws:s3:::fixture-open-bucket");
        assert_eq!(
            versioning.check,
            ImportedCheck::Prowler {
                id: "prowler.s3_bucket_object_versioning".into(),
                title: "S3 bucket has object versioning enabled".into(),
                severity: CheckSeverity::Medium,
            }
        );
        assert_eq!(versioning.result.outcome, CheckOutcome::Fail);
        assert_eq!(versioning.result.resource.kind, "AwsS3Bucket");
        assert_eq!(versioning.result.resource.name, "fixture-open-bucket");
        assert_eq!(versioning.result.resource.region.as_deref(), Some("us-east-1"));
        // IAM is global even where Prowler says us-east-1.
        let uppercase = result(
            &import,
            "prowler.iam_password_policy_uppercase",
            "arn:aws:iam:us-east-1:123456789012:password-policy",
        );
        assert_eq!(uppercase.result.resource.kind, "AwsIamPolicy");
        assert_eq!(uppercase.result.resource.region, None);
        assert_eq!(uppercase.result.outcome, CheckOutcome::Fail);
    }

    #[test]
    fn manual_is_not_applicable_and_a_muted_finding_keeps_its_outcome_and_says_so() {
        let manual = parse_ocsf(&one(|f| f["status_code"] = json!("MANUAL"))).unwrap();
        assert_eq!(manual.results[0].result.outcome, CheckOutcome::NotApplicable);
        assert!(
            manual.results[0].result.detail.starts_with("Prowler could not decide this itself"),
            "{}",
            manual.results[0].result.detail
        );
        let muted = parse_ocsf(&one(|f| f["status"] = json!("Suppressed"))).unwrap();
        assert_eq!(muted.results[0].result.outcome, CheckOutcome::Fail);
        assert!(muted.results[0].result.detail.starts_with("Muted in Prowler: Single region trail"));
    }

    #[test]
    fn details_are_one_line_and_bounded_and_severities_map_to_ours() {
        let long = format!("line one\nline\ttwo {}", "x".repeat(5_000));
        let import = parse_ocsf(&one(|f| f["status_detail"] = json!(long))).unwrap();
        let detail = &import.results[0].result.detail;
        assert_eq!(detail.chars().count(), DETAIL_MAX);
        assert!(detail.starts_with("line one line two x"), "{detail}");
        let imported = |severity: &str| {
            let bytes = one(|f| {
                f["metadata"]["event_code"] = json!("made_up_check");
                f["severity"] = json!(severity);
            });
            parse_ocsf(&bytes).map(|import| import.results[0].check.clone())
        };
        assert!(
            matches!(imported("Informational"), Ok(ImportedCheck::Prowler { severity: CheckSeverity::Low, ref id, .. }) if id == "prowler.made_up_check")
        );
        assert!(matches!(imported("Critical"), Ok(ImportedCheck::Prowler { severity: CheckSeverity::Critical, .. })));
        assert_eq!(
            imported("Unknown").unwrap_err().to_string(),
            "finding 0: severity `Unknown` is not Informational, Low, Medium, High or Critical"
        );
    }

    #[test]
    fn a_file_that_is_not_json_says_where() {
        let error = parse_ocsf(b"[\n{\"class_uid\": 2004,,}]").unwrap_err();
        assert_eq!(error, ProwlerFileError::NotJson { message: "key must be a string".into(), line: 2, column: 20 });
        assert_eq!(error.to_string(), "the file is not JSON: key must be a string at line 2, column 20");
        assert!(matches!(parse_ocsf(b"[] trailing"), Err(ProwlerFileError::NotJson { .. })));
        assert!(matches!(parse_ocsf(b""), Err(ProwlerFileError::NotJson { line: 1, .. })));
    }

    #[test]
    fn json_that_is_not_ocsf_findings_says_how_to_make_the_file() {
        let expected = "the file is not a JSON array of findings: upload the file `prowler aws --output-formats json-ocsf` writes (`*.ocsf.json`)";
        assert_eq!(message(br#"{"findings": []}"#), expected);
        assert_eq!(message(b"\"PASS\""), expected);
        // Prowler's json-asff output is an array too, of Security Hub findings.
        assert_eq!(
            message(br#"[{"SchemaVersion": "2018-10-08", "Compliance": {"Status": "PASSED"}}]"#),
            "finding 0 is not an OCSF Detection Finding (class_uid 2004): upload the file `prowler aws --output-formats json-ocsf` writes (`*.ocsf.json`)"
        );
        assert!(matches!(parse_ocsf(b"[1]"), Err(ProwlerFileError::NotDetectionFinding { index: 0 })));
    }

    #[test]
    fn a_missing_or_mistyped_field_is_named_with_its_finding() {
        let mut findings: Vec<Value> = serde_json::from_slice(MOTO).unwrap();
        findings[3]["metadata"].as_object_mut().unwrap().remove("event_code");
        assert_eq!(message(&serde_json::to_vec(&findings).unwrap()), "finding 3: metadata.event_code is missing");
        assert_eq!(
            message(&one(|f| f["cloud"]["account"]["uid"] = Value::Null)),
            "finding 0: cloud.account.uid is missing"
        );
        assert_eq!(message(&one(|f| f["resources"] = json!([]))), "finding 0: resources[0] is missing");
        assert_eq!(
            // Alice's finding: a check of a user, whose resource is the one Prowler names.
            message(&one_of(8, |f| {
                assert_eq!(f["resources"][0]["name"], "alice");
                f["resources"][0]["uid"] = json!("");
                f["resources"][0]["name"] = Value::Null;
            })),
            "finding 0: resources[0].uid is missing"
        );
        assert_eq!(
            message(&one(|f| f["metadata"]["event_code"] = json!(7))),
            "finding 0: metadata.event_code is invalid type: integer `7`, expected a string"
        );
        assert_eq!(
            message(&one(|f| f["metadata"]["event_code"] = json!("../etc"))),
            "finding 0: metadata.event_code is not a Prowler check name (at most 128 letters, digits and underscores): `../etc`"
        );
        assert_eq!(
            message(&one(|f| {
                f["metadata"]["event_code"] = json!("made_up_check");
                f["finding_info"].as_object_mut().unwrap().remove("title");
            })),
            "finding 0: finding_info.title is missing"
        );
    }

    #[test]
    fn an_unknown_status_code_is_refused() {
        let error = parse_ocsf(&one(|f| f["status_code"] = json!("WARNING"))).unwrap_err();
        assert_eq!(error, ProwlerFileError::UnknownStatus { index: 0, value: "WARNING".into() });
        assert_eq!(error.to_string(), "finding 0: status_code `WARNING` is not PASS, FAIL or MANUAL");
        assert_eq!(message(&one(|f| f["status_code"] = Value::Null)), "finding 0: status_code is missing");
    }

    #[test]
    fn findings_of_two_accounts_or_of_another_cloud_are_refused() {
        let mut findings: Vec<Value> = serde_json::from_slice(MOTO).unwrap();
        findings[5]["cloud"]["account"]["uid"] = json!("210987654321");
        assert_eq!(
            message(&serde_json::to_vec(&findings).unwrap()),
            "the findings are of more than one AWS account: 123456789012 and 210987654321 (finding 5); \
             run Prowler on one account per file"
        );
        assert_eq!(
            message(&one(|f| f["cloud"]["provider"] = json!("azure"))),
            "finding 0: cloud.provider is `azure`; only a scan of an AWS account can be imported"
        );
    }

    #[test]
    fn an_empty_file_and_too_many_findings_are_refused() {
        assert_eq!(parse_ocsf(b"[]").unwrap_err(), ProwlerFileError::NoFindings);
        assert_eq!(message(b" [ ] "), "the file holds no findings");
        // Findings past the limit are not read: the one past it is enough, whatever it holds.
        let mut many = b"[".to_vec();
        for _ in 0..=MAX_FINDINGS {
            many.extend_from_slice(b"{},");
        }
        many.extend_from_slice(b"{}]");
        assert_eq!(parse_ocsf(&many).unwrap_err(), ProwlerFileError::TooManyFindings { max: MAX_FINDINGS });
        assert_eq!(
            message(&many),
            "the file holds more than 50000 findings; run Prowler on fewer checks or regions per file"
        );
    }

    #[test]
    fn resources_are_bounded_per_finding_in_all_and_in_length() {
        let resource = |uid: String| json!({"uid": uid, "name": "n", "region": "us-east-1", "type": "AwsS3Bucket"});
        let crowded = one(|f| f["resources"] = json!((0..=100).map(|i| resource(format!("r{i}"))).collect::<Vec<_>>()));
        assert!(message(&crowded).starts_with("finding 0: resources is "), "{}", message(&crowded));
        assert!(message(&crowded).contains("more than 100 resources"), "{}", message(&crowded));

        // 501 findings of 100 resources each: the total passes 50,000 before the findings' limit.
        let findings: Vec<Value> = serde_json::from_slice(MOTO).unwrap();
        let mut finding = findings[0].clone();
        finding["resources"] = json!((0..100).map(|i| resource(format!("r{i}"))).collect::<Vec<_>>());
        let file = serde_json::to_vec(&vec![finding; 501]).unwrap();
        assert_eq!(parse_ocsf(&file).unwrap_err(), ProwlerFileError::TooManyResources { max: MAX_RESOURCES });

        let long = one(|f| f["resources"][0]["uid"] = json!("a".repeat(RESOURCE_TEXT_MAX + 1)));
        assert_eq!(message(&long), "finding 0: resources[0].uid is longer than 1024 characters");
        let long_type = one(|f| f["resources"][0]["type"] = json!("T".repeat(RESOURCE_TYPE_MAX + 1)));
        assert_eq!(message(&long_type), "finding 0: resources[0].type is longer than 128 characters");
    }
}
