//! AWS's checks (`checks/aws.json`), each request signed with Signature Version 4 by `aws-sigv4`
//! (docs/decisions/2026-12-07-aws-checks-signed-with-aws-sigv4.md).
//!
//! A run opens a session first: the connection's access key, or the temporary credentials of the
//! role it names (`sts:AssumeRole`), and the account they are of (`sts:GetCallerIdentity`, which
//! no policy can refuse). Each check then reads what it needs, the reads shared by several checks
//! done once (the IAM credential report, the account summary, the bucket list, the regions).
//!
//! Resources: an account-wide check names the account (`aws.account`, its id); a check per
//! region names the region (`aws.region`, its code, with the region); the others name each
//! resource with its ARN. A read that fails is an `error` result for what it would have covered:
//! the account (`aws.account`) for an account-wide read, the region (`aws.region`) for a regional
//! one, the resource itself for a read of one resource.

mod client;
mod cloudtrail;
mod config;
mod credential_report;
mod ec2;
mod guardduty;
mod iam;
mod kms;
mod rds;
mod regions;
mod s3;
mod sts;
mod xml;

use aws_credential_types::Credentials;
use compliance_credentials::CredentialValues;
use compliance_domain::check::CheckOutcome;
use compliance_domain::check_result::{CheckResult, CheckedResource, ReadFailure};
use compliance_ports::CheckTarget;
use secrecy::ExposeSecret;

use self::client::{AwsClient, AwsFailure, is_account_id, is_region};
use crate::http::CheckHttp;

pub(crate) const ROOT_MFA: &str = "aws.iam.root-mfa";
pub(crate) const ROOT_ACCESS_KEYS: &str = "aws.iam.root-access-keys";
pub(crate) const ROOT_UNUSED: &str = "aws.iam.root-unused";
pub(crate) const USER_CONSOLE_MFA: &str = "aws.iam.user-console-mfa";
pub(crate) const ACCESS_KEY_AGE: &str = "aws.iam.access-key-age";
pub(crate) const UNUSED_CREDENTIALS: &str = "aws.iam.unused-credentials";
pub(crate) const PASSWORD_POLICY: &str = "aws.iam.password-policy";
pub(crate) const NO_FULL_ADMIN_POLICY: &str = "aws.iam.no-full-admin-policy";
pub(crate) const S3_ACCOUNT_PUBLIC_ACCESS_BLOCK: &str = "aws.s3.account-public-access-block";
pub(crate) const S3_BUCKET_PUBLIC_ACCESS_BLOCK: &str = "aws.s3.bucket-public-access-block";
pub(crate) const S3_BUCKET_ENCRYPTION: &str = "aws.s3.bucket-encryption";
pub(crate) const S3_BUCKET_DENIES_HTTP: &str = "aws.s3.bucket-denies-http";
pub(crate) const CLOUDTRAIL_MULTI_REGION: &str = "aws.cloudtrail.multi-region-trail";
pub(crate) const EBS_DEFAULT_ENCRYPTION: &str = "aws.ec2.ebs-default-encryption";
pub(crate) const SECURITY_GROUP_ADMIN_PORTS: &str = "aws.ec2.security-group-admin-ports";
pub(crate) const VPC_FLOW_LOGS: &str = "aws.vpc.flow-logs";
pub(crate) const CONFIG_RECORDING: &str = "aws.config.recording";
pub(crate) const GUARDDUTY_ENABLED: &str = "aws.guardduty.enabled";
pub(crate) const RDS_INSTANCE_ENCRYPTED: &str = "aws.rds.instance-encrypted";
pub(crate) const RDS_CLUSTER_ENCRYPTED: &str = "aws.rds.cluster-encrypted";
pub(crate) const RDS_INSTANCE_NOT_PUBLIC: &str = "aws.rds.instance-not-public";
pub(crate) const RDS_INSTANCE_BACKUPS: &str = "aws.rds.instance-backups";
pub(crate) const KMS_KEY_ROTATION: &str = "aws.kms.key-rotation";

/// The checks this module runs.
pub(crate) const CHECKS: &[&str] = &[
    ROOT_MFA,
    ROOT_ACCESS_KEYS,
    ROOT_UNUSED,
    USER_CONSOLE_MFA,
    ACCESS_KEY_AGE,
    UNUSED_CREDENTIALS,
    PASSWORD_POLICY,
    NO_FULL_ADMIN_POLICY,
    S3_ACCOUNT_PUBLIC_ACCESS_BLOCK,
    S3_BUCKET_PUBLIC_ACCESS_BLOCK,
    S3_BUCKET_ENCRYPTION,
    S3_BUCKET_DENIES_HTTP,
    CLOUDTRAIL_MULTI_REGION,
    EBS_DEFAULT_ENCRYPTION,
    SECURITY_GROUP_ADMIN_PORTS,
    VPC_FLOW_LOGS,
    CONFIG_RECORDING,
    GUARDDUTY_ENABLED,
    RDS_INSTANCE_ENCRYPTED,
    RDS_CLUSTER_ENCRYPTED,
    RDS_INSTANCE_NOT_PUBLIC,
    RDS_INSTANCE_BACKUPS,
    KMS_KEY_ROTATION,
];

