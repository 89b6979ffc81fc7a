#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]
//! The AWS checks against a real moto_server (a child process per test, on a port it picks:
//! `moto_server` and `python3` are found on `PATH`, as `cargo xtask ci` sets it up with
//! target/tools/venv/bin first), its IAM authentication switched on once the fixtures are in
//! (`POST /moto-api/reset-auth` with `0`: from then on every request's SigV4 signature is
//! verified and every action is checked against the caller's IAM policies). Fixtures are made
//! with boto3 (moto's own dependency). What moto cannot play is played by wiremock with AWS's
//! documented answers: the credential report's root row, the root user's MFA and keys, the
//! paging of EC2's, S3's, GuardDuty's, KMS's and RDS's lists, throttling, S3's redirect to a
//! bucket's region. moto 5.2.1 cannot verify a GuardDuty request's signature at all (boto3's are
//! refused too): GuardDuty is read from moto with its authentication off.

use std::collections::BTreeMap;
use std::time::Duration;

use compliance_checks::{CheckEndpoints, CheckHttpSettings, HttpCheckReader};
use compliance_credentials::{CredentialValues, RequestAuth};
use compliance_domain::Timestamp;
use compliance_domain::check::CheckOutcome;
use compliance_domain::check_result::CheckResult;
use compliance_ports::{CheckReader, CheckTarget};
use secrecy::SecretString;
use serde_json::{Value, json};

const ACCOUNT: &str = "123456789012";

// ---------------------------------------------------------------------------------------------
// moto
// ---------------------------------------------------------------------------------------------

#[path = "../../../tests/support/moto.rs"]
mod moto_server;
use moto_server::Moto;

/// Runs `script` with boto3 (moto's authentication off), after the shared prelude
/// (`client(service, region="us-east-1", account=None)`, the dict `out` the script fills) and
/// [`USERS`]: `user(name, actions, account=None)` (an IAM user with an inline policy of `actions`
/// and an access key, returned as the connection's fields) and `CATALOG` (the actions of
/// docs/checks.md's policy). Authentication is on again afterwards; `out` is returned.
async fn seed(moto: &Moto, script: &str) -> Value {
    authentication(moto, false).await;
    let out = moto.boto3(&format!("{USERS}\n{script}"), &json!(catalog_policy_actions()));
    authentication(moto, true).await;
    out
}

/// moto's IAM authentication: on, every request must be signed by a key of a user (or an
/// assumed role) whose policies allow the action; off, anything goes.
async fn authentication(moto: &Moto, on: bool) {
    let response = reqwest::Client::new()
        .post(format!("{}/moto-api/reset-auth", moto.endpoint))
        .body(if on { "0" } else { "inf" })
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "moto-api/reset-auth: {}", response.status());
}

const USERS: &str = r#"
CATALOG = ARGS

def user(name, actions, account=None):
    iam = client("iam", account=account)
    iam.create_user(UserName=name)
    document = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]}
    iam.put_user_policy(UserName=name, PolicyName="checks", PolicyDocument=json.dumps(document))
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return {"access_key_id": key["AccessKeyId"], "secret_access_key": key["SecretAccessKey"]}
"#;

/// The read-only policy docs/checks.md asks customers for: every `reads` of the AWS checks.
fn catalog_policy_actions() -> Vec<String> {
    let mut actions: Vec<String> = compliance_domain::check::catalog()
        .iter()
        .filter(|check| check.provider == "aws")
        .flat_map(|check| check.reads.iter().cloned())
        .collect();
    actions.sort();
    actions.dedup();
    actions
}

/// moto 5.2.1 authorizes S3 reads under other names than AWS: `GetBucketEncryption` and
/// `GetBucketPublicAccessBlock` as `s3:ListBucket` (its S3 action map has no entry for them;
/// AWS asks for `s3:GetEncryptionConfiguration` and `s3:GetBucketPublicAccessBlock`), S3
/// Control's `GetPublicAccessBlock` as `s3:GetPublicAccessBlock` (AWS:
/// `s3:GetAccountPublicAccessBlock`). The S3 test's auditor gets the catalog's policy plus these.
const MOTO_S3_EXTRA: &str = r#"["s3:ListBucket", "s3:GetPublicAccessBlock"]"#;

// ---------------------------------------------------------------------------------------------
// Running the checks
// ---------------------------------------------------------------------------------------------

fn settings() -> CheckHttpSettings {
    CheckHttpSettings {
        attempts: 3,
        first_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(100),
        ..CheckHttpSettings::default()
    }
}

fn reader(endpoint: &str) -> HttpCheckReader {
    let endpoints = CheckEndpoints { aws: Some(endpoint.to_owned()), ..CheckEndpoints::default() };
    HttpCheckReader::new(endpoints, settings()).unwrap()
}

/// A connection's fields: `key` (`access_key_id`, `secret_access_key`), the region, a role.
fn values(key: &Value, region: &str, role_arn: Option<&str>) -> CredentialValues {
    let mut values = BTreeMap::new();
    for field in ["access_key_id", "secret_access_key"] {
        values.insert(field.to_owned(), SecretString::from(key[field].as_str().unwrap().to_owned()));
    }
    values.insert("region".to_owned(), SecretString::from(region.to_owned()));
    if let Some(role_arn) = role_arn {
        values.insert("role_arn".to_owned(), SecretString::from(role_arn.to_owned()));
    }
    CredentialValues::from_validated(values)
}

fn target(values: CredentialValues, checks: &[&str], now: Timestamp) -> CheckTarget {
    CheckTarget {
        provider: "aws".into(),
        auth: RequestAuth::Custom,
        values,
        checks: checks.iter().map(|c| (*c).to_owned()).collect(),
        period_start: now,
        now,
        devices: Default::default(),
    }
}

async fn run(endpoint: &str, key: &Value, checks: &[&str]) -> Vec<CheckResult> {
    run_at(endpoint, key, checks, Timestamp::now()).await
}

async fn run_at(endpoint: &str, key: &Value, checks: &[&str], now: Timestamp) -> Vec<CheckResult> {
    let reader = reader(endpoint);
    for check in checks {
        assert!(reader.supports(check), "{check} is not run");
    }
    let results = reader.read(&target(values(key, "us-east-1", None), checks, now)).await;
    assert_no_secret(&results, key);
    results
}

/// No result holds the key's secret (or its id), whatever happened.
fn assert_no_secret(results: &[CheckResult], key: &Value) {
    let json = serde_json::to_string(results).unwrap();
    for field in ["secret_access_key", "access_key_id"] {
        if let Some(secret) = key[field].as_str() {
            assert!(!json.contains(secret), "a result holds the {field}: {json}");
        }
    }
}

/// The results of `check`.
fn of<'a>(results: &'a [CheckResult], check: &str) -> Vec<&'a CheckResult> {
    results.iter().filter(|r| r.check_id == check).collect()
}

/// The one result of `check` for the resource named `name`.
fn named<'a>(results: &'a [CheckResult], check: &str, name: &str) -> &'a CheckResult {
    let found: Vec<_> = of(results, check).into_iter().filter(|r| r.resource.name == name).collect();
    assert_eq!(found.len(), 1, "{check} has {} results named {name}: {results:#?}", found.len());
    found[0]
}

fn later(days: i64) -> Timestamp {
    Timestamp::from_offset(Timestamp::now().to_offset() + time::Duration::days(days))
}

