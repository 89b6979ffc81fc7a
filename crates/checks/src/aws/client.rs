//! One AWS request: where it goes (AWS's endpoint of the service and region, or the one test
//! endpoint), signed with Signature Version 4 by `aws-sigv4`, sent with the shared client,
//! retried while throttled or unavailable, and a refusal cut to a [`ReadFailure`] (the code and
//! the start of the message AWS answered, and the IAM action that was refused).

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings, UriPathNormalizationMode,
    sign,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use compliance_domain::check_result::ReadFailure;
use reqwest::header::{HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};

use super::xml;
use crate::http::CheckHttp;

/// The services the checks call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Service {
    Sts,
    Iam,
    Ec2,
    S3,
    S3Control,
    CloudTrail,
    Config,
    GuardDuty,
    Rds,
    Kms,
}

impl Service {
    /// The name requests are signed for.
    fn signing_name(self) -> &'static str {
        match self {
            Self::Sts => "sts",
            Self::Iam => "iam",
            Self::Ec2 => "ec2",
            // S3 Control signs as S3.
            Self::S3 | Self::S3Control => "s3",
            Self::CloudTrail => "cloudtrail",
            Self::Config => "config",
            Self::GuardDuty => "guardduty",
            Self::Rds => "rds",
            Self::Kms => "kms",
        }
    }

    /// IAM is global: its one endpoint is signed for `us-east-1`, whatever the connection's region.
    fn signing_region(self, region: &str) -> &str {
        match self {
            Self::Iam => "us-east-1",
            _ => region,
        }
    }

    /// AWS's own endpoint (the `aws` partition). STS is called at its regional endpoint: the
    /// global one's temporary credentials are refused in regions an account opted in to.
    fn aws_endpoint(self, region: &str, account: &str) -> String {
        match self {
            Self::Iam => "https://iam.amazonaws.com".to_owned(),
            Self::Sts => format!("https://sts.{region}.amazonaws.com"),
            Self::Ec2 => format!("https://ec2.{region}.amazonaws.com"),
            Self::S3 => format!("https://s3.{region}.amazonaws.com"),
            Self::S3Control => format!("https://{account}.s3-control.{region}.amazonaws.com"),
            Self::CloudTrail => format!("https://cloudtrail.{region}.amazonaws.com"),
            Self::Config => format!("https://config.{region}.amazonaws.com"),
            Self::GuardDuty => format!("https://guardduty.{region}.amazonaws.com"),
            Self::Rds => format!("https://rds.{region}.amazonaws.com"),
            Self::Kms => format!("https://kms.{region}.amazonaws.com"),
        }
    }
}

/// A request to send: its service and region, what to send, and the IAM action a refusal names.
#[derive(Debug, Clone)]
pub(crate) struct AwsRequest {
    service: Service,
    region: String,
    method: Method,
    /// The path and query, from `/`, already encoded.
    path_and_query: String,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    /// The IAM action (`iam:GetCredentialReport`) a refusal names.
    action: &'static str,
}

impl AwsRequest {
    /// An operation of the query protocol (IAM, STS, EC2): a form `POST` of `Action`, `Version`
    /// and `params`.
    pub(crate) fn query(
        service: Service,
        region: &str,
        operation: &str,
        version: &str,
        params: &[(&str, &str)],
        action: &'static str,
    ) -> Self {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("Action", operation).append_pair("Version", version);
        for (name, value) in params {
            form.append_pair(name, value);
        }
        Self {
            service,
            region: region.to_owned(),
            method: Method::POST,
            path_and_query: "/".to_owned(),
            headers: vec![("content-type", "application/x-www-form-urlencoded; charset=utf-8".to_owned())],
            body: form.finish().into_bytes(),
            action,
        }
    }

    /// An operation of the JSON 1.1 protocol (CloudTrail, Config, KMS): a `POST` of `body` to `target`.
    pub(crate) fn json(
        service: Service,
        region: &str,
        target: &str,
        body: &serde_json::Value,
        action: &'static str,
    ) -> Self {
        Self {
            service,
            region: region.to_owned(),
            method: Method::POST,
            path_and_query: "/".to_owned(),
            headers: vec![
                ("content-type", "application/x-amz-json-1.1".to_owned()),
                ("x-amz-target", target.to_owned()),
            ],
            body: body.to_string().into_bytes(),
            action,
        }
    }

    /// A `GET` of a REST API (S3, S3 Control, GuardDuty): `path_and_query` from `/`, already encoded.
    pub(crate) fn get(service: Service, region: &str, path_and_query: String, action: &'static str) -> Self {
        Self {
            service,
            region: region.to_owned(),
            method: Method::GET,
            path_and_query,
            headers: Vec::new(),
            body: Vec::new(),
            action,
        }
    }