/// The checks that read every enabled region (`ec2:DescribeRegions` first).
const REGIONAL: &[&str] = &[
    EBS_DEFAULT_ENCRYPTION,
    SECURITY_GROUP_ADMIN_PORTS,
    VPC_FLOW_LOGS,
    CONFIG_RECORDING,
    GUARDDUTY_ENABLED,
    RDS_INSTANCE_ENCRYPTED,
    RDS_CLUSTER_ENCRYPTED,
    RDS_INSTANCE_NOT_PUBLIC,
    RDS_INSTANCE_BACKUPS,
    KMS_KEY_ROTATION,
];

/// How many reads of one list's items (buckets, policies) are in flight at once.
pub(crate) const CONCURRENT_READS: usize = 8;

/// The regional checks whose resource is the region itself: one result per region, those the
/// account has not opted in to `not_applicable`. The others have no resources there.
const PER_REGION: &[&str] = &[EBS_DEFAULT_ENCRYPTION, CONFIG_RECORDING, GUARDDUTY_ENABLED];

/// `endpoint`: one URL every service is called at instead of AWS's own (moto in tests).
pub(crate) async fn read(http: &CheckHttp, endpoint: Option<&str>, target: &CheckTarget) -> Vec<CheckResult> {
    let wanted: Vec<&'static str> =
        CHECKS.iter().copied().filter(|id| target.checks.iter().any(|asked| asked == id)).collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let session = match Session::open(http, endpoint, &target.values).await {
        Ok(session) => session,
        Err((account, failure)) => return errors(&wanted, &account.resource(), &failure.failure),
    };
    let now = target.now.to_offset();
    let mut results = Vec::new();
    results.extend(iam::account_summary_checks(&session, &wanted).await);
    results.extend(credential_report::checks(&session, &wanted, now).await);
    results.extend(iam::password_policy_check(&session, &wanted).await);
    results.extend(iam::full_admin_policy_check(&session, &wanted).await);
    results.extend(s3::checks(&session, &wanted).await);
    results.extend(cloudtrail::checks(&session, &wanted).await);
    let regional: Vec<&'static str> = wanted.iter().copied().filter(|id| REGIONAL.contains(id)).collect();
    if !regional.is_empty() {
        match regions::describe(&session).await {
            Ok(regions) => results.extend(regional_checks(&session, &regions, &regional).await),
            Err(failure) => results.extend(errors(&regional, &session.account.resource(), &failure.failure)),
        }
    }
    results
}

/// The regional checks of `wanted` in every region, the regions read at once (each region's
/// reads one after another), the results in the regions' order.
async fn regional_checks(
    session: &Session<'_>,
    regions: &[regions::Region],
    wanted: &[&'static str],
) -> Vec<CheckResult> {
    let per_region = regions.iter().map(|region| async move {
        let mut results = Vec::new();
        if !region.enabled {
            for check in PER_REGION.iter().filter(|check| wants(wanted, check)) {
                let detail = format!("The account has not opted in to region {}.", region.name);
                let resource = session.account.region_resource(&region.name);
                results.push(CheckResult::judged(check, resource, CheckOutcome::NotApplicable, detail));
            }
            return results;
        }
        let name = region.name.as_str();
        results.extend(ec2::checks(session, name, wanted).await);
        if wants(wanted, CONFIG_RECORDING) {
            results.push(config::recording(session, name).await);
        }
        if wants(wanted, GUARDDUTY_ENABLED) {
            results.push(guardduty::enabled(session, name).await);
        }
        results.extend(rds::checks(session, name, wanted).await);
        if wants(wanted, KMS_KEY_ROTATION) {
            results.extend(kms::key_rotation(session, name).await);
        }
        results
    });
    futures_util::future::join_all(per_region).await.into_iter().flatten().collect()
}

/// The account the credentials are of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Account {
    /// The 12-digit id, or `unknown` when the credentials did not say.
    pub(crate) id: String,
    /// `aws`, `aws-cn`, `aws-us-gov`: the first part of its ARNs.
    pub(crate) partition: String,
}

impl Account {
    /// The account, as the resource of an account-wide check or read.
    pub(crate) fn resource(&self) -> CheckedResource {
        CheckedResource { kind: "aws.account".into(), id: self.id.clone(), name: self.id.clone(), region: None }
    }

