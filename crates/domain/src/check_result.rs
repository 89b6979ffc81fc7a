//! What a run of a check found: one result for every resource it saw (the whole population, not
//! only the failures), and the population's digest, so that an auditor can test a run's
//! completeness and sample from it (docs/checks.md, "Results and the population's digest").

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::check::CheckOutcome;

/// The longest part of a provider's error message a result keeps, in characters.
pub const MESSAGE_MAX: usize = 300;

/// A resource a check saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CheckedResource {
    /// Its kind: the check's `resourceType` (`aws.iam.user`).
    #[serde(rename = "type")]
    pub kind: String,
    /// The provider's stable id for it (an ARN, `owner/repository`, a user's id).
    pub id: String,
    /// What a person calls it.
    pub name: String,
    /// Its region, for a regional resource; `null` for a global one.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub region: Option<String>,
}

/// Why a check could not read: the provider's error code and the start of its message (never its
/// whole answer, which may echo a request), and the API action that was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReadFailure {
    /// The provider's code (`AccessDenied`, `Throttling`, an HTTP status).
    pub code: String,
    /// At most 300 characters (`MESSAGE_MAX`) of the provider's message, on one line.
    pub message: String,
    /// The action the check needed (`iam:GetCredentialReport`, `GET /orgs/{org}`).
    pub action: String,
}

impl ReadFailure {
    /// A failure whose message is cut to [`MESSAGE_MAX`] characters, line breaks and other
    /// control characters made spaces.
    pub fn new(code: impl Into<String>, message: &str, action: impl Into<String>) -> Self {
        let message =
            message.chars().map(|c| if c.is_control() { ' ' } else { c }).take(MESSAGE_MAX).collect::<String>();
        Self { code: code.into(), message: message.trim().to_owned(), action: action.into() }
    }
}

/// What one check found of one resource (`CheckRunResult` in the API document: a connection's
/// credentials check already has the name `CheckResult` there).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = CheckRunResult))]
#[serde(rename_all = "camelCase")]
pub struct CheckResult {
    /// The check's id (`aws.iam.user-console-mfa`).
    pub check_id: String,
    /// The resource.
    pub resource: CheckedResource,
    /// Pass, fail, could not read (`error`) or not applicable.
    pub outcome: CheckOutcome,
    /// Why, in a sentence a person reads: what failed, or why it does not apply.
    pub detail: String,
    /// For an `error`, what the provider said; `null` otherwise.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub failure: Option<ReadFailure>,
}

impl CheckResult {
    /// A result that is not an error.
    pub fn judged(check_id: &str, resource: CheckedResource, outcome: CheckOutcome, detail: impl Into<String>) -> Self {
        Self { check_id: check_id.to_owned(), resource, outcome, detail: detail.into(), failure: None }
    }

    /// A resource (or a whole account, as its resource) the check could not read: never a pass
    /// and never a failure.
    pub fn error(check_id: &str, resource: CheckedResource, failure: ReadFailure) -> Self {
        let detail = format!("could not read ({}): {}", failure.action, failure.code);
        Self { check_id: check_id.to_owned(), resource, outcome: CheckOutcome::Error, detail, failure: Some(failure) }
    }
}

/// A reader's results made one per resource and storable: a region given as `""` is none, NUL
/// characters (which PostgreSQL's text refuses; a pull request's title may hold one) are dropped,
/// and of two results for one (check, type, id, region) the worse is kept (`fail`, then `error`,
/// `pass`, `not_applicable`), where the first was. Two of Prowler's checks may map to one of ours.
pub fn normalize(results: Vec<CheckResult>) -> Vec<CheckResult> {
    fn rank(outcome: CheckOutcome) -> u8 {
        match outcome {
            CheckOutcome::Fail => 3,
            CheckOutcome::Error => 2,
            CheckOutcome::Pass => 1,
            CheckOutcome::NotApplicable => 0,
        }
    }
    let clean = |text: &mut String| text.retain(|c| c != '\0');
    let mut kept: Vec<CheckResult> = Vec::with_capacity(results.len());
    let mut at: std::collections::HashMap<(String, String, String, Option<String>), usize> =
        std::collections::HashMap::new();
    for mut result in results {
        for text in [
            &mut result.check_id,
            &mut result.detail,
            &mut result.resource.kind,
            &mut result.resource.id,
            &mut result.resource.name,
        ] {
            clean(text);
        }
        result.resource.region = result
            .resource
            .region
            .take()
            .map(|mut region| {
                clean(&mut region);
                region
            })
            .filter(|region| !region.is_empty());
        let key = (
            result.check_id.clone(),
            result.resource.kind.clone(),
            result.resource.id.clone(),
            result.resource.region.clone(),
        );
        match at.get(&key) {
            Some(&index) if rank(kept[index].outcome) >= rank(result.outcome) => {}
            Some(&index) => kept[index] = result,
            None => {
                at.insert(key, kept.len());
                kept.push(result);
            }
        }
    }
    kept
}

