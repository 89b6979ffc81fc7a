//! IAM's account-wide settings: the account summary (the root user's MFA and access keys), the
//! password policy, and the managed policies that grant every action on every resource.

use compliance_domain::check_result::{CheckResult, CheckedResource};
use futures_util::StreamExt as _;
use serde::Deserialize;

use super::client::{AwsRequest, Service};
use super::xml::{self, Members};
use super::{
    CONCURRENT_READS, NO_FULL_ADMIN_POLICY, PASSWORD_POLICY, ROOT_ACCESS_KEYS, ROOT_MFA, Session, errors, listed,
    verdict, wants,
};

pub(crate) const VERSION: &str = "2010-05-08";
const GET_ACCOUNT_SUMMARY: &str = "iam:GetAccountSummary";
const GET_ACCOUNT_PASSWORD_POLICY: &str = "iam:GetAccountPasswordPolicy";
const LIST_POLICIES: &str = "iam:ListPolicies";
const GET_POLICY_VERSION: &str = "iam:GetPolicyVersion";

/// The password policy's least length and remembered passwords (CIS 1.8, 1.9).
const MINIMUM_LENGTH: u32 = 14;
const REUSE_PREVENTION: u32 = 24;
/// Policies per `ListPolicies` page (IAM's default; its most is 1000).
const POLICIES_PER_PAGE: &str = "100";

#[derive(Deserialize)]
struct AccountSummaryResponse {
    #[serde(rename = "GetAccountSummaryResult")]
    result: AccountSummaryResult,
}

#[derive(Deserialize)]
struct AccountSummaryResult {
    #[serde(rename = "SummaryMap")]
    map: SummaryMap,
}

#[derive(Deserialize)]
struct SummaryMap {
    #[serde(rename = "entry", default)]
    entries: Vec<SummaryEntry>,
}

#[derive(Deserialize)]
struct SummaryEntry {
    key: String,
    value: i64,
}

/// `aws.iam.root-mfa` and `aws.iam.root-access-keys`, from `GetAccountSummary`'s
/// `AccountMFAEnabled` and `AccountAccessKeysPresent`.
pub(crate) async fn account_summary_checks(session: &Session<'_>, wanted: &[&str]) -> Vec<CheckResult> {
    let checks: Vec<&str> = [ROOT_MFA, ROOT_ACCESS_KEYS].into_iter().filter(|c| wants(wanted, c)).collect();
    if checks.is_empty() {
        return Vec::new();
    }
    let account = session.account.resource();
    let request =
        AwsRequest::query(Service::Iam, &session.region, "GetAccountSummary", VERSION, &[], GET_ACCOUNT_SUMMARY);
    let summary = match session.client.send(&request).await {
        Ok(body) => match xml::parse::<AccountSummaryResponse>(&body, GET_ACCOUNT_SUMMARY) {
            Ok(answer) => answer.result.map.entries,
            Err(failure) => return errors(&checks, &account, &failure.failure),
        },
        Err(failure) => return errors(&checks, &account, &failure.failure),
    };
    let entry = |key: &str| summary.iter().find(|e| e.key == key).map(|e| e.value);
    let mut results = Vec::new();
    for check in checks {
        let key = if check == ROOT_MFA { "AccountMFAEnabled" } else { "AccountAccessKeysPresent" };
        let Some(value) = entry(key) else {
            let failure = xml::unreadable(GET_ACCOUNT_SUMMARY, &format!("the account summary has no {key}"));
            results.push(CheckResult::error(check, account.clone(), failure.failure));
            continue;
        };
        results.push(match check {
            ROOT_MFA if value == 1 => verdict(check, account.clone(), true, "The root user has an MFA device.".into()),
            ROOT_MFA => verdict(check, account.clone(), false, "The root user has no MFA device.".into()),
            _ if value == 0 => verdict(check, account.clone(), true, "The root user has no access keys.".into()),
            _ => verdict(check, account.clone(), false, "The root user has access keys.".into()),
        });
    }
    results
}

#[derive(Deserialize)]
struct PasswordPolicyResponse {
    #[serde(rename = "GetAccountPasswordPolicyResult")]
    result: PasswordPolicyResult,
}

#[derive(Deserialize)]
struct PasswordPolicyResult {
    #[serde(rename = "PasswordPolicy")]
    policy: PasswordPolicy,
}

#[derive(Deserialize)]
struct PasswordPolicy {
    #[serde(rename = "MinimumPasswordLength", default)]
    minimum_length: Option<u32>,
    #[serde(rename = "PasswordReusePrevention", default)]
    reuse_prevention: Option<u32>,
}