    /// A region of the account, as the resource of a check per region or of a regional read.
    pub(crate) fn region_resource(&self, region: &str) -> CheckedResource {
        CheckedResource {
            kind: "aws.region".into(),
            id: region.to_owned(),
            name: region.to_owned(),
            region: Some(region.to_owned()),
        }
    }

    /// The account named by a role's ARN (`arn:aws:iam::123456789012:role/x`), before anything
    /// was read, or an unknown one.
    fn of_role(role_arn: Option<&str>) -> Self {
        let mut parts = role_arn.unwrap_or("").split(':');
        let partition = parts.nth(1).filter(|p| p.starts_with("aws")).unwrap_or("aws").to_owned();
        let id = parts.nth(2).filter(|id| is_account_id(id)).unwrap_or("unknown").to_owned();
        Self { id, partition }
    }
}

/// What every check of a run reads with: the client with the run's credentials, the account,
/// and the connection's region (where regional reads of account-wide settings go).
pub(crate) struct Session<'a> {
    pub(crate) client: AwsClient<'a>,
    pub(crate) account: Account,
    pub(crate) region: String,
    pub(crate) http: &'a CheckHttp,
}

impl<'a> Session<'a> {
    /// The connection's key (or its role's credentials) and who they are; a failure names the
    /// account as far as it is known.
    async fn open(
        http: &'a CheckHttp,
        endpoint: Option<&'a str>,
        values: &CredentialValues,
    ) -> Result<Self, (Account, AwsFailure)> {
        let field =
            |id: &str| values.get(id).map(|value| value.expose_secret().trim().to_owned()).filter(|v| !v.is_empty());
        let role_arn = field("role_arn");
        let mut account = Account::of_role(role_arn.as_deref());
        let missing = |name: &str, action: &str| {
            let failure = ReadFailure::new("missing_credentials", &format!("the connection has no {name}"), action);
            AwsFailure { failure, bucket_region: None }
        };
        let first_action = if role_arn.is_some() { sts::ASSUME_ROLE } else { sts::GET_CALLER_IDENTITY };
        let (Some(key_id), Some(secret)) = (field("access_key_id"), field("secret_access_key")) else {
            return Err((account, missing("access key", first_action)));
        };
        let region = field("region").unwrap_or_default();
        if !is_region(&region) {
            return Err((account, missing("valid region", first_action)));
        }
        let mut client = AwsClient::new(http, endpoint, Credentials::new(key_id, secret, None, None, "connection"));
        if let Some(role_arn) = &role_arn {
            let external_id = field("external_id");
            let assumed = sts::assume_role(&client, &region, role_arn, external_id.as_deref())
                .await
                .map_err(|f| (account.clone(), f))?;
            client = client.with_credentials(assumed);
        }
        let identity = sts::caller_identity(&client, &region).await.map_err(|f| (account.clone(), f))?;
        let partition = identity.arn.split(':').nth(1).filter(|p| p.starts_with("aws")).unwrap_or("aws");
        account = Account { id: identity.account, partition: partition.to_owned() };
        client.set_account(&account.id);
        Ok(Self { client, account, region, http })
    }
}

/// Whether `check` is one of `wanted`.
pub(crate) fn wants(wanted: &[&str], check: &str) -> bool {
    wanted.contains(&check)
}

/// One `error` result per check of `checks` that is wanted, for `resource`.
pub(crate) fn errors(checks: &[&str], resource: &CheckedResource, failure: &ReadFailure) -> Vec<CheckResult> {
    checks.iter().map(|check| CheckResult::error(check, resource.clone(), failure.clone())).collect()
}

/// A pass or a failure.
pub(crate) fn verdict(check: &str, resource: CheckedResource, pass: bool, detail: String) -> CheckResult {
    let outcome = if pass { CheckOutcome::Pass } else { CheckOutcome::Fail };
    CheckResult::judged(check, resource, outcome, detail)
}

/// Names for a detail: the first few, and how many more.
pub(crate) fn listed(names: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut text = names.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_roles_arn_names_its_account_before_anything_is_read() {
        let account = Account::of_role(Some("arn:aws-us-gov:iam::123456789012:role/Audit"));
        assert_eq!(account, Account { id: "123456789012".into(), partition: "aws-us-gov".into() });
        assert_eq!(Account::of_role(Some("not an arn")).id, "unknown");
        assert_eq!(Account::of_role(None), Account { id: "unknown".into(), partition: "aws".into() });
    }

    #[test]
    fn every_check_run_here_is_in_the_catalog_with_its_reads() {
        for id in CHECKS {
            let check = compliance_domain::check::check(id);
            assert!(check.is_some_and(|check| check.provider == "aws"), "{id} is not an AWS check of the catalog");
        }
    }
}
