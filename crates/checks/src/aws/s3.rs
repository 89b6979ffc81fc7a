//! S3: the account's Block Public Access (S3 Control), and each bucket's (`ListBuckets`, every
//! page) Block Public Access, default encryption and policy. Buckets are read path-style in
//! their own region (`ListBuckets` names it; a redirect's `x-amz-bucket-region` otherwise).

use compliance_domain::check_result::{CheckResult, CheckedResource};
use futures_util::StreamExt as _;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;
use serde_json::Value;

use super::client::{AwsFailure, AwsRequest, Service};
use super::xml;
use super::{
    CONCURRENT_READS, S3_ACCOUNT_PUBLIC_ACCESS_BLOCK, S3_BUCKET_DENIES_HTTP, S3_BUCKET_ENCRYPTION,
    S3_BUCKET_PUBLIC_ACCESS_BLOCK, Session, errors, verdict, wants,
};

const LIST_BUCKETS: &str = "s3:ListAllMyBuckets";
const GET_BUCKET_PUBLIC_ACCESS_BLOCK: &str = "s3:GetBucketPublicAccessBlock";
const GET_ENCRYPTION_CONFIGURATION: &str = "s3:GetEncryptionConfiguration";
const GET_BUCKET_POLICY: &str = "s3:GetBucketPolicy";
const GET_ACCOUNT_PUBLIC_ACCESS_BLOCK: &str = "s3:GetAccountPublicAccessBlock";

const BUCKET_CHECKS: &[&str] = &[S3_BUCKET_PUBLIC_ACCESS_BLOCK, S3_BUCKET_ENCRYPTION, S3_BUCKET_DENIES_HTTP];

/// What a query value keeps unencoded: RFC 3986's unreserved characters.
pub(crate) const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// S3's checks of `wanted`.
pub(crate) async fn checks(session: &Session<'_>, wanted: &[&str]) -> Vec<CheckResult> {
    let mut results = Vec::new();
    if wants(wanted, S3_ACCOUNT_PUBLIC_ACCESS_BLOCK) {
        results.push(account_public_access_block(session).await);
    }
    let checks: Vec<&str> = BUCKET_CHECKS.iter().copied().filter(|c| wants(wanted, c)).collect();
    if checks.is_empty() {
        return results;
    }
    let buckets = match list_buckets(session).await {
        Ok(buckets) => buckets,
        Err(failure) => {
            results.extend(errors(&checks, &session.account.resource(), &failure.failure));
            return results;
        }
    };
    // The futures made first: a stream's `map` closure over borrowed items is not `Send` enough
    // for the reader's boxed future.
    let reads: Vec<_> = buckets.iter().map(|bucket| bucket_checks(session, bucket, &checks)).collect();
    let per_bucket = futures_util::stream::iter(reads).buffered(CONCURRENT_READS);
    results.extend(per_bucket.collect::<Vec<_>>().await.into_iter().flatten());
    results
}

#[derive(Deserialize)]
struct PublicAccessBlock {
    #[serde(rename = "BlockPublicAcls", default)]
    block_public_acls: bool,
    #[serde(rename = "IgnorePublicAcls", default)]
    ignore_public_acls: bool,
    #[serde(rename = "BlockPublicPolicy", default)]
    block_public_policy: bool,
    #[serde(rename = "RestrictPublicBuckets", default)]
    restrict_public_buckets: bool,
}

impl PublicAccessBlock {
    /// The switches that are off.
    fn off(&self) -> Vec<String> {
        [
            ("BlockPublicAcls", self.block_public_acls),
            ("IgnorePublicAcls", self.ignore_public_acls),
            ("BlockPublicPolicy", self.block_public_policy),
            ("RestrictPublicBuckets", self.restrict_public_buckets),
        ]
        .into_iter()
        .filter(|(_, on)| !on)
        .map(|(name, _)| name.to_owned())
        .collect()
    }
}

/// `aws.s3.account-public-access-block`: the account's four switches (S3 Control).
async fn account_public_access_block(session: &Session<'_>) -> CheckResult {
    let account = session.account.resource();
    let request = AwsRequest::get(
        Service::S3Control,
        &session.region,
        "/v20180820/configuration/publicAccessBlock".to_owned(),
        GET_ACCOUNT_PUBLIC_ACCESS_BLOCK,
    )
    .header("x-amz-account-id", session.account.id.clone());
    let block = match session.client.send(&request).await {
        Ok(body) => match xml::parse::<PublicAccessBlock>(&body, GET_ACCOUNT_PUBLIC_ACCESS_BLOCK) {
            Ok(block) => block,
            Err(failure) => return CheckResult::error(S3_ACCOUNT_PUBLIC_ACCESS_BLOCK, account, failure.failure),
        },
        Err(failure) if failure.code() == "NoSuchPublicAccessBlockConfiguration" => {
            let detail = "The account has no S3 Block Public Access configuration.".to_owned();
            return verdict(S3_ACCOUNT_PUBLIC_ACCESS_BLOCK, account, false, detail);
        }
        Err(failure) => return CheckResult::error(S3_ACCOUNT_PUBLIC_ACCESS_BLOCK, account, failure.failure),
    };
    let off = block.off();
    let detail = if off.is_empty() {
        "The account's S3 Block Public Access has its four switches on.".to_owned()
    } else {
        format!("The account's S3 Block Public Access has {} off.", off.join(", "))
    };
    verdict(S3_ACCOUNT_PUBLIC_ACCESS_BLOCK, account, off.is_empty(), detail)
}

