//! CloudTrail: a trail of every region (`DescribeTrails`, shadow trails of other home regions
//! included) that validates its log files and is logging (`GetTrailStatus` in its home region).

use compliance_domain::check_result::CheckResult;
use serde::Deserialize;

use super::client::{AwsRequest, Service, is_region};
use super::xml;
use super::{CLOUDTRAIL_MULTI_REGION, Session, listed, verdict, wants};

const DESCRIBE_TRAILS: &str = "cloudtrail:DescribeTrails";
const GET_TRAIL_STATUS: &str = "cloudtrail:GetTrailStatus";
const TARGET: &str = "com.amazonaws.cloudtrail.v20131101.CloudTrail_20131101";

#[derive(Deserialize)]
struct DescribeTrailsResponse {
    #[serde(rename = "trailList", default)]
    trails: Vec<Trail>,
}

#[derive(Deserialize)]
struct Trail {
    #[serde(rename = "Name")]
    name: String,
    #[serde(rename = "TrailARN")]
    arn: String,
    #[serde(rename = "HomeRegion", default)]
    home_region: Option<String>,
    #[serde(rename = "IsMultiRegionTrail", default)]
    multi_region: bool,
    #[serde(rename = "LogFileValidationEnabled", default)]
    log_file_validation: bool,
}

#[derive(Deserialize)]
struct TrailStatus {
    #[serde(rename = "IsLogging", default)]
    is_logging: bool,
}

/// `aws.cloudtrail.multi-region-trail`, one result for the account.
pub(crate) async fn checks(session: &Session<'_>, wanted: &[&str]) -> Vec<CheckResult> {
    if !wants(wanted, CLOUDTRAIL_MULTI_REGION) {
        return Vec::new();
    }
    let account = session.account.resource();
    let body = serde_json::json!({ "includeShadowTrails": true });
    let request = AwsRequest::json(
        Service::CloudTrail,
        &session.region,
        &format!("{TARGET}.DescribeTrails"),
        &body,
        DESCRIBE_TRAILS,
    );
    let trails = match session.client.send(&request).await {
        Ok(body) => match xml::parse_json::<DescribeTrailsResponse>(&body, DESCRIBE_TRAILS) {
            Ok(answer) => answer.trails,
            Err(failure) => return vec![CheckResult::error(CLOUDTRAIL_MULTI_REGION, account, failure.failure)],
        },
        Err(failure) => return vec![CheckResult::error(CLOUDTRAIL_MULTI_REGION, account, failure.failure)],
    };
    let mut lacking = Vec::new();
    let mut unread = None;
    for trail in &trails {
        let mut missing = Vec::new();
        if !trail.multi_region {
            missing.push("is single-region");
        }
        if !trail.log_file_validation {
            missing.push("does not validate its log files");
        }
        if missing.is_empty() {
            let region = trail.home_region.as_deref().filter(|r| is_region(r)).unwrap_or(&session.region);
            let body = serde_json::json!({ "Name": trail.arn });
            let request = AwsRequest::json(
                Service::CloudTrail,
                region,
                &format!("{TARGET}.GetTrailStatus"),
                &body,
                GET_TRAIL_STATUS,
            );
            match session.client.send(&request).await {
                Ok(body) => match xml::parse_json::<TrailStatus>(&body, GET_TRAIL_STATUS) {
                    Ok(status) if status.is_logging => {
                        let detail = format!(
                            "Trail {} records every region, validates its log files and is logging.",
                            trail.name
                        );
                        return vec![verdict(CLOUDTRAIL_MULTI_REGION, account, true, detail)];
                    }
                    Ok(_) => missing.push("is not logging"),
                    Err(failure) => {
                        unread.get_or_insert(failure);
                        continue;
                    }
                },
                Err(failure) => {
                    unread.get_or_insert(failure);
                    continue;
                }
            }
        }
        lacking.push(format!("{} {}", trail.name, missing.join(" and ")));
    }
    // A trail that might have passed but could not be read: neither a pass nor a failure.
    if let Some(failure) = unread {
        return vec![CheckResult::error(CLOUDTRAIL_MULTI_REGION, account, failure.failure)];
    }
    lacking.sort();
    let detail = if trails.is_empty() {
        "The account has no CloudTrail trail.".to_owned()
    } else {
        format!("No trail records every region with log file validation while logging: {}.", listed(&lacking))
    };
    vec![verdict(CLOUDTRAIL_MULTI_REGION, account, false, detail)]
}