/// `aws.iam.password-policy`: 14 characters at least, the last 24 passwords remembered; no
/// policy at all (`NoSuchEntity`) fails.
pub(crate) async fn password_policy_check(session: &Session<'_>, wanted: &[&str]) -> Vec<CheckResult> {
    if !wants(wanted, PASSWORD_POLICY) {
        return Vec::new();
    }
    let account = session.account.resource();
    let request = AwsRequest::query(
        Service::Iam,
        &session.region,
        "GetAccountPasswordPolicy",
        VERSION,
        &[],
        GET_ACCOUNT_PASSWORD_POLICY,
    );
    let policy = match session.client.send(&request).await {
        Ok(body) => match xml::parse::<PasswordPolicyResponse>(&body, GET_ACCOUNT_PASSWORD_POLICY) {
            Ok(answer) => answer.result.policy,
            Err(failure) => return errors(&[PASSWORD_POLICY], &account, &failure.failure),
        },
        Err(failure) if failure.code() == "NoSuchEntity" => {
            return vec![verdict(PASSWORD_POLICY, account, false, "The account has no IAM password policy.".into())];
        }
        Err(failure) => return errors(&[PASSWORD_POLICY], &account, &failure.failure),
    };
    let length = policy.minimum_length.unwrap_or(0);
    let reuse = policy.reuse_prevention.unwrap_or(0);
    let mut short = Vec::new();
    if length < MINIMUM_LENGTH {
        short.push(format!("asks for {length} characters, not {MINIMUM_LENGTH}"));
    }
    if reuse < REUSE_PREVENTION {
        short.push(if reuse == 0 {
            format!("does not prevent reusing passwords (not the last {REUSE_PREVENTION})")
        } else {
            format!("remembers {reuse} passwords, not {REUSE_PREVENTION}")
        });
    }
    let detail = if short.is_empty() {
        format!("The password policy asks for {length} characters and remembers {reuse} passwords.")
    } else {
        format!("The password policy {}.", short.join(" and "))
    };
    vec![verdict(PASSWORD_POLICY, account, short.is_empty(), detail)]
}

#[derive(Deserialize)]
struct ListPoliciesResponse {
    #[serde(rename = "ListPoliciesResult")]
    result: ListPoliciesResult,
}

#[derive(Deserialize)]
struct ListPoliciesResult {
    #[serde(rename = "Policies", default)]
    policies: Members<ManagedPolicy>,
    #[serde(rename = "IsTruncated", default)]
    is_truncated: bool,
    #[serde(rename = "Marker", default)]
    marker: Option<String>,
}

#[derive(Deserialize)]
struct ManagedPolicy {
    #[serde(rename = "PolicyName")]
    name: String,
    #[serde(rename = "Arn")]
    arn: String,
    #[serde(rename = "DefaultVersionId")]
    default_version: String,
    #[serde(rename = "AttachmentCount", default)]
    attachments: u32,
}

#[derive(Deserialize)]
struct PolicyVersionResponse {
    #[serde(rename = "GetPolicyVersionResult")]
    result: PolicyVersionResult,
}

#[derive(Deserialize)]
struct PolicyVersionResult {
    #[serde(rename = "PolicyVersion")]
    version: PolicyVersion,
}

#[derive(Deserialize)]
struct PolicyVersion {
    /// The policy's JSON, URL-encoded (RFC 3986).
    #[serde(rename = "Document")]
    document: String,
}

/// `aws.iam.no-full-admin-policy`: every customer-managed policy (attached or not) and every
/// AWS-managed policy attached to someone, judged by its default version: one result per policy.
pub(crate) async fn full_admin_policy_check(session: &Session<'_>, wanted: &[&str]) -> Vec<CheckResult> {
    if !wants(wanted, NO_FULL_ADMIN_POLICY) {
        return Vec::new();
    }
    let account = session.account.resource();
    let mut policies = Vec::new();
    for (scope, only_attached) in [("Local", "false"), ("AWS", "true")] {
        match list_policies(session, scope, only_attached).await {
            Ok(listed) => policies.extend(listed),
            Err(failure) => return errors(&[NO_FULL_ADMIN_POLICY], &account, &failure.failure),
        }
    }
    // The futures made first: a stream's `map` closure over borrowed items is not `Send` enough
    // for the reader's boxed future.
    let reads: Vec<_> = policies.iter().map(|policy| judge_policy(session, policy)).collect();
    futures_util::stream::iter(reads).buffered(CONCURRENT_READS).collect().await
}