#[derive(Deserialize)]
struct ListBucketsResponse {
    #[serde(rename = "Buckets", default)]
    buckets: BucketList,
    #[serde(rename = "ContinuationToken", default)]
    continuation_token: Option<String>,
}

#[derive(Deserialize, Default)]
struct BucketList {
    #[serde(rename = "Bucket", default)]
    items: Vec<Bucket>,
}

#[derive(Debug, Clone, Deserialize)]
struct Bucket {
    #[serde(rename = "Name")]
    name: String,
    /// Given when the request names a parameter (`max-buckets` here).
    #[serde(rename = "BucketRegion", default)]
    region: Option<String>,
}

/// Every bucket of the account, every page.
async fn list_buckets(session: &Session<'_>) -> Result<Vec<Bucket>, AwsFailure> {
    let mut buckets = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut path = "/?max-buckets=1000".to_owned();
        if let Some(token) = &token {
            path.push_str(&format!("&continuation-token={}", utf8_percent_encode(token, QUERY_VALUE)));
        }
        let request = AwsRequest::get(Service::S3, &session.region, path, LIST_BUCKETS);
        let body = session.client.send(&request).await?;
        let page: ListBucketsResponse = xml::parse(&body, LIST_BUCKETS)?;
        buckets.extend(page.buckets.items);
        match page.continuation_token.filter(|t| !t.is_empty()) {
            Some(next) if token.as_ref() != Some(&next) => token = Some(next),
            _ => return Ok(buckets),
        }
    }
}

/// `GET /{bucket}?{subresource}` in the bucket's region; once more in the region a redirect names.
async fn get_bucket(
    session: &Session<'_>,
    bucket: &Bucket,
    subresource: &str,
    action: &'static str,
) -> Result<Vec<u8>, AwsFailure> {
    let region = bucket.region.clone().filter(|r| !r.is_empty()).unwrap_or_else(|| session.region.clone());
    let path = format!("/{}?{subresource}", utf8_percent_encode(&bucket.name, QUERY_VALUE));
    let request = AwsRequest::get(Service::S3, &region, path.clone(), action);
    match session.client.send(&request).await {
        Err(failure) if failure.bucket_region.as_ref().is_some_and(|r| *r != region) => {
            let moved = failure.bucket_region.unwrap_or_default();
            session.client.send(&AwsRequest::get(Service::S3, &moved, path, action)).await
        }
        answer => answer,
    }
}

fn resource(session: &Session<'_>, bucket: &Bucket) -> CheckedResource {
    CheckedResource {
        kind: "aws.s3.bucket".into(),
        id: format!("arn:{}:s3:::{}", session.account.partition, bucket.name),
        name: bucket.name.clone(),
        region: bucket.region.clone().filter(|r| !r.is_empty()),
    }
}

#[derive(Deserialize)]
struct EncryptionConfiguration {
    #[serde(rename = "Rule", default)]
    rules: Vec<EncryptionRule>,
}

#[derive(Deserialize)]
struct EncryptionRule {
    #[serde(rename = "ApplyServerSideEncryptionByDefault", default)]
    default: Option<EncryptionByDefault>,
}

#[derive(Deserialize)]
struct EncryptionByDefault {
    #[serde(rename = "SSEAlgorithm")]
    algorithm: String,
}

async fn bucket_checks(session: &Session<'_>, bucket: &Bucket, checks: &[&str]) -> Vec<CheckResult> {
    let mut judged = Vec::new();
    for check in checks {
        judged.push(bucket_check(session, bucket, check).await);
    }
    judged
}