// ---------------------------------------------------------------------------------------------
// Signing, role assumption, refusals
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn aws_moto_verifies_the_signature_and_a_wrong_secret_is_an_error_for_every_check() {
    let moto = Moto::start().await;
    let seeded = seed(&moto, r#"out["auditor"] = user("auditor", CATALOG)"#).await;
    let checks = ["aws.iam.password-policy", "aws.s3.bucket-encryption", "aws.ec2.ebs-default-encryption"];

    let right = run(&moto.endpoint, &seeded["auditor"], &checks).await;
    assert!(right.iter().all(|r| r.outcome != CheckOutcome::Error), "{right:#?}");
    let password = named(&right, "aws.iam.password-policy", ACCOUNT);
    assert_eq!((password.resource.kind.as_str(), password.resource.id.as_str()), ("aws.account", ACCOUNT));

    let mut wrong = seeded["auditor"].clone();
    wrong["secret_access_key"] = json!("not-the-secret-of-this-key");
    let results = run(&moto.endpoint, &wrong, &checks).await;
    assert_eq!(results.len(), checks.len(), "one error per check: {results:#?}");
    for result in &results {
        assert_eq!(result.outcome, CheckOutcome::Error);
        let failure = result.failure.as_ref().unwrap();
        assert_eq!(
            (failure.code.as_str(), failure.action.as_str()),
            ("SignatureDoesNotMatch", "sts:GetCallerIdentity")
        );
        // The account is not known yet: the result names no account it could not read.
        assert_eq!(result.resource.id, "unknown");
    }
}

#[tokio::test]
async fn aws_a_refused_read_is_an_error_naming_the_action_and_only_for_what_it_covers() {
    let moto = Moto::start().await;
    let seeded = seed(
        &moto,
        r#"
actions = [a for a in CATALOG if a != "iam:GenerateCredentialReport"]
out["auditor"] = user("auditor", actions)
"#,
    )
    .await;
    let checks = ["aws.iam.user-console-mfa", "aws.iam.access-key-age", "aws.iam.password-policy"];
    let results = run(&moto.endpoint, &seeded["auditor"], &checks).await;
    for check in ["aws.iam.user-console-mfa", "aws.iam.access-key-age"] {
        let result = named(&results, check, ACCOUNT);
        assert_eq!(result.outcome, CheckOutcome::Error);
        assert_eq!(result.resource.kind, "aws.account");
        let failure = result.failure.as_ref().unwrap();
        assert_eq!((failure.code.as_str(), failure.action.as_str()), ("AccessDenied", "iam:GenerateCredentialReport"));
        assert!(failure.message.contains("iam:GenerateCredentialReport"), "{}", failure.message);
        assert_eq!(result.detail, "could not read (iam:GenerateCredentialReport): AccessDenied");
        assert_eq!(of(&results, check).len(), 1);
    }
    // The password policy's read was allowed: judged, not an error.
    assert_eq!(named(&results, "aws.iam.password-policy", ACCOUNT).outcome, CheckOutcome::Fail);
}

#[tokio::test]
async fn aws_a_named_role_is_assumed_and_the_checks_read_its_account() {
    let moto = Moto::start().await;
    let seeded = seed(
        &moto,
        r#"
other = "222222222222"
out["caller"] = user("caller", ["sts:AssumeRole"], account="111111111111")
out["cannot"] = user("cannot", ["iam:GetAccountPasswordPolicy"], account="111111111111")
trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
         "Principal": {"AWS": "arn:aws:iam::111111111111:user/caller"}}]}
iam = client("iam", account=other)
role = iam.create_role(RoleName="Audit", AssumeRolePolicyDocument=json.dumps(trust))["Role"]
policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": CATALOG, "Resource": "*"}]}
iam.put_role_policy(RoleName="Audit", PolicyName="checks", PolicyDocument=json.dumps(policy))
iam.update_account_password_policy(MinimumPasswordLength=14, PasswordReusePrevention=24)
out["role"] = role["Arn"]
"#,
    )
    .await;
    let role = seeded["role"].as_str().unwrap();
    assert_eq!(role, "arn:aws:iam::222222222222:role/Audit");
    let reader = reader(&moto.endpoint);
    let checks = ["aws.iam.password-policy"];

    let as_role = target(values(&seeded["caller"], "eu-west-1", Some(role)), &checks, Timestamp::now());
    let results = reader.read(&as_role).await;
    assert_no_secret(&results, &seeded["caller"]);
    // The role's account, read with the role's policy (the caller itself may only assume it).
    let result = named(&results, "aws.iam.password-policy", "222222222222");
    assert_eq!(result.outcome, CheckOutcome::Pass, "{result:#?}");

    // The caller's own key cannot read its account's password policy: it holds no such grant.
    let direct = reader.read(&target(values(&seeded["caller"], "eu-west-1", None), &checks, Timestamp::now())).await;
    let result = named(&direct, "aws.iam.password-policy", "111111111111");
    assert_eq!(result.failure.as_ref().unwrap().action, "iam:GetAccountPasswordPolicy");

    // A key that may not assume the role: an error naming sts:AssumeRole, for the role's account.
    let refused =
        reader.read(&target(values(&seeded["cannot"], "eu-west-1", Some(role)), &checks, Timestamp::now())).await;
    let result = named(&refused, "aws.iam.password-policy", "222222222222");
    assert_eq!(result.outcome, CheckOutcome::Error);
    let failure = result.failure.as_ref().unwrap();
    assert_eq!((failure.code.as_str(), failure.action.as_str()), ("AccessDenied", "sts:AssumeRole"));
}

// ---------------------------------------------------------------------------------------------
// IAM
// ---------------------------------------------------------------------------------------------

const REPORT_CHECKS: [&str; 4] =
    ["aws.iam.root-unused", "aws.iam.user-console-mfa", "aws.iam.access-key-age", "aws.iam.unused-credentials"];

#[tokio::test]
async fn aws_the_credential_report_judges_every_user_and_every_active_key() {
    let moto = Moto::start().await;
    let seeded = seed(&moto,
            r#"
out["auditor"] = user("auditor", CATALOG)
iam = client("iam")
for name in ["alice", "bob", "carol"]:
    iam.create_user(UserName=name)
for name in ["alice", "bob"]:
    iam.create_login_profile(UserName=name, Password="A-l0ng-passw0rd!")
mfa = iam.create_virtual_mfa_device(VirtualMFADeviceName="alice")["VirtualMFADevice"]
iam.enable_mfa_device(UserName="alice", SerialNumber=mfa["SerialNumber"], AuthenticationCode1="123456", AuthenticationCode2="654321")
iam.create_access_key(UserName="alice")
iam.create_access_key(UserName="carol")
inactive = iam.create_access_key(UserName="carol")["AccessKey"]["AccessKeyId"]
iam.update_access_key(UserName="carol", AccessKeyId=inactive, Status="Inactive")
"#,
        )
        .await;
    let auditor = &seeded["auditor"];

    let today = run(&moto.endpoint, auditor, &REPORT_CHECKS).await;
    // One result per user (the auditor too), and per active key.
    let mfa = of(&today, "aws.iam.user-console-mfa");
    assert_eq!(mfa.len(), 4, "{mfa:#?}");
    assert_eq!(named(&today, "aws.iam.user-console-mfa", "alice").outcome, CheckOutcome::Pass);
    let bob = named(&today, "aws.iam.user-console-mfa", "bob");
    assert_eq!(bob.outcome, CheckOutcome::Fail);
    assert_eq!(bob.detail, "User bob has a console password and no MFA device.");
    assert_eq!(
        (bob.resource.kind.as_str(), bob.resource.id.as_str()),
        ("aws.iam.user", "arn:aws:iam::123456789012:user/bob")
    );
    assert_eq!(named(&today, "aws.iam.user-console-mfa", "carol").outcome, CheckOutcome::NotApplicable);

    let keys = of(&today, "aws.iam.access-key-age");
    let mut key_names: Vec<&str> = keys.iter().map(|r| r.resource.name.as_str()).collect();
    key_names.sort_unstable();
    // carol's second key is inactive: not in the population.
    assert_eq!(key_names, ["alice access key 1", "auditor access key 1", "carol access key 1"]);
    assert!(
        keys.iter().all(|r| r.outcome == CheckOutcome::Pass && r.resource.kind == "aws.iam.access-key"),
        "{keys:#?}"
    );
    assert_eq!(
        keys[0].resource.id,
        format!("arn:aws:iam::123456789012:user/{}#access_key_1", keys[0].resource.name.split(' ').next().unwrap())
    );
    assert!(of(&today, "aws.iam.unused-credentials").iter().all(|r| r.outcome == CheckOutcome::Pass));
    assert_eq!(of(&today, "aws.iam.unused-credentials").len(), 4);

    // moto's report has no root row (AWS's always has one): the root check cannot judge.
    let root = named(&today, "aws.iam.root-unused", ACCOUNT);
    assert_eq!(root.outcome, CheckOutcome::Error);
    assert_eq!(root.failure.as_ref().unwrap().code, "unreadable_answer");

    // A hundred days later: every key is too old, and unused credentials fail.
    let later = run_at(&moto.endpoint, auditor, &REPORT_CHECKS, later(100)).await;
    let alice_key = named(&later, "aws.iam.access-key-age", "alice access key 1");
    assert_eq!(alice_key.outcome, CheckOutcome::Fail);
    assert!(
        alice_key.detail.starts_with("Access key 1 of user alice was created 100 days ago"),
        "{}",
        alice_key.detail
    );
    let bob = named(&later, "aws.iam.unused-credentials", "bob");
    assert_eq!(bob.outcome, CheckOutcome::Fail);
    assert_eq!(bob.detail, "User bob: console password never used, created 100 days ago.");
    // The auditor's key was used today (by these reads): a hundred days before `now`.
    let auditor_unused = named(&later, "aws.iam.unused-credentials", "auditor");
    assert_eq!(auditor_unused.outcome, CheckOutcome::Fail);
    assert!(auditor_unused.detail.contains("access key 1 last used 100 days ago"), "{}", auditor_unused.detail);
}

