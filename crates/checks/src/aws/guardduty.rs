//! GuardDuty in one region: an enabled detector (`ListDetectors`, every page, `GetDetector`).

use compliance_domain::check_result::CheckResult;
use percent_encoding::utf8_percent_encode;
use serde::Deserialize;

use super::client::{AwsFailure, AwsRequest, Service};
use super::s3::QUERY_VALUE;
use super::xml;
use super::{GUARDDUTY_ENABLED, Session, listed, verdict};

const LIST_DETECTORS: &str = "guardduty:ListDetectors";
const GET_DETECTOR: &str = "guardduty:GetDetector";

#[derive(Deserialize)]
struct DetectorsPage {
    #[serde(rename = "detectorIds", default)]
    ids: Vec<String>,
    #[serde(rename = "nextToken", default)]
    next_token: Option<String>,
}

#[derive(Deserialize)]
struct Detector {
    #[serde(default)]
    status: String,
}

async fn detectors(session: &Session<'_>, region: &str) -> Result<Vec<String>, AwsFailure> {
    let mut ids = Vec::new();
    let mut token: Option<String> = None;
    loop {
        // The default page is the largest (50). No query on the first page: moto 5.2.1 hashes a
        // GET's query string as its body when it checks the signature of a non-S3 request.
        let mut path = "/detector".to_owned();
        if let Some(token) = &token {
            path.push_str(&format!("?nextToken={}", utf8_percent_encode(token, QUERY_VALUE)));
        }
        let body = session.client.send(&AwsRequest::get(Service::GuardDuty, region, path, LIST_DETECTORS)).await?;
        let page: DetectorsPage = xml::parse_json(&body, LIST_DETECTORS)?;
        ids.extend(page.ids);
        match page.next_token.filter(|t| !t.is_empty()) {
            Some(next) if token.as_ref() != Some(&next) => token = Some(next),
            _ => return Ok(ids),
        }
    }
}

/// `aws.guardduty.enabled` in `region`.
pub(crate) async fn enabled(session: &Session<'_>, region: &str) -> CheckResult {
    let resource = session.account.region_resource(region);
    let ids = match detectors(session, region).await {
        Ok(ids) => ids,
        Err(failure) => return CheckResult::error(GUARDDUTY_ENABLED, resource, failure.failure),
    };
    if ids.is_empty() {
        return verdict(GUARDDUTY_ENABLED, resource, false, format!("GuardDuty has no detector in {region}."));
    }
    let mut disabled = Vec::new();
    for id in &ids {
        let path = format!("/detector/{}", utf8_percent_encode(id, QUERY_VALUE));
        let detector = match session.client.send(&AwsRequest::get(Service::GuardDuty, region, path, GET_DETECTOR)).await
        {
            Ok(body) => xml::parse_json::<Detector>(&body, GET_DETECTOR),
            Err(failure) => Err(failure),
        };
        match detector {
            Ok(detector) if detector.status.eq_ignore_ascii_case("ENABLED") => {
                return verdict(
                    GUARDDUTY_ENABLED,
                    resource,
                    true,
                    format!("GuardDuty detector {id} is enabled in {region}."),
                );
            }
            Ok(_) => disabled.push(id.clone()),
            Err(failure) => return CheckResult::error(GUARDDUTY_ENABLED, resource, failure.failure),
        }
    }
    verdict(
        GUARDDUTY_ENABLED,
        resource,
        false,
        format!("GuardDuty's detector {} is not enabled in {region}.", listed(&disabled)),
    )
}