async fn bucket_check(session: &Session<'_>, bucket: &Bucket, check: &str) -> CheckResult {
    let resource = resource(session, bucket);
    let name = &bucket.name;
    match check {
        S3_BUCKET_PUBLIC_ACCESS_BLOCK => {
            match get_bucket(session, bucket, "publicAccessBlock", GET_BUCKET_PUBLIC_ACCESS_BLOCK).await {
                Ok(body) => match xml::parse::<PublicAccessBlock>(&body, GET_BUCKET_PUBLIC_ACCESS_BLOCK) {
                    Ok(block) => {
                        let off = block.off();
                        let detail = if off.is_empty() {
                            format!("Bucket {name} blocks public access with its four switches on.")
                        } else {
                            format!("Bucket {name} has Block Public Access {} off.", off.join(", "))
                        };
                        verdict(check, resource, off.is_empty(), detail)
                    }
                    Err(failure) => CheckResult::error(check, resource, failure.failure),
                },
                Err(failure) if failure.code() == "NoSuchPublicAccessBlockConfiguration" => {
                    verdict(check, resource, false, format!("Bucket {name} has no Block Public Access configuration."))
                }
                Err(failure) => CheckResult::error(check, resource, failure.failure),
            }
        }
        S3_BUCKET_ENCRYPTION => match get_bucket(session, bucket, "encryption", GET_ENCRYPTION_CONFIGURATION).await {
            Ok(body) => match xml::parse::<EncryptionConfiguration>(&body, GET_ENCRYPTION_CONFIGURATION) {
                Ok(configuration) => {
                    let algorithms: Vec<String> =
                        configuration.rules.into_iter().filter_map(|rule| rule.default.map(|d| d.algorithm)).collect();
                    match algorithms.iter().find(|a| matches!(a.as_str(), "AES256" | "aws:kms" | "aws:kms:dsse")) {
                        Some(algorithm) => verdict(
                            check,
                            resource,
                            true,
                            format!("Bucket {name} encrypts new objects with {algorithm}."),
                        ),
                        None => {
                            verdict(check, resource, false, format!("Bucket {name} has no default encryption rule."))
                        }
                    }
                }
                Err(failure) => CheckResult::error(check, resource, failure.failure),
            },
            Err(failure) if failure.code() == "ServerSideEncryptionConfigurationNotFoundError" => {
                verdict(check, resource, false, format!("Bucket {name} has no default encryption."))
            }
            Err(failure) => CheckResult::error(check, resource, failure.failure),
        },
        _ => match get_bucket(session, bucket, "policy", GET_BUCKET_POLICY).await {
            Ok(body) => match serde_json::from_slice::<Value>(&body) {
                Ok(policy) if denies_plain_http(&policy) => {
                    verdict(check, resource, true, format!("Bucket {name}'s policy denies requests without TLS."))
                }
                Ok(_) => verdict(
                    check,
                    resource,
                    false,
                    format!("Bucket {name}'s policy does not deny requests whose aws:SecureTransport is false."),
                ),
                Err(_) => CheckResult::error(
                    check,
                    resource,
                    xml::unreadable(GET_BUCKET_POLICY, "the bucket policy is not JSON").failure,
                ),
            },
            Err(failure) if failure.code() == "NoSuchBucketPolicy" => {
                verdict(check, resource, false, format!("Bucket {name} has no bucket policy."))
            }
            Err(failure) => CheckResult::error(check, resource, failure.failure),
        },
    }
}

/// Whether a bucket policy has a statement denying everyone every S3 action when
/// `aws:SecureTransport` is false.
fn denies_plain_http(policy: &Value) -> bool {
    let statements = match policy.get("Statement") {
        Some(Value::Array(statements)) => statements.iter().collect::<Vec<_>>(),
        Some(statement) => vec![statement],
        None => Vec::new(),
    };
    let strings = |value: Option<&Value>| -> Vec<String> {
        match value {
            Some(Value::String(one)) => vec![one.clone()],
            Some(Value::Bool(b)) => vec![b.to_string()],
            Some(Value::Array(many)) => many
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned).or_else(|| v.as_bool().map(|b| b.to_string())))
                .collect(),
            _ => Vec::new(),
        }
    };
    statements.into_iter().any(|statement| {
        let everyone = match statement.get("Principal") {
            Some(Value::Object(principal)) => strings(principal.get("AWS")).iter().any(|p| p == "*"),
            principal => strings(principal).iter().any(|p| p == "*"),
        };
        let every_action = strings(statement.get("Action")).iter().any(|a| a == "*" || a.eq_ignore_ascii_case("s3:*"));
        let insecure = statement
            .get("Condition")
            .and_then(Value::as_object)
            .and_then(|conditions| conditions.iter().find(|(operator, _)| operator.eq_ignore_ascii_case("Bool")))
            .and_then(|(_, keys)| keys.as_object())
            .and_then(|keys| keys.iter().find(|(key, _)| key.eq_ignore_ascii_case("aws:SecureTransport")))
            .is_some_and(|(_, value)| {
                let values = strings(Some(value));
                !values.is_empty() && values.iter().all(|v| v.eq_ignore_ascii_case("false"))
            });
        statement.get("Effect").and_then(Value::as_str) == Some("Deny") && everyone && every_action && insecure
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test fails loudly")]

    use super::*;

    #[test]
    fn a_policy_denies_plain_http_only_for_everyone_and_every_action() {
        let policy = |s: &str| serde_json::from_str::<Value>(s).unwrap();
        let good = policy(
            r#"{"Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::b","arn:aws:s3:::b/*"],
            "Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}"#,
        );
        assert!(denies_plain_http(&good));
        let aws_principal = policy(
            r#"{"Statement":{"Effect":"Deny","Principal":{"AWS":["*"]},"Action":["*"],"Resource":"*",
            "Condition":{"Bool":{"aws:securetransport":false}}}}"#,
        );
        assert!(denies_plain_http(&aws_principal));
        let only_puts = policy(
            r#"{"Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"*",
            "Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}"#,
        );
        assert!(!denies_plain_http(&only_puts));
        let allows = policy(
            r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*",
            "Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}"#,
        );
        assert!(!denies_plain_http(&allows));
        assert!(!denies_plain_http(&policy(r#"{"Statement":[]}"#)));
    }
}