#[tokio::test]
async fn aws_the_password_policy_and_the_root_users_summary_are_judged() {
    let moto = Moto::start().await;
    let seeded = seed(&moto, r#"out["auditor"] = user("auditor", CATALOG)"#).await;
    let auditor = &seeded["auditor"];
    let checks = ["aws.iam.password-policy", "aws.iam.root-mfa", "aws.iam.root-access-keys"];

    let results = run(&moto.endpoint, auditor, &checks).await;
    let none = named(&results, "aws.iam.password-policy", ACCOUNT);
    assert_eq!((none.outcome, none.detail.as_str()), (CheckOutcome::Fail, "The account has no IAM password policy."));
    // moto's account summary always says the root user has no MFA and no keys.
    assert_eq!(named(&results, "aws.iam.root-mfa", ACCOUNT).outcome, CheckOutcome::Fail);
    assert_eq!(named(&results, "aws.iam.root-access-keys", ACCOUNT).outcome, CheckOutcome::Pass);

    seed(&moto, r#"client("iam").update_account_password_policy(MinimumPasswordLength=8, PasswordReusePrevention=5)"#)
        .await;
    let weak = run(&moto.endpoint, auditor, &checks[..1]).await;
    let weak = named(&weak, "aws.iam.password-policy", ACCOUNT);
    assert_eq!(weak.outcome, CheckOutcome::Fail);
    assert_eq!(weak.detail, "The password policy asks for 8 characters, not 14 and remembers 5 passwords, not 24.");

    seed(
        &moto,
        r#"client("iam").update_account_password_policy(MinimumPasswordLength=16, PasswordReusePrevention=24)"#,
    )
    .await;
    let strong = run(&moto.endpoint, auditor, &checks[..1]).await;
    assert_eq!(named(&strong, "aws.iam.password-policy", ACCOUNT).outcome, CheckOutcome::Pass);
}

#[tokio::test]
async fn aws_every_policy_in_use_or_customer_managed_is_judged_over_every_page() {
    // AWS's managed policies are in moto's IAM only when asked for.
    let moto = Moto::start_with(&[("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")]).await;
    let seeded = seed(&moto,
            r#"
out["auditor"] = user("auditor", CATALOG)
iam = client("iam")
def policy(name, statements):
    return iam.create_policy(PolicyName=name, PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": statements}))["Policy"]["Arn"]
# More than one page of ListPolicies (100 a page).
for n in range(105):
    policy(f"read-{n:03}", [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}])
policy("everything", [{"Sid": "Admin", "Effect": "Allow", "Action": "*:*", "Resource": "*"}])
policy("denies-everything", [{"Effect": "Deny", "Action": "*", "Resource": "*"}])
iam.create_user(UserName="admin")
iam.attach_user_policy(UserName="admin", PolicyArn="arn:aws:iam::aws:policy/AdministratorAccess")
iam.attach_user_policy(UserName="admin", PolicyArn="arn:aws:iam::aws:policy/ReadOnlyAccess")
"#,
        )
        .await;
    let results = run(&moto.endpoint, &seeded["auditor"], &["aws.iam.no-full-admin-policy"]).await;
    let names: Vec<&str> = results.iter().map(|r| r.resource.name.as_str()).collect();
    // 107 customer-managed policies, and the two AWS-managed ones attached; no other AWS-managed one.
    assert_eq!(results.len(), 109, "{names:?}");
    assert!(results.iter().all(|r| r.resource.kind == "aws.iam.policy"));
    let everything = named(&results, "aws.iam.no-full-admin-policy", "everything");
    assert_eq!(everything.outcome, CheckOutcome::Fail);
    assert_eq!(
        everything.detail,
        "Policy everything (not attached, version v1) allows every action on every resource in statement Admin."
    );
    assert_eq!(everything.resource.id, "arn:aws:iam::123456789012:policy/everything");
    let admin = named(&results, "aws.iam.no-full-admin-policy", "AdministratorAccess");
    assert_eq!(admin.outcome, CheckOutcome::Fail);
    assert_eq!(admin.resource.id, "arn:aws:iam::aws:policy/AdministratorAccess");
    assert_eq!(named(&results, "aws.iam.no-full-admin-policy", "ReadOnlyAccess").outcome, CheckOutcome::Pass);
    assert_eq!(named(&results, "aws.iam.no-full-admin-policy", "denies-everything").outcome, CheckOutcome::Pass);
    assert_eq!(named(&results, "aws.iam.no-full-admin-policy", "read-104").outcome, CheckOutcome::Pass);
}

// ---------------------------------------------------------------------------------------------
// S3
// ---------------------------------------------------------------------------------------------

const BUCKET_CHECKS: [&str; 3] =
    ["aws.s3.bucket-public-access-block", "aws.s3.bucket-encryption", "aws.s3.bucket-denies-http"];

#[tokio::test]
async fn aws_every_bucket_and_the_accounts_public_access_block_are_judged() {
    let moto = Moto::start().await;
    let seeded = seed(&moto, &format!(
            r#"
out["auditor"] = user("auditor", CATALOG + {MOTO_S3_EXTRA})
s3 = client("s3")
for name in ["good-bucket", "bad-bucket", "half-bucket"]:
    s3.create_bucket(Bucket=name)
everything_on = {{"BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True, "RestrictPublicBuckets": True}}
s3.put_public_access_block(Bucket="good-bucket", PublicAccessBlockConfiguration=everything_on)
s3.put_public_access_block(Bucket="half-bucket", PublicAccessBlockConfiguration=dict(everything_on, BlockPublicPolicy=False, RestrictPublicBuckets=False))
s3.put_bucket_encryption(Bucket="good-bucket", ServerSideEncryptionConfiguration={{
    "Rules": [{{"ApplyServerSideEncryptionByDefault": {{"SSEAlgorithm": "aws:kms"}}}}]}})
deny_http = {{"Version": "2012-10-17", "Statement": [{{"Sid": "TlsOnly", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
    "Resource": ["arn:aws:s3:::good-bucket", "arn:aws:s3:::good-bucket/*"],
    "Condition": {{"Bool": {{"aws:SecureTransport": "false"}}}}}}]}}
s3.put_bucket_policy(Bucket="good-bucket", Policy=json.dumps(deny_http))
other = {{"Version": "2012-10-17", "Statement": [{{"Effect": "Allow", "Principal": {{"AWS": "arn:aws:iam::123456789012:root"}},
    "Action": "s3:GetObject", "Resource": "arn:aws:s3:::half-bucket/*"}}]}}
s3.put_bucket_policy(Bucket="half-bucket", Policy=json.dumps(other))
"#
        ))
        .await;
    let auditor = &seeded["auditor"];
    let mut checks = BUCKET_CHECKS.to_vec();
    checks.push("aws.s3.account-public-access-block");
    let results = run(&moto.endpoint, auditor, &checks).await;
    for check in BUCKET_CHECKS {
        assert_eq!(of(&results, check).len(), 3, "one result per bucket: {results:#?}");
        let good = named(&results, check, "good-bucket");
        assert_eq!(good.outcome, CheckOutcome::Pass, "{good:#?}");
        assert_eq!(
            (good.resource.kind.as_str(), good.resource.id.as_str()),
            ("aws.s3.bucket", "arn:aws:s3:::good-bucket")
        );
        let bad = named(&results, check, "bad-bucket");
        assert_eq!(bad.outcome, CheckOutcome::Fail, "{bad:#?}");
    }
    let detail = |check, bucket| named(&results, check, bucket).detail.clone();
    assert_eq!(
        detail("aws.s3.bucket-public-access-block", "bad-bucket"),
        "Bucket bad-bucket has no Block Public Access configuration."
    );
    assert_eq!(
        detail("aws.s3.bucket-public-access-block", "half-bucket"),
        "Bucket half-bucket has Block Public Access BlockPublicPolicy, RestrictPublicBuckets off."
    );
    assert_eq!(
        detail("aws.s3.bucket-encryption", "good-bucket"),
        "Bucket good-bucket encrypts new objects with aws:kms."
    );
    assert_eq!(detail("aws.s3.bucket-encryption", "bad-bucket"), "Bucket bad-bucket has no default encryption.");
    assert_eq!(detail("aws.s3.bucket-denies-http", "bad-bucket"), "Bucket bad-bucket has no bucket policy.");
    assert_eq!(
        detail("aws.s3.bucket-denies-http", "half-bucket"),
        "Bucket half-bucket's policy does not deny requests whose aws:SecureTransport is false."
    );
    let account = named(&results, "aws.s3.account-public-access-block", ACCOUNT);
    assert_eq!(account.outcome, CheckOutcome::Fail, "{account:#?}");
    assert_eq!(account.detail, "The account has no S3 Block Public Access configuration.");

    // The account's switches, through S3 Control: boto3 would put the account id in the host
    // name, which moto's one address has no room for, so the request is made here.
    seed(&moto,
        r#"
import requests
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
switches = "".join(f"<{name}>true</{name}>" for name in ["BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets"])
body = f'<PublicAccessBlockConfiguration xmlns="http://awss3control.amazonaws.com/doc/2018-08-20/">{switches}</PublicAccessBlockConfiguration>'
request = AWSRequest(method="PUT", url=ENDPOINT + "/v20180820/configuration/publicAccessBlock", data=body,
                     headers={"x-amz-account-id": "123456789012"})
S3SigV4Auth(Credentials("AKIAFIXTURESFIXTURES", "fixtures"), "s3", "us-east-1").add_auth(request)
answer = requests.put(request.url, data=body, headers=dict(request.headers))
assert answer.status_code < 300, answer.text
"#,
    )
    .await;
    let results = run(&moto.endpoint, auditor, &["aws.s3.account-public-access-block"]).await;
    let account = named(&results, "aws.s3.account-public-access-block", ACCOUNT);
    assert_eq!(account.outcome, CheckOutcome::Pass, "{account:#?}");
}

// ---------------------------------------------------------------------------------------------
// CloudTrail
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn aws_a_logging_multi_region_trail_with_log_validation_passes_and_nothing_less() {
    let moto = Moto::start().await;
    let check = "aws.cloudtrail.multi-region-trail";
    let seeded = seed(&moto, r#"out["auditor"] = user("auditor", CATALOG)"#).await;
    let auditor = &seeded["auditor"];
    let none = run(&moto.endpoint, auditor, &[check]).await;
    assert_eq!(named(&none, check, ACCOUNT).detail, "The account has no CloudTrail trail.");

    seed(
        &moto,
        r#"
client("s3").create_bucket(Bucket="trails")
cloudtrail = client("cloudtrail")
cloudtrail.create_trail(Name="here-only", S3BucketName="trails", EnableLogFileValidation=True)
cloudtrail.start_logging(Name="here-only")
cloudtrail.create_trail(Name="everywhere", S3BucketName="trails", IsMultiRegionTrail=True, EnableLogFileValidation=True)
"#,
    )
    .await;
    let stopped = run(&moto.endpoint, auditor, &[check]).await;
    let stopped = named(&stopped, check, ACCOUNT);
    assert_eq!(stopped.outcome, CheckOutcome::Fail);
    assert_eq!(
        stopped.detail,
        "No trail records every region with log file validation while logging: everywhere is not logging, here-only is single-region."
    );

    seed(&moto, r#"client("cloudtrail").start_logging(Name="everywhere")"#).await;
    let logging = run(&moto.endpoint, auditor, &[check]).await;
    let logging = named(&logging, check, ACCOUNT);
    assert_eq!(logging.outcome, CheckOutcome::Pass, "{logging:#?}");
    assert_eq!(logging.detail, "Trail everywhere records every region, validates its log files and is logging.");
}

// ---------------------------------------------------------------------------------------------
// EC2, in every region
// ---------------------------------------------------------------------------------------------

const REGIONAL_CHECKS: [&str; 3] =
    ["aws.ec2.ebs-default-encryption", "aws.ec2.security-group-admin-ports", "aws.vpc.flow-logs"];

#[tokio::test]
async fn aws_regional_checks_read_every_enabled_region_and_skip_the_others() {
    let moto = Moto::start().await;
    let seeded = seed(&moto,
            r#"
out["auditor"] = user("auditor", CATALOG)
client("ec2", "us-east-1").enable_ebs_encryption_by_default()
ec2 = client("ec2", "eu-west-1")
vpc = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"][0]["VpcId"]
def group(name, permissions):
    group = ec2.create_security_group(GroupName=name, Description=name, VpcId=vpc)["GroupId"]
    if permissions:
        ec2.authorize_security_group_ingress(GroupId=group, IpPermissions=permissions)
    return group
out["open-ssh"] = group("open-ssh", [{"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}])
group("open-rdp-v6", [{"IpProtocol": "tcp", "FromPort": 3000, "ToPort": 4000, "Ipv6Ranges": [{"CidrIpv6": "::/0"}]}])
group("everything", [{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}])
group("internal-ssh", [{"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "IpRanges": [{"CidrIp": "10.0.0.0/8"}]}])
group("public-https", [{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}])
logged = ec2.create_vpc(CidrBlock="10.9.0.0/16", TagSpecifications=[{"ResourceType": "vpc", "Tags": [{"Key": "Name", "Value": "logged"}]}])["Vpc"]["VpcId"]
client("s3").create_bucket(Bucket="flow-logs")
ec2.create_flow_logs(ResourceIds=[logged], ResourceType="VPC", TrafficType="REJECT", LogDestinationType="s3",
                     LogDestination="arn:aws:s3:::flow-logs")
out["logged"] = logged
out["regions"] = {r["RegionName"]: r["OptInStatus"] for r in client("ec2").describe_regions(AllRegions=True)["Regions"]}
"#,
        )
        .await;
    let results = run(&moto.endpoint, &seeded["auditor"], &REGIONAL_CHECKS).await;
    assert!(results.iter().all(|r| r.outcome != CheckOutcome::Error), "{results:#?}");
    let regions = seeded["regions"].as_object().unwrap();
    // The commercial partition's regions: moto also lists GovCloud's and China's, which an
    // account of this partition does not have.
    let commercial: Vec<&str> =
        regions.keys().map(String::as_str).filter(|r| !r.starts_with("cn-") && !r.starts_with("us-gov-")).collect();
    let enabled: Vec<&str> = commercial.iter().copied().filter(|r| regions[*r] != "not-opted-in").collect();
    assert!(enabled.len() < commercial.len(), "moto lists regions not opted in to");

    // EBS: one result per region, those not opted in to not applicable.
    let ebs = of(&results, "aws.ec2.ebs-default-encryption");
    assert_eq!(ebs.len(), commercial.len());
    for result in &ebs {
        let region = result.resource.region.as_deref().unwrap();
        assert_eq!((result.resource.kind.as_str(), result.resource.id.as_str()), ("aws.region", region));
        let expected = match region {
            "us-east-1" => CheckOutcome::Pass,
            r if enabled.contains(&r) => CheckOutcome::Fail,
            _ => CheckOutcome::NotApplicable,
        };
        assert_eq!(result.outcome, expected, "{result:#?}");
    }
    assert_eq!(
        named(&results, "aws.ec2.ebs-default-encryption", "eu-west-1").detail,
        "EBS encryption by default is off in eu-west-1."
    );

    // Security groups: every group of every enabled region (moto's default group in each), none elsewhere.
    let groups = of(&results, "aws.ec2.security-group-admin-ports");
    assert!(groups.iter().all(|r| enabled.contains(&r.resource.region.as_deref().unwrap())));
    assert_eq!(
        groups.iter().filter(|r| r.resource.name == "default").count(),
        enabled.len() + 1,
        "a default group per VPC"
    );
    let open = named(&results, "aws.ec2.security-group-admin-ports", "open-ssh");
    let id = seeded["open-ssh"].as_str().unwrap();
    assert_eq!(open.outcome, CheckOutcome::Fail);
    assert_eq!(open.detail, format!("Security group open-ssh ({id}) allows SSH (TCP 22) from 0.0.0.0/0."));
    assert_eq!(open.resource.id, format!("arn:aws:ec2:eu-west-1:123456789012:security-group/{id}"));
    assert_eq!(open.resource.region.as_deref(), Some("eu-west-1"));
    let v6 = named(&results, "aws.ec2.security-group-admin-ports", "open-rdp-v6");
    assert!(v6.outcome == CheckOutcome::Fail && v6.detail.ends_with("allows RDP (TCP 3389) from ::/0."), "{v6:#?}");
    let everything = named(&results, "aws.ec2.security-group-admin-ports", "everything");
    assert!(everything.detail.ends_with("allows all traffic from 0.0.0.0/0."), "{everything:#?}");
    for name in ["internal-ssh", "public-https"] {
        assert_eq!(named(&results, "aws.ec2.security-group-admin-ports", name).outcome, CheckOutcome::Pass);
    }

    // VPCs: moto's default VPC in each enabled region has no flow log; the one logged passes.
    let vpcs = of(&results, "aws.vpc.flow-logs");
    assert_eq!(vpcs.len(), enabled.len() + 1);
    let logged = named(&results, "aws.vpc.flow-logs", "logged");
    assert_eq!(logged.outcome, CheckOutcome::Pass, "{logged:#?}");
    assert_eq!(
        logged.resource.id,
        format!("arn:aws:ec2:eu-west-1:123456789012:vpc/{}", seeded["logged"].as_str().unwrap())
    );
    let unlogged: Vec<_> = vpcs.iter().filter(|r| r.outcome == CheckOutcome::Fail).collect();
    assert_eq!(unlogged.len(), enabled.len());
    assert!(unlogged[0].detail.ends_with("has no active flow log."), "{:#?}", unlogged[0]);
}

// ---------------------------------------------------------------------------------------------
// What moto cannot play, played by wiremock with AWS's documented answers
// ---------------------------------------------------------------------------------------------

mod double {
    use wiremock::matchers::{body_string_contains, header_regex, method};
    use wiremock::{Mock, MockBuilder, MockServer, ResponseTemplate};

    /// A query-protocol operation, signed for `service` in `region`.
    pub fn operation(operation: &str, service: &str, region: &str) -> MockBuilder {
        Mock::given(method("POST")).and(body_string_contains(format!("Action={operation}&"))).and(header_regex(
            "authorization",
            &format!(r"^AWS4-HMAC-SHA256 Credential=[^/]+/\d{{8}}/{region}/{service}/aws4_request, "),
        ))
    }

    pub fn xml(body: &str) -> ResponseTemplate {
        ResponseTemplate::new(200).set_body_raw(body.as_bytes().to_vec(), "text/xml")
    }

    /// AWS with who the key is (`GetCallerIdentity`, signed for STS in `region`).
    pub async fn aws(region: &str) -> MockServer {
        let server = MockServer::start().await;
        operation("GetCallerIdentity", "sts", region)
            .respond_with(xml(
                r#"<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>
                <Arn>arn:aws:iam::123456789012:user/auditor</Arn><UserId>AIDAEXAMPLE</UserId><Account>123456789012</Account>
                </GetCallerIdentityResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></GetCallerIdentityResponse>"#,
            ))
            .mount(&server)
            .await;
        server
    }
}

fn some_key() -> Value {
    json!({"access_key_id": "AKIAIOSFODNN7EXAMPLE", "secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"})
}

async fn run_in(endpoint: &str, region: &str, checks: &[&str], now: Timestamp) -> Vec<CheckResult> {
    let results = reader(endpoint).read(&target(values(&some_key(), region, None), checks, now)).await;
    assert_no_secret(&results, &some_key());
    results
}

const REPORT_HEADER: &str = "user,arn,user_creation_time,password_enabled,password_last_used,password_last_changed,\
password_next_rotation,mfa_active,access_key_1_active,access_key_1_last_rotated,access_key_1_last_used_date,\
access_key_1_last_used_region,access_key_1_last_used_service,access_key_2_active,access_key_2_last_rotated,\
access_key_2_last_used_date,access_key_2_last_used_region,access_key_2_last_used_service,cert_1_active,\
cert_1_last_rotated,cert_2_active,cert_2_last_rotated";

/// moto's account summary always says no root MFA and no root keys, and its credential report
/// has no root row: AWS's answers (GetAccountSummary, the report's `<root_account>` row) here.
#[tokio::test]
async fn aws_the_root_user_is_judged_from_the_account_summary_and_the_reports_root_row() {
    use base64::Engine as _;
    use double::*;
    let aws = aws("eu-west-1").await;
    // IAM is signed for us-east-1 whatever the connection's region.
    operation("GetAccountSummary", "iam", "us-east-1")
        .respond_with(xml(
            r#"<GetAccountSummaryResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><GetAccountSummaryResult><SummaryMap>
            <entry><key>Users</key><value>2</value></entry><entry><key>AccountMFAEnabled</key><value>1</value></entry>
            <entry><key>AccountAccessKeysPresent</key><value>1</value></entry></SummaryMap></GetAccountSummaryResult>
            <ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></GetAccountSummaryResponse>"#,
        ))
        .mount(&aws)
        .await;
    // The report is being made at the first ask, complete at the next (polled, not slept on).
    operation("GenerateCredentialReport", "iam", "us-east-1")
        .respond_with(xml("<GenerateCredentialReportResponse><GenerateCredentialReportResult><State>STARTED</State>\
             <Description>No report exists. Starting a new report generation task</Description>\
             </GenerateCredentialReportResult></GenerateCredentialReportResponse>"))
        .up_to_n_times(1)
        .with_priority(1)
        .expect(1)
        .mount(&aws)
        .await;
    operation("GenerateCredentialReport", "iam", "us-east-1")
        .respond_with(xml("<GenerateCredentialReportResponse><GenerateCredentialReportResult><State>COMPLETE</State>\
             </GenerateCredentialReportResult></GenerateCredentialReportResponse>"))
        .with_priority(2)
        .mount(&aws)
        .await;
    let used = (Timestamp::now().to_offset() - time::Duration::days(10)).replace_nanosecond(0).unwrap();
    let used = used.format(&time::format_description::well_known::Rfc3339).unwrap();
    let csv = format!(
        "{REPORT_HEADER}\n<root_account>,arn:aws:iam::123456789012:root,2020-01-01T00:00:00+00:00,not_supported,{used},\
         not_supported,not_supported,true,true,2020-01-01T00:00:00+00:00,N/A,N/A,N/A,false,N/A,N/A,N/A,N/A,false,N/A,false,N/A\n"
    );
    let content = base64::engine::general_purpose::STANDARD.encode(csv);
    operation("GetCredentialReport", "iam", "us-east-1")
        .respond_with(xml(&format!(
            "<GetCredentialReportResponse><GetCredentialReportResult><Content>{content}</Content>\
             <ReportFormat>text/csv</ReportFormat><GeneratedTime>2026-01-01T00:00:00Z</GeneratedTime>\
             </GetCredentialReportResult></GetCredentialReportResponse>"
        )))
        .mount(&aws)
        .await;

    let checks = ["aws.iam.root-mfa", "aws.iam.root-access-keys", "aws.iam.root-unused", "aws.iam.user-console-mfa"];
    let results = run_in(&aws.uri(), "eu-west-1", &checks, Timestamp::now()).await;
    assert_eq!(named(&results, "aws.iam.root-mfa", ACCOUNT).outcome, CheckOutcome::Pass);
    let keys = named(&results, "aws.iam.root-access-keys", ACCOUNT);
    assert_eq!((keys.outcome, keys.detail.as_str()), (CheckOutcome::Fail, "The root user has access keys."));
    let unused = named(&results, "aws.iam.root-unused", ACCOUNT);
    assert_eq!(unused.outcome, CheckOutcome::Fail);
    assert_eq!(unused.detail, format!("The root user signed in to the console on {} (within 90 days).", &used[..10]));
    // The root row is not a user of the user checks.
    assert!(of(&results, "aws.iam.user-console-mfa").is_empty(), "{results:#?}");

    let later = run_in(&aws.uri(), "eu-west-1", &["aws.iam.root-unused"], later(81)).await;
    assert_eq!(named(&later, "aws.iam.root-unused", ACCOUNT).outcome, CheckOutcome::Pass);
}

/// moto returns EC2's lists and S3's bucket list in one page, answers no throttling, and
/// keeps every bucket in one region: AWS's paging, throttling and redirects here.
#[tokio::test]
async fn aws_every_page_is_read_throttling_is_retried_and_a_region_that_fails_is_an_error_for_itself() {
    use double::*;
    use wiremock::matchers::{body_string_contains, header_regex, method, path, query_param, query_param_is_missing};
    use wiremock::{Mock, ResponseTemplate};
    let aws = aws("eu-west-1").await;
    operation("DescribeRegions", "ec2", "eu-west-1")
        .and(body_string_contains("AllRegions=true"))
        .respond_with(xml(
            r#"<DescribeRegionsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>1</requestId><regionInfo>
            <item><regionName>eu-west-1</regionName><regionEndpoint>ec2.eu-west-1.amazonaws.com</regionEndpoint><optInStatus>opt-in-not-required</optInStatus></item>
            <item><regionName>ap-east-1</regionName><regionEndpoint>ec2.ap-east-1.amazonaws.com</regionEndpoint><optInStatus>not-opted-in</optInStatus></item>
            <item><regionName>af-south-1</regionName><regionEndpoint>ec2.af-south-1.amazonaws.com</regionEndpoint><optInStatus>opted-in</optInStatus></item>
            </regionInfo></DescribeRegionsResponse>"#,
        ))
        .mount(&aws)
        .await;
    let group = |id: &str, name: &str, port: u16| {
        format!(
            "<item><ownerId>123456789012</ownerId><groupId>{id}</groupId><groupName>{name}</groupName><groupDescription>x</groupDescription>\
             <vpcId>vpc-1</vpcId><ipPermissions><item><ipProtocol>tcp</ipProtocol><fromPort>{port}</fromPort><toPort>{port}</toPort>\
             <groups/><ipRanges><item><cidrIp>0.0.0.0/0</cidrIp></item></ipRanges><ipv6Ranges/><prefixListIds/></item></ipPermissions>\
             <ipPermissionsEgress/></item>"
        )
    };
    let page = |groups: String, next: &str| {
        xml(&format!(
            "<DescribeSecurityGroupsResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>1</requestId>\
             <securityGroupInfo>{groups}</securityGroupInfo>{next}</DescribeSecurityGroupsResponse>"
        ))
    };
    let ec2_error = |status: u16, code: &str| {
        ResponseTemplate::new(status).set_body_raw(
            format!("<Response><Errors><Error><Code>{code}</Code><Message>Request limit exceeded.</Message></Error></Errors><RequestID>1</RequestID></Response>"),
            "text/xml",
        )
    };
    // eu-west-1: throttled once, then two pages.
    operation("DescribeSecurityGroups", "ec2", "eu-west-1")
        .respond_with(ec2_error(503, "RequestLimitExceeded"))
        .up_to_n_times(1)
        .with_priority(1)
        .expect(1)
        .mount(&aws)
        .await;
    operation("DescribeSecurityGroups", "ec2", "eu-west-1")
        .and(body_string_contains("MaxResults=1000"))
        .and(body_string_contains("NextToken=page%2F2"))
        .respond_with(page(group("sg-2", "rdp", 3389), ""))
        .with_priority(2)
        .mount(&aws)
        .await;
    operation("DescribeSecurityGroups", "ec2", "eu-west-1")
        .respond_with(page(group("sg-1", "https", 443), "<nextToken>page/2</nextToken>"))
        .with_priority(3)
        .mount(&aws)
        .await;
    // af-south-1: throttled at every attempt (three), so an error for that region alone.
    operation("DescribeSecurityGroups", "ec2", "af-south-1")
        .respond_with(ec2_error(400, "RequestLimitExceeded"))
        .expect(3)
        .mount(&aws)
        .await;
    // ap-east-1, not opted in to: never read.
    Mock::given(header_regex("authorization", "/ap-east-1/"))
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&aws)
        .await;

    // S3: two pages of buckets, each read in its region; one whose region only a redirect tells.
    let bucket = |name: &str, region: Option<&str>| {
        let region = region.map(|r| format!("<BucketRegion>{r}</BucketRegion>")).unwrap_or_default();
        format!("<Bucket><Name>{name}</Name><CreationDate>2020-01-01T00:00:00.000Z</CreationDate>{region}</Bucket>")
    };
    let buckets = |list: String, token: &str| {
        xml(&format!(
            "<ListAllMyBucketsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Owner><ID>x</ID></Owner><Buckets>{list}</Buckets>{token}</ListAllMyBucketsResult>"
        ))
    };
    let s3_get = |region: &str| {
        Mock::given(method("GET")).and(header_regex("authorization", &format!("/{region}/s3/aws4_request")))
    };
    s3_get("eu-west-1")
        .and(path("/"))
        .and(query_param("max-buckets", "1000"))
        .and(query_param_is_missing("continuation-token"))
        .respond_with(buckets(bucket("one", Some("eu-west-1")), "<ContinuationToken>tok/en+1</ContinuationToken>"))
        .mount(&aws)
        .await;
    s3_get("eu-west-1")
        .and(path("/"))
        .and(query_param("continuation-token", "tok/en+1"))
        .respond_with(buckets(format!("{}{}", bucket("two", Some("us-west-2")), bucket("moved", None)), ""))
        .mount(&aws)
        .await;
    let deny_http = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}"#;
    s3_get("eu-west-1")
        .and(path("/one"))
        .and(query_param("policy", ""))
        .respond_with(ResponseTemplate::new(200).set_body_string(deny_http))
        .mount(&aws)
        .await;
    s3_get("us-west-2")
        .and(path("/two"))
        .respond_with(ResponseTemplate::new(404).set_body_raw(
            "<Error><Code>NoSuchBucketPolicy</Code><Message>The bucket policy does not exist</Message><BucketName>two</BucketName></Error>",
            "application/xml",
        ))
        .mount(&aws)
        .await;
    s3_get("eu-west-1")
        .and(path("/moved"))
        .respond_with(
            ResponseTemplate::new(301).insert_header("x-amz-bucket-region", "ap-southeast-2").set_body_raw(
                "<Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be addressed using the specified endpoint.</Message></Error>",
                "application/xml",
            ),
        )
        .mount(&aws)
        .await;
    s3_get("ap-southeast-2")
        .and(path("/moved"))
        .respond_with(ResponseTemplate::new(200).set_body_string(deny_http))
        .mount(&aws)
        .await;

    let checks = ["aws.ec2.security-group-admin-ports", "aws.s3.bucket-denies-http"];
    let results = run_in(&aws.uri(), "eu-west-1", &checks, Timestamp::now()).await;

    let groups = of(&results, "aws.ec2.security-group-admin-ports");
    assert_eq!(groups.len(), 3, "{groups:#?}");
    assert_eq!(named(&results, "aws.ec2.security-group-admin-ports", "https").outcome, CheckOutcome::Pass);
    assert_eq!(named(&results, "aws.ec2.security-group-admin-ports", "rdp").outcome, CheckOutcome::Fail);
    let throttled = named(&results, "aws.ec2.security-group-admin-ports", "af-south-1");
    assert_eq!(throttled.outcome, CheckOutcome::Error);
    assert_eq!(
        (throttled.resource.kind.as_str(), throttled.resource.region.as_deref()),
        ("aws.region", Some("af-south-1"))
    );
    let failure = throttled.failure.as_ref().unwrap();
    assert_eq!(
        (failure.code.as_str(), failure.action.as_str()),
        ("RequestLimitExceeded", "ec2:DescribeSecurityGroups")
    );

    let buckets = of(&results, "aws.s3.bucket-denies-http");
    assert_eq!(buckets.len(), 3, "{buckets:#?}");
    let one = named(&results, "aws.s3.bucket-denies-http", "one");
    assert_eq!((one.outcome, one.resource.region.as_deref()), (CheckOutcome::Pass, Some("eu-west-1")));
    assert_eq!(named(&results, "aws.s3.bucket-denies-http", "two").outcome, CheckOutcome::Fail);
    assert_eq!(named(&results, "aws.s3.bucket-denies-http", "moved").outcome, CheckOutcome::Pass);
    // The expectations (one throttled answer, three attempts, nothing in ap-east-1) are verified as the server drops.
}

#[tokio::test]
async fn aws_an_unreachable_aws_is_an_error_for_every_check() {
    // A port nobody listens on: bound, read, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let checks = ["aws.iam.root-mfa", "aws.vpc.flow-logs"];
    let results = run_in(&format!("http://127.0.0.1:{port}"), "eu-west-1", &checks, Timestamp::now()).await;
    assert_eq!(results.len(), 2, "{results:#?}");
    for result in &results {
        let failure = result.failure.as_ref().unwrap();
        assert_eq!((failure.code.as_str(), failure.action.as_str()), ("unreachable", "sts:GetCallerIdentity"));
    }
}

// ---------------------------------------------------------------------------------------------
// Config, GuardDuty, RDS, KMS, in every region
// ---------------------------------------------------------------------------------------------

const SERVICE_CHECKS: [&str; 7] = [
    "aws.config.recording",
    "aws.guardduty.enabled",
    "aws.rds.instance-encrypted",
    "aws.rds.cluster-encrypted",
    "aws.rds.instance-not-public",
    "aws.rds.instance-backups",
    "aws.kms.key-rotation",
];

#[tokio::test]
async fn aws_config_guardduty_rds_and_kms_are_judged_in_every_enabled_region() {
    let moto = Moto::start().await;
    let seeded = seed(&moto,
            r#"
out["auditor"] = user("auditor", CATALOG)
out["regions"] = {r["RegionName"]: r["OptInStatus"] for r in client("ec2").describe_regions(AllRegions=True)["Regions"]}
client("s3").create_bucket(Bucket="config-history")
role = "arn:aws:iam::123456789012:role/config"
config = client("config", "us-east-1")
config.put_configuration_recorder(ConfigurationRecorder={"name": "default", "roleARN": role,
    "recordingGroup": {"allSupported": True, "includeGlobalResourceTypes": True}})
config.put_delivery_channel(DeliveryChannel={"name": "default", "s3BucketName": "config-history"})
config.start_configuration_recorder(ConfigurationRecorderName="default")
client("config", "eu-west-1").put_configuration_recorder(ConfigurationRecorder={"name": "some", "roleARN": role,
    "recordingGroup": {"allSupported": False, "includeGlobalResourceTypes": False, "resourceTypes": ["AWS::EC2::Instance"]}})
client("guardduty", "us-east-1").create_detector(Enable=True)
out["disabled-detector"] = client("guardduty", "eu-west-1").create_detector(Enable=False)["DetectorId"]

rds = client("rds", "eu-west-1")
def instance(name, **settings):
    rds.create_db_instance(DBInstanceIdentifier=name, DBInstanceClass="db.t3.micro", Engine="postgres", AllocatedStorage=20,
                           MasterUsername="admin", MasterUserPassword="A-l0ng-passw0rd", **settings)
instance("careful", StorageEncrypted=True, PubliclyAccessible=False, BackupRetentionPeriod=7)
instance("careless", StorageEncrypted=False, PubliclyAccessible=True, BackupRetentionPeriod=0)
for name, encrypted in [("sealed", True), ("open", False)]:
    rds.create_db_cluster(DBClusterIdentifier=name, Engine="aurora-postgresql", MasterUsername="admin",
                          MasterUserPassword="A-l0ng-passw0rd", StorageEncrypted=encrypted)

kms = client("kms", "eu-west-1")
rotating = kms.create_key(Description="rotating")["KeyMetadata"]
kms.enable_key_rotation(KeyId=rotating["KeyId"])
out["rotating"] = rotating["Arn"]
out["static"] = kms.create_key(Description="static")["KeyMetadata"]["KeyId"]
kms.create_key(Description="signing", KeySpec="RSA_2048", KeyUsage="SIGN_VERIFY")
disabled = kms.create_key(Description="disabled")["KeyMetadata"]["KeyId"]
kms.disable_key(KeyId=disabled)
"#,
        )
        .await;
    let mut results = run(&moto.endpoint, &seeded["auditor"], &SERVICE_CHECKS[..1]).await;
    results.extend(run(&moto.endpoint, &seeded["auditor"], &SERVICE_CHECKS[2..]).await);
    // moto 5.2.1 cannot check a GuardDuty request's signature (boto3's own are refused with
    // SignatureDoesNotMatch when its authentication is on): GuardDuty is read with it off.
    authentication(&moto, false).await;
    results.extend(run(&moto.endpoint, &seeded["auditor"], &SERVICE_CHECKS[1..2]).await);
    let errors: Vec<_> = results.iter().filter(|r| r.outcome == CheckOutcome::Error).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let regions = seeded["regions"].as_object().unwrap();
    let commercial: Vec<&str> =
        regions.keys().map(String::as_str).filter(|r| !r.starts_with("cn-") && !r.starts_with("us-gov-")).collect();
    let enabled = commercial.iter().filter(|r| regions[**r] != "not-opted-in").count();

    // Config and GuardDuty: one result per region; pass where set up, fail in the other enabled ones.
    for check in ["aws.config.recording", "aws.guardduty.enabled"] {
        let per_region = of(&results, check);
        assert_eq!(per_region.len(), commercial.len(), "{check}");
        assert_eq!(named(&results, check, "us-east-1").outcome, CheckOutcome::Pass, "{check}");
        assert_eq!(per_region.iter().filter(|r| r.outcome == CheckOutcome::Fail).count(), enabled - 1, "{check}");
        let skipped = per_region.iter().filter(|r| r.outcome == CheckOutcome::NotApplicable).count();
        assert_eq!(skipped, commercial.len() - enabled, "{check}");
    }
    assert_eq!(
        named(&results, "aws.config.recording", "eu-west-1").detail,
        "In eu-west-1, recorder some records only some resource types and leaves out global resource types and is not recording."
    );
    assert_eq!(named(&results, "aws.config.recording", "eu-west-2").detail, "AWS Config has no recorder in eu-west-2.");
    assert_eq!(
        named(&results, "aws.guardduty.enabled", "eu-west-1").detail,
        format!("GuardDuty's detector {} is not enabled in eu-west-1.", seeded["disabled-detector"].as_str().unwrap())
    );

    // RDS: each instance and cluster, in its region.
    let verdicts = |check: &str| -> Vec<(String, CheckOutcome)> {
        let mut found: Vec<_> = of(&results, check).iter().map(|r| (r.resource.name.clone(), r.outcome)).collect();
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found
    };
    use CheckOutcome::{Fail, Pass};
    for check in ["aws.rds.instance-encrypted", "aws.rds.instance-not-public", "aws.rds.instance-backups"] {
        assert_eq!(verdicts(check), [("careful".to_owned(), Pass), ("careless".to_owned(), Fail)], "{check}");
    }
    assert_eq!(verdicts("aws.rds.cluster-encrypted"), [("open".to_owned(), Fail), ("sealed".to_owned(), Pass)]);
    let careless = named(&results, "aws.rds.instance-not-public", "careless");
    assert_eq!(careless.detail, "Instance careless is publicly accessible.");
    assert_eq!(careless.resource.id, "arn:aws:rds:eu-west-1:123456789012:db:careless");
    assert_eq!(
        (careless.resource.kind.as_str(), careless.resource.region.as_deref()),
        ("aws.rds.instance", Some("eu-west-1"))
    );
    assert_eq!(
        named(&results, "aws.rds.instance-backups", "careless").detail,
        "Instance careless keeps no automated backups."
    );
    assert_eq!(named(&results, "aws.rds.cluster-encrypted", "open").resource.kind, "aws.rds.cluster");

    // KMS: the enabled customer-managed symmetric keys only.
    let keys = of(&results, "aws.kms.key-rotation");
    assert_eq!(keys.len(), 2, "{keys:#?}");
    let rotating = keys.iter().find(|r| r.resource.id == seeded["rotating"].as_str().unwrap()).unwrap();
    assert_eq!((rotating.outcome, rotating.resource.region.as_deref()), (Pass, Some("eu-west-1")));
    let static_key = seeded["static"].as_str().unwrap();
    let fixed = named(&results, "aws.kms.key-rotation", static_key);
    assert_eq!((fixed.outcome, fixed.detail.clone()), (Fail, format!("Key {static_key} has automatic rotation off.")));
}

/// moto answers GuardDuty's, KMS's and RDS's lists in one page (and cannot check GuardDuty's
/// signatures): their paging, and a JSON protocol's refusal, played here as AWS documents them.
#[tokio::test]
async fn aws_guardduty_kms_and_rds_lists_are_read_to_their_last_page() {
    use double::*;
    use wiremock::matchers::{
        body_string_contains, header, header_regex, method, path, query_param, query_param_is_missing,
    };
    use wiremock::{Mock, ResponseTemplate};
    let aws = aws("eu-west-1").await;
    operation("DescribeRegions", "ec2", "eu-west-1")
        .respond_with(xml("<DescribeRegionsResponse><regionInfo><item><regionName>eu-west-1</regionName>\
             <optInStatus>opt-in-not-required</optInStatus></item></regionInfo></DescribeRegionsResponse>"))
        .mount(&aws)
        .await;
    let json = |body: Value| ResponseTemplate::new(200).set_body_raw(body.to_string(), "application/x-amz-json-1.1");
    let guardduty =
        || Mock::given(method("GET")).and(header_regex("authorization", "/eu-west-1/guardduty/aws4_request"));
    guardduty()
        .and(path("/detector"))
        .and(query_param_is_missing("nextToken"))
        .respond_with(json(json!({"detectorIds": ["d1"], "nextToken": "n/2"})))
        .mount(&aws)
        .await;
    guardduty()
        .and(path("/detector"))
        .and(query_param("nextToken", "n/2"))
        .respond_with(json(json!({"detectorIds": ["d2"]})))
        .mount(&aws)
        .await;
    guardduty().and(path("/detector/d1")).respond_with(json(json!({"status": "DISABLED"}))).mount(&aws).await;
    guardduty().and(path("/detector/d2")).respond_with(json(json!({"status": "ENABLED"}))).mount(&aws).await;

    let kms = |operation: &str| {
        Mock::given(method("POST"))
            .and(header("x-amz-target", format!("TrentService.{operation}").as_str()))
            .and(header_regex("authorization", "/eu-west-1/kms/aws4_request"))
    };
    kms("ListKeys")
        .and(body_string_contains(r#""Marker":"m/2""#))
        .respond_with(json(json!({"Keys": [{"KeyId": "k2"}], "Truncated": false})))
        .with_priority(1)
        .mount(&aws)
        .await;
    kms("ListKeys")
        .respond_with(json(json!({"Keys": [{"KeyId": "k1"}], "NextMarker": "m/2", "Truncated": true})))
        .mount(&aws)
        .await;
    let key = |id: &str, origin: &str| {
        json!({"KeyMetadata": {"KeyId": id, "Arn": format!("arn:aws:kms:eu-west-1:123456789012:key/{id}"), "KeyManager": "CUSTOMER",
            "KeyState": "Enabled", "KeySpec": "SYMMETRIC_DEFAULT", "Origin": origin, "Enabled": true}})
    };
    kms("DescribeKey").and(body_string_contains(r#""k1""#)).respond_with(json(key("k1", "AWS_KMS"))).mount(&aws).await;
    kms("DescribeKey").and(body_string_contains(r#""k2""#)).respond_with(json(key("k2", "EXTERNAL"))).mount(&aws).await;
    kms("GetKeyRotationStatus")
        .respond_with(
            ResponseTemplate::new(400)
                .insert_header("x-amzn-ErrorType", "AccessDeniedException:http://internal.amazon.com/coral/com.amazon.coral.service/")
                .set_body_raw(
                    r#"{"__type":"AccessDeniedException","message":"User: arn:aws:iam::123456789012:user/auditor is not authorized to perform: kms:GetKeyRotationStatus"}"#,
                    "application/x-amz-json-1.1",
                ),
        )
        .mount(&aws)
        .await;

    let instance = |id: &str, encrypted: bool| {
        format!(
            "<DBInstance><DBInstanceIdentifier>{id}</DBInstanceIdentifier><DBInstanceArn>arn:aws:rds:eu-west-1:123456789012:db:{id}</DBInstanceArn>\
             <StorageEncrypted>{encrypted}</StorageEncrypted><PubliclyAccessible>false</PubliclyAccessible><BackupRetentionPeriod>7</BackupRetentionPeriod></DBInstance>"
        )
    };
    let instances = |list: String, marker: &str| {
        xml(&format!(
            "<DescribeDBInstancesResponse xmlns=\"http://rds.amazonaws.com/doc/2014-10-31/\"><DescribeDBInstancesResult>\
             <DBInstances>{list}</DBInstances>{marker}</DescribeDBInstancesResult></DescribeDBInstancesResponse>"
        ))
    };
    operation("DescribeDBInstances", "rds", "eu-west-1")
        .and(body_string_contains("Marker=m%2F2"))
        .respond_with(instances(instance("second", false), ""))
        .with_priority(1)
        .mount(&aws)
        .await;
    operation("DescribeDBInstances", "rds", "eu-west-1")
        .and(body_string_contains("MaxRecords=100"))
        .respond_with(instances(instance("first", true), "<Marker>m/2</Marker>"))
        .mount(&aws)
        .await;

    let checks = ["aws.guardduty.enabled", "aws.kms.key-rotation", "aws.rds.instance-encrypted"];
    let results = run_in(&aws.uri(), "eu-west-1", &checks, Timestamp::now()).await;
    let guardduty = named(&results, "aws.guardduty.enabled", "eu-west-1");
    assert_eq!(
        (guardduty.outcome, guardduty.detail.as_str()),
        (CheckOutcome::Pass, "GuardDuty detector d2 is enabled in eu-west-1.")
    );

    let refused = named(&results, "aws.kms.key-rotation", "k1");
    assert_eq!(refused.outcome, CheckOutcome::Error);
    assert_eq!(refused.resource.id, "arn:aws:kms:eu-west-1:123456789012:key/k1");
    let failure = refused.failure.as_ref().unwrap();
    assert_eq!((failure.code.as_str(), failure.action.as_str()), ("AccessDeniedException", "kms:GetKeyRotationStatus"));
    assert_eq!(named(&results, "aws.kms.key-rotation", "k2").outcome, CheckOutcome::NotApplicable);

    assert_eq!(named(&results, "aws.rds.instance-encrypted", "first").outcome, CheckOutcome::Pass);
    assert_eq!(named(&results, "aws.rds.instance-encrypted", "second").outcome, CheckOutcome::Fail);
    assert_eq!(results.len(), 5, "{results:#?}");
}

#[tokio::test]
async fn aws_a_connection_without_its_secret_or_region_reads_nothing() {
    // Nothing listens there: nothing may be sent.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let reader = reader(&format!("http://127.0.0.1:{port}"));
    let mut fields = BTreeMap::new();
    fields.insert("access_key_id".to_owned(), SecretString::from("AKIAIOSFODNN7EXAMPLE".to_owned()));
    fields.insert("region".to_owned(), SecretString::from("eu-west-1".to_owned()));
    let no_secret = target(CredentialValues::from_validated(fields.clone()), &["aws.iam.root-mfa"], Timestamp::now());
    let results = reader.read(&no_secret).await;
    assert_eq!(results[0].failure.as_ref().unwrap().code, "missing_credentials");

    fields.insert("secret_access_key".to_owned(), SecretString::from("x".to_owned()));
    fields.insert("region".to_owned(), SecretString::from("eu-west-1.evil.example/".to_owned()));
    fields.insert("role_arn".to_owned(), SecretString::from("arn:aws:iam::210987654321:role/Audit".to_owned()));
    let bad_region = target(CredentialValues::from_validated(fields), &["aws.iam.root-mfa"], Timestamp::now());
    let results = reader.read(&bad_region).await;
    assert_eq!(results.len(), 1);
    let failure = results[0].failure.as_ref().unwrap();
    assert_eq!((failure.code.as_str(), failure.action.as_str()), ("missing_credentials", "sts:AssumeRole"));
    assert_eq!(results[0].resource.id, "210987654321", "the role's account");
}