/// One policy, by its default version's document.
async fn judge_policy(session: &Session<'_>, policy: &ManagedPolicy) -> CheckResult {
    let resource = CheckedResource {
        kind: "aws.iam.policy".into(),
        id: policy.arn.clone(),
        name: policy.name.clone(),
        region: None,
    };
    let request = AwsRequest::query(
        Service::Iam,
        &session.region,
        "GetPolicyVersion",
        VERSION,
        &[("PolicyArn", &policy.arn), ("VersionId", &policy.default_version)],
        GET_POLICY_VERSION,
    );
    let document = match session.client.send(&request).await {
        Ok(body) => match xml::parse::<PolicyVersionResponse>(&body, GET_POLICY_VERSION) {
            Ok(answer) => answer.result.version.document,
            Err(failure) => return CheckResult::error(NO_FULL_ADMIN_POLICY, resource, failure.failure),
        },
        Err(failure) => return CheckResult::error(NO_FULL_ADMIN_POLICY, resource, failure.failure),
    };
    let decoded = percent_encoding::percent_decode_str(&document).decode_utf8_lossy();
    let Ok(json) = serde_json::from_str::<serde_json::Value>(&decoded) else {
        let failure = xml::unreadable(GET_POLICY_VERSION, "the policy's document is not JSON");
        return CheckResult::error(NO_FULL_ADMIN_POLICY, resource, failure.failure);
    };
    let admin = full_admin_statements(&json);
    let attached = match policy.attachments {
        0 => "not attached".to_owned(),
        1 => "attached to 1 identity".to_owned(),
        n => format!("attached to {n} identities"),
    };
    let detail = if admin.is_empty() {
        format!(
            "Policy {} ({attached}, version {}) has no statement allowing every action on every resource.",
            policy.name, policy.default_version
        )
    } else {
        format!(
            "Policy {} ({attached}, version {}) allows every action on every resource in statement {}.",
            policy.name,
            policy.default_version,
            listed(&admin)
        )
    };
    verdict(NO_FULL_ADMIN_POLICY, resource, admin.is_empty(), detail)
}

/// Every page of `ListPolicies` of `scope`.
async fn list_policies(
    session: &Session<'_>,
    scope: &str,
    only_attached: &str,
) -> Result<Vec<ManagedPolicy>, super::client::AwsFailure> {
    let mut policies = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let mut params = vec![("Scope", scope), ("OnlyAttached", only_attached), ("MaxItems", POLICIES_PER_PAGE)];
        if let Some(marker) = &marker {
            params.push(("Marker", marker));
        }
        let request = AwsRequest::query(Service::Iam, &session.region, "ListPolicies", VERSION, &params, LIST_POLICIES);
        let body = session.client.send(&request).await?;
        let page: ListPoliciesResponse = xml::parse(&body, LIST_POLICIES)?;
        policies.extend(page.result.policies.items);
        match page.result.marker.filter(|m| page.result.is_truncated && !m.is_empty()) {
            Some(next) if marker.as_ref() != Some(&next) => marker = Some(next),
            _ => return Ok(policies),
        }
    }
}

/// The statements (by their `Sid`, or their place from 1) of a policy document that allow every
/// action (`*` or `*:*`) on every resource (`*`).
fn full_admin_statements(document: &serde_json::Value) -> Vec<String> {
    let statements = match document.get("Statement") {
        Some(serde_json::Value::Array(statements)) => statements.iter().collect::<Vec<_>>(),
        Some(statement) => vec![statement],
        None => Vec::new(),
    };
    let has = |value: Option<&serde_json::Value>, wanted: &[&str]| match value {
        Some(serde_json::Value::String(one)) => wanted.contains(&one.as_str()),
        Some(serde_json::Value::Array(many)) => many.iter().any(|v| v.as_str().is_some_and(|v| wanted.contains(&v))),
        _ => false,
    };
    statements
        .iter()
        .enumerate()
        .filter(|(_, s)| s.get("Effect").and_then(|e| e.as_str()) == Some("Allow"))
        .filter(|(_, s)| has(s.get("Action"), &["*", "*:*"]) && has(s.get("Resource"), &["*"]))
        .map(|(at, s)| {
            s.get("Sid")
                .and_then(|sid| sid.as_str())
                .filter(|sid| !sid.is_empty())
                .map_or_else(|| (at + 1).to_string(), str::to_owned)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test fails loudly")]

    use super::*;

    #[test]
    fn only_allowing_every_action_on_every_resource_is_full_admin() {
        let doc = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
        let admin = doc(r#"{"Statement":{"Effect":"Allow","Action":"*","Resource":"*"}}"#);
        assert_eq!(full_admin_statements(&admin), vec!["1"]);
        let listed = doc(r#"{"Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"},
            {"Sid":"All","Effect":"Allow","Action":["ec2:Describe*","*:*"],"Resource":["*"]}]}"#);
        assert_eq!(full_admin_statements(&listed), vec!["All"]);
        let narrow = doc(r#"{"Statement":[{"Effect":"Allow","Action":"*","Resource":"arn:aws:s3:::b"},
            {"Effect":"Deny","Action":"*","Resource":"*"}]}"#);
        assert!(full_admin_statements(&narrow).is_empty());
    }
}
