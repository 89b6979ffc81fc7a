//! STS: the role a connection names, assumed with its access key, and who the credentials are
//! (the account every result names).

use aws_credential_types::Credentials;
use serde::Deserialize;

use super::client::{AwsClient, AwsFailure, AwsRequest, Service};
use super::xml;

const VERSION: &str = "2011-06-15";
pub(crate) const ASSUME_ROLE: &str = "sts:AssumeRole";
pub(crate) const GET_CALLER_IDENTITY: &str = "sts:GetCallerIdentity";
/// The session name CloudTrail shows for the checks' reads.
const SESSION_NAME: &str = "compliance-checks";

#[derive(Deserialize)]
struct AssumeRoleResponse {
    #[serde(rename = "AssumeRoleResult")]
    result: AssumeRoleResult,
}

#[derive(Deserialize)]
struct AssumeRoleResult {
    #[serde(rename = "Credentials")]
    credentials: TemporaryCredentials,
}

/// No `Debug`: it holds the secret and the token.
#[derive(Deserialize)]
struct TemporaryCredentials {
    #[serde(rename = "AccessKeyId")]
    access_key_id: String,
    #[serde(rename = "SecretAccessKey")]
    secret_access_key: String,
    #[serde(rename = "SessionToken")]
    session_token: String,
}

/// The temporary credentials (with their session token) of `role_arn`, assumed by `client`'s
/// key in `region`, with the role's `external_id` when the connection names one (the condition a
/// third party's role should set, so that no other customer of this service can assume it).
pub(crate) async fn assume_role(
    client: &AwsClient<'_>,
    region: &str,
    role_arn: &str,
    external_id: Option<&str>,
) -> Result<Credentials, AwsFailure> {
    let mut parameters = vec![("RoleArn", role_arn), ("RoleSessionName", SESSION_NAME)];
    if let Some(external_id) = external_id {
        parameters.push(("ExternalId", external_id));
    }
    let request = AwsRequest::query(Service::Sts, region, "AssumeRole", VERSION, &parameters, ASSUME_ROLE);
    let body = client.send(&request).await?;
    let answer: AssumeRoleResponse = xml::parse(&body, ASSUME_ROLE)?;
    let TemporaryCredentials { access_key_id, secret_access_key, session_token } = answer.result.credentials;
    Ok(Credentials::new(access_key_id, secret_access_key, Some(session_token), None, "sts:AssumeRole"))
}

#[derive(Deserialize)]
struct CallerIdentityResponse {
    #[serde(rename = "GetCallerIdentityResult")]
    result: CallerIdentity,
}

/// Who `GetCallerIdentity` says the credentials are (an action no policy can refuse).
#[derive(Debug, Deserialize)]
pub(crate) struct CallerIdentity {
    #[serde(rename = "Account")]
    pub(crate) account: String,
    #[serde(rename = "Arn")]
    pub(crate) arn: String,
}

pub(crate) async fn caller_identity(client: &AwsClient<'_>, region: &str) -> Result<CallerIdentity, AwsFailure> {
    let request = AwsRequest::query(Service::Sts, region, "GetCallerIdentity", VERSION, &[], GET_CALLER_IDENTITY);
    let body = client.send(&request).await?;
    let answer: CallerIdentityResponse = xml::parse(&body, GET_CALLER_IDENTITY)?;
    Ok(answer.result)
}
