//! AWS Config in one region: a recorder of every resource type (global ones included) that is
//! recording (`DescribeConfigurationRecorders`, `DescribeConfigurationRecorderStatus`).

use compliance_domain::check_result::CheckResult;
use serde::Deserialize;

use super::client::{AwsFailure, AwsRequest, Service};
use super::xml;
use super::{CONFIG_RECORDING, Session, listed, verdict};

const DESCRIBE_RECORDERS: &str = "config:DescribeConfigurationRecorders";
const DESCRIBE_RECORDER_STATUS: &str = "config:DescribeConfigurationRecorderStatus";
const TARGET: &str = "StarlingDoveService";

#[derive(Deserialize)]
struct Recorders {
    #[serde(rename = "ConfigurationRecorders", default)]
    recorders: Vec<Recorder>,
}

#[derive(Deserialize)]
struct Recorder {
    name: String,
    #[serde(rename = "recordingGroup", default)]
    group: Option<RecordingGroup>,
}

#[derive(Deserialize)]
struct RecordingGroup {
    #[serde(rename = "allSupported", default)]
    all_supported: bool,
    #[serde(rename = "includeGlobalResourceTypes", default)]
    include_global: bool,
}

#[derive(Deserialize)]
struct Statuses {
    #[serde(rename = "ConfigurationRecordersStatus", default)]
    statuses: Vec<Status>,
}

#[derive(Deserialize)]
struct Status {
    name: String,
    #[serde(default)]
    recording: bool,
}

async fn call<T: serde::de::DeserializeOwned>(
    session: &Session<'_>,
    region: &str,
    operation: &str,
    action: &'static str,
) -> Result<T, AwsFailure> {
    let request =
        AwsRequest::json(Service::Config, region, &format!("{TARGET}.{operation}"), &serde_json::json!({}), action);
    let body = session.client.send(&request).await?;
    xml::parse_json(&body, action)
}

/// `aws.config.recording` in `region`.
pub(crate) async fn recording(session: &Session<'_>, region: &str) -> CheckResult {
    let resource = session.account.region_resource(region);
    let recorders = match call::<Recorders>(session, region, "DescribeConfigurationRecorders", DESCRIBE_RECORDERS).await
    {
        Ok(answer) => answer.recorders,
        Err(failure) => return CheckResult::error(CONFIG_RECORDING, resource, failure.failure),
    };
    if recorders.is_empty() {
        return verdict(CONFIG_RECORDING, resource, false, format!("AWS Config has no recorder in {region}."));
    }
    let statuses = match call::<Statuses>(
        session,
        region,
        "DescribeConfigurationRecorderStatus",
        DESCRIBE_RECORDER_STATUS,
    )
    .await
    {
        Ok(answer) => answer.statuses,
        Err(failure) => return CheckResult::error(CONFIG_RECORDING, resource, failure.failure),
    };
    let mut lacking = Vec::new();
    for recorder in &recorders {
        let recording = statuses.iter().any(|s| s.name == recorder.name && s.recording);
        let (all, global) = recorder.group.as_ref().map_or((true, true), |g| (g.all_supported, g.include_global));
        let mut missing = Vec::new();
        if !all {
            missing.push("records only some resource types");
        }
        if !global {
            missing.push("leaves out global resource types");
        }
        if !recording {
            missing.push("is not recording");
        }
        if missing.is_empty() {
            let detail =
                format!("Recorder {} records every resource type in {region} and is recording.", recorder.name);
            return verdict(CONFIG_RECORDING, resource, true, detail);
        }
        lacking.push(format!("{} {}", recorder.name, missing.join(" and ")));
    }
    verdict(CONFIG_RECORDING, resource, false, format!("In {region}, recorder {}.", listed(&lacking)))
}