/// The lowercase hex SHA-256 of a run's population: for each result the JSON array
/// `[checkId, type, id, region or "", outcome]` on a line of its own ending in `\n`, the lines
/// sorted (bytewise), then hashed together. The same results in any order give the same digest;
/// one result more or less, or one of those five fields changed, gives another.
pub fn population_digest(results: &[CheckResult]) -> String {
    let mut lines: Vec<String> = results
        .iter()
        .map(|result| {
            let fields = [
                result.check_id.as_str(),
                result.resource.kind.as_str(),
                result.resource.id.as_str(),
                result.resource.region.as_deref().unwrap_or(""),
                result.outcome.as_str(),
            ];
            // An array of strings always serializes.
            serde_json::to_string(&fields).unwrap_or_default()
        })
        .collect();
    lines.sort_unstable();
    let mut hasher = Sha256::new();
    for line in &lines {
        hasher.update(line.as_bytes());
        hasher.update(b"\n");
    }
    hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod normalize_tests {
    #![allow(clippy::unwrap_used, reason = "a test fails loudly")]

    use super::*;

    fn result(id: &str, region: Option<&str>, outcome: CheckOutcome) -> CheckResult {
        let resource = CheckedResource {
            kind: "aws.ec2.security-group".into(),
            id: id.into(),
            name: id.into(),
            region: region.map(str::to_owned),
        };
        CheckResult::judged("aws.ec2.security-group-admin-ports", resource, outcome, "x\0y")
    }

    #[test]
    fn one_result_per_resource_the_worse_kept_regions_and_text_made_storable() {
        let results = normalize(vec![
            result("sg-1", Some("eu-west-1"), CheckOutcome::Pass),
            result("sg-2", Some(""), CheckOutcome::Pass),
            result("sg-1", Some("eu-west-1"), CheckOutcome::Fail),
            result("sg-1", Some("eu-west-1"), CheckOutcome::Pass),
            result("sg-1", Some("us-east-1"), CheckOutcome::Pass),
        ]);
        let seen: Vec<(&str, Option<&str>, CheckOutcome)> =
            results.iter().map(|r| (r.resource.id.as_str(), r.resource.region.as_deref(), r.outcome)).collect();
        assert_eq!(
            seen,
            [
                ("sg-1", Some("eu-west-1"), CheckOutcome::Fail),
                ("sg-2", None, CheckOutcome::Pass),
                ("sg-1", Some("us-east-1"), CheckOutcome::Pass)
            ]
        );
        assert!(results.iter().all(|r| r.detail == "xy"));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    fn user(name: &str, outcome: CheckOutcome) -> CheckResult {
        let resource = CheckedResource {
            kind: "aws.iam.user".into(),
            id: format!("arn:aws:iam::123456789012:user/{name}"),
            name: name.into(),
            region: None,
        };
        CheckResult::judged("aws.iam.user-console-mfa", resource, outcome, "")
    }

    #[test]
    fn the_digest_is_the_documented_sha256_of_the_sorted_lines() {
        let results = [user("bob", CheckOutcome::Fail), user("alice", CheckOutcome::Pass)];
        // The two lines written out by hand, as docs/checks.md describes them.
        let lines = concat!(
            r#"["aws.iam.user-console-mfa","aws.iam.user","arn:aws:iam::123456789012:user/alice","","pass"]"#,
            "\n",
            r#"["aws.iam.user-console-mfa","aws.iam.user","arn:aws:iam::123456789012:user/bob","","fail"]"#,
            "\n",
        );
        let expected: String = Sha256::digest(lines.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(population_digest(&results), expected);
        assert_eq!(population_digest(&results), EXPECTED_BY_PYTHON);
    }

    /// The digest of the two results above, computed apart from this code, as an auditor would:
    /// `hashlib.sha256(b"".join(sorted(json.dumps(row, separators=(",", ":"), ensure_ascii=False)
    /// .encode() + b"\n" for row in rows))).hexdigest()` in Python.
    const EXPECTED_BY_PYTHON: &str = "42e6cdfc2ddec62e420cf743a66d5c9394c8928ad6aabc85f65237b61c21a66c";

    #[test]
    fn escapes_and_regions_hash_as_pythons_json_writes_them() {
        let bucket = |id: &str, region: Option<&str>, outcome| {
            let resource = CheckedResource {
                kind: "aws.s3.bucket".into(),
                id: format!("arn:aws:s3:::{id}"),
                name: id.into(),
                region: region.map(str::to_owned),
            };
            CheckResult::judged("aws.s3.bucket-encryption", resource, outcome, "")
        };
        let results =
            [bucket("a\"b\\c\u{1}é", Some("eu-west-1"), CheckOutcome::Fail), bucket("plain", None, CheckOutcome::Pass)];
        // Python, as in EXPECTED_BY_PYTHON's comment, of the rows
        // [.., "arn:aws:s3:::a\"b\\c\u0001é", "eu-west-1", "fail"] and [.., "arn:aws:s3:::plain", "", "pass"].
        assert_eq!(population_digest(&results), "73e0f919fe340e1c263bb848fd1e5c9064b078728b34a51ded7c07496fe9f796");
    }

    #[test]
    fn order_does_not_change_the_digest_and_anything_else_does() {
        let population = vec![user("alice", CheckOutcome::Pass), user("bob", CheckOutcome::Fail)];
        let digest = population_digest(&population);
        let reversed: Vec<_> = population.iter().rev().cloned().collect();
        assert_eq!(population_digest(&reversed), digest);
        assert_ne!(population_digest(&population[..1]), digest, "one result less");
        let changed = vec![user("alice", CheckOutcome::Pass), user("bob", CheckOutcome::Pass)];
        assert_ne!(population_digest(&changed), digest, "an outcome changed");
        let mut regional = population.clone();
        regional[0].resource.region = Some("eu-west-1".into());
        assert_ne!(population_digest(&regional), digest, "a region added");
        // A field holding a separator cannot pass for two fields.
        let mut tricky = population.clone();
        tricky[0].resource.id = r#"a","b"#.into();
        assert_ne!(population_digest(&tricky), digest);
        assert_eq!(population_digest(&[]).len(), 64);
    }

    #[test]
    fn a_read_failure_keeps_a_short_single_line_message_and_is_never_a_pass_or_a_failure() {
        let message = format!("User: arn:aws:iam::1:user/x is not authorized\r\n{}", "x".repeat(1_000));
        let failure = ReadFailure::new("AccessDenied", &message, "iam:GetCredentialReport");
        assert_eq!(failure.message.chars().count(), MESSAGE_MAX);
        assert!(!failure.message.contains(['\r', '\n']), "{}", failure.message);
        let resource = CheckedResource {
            kind: "aws.account".into(),
            id: "123456789012".into(),
            name: "123456789012".into(),
            region: None,
        };
        let result = CheckResult::error("aws.iam.root-unused", resource, failure);
        assert_eq!(result.outcome, CheckOutcome::Error);
        assert_eq!(result.detail, "could not read (iam:GetCredentialReport): AccessDenied");
        let json = serde_json::to_value(&result).unwrap();
        assert_eq!(json["resource"]["type"], "aws.account");
        assert_eq!(json["failure"]["action"], "iam:GetCredentialReport");
        assert!(json["resource"]["region"].is_null());
    }
}