    /// The same request with one more header, signed with the others.
    pub(crate) fn header(mut self, name: &'static str, value: String) -> Self {
        self.headers.push((name, value));
        self
    }
}

/// Why a request did not succeed: what a result reports, and what a caller judges by.
#[derive(Debug, Clone)]
pub(crate) struct AwsFailure {
    /// The code, the start of the message, the action.
    pub(crate) failure: ReadFailure,
    /// S3's `x-amz-bucket-region` of a redirect: the bucket is in that region.
    pub(crate) bucket_region: Option<String>,
}

impl AwsFailure {
    /// AWS's error code (`NoSuchEntity`), or the transport's (`unreachable`).
    pub(crate) fn code(&self) -> &str {
        &self.failure.code
    }

    fn transport(error: &reqwest::Error, action: &str) -> Self {
        let (code, message) = if error.is_timeout() {
            ("timeout", "AWS did not answer in time")
        } else if error.is_connect() {
            ("unreachable", "AWS could not be reached")
        } else {
            ("request_failed", "the request failed")
        };
        Self { failure: ReadFailure::new(code, message, action), bucket_region: None }
    }

    pub(crate) fn local(code: &str, message: &str, action: &str) -> Self {
        Self { failure: ReadFailure::new(code, message, action), bucket_region: None }
    }
}

/// AWS's error codes of a request throttled (retried, as a 5xx is).
const THROTTLING_CODES: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottled",
    "RequestThrottledException",
    "TooManyRequestsException",
    "RequestLimitExceeded",
    "SlowDown",
    "PriorRequestNotComplete",
    "EC2ThrottledException",
    "BandwidthLimitExceeded",
];

/// Calls AWS with one set of credentials.
pub(crate) struct AwsClient<'a> {
    http: &'a CheckHttp,
    /// One URL every service is called at (moto in tests), without a trailing `/`.
    endpoint: Option<&'a str>,
    credentials: Credentials,
    /// The account S3 Control's host names, once known.
    account: String,
}

impl std::fmt::Debug for AwsClient<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `Credentials`' own `Debug` redacts its secret; the key id is left out as well.
        f.debug_struct("AwsClient").field("endpoint", &self.endpoint).field("account", &self.account).finish()
    }
}

impl<'a> AwsClient<'a> {
    pub(crate) fn new(http: &'a CheckHttp, endpoint: Option<&'a str>, credentials: Credentials) -> Self {
        Self { http, endpoint: endpoint.map(|e| e.trim_end_matches('/')), credentials, account: String::new() }
    }

    /// The same endpoint with other credentials (a role's).
    pub(crate) fn with_credentials(&self, credentials: Credentials) -> Self {
        Self { http: self.http, endpoint: self.endpoint, credentials, account: self.account.clone() }
    }

    /// The account S3 Control is called for.
    pub(crate) fn set_account(&mut self, account: &str) {
        account.clone_into(&mut self.account);
    }

    /// Sends `request`, retried while throttled or unavailable (the run's attempts and backoff);
    /// the answer's body on a 2xx.
    pub(crate) async fn send(&self, request: &AwsRequest) -> Result<Vec<u8>, AwsFailure> {
        let action = request.action;
        if !is_region(&request.region) {
            return Err(AwsFailure::local("invalid_region", "the region is not an AWS region code", action));
        }
        if request.service == Service::S3Control && self.endpoint.is_none() && !is_account_id(&self.account) {
            return Err(AwsFailure::local("invalid_account", "the account id is not known", action));
        }
        let base = match self.endpoint {
            Some(endpoint) => endpoint.to_owned(),
            None => request.service.aws_endpoint(&request.region, &self.account),
        };
        let url = format!("{base}{}", request.path_and_query);
        let settings = *self.http.settings();
        let mut backoff = settings.first_backoff;
        let mut attempt = 1;
        loop {
            let signed = self.sign(request, &url)?;
            let mut builder = self.http.client().request(request.method.clone(), &url).body(request.body.clone());
            for (name, value) in request.headers.iter().map(|(n, v)| (*n, v.clone())).chain(signed) {
                let (Ok(name), Ok(mut value)) =
                    (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(&value))
                else {
                    return Err(AwsFailure::local("invalid_request", "a header could not be sent", action));
                };
                if name == "authorization" || name == "x-amz-security-token" {
                    value.set_sensitive(true);
                }
                builder = builder.header(name, value);
            }
            let response = builder.send().await.map_err(|error| AwsFailure::transport(&error.without_url(), action))?;
            let status = response.status();
            let bucket_region = response
                .headers()
                .get("x-amz-bucket-region")
                .and_then(|v| v.to_str().ok())
                .filter(|region| is_region(region))
                .map(str::to_owned);
            let error_type = response
                .headers()
                .get("x-amzn-errortype")
                .and_then(|v| v.to_str().ok())
                .map(|v| v.split(':').next().unwrap_or(v).to_owned());
            let body = read_limited(response, settings.max_body_bytes, action).await?;
            if status.is_success() {
                return Ok(body);
            }
            let (code, message) = xml::error_code_and_message(&body, error_type.as_deref());
            let code = code.unwrap_or_else(|| status.as_u16().to_string());
            let throttled = status == StatusCode::TOO_MANY_REQUESTS || THROTTLING_CODES.contains(&code.as_str());
            if (throttled || status.is_server_error()) && attempt < settings.attempts {
                tracing::debug!(action, code = %code, attempt, "AWS throttled or failed a request: retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(settings.max_backoff);
                attempt += 1;
                continue;
            }
            let message = self.scrub(message.as_deref().unwrap_or_else(|| status.canonical_reason().unwrap_or("")));
            return Err(AwsFailure { failure: ReadFailure::new(code, &message, action), bucket_region });
        }
    }

    /// The headers that sign `request` (`authorization`, `x-amz-date`, and the session token
    /// and S3's payload hash when they apply), computed by `aws-sigv4`.
    fn sign(&self, request: &AwsRequest, url: &str) -> Result<Vec<(&'static str, String)>, AwsFailure> {
        let action = request.action;
        let unsigned = || AwsFailure::local("signing_failed", "the request could not be signed", action);
        let identity: Identity = self.credentials.clone().into();
        let mut settings = SigningSettings::default();
        if matches!(request.service, Service::S3 | Service::S3Control) {
            // S3 signs the path as sent (no double encoding, no normalization) and its payload's hash.
            settings.percent_encoding_mode = PercentEncodingMode::Single;
            settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
            settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        }
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(request.service.signing_region(&request.region))
            .name(request.service.signing_name())
            .time(SystemTime::now())
            .settings(settings)
            .build()
            .map_err(|_| unsigned())?
            .into();
        let signable = SignableRequest::new(
            request.method.as_str(),
            url,
            request.headers.iter().map(|(name, value)| (*name, value.as_str())),
            SignableBody::Bytes(&request.body),
        )
        .map_err(|_| unsigned())?;
        let (instructions, _signature) = sign(signable, &params).map_err(|_| unsigned())?.into_parts();
        let (headers, _query) = instructions.into_parts();
        Ok(headers.into_iter().map(|header| (header.name(), header.value().to_owned())).collect())
    }

    /// A message without AWS's echo of the canonical request (after a blank line), which may hold
    /// the session token, and without the secret or the token anywhere.
    fn scrub(&self, message: &str) -> String {
        let mut message = message.split("\n\n").next().unwrap_or("").to_owned();
        let secrets = [Some(self.credentials.secret_access_key()), self.credentials.session_token()];
        for secret in secrets.into_iter().flatten().filter(|s| !s.is_empty()) {
            message = message.replace(secret, "[redacted]");
        }
        message
    }
}

async fn read_limited(mut response: reqwest::Response, max: usize, action: &str) -> Result<Vec<u8>, AwsFailure> {
    let mut body = Vec::new();
    while let Some(chunk) =
        response.chunk().await.map_err(|error| AwsFailure::transport(&error.without_url(), action))?
    {
        if body.len() + chunk.len() > max {
            return Err(AwsFailure::local("too_large", &format!("the answer is larger than {max} bytes"), action));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// An AWS region code (`eu-west-1`): what may go into a host name.
pub(crate) fn is_region(region: &str) -> bool {
    (1..=32).contains(&region.len())
        && region.starts_with(|c: char| c.is_ascii_lowercase())
        && region.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !region.ends_with('-')
}

/// A 12-digit account id.
pub(crate) fn is_account_id(account: &str) -> bool {
    account.len() == 12 && account.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_region_codes_go_into_host_names() {
        assert!(is_region("eu-west-1") && is_region("us-gov-west-1") && is_region("ap-southeast-5"));
        for bad in ["", "EU-WEST-1", "eu-west-1.evil.example", "eu-west-1/", "1eu", "eu west", "eu-"] {
            assert!(!is_region(bad), "{bad}");
        }
        assert!(is_account_id("123456789012") && !is_account_id("12345678901x") && !is_account_id("1234"));
    }
}
