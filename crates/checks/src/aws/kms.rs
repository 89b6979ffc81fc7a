//! KMS in one region: every key (`ListKeys`, every page), described (`DescribeKey`); the enabled
//! customer-managed symmetric ones judged by `GetKeyRotationStatus`.

use compliance_domain::check::CheckOutcome;
use compliance_domain::check_result::{CheckResult, CheckedResource};
use serde::Deserialize;
use serde_json::json;

use super::client::{AwsFailure, AwsRequest, Service};
use super::xml;
use super::{KMS_KEY_ROTATION, Session, verdict};

const LIST_KEYS: &str = "kms:ListKeys";
const DESCRIBE_KEY: &str = "kms:DescribeKey";
const GET_KEY_ROTATION_STATUS: &str = "kms:GetKeyRotationStatus";
const TARGET: &str = "TrentService";

#[derive(Deserialize)]
struct KeysPage {
    #[serde(rename = "Keys", default)]
    keys: Vec<KeyEntry>,
    #[serde(rename = "NextMarker", default)]
    next_marker: Option<String>,
    #[serde(rename = "Truncated", default)]
    truncated: bool,
}

#[derive(Deserialize)]
struct KeyEntry {
    #[serde(rename = "KeyId")]
    id: String,
}

#[derive(Deserialize)]
struct Described {
    #[serde(rename = "KeyMetadata")]
    metadata: KeyMetadata,
}

#[derive(Deserialize)]
struct KeyMetadata {
    #[serde(rename = "KeyId")]
    id: String,
    #[serde(rename = "Arn")]
    arn: String,
    #[serde(rename = "KeyManager", default)]
    manager: String,
    #[serde(rename = "KeyState", default)]
    state: String,
    #[serde(rename = "KeySpec", default)]
    spec: Option<String>,
    #[serde(rename = "CustomerMasterKeySpec", default)]
    legacy_spec: Option<String>,
    #[serde(rename = "Origin", default)]
    origin: Option<String>,
}

#[derive(Deserialize)]
struct RotationStatus {
    #[serde(rename = "KeyRotationEnabled", default)]
    enabled: bool,
}

async fn call<T: serde::de::DeserializeOwned>(
    session: &Session<'_>,
    region: &str,
    operation: &str,
    body: &serde_json::Value,
    action: &'static str,
) -> Result<T, AwsFailure> {
    let request = AwsRequest::json(Service::Kms, region, &format!("{TARGET}.{operation}"), body, action);
    let answer = session.client.send(&request).await?;
    xml::parse_json(&answer, action)
}

/// `aws.kms.key-rotation` in `region`: one result per enabled customer-managed symmetric key.
pub(crate) async fn key_rotation(session: &Session<'_>, region: &str) -> Vec<CheckResult> {
    let mut ids = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let mut body = json!({ "Limit": 1000 });
        if let Some(marker) = &marker {
            body["Marker"] = json!(marker);
        }
        let page = match call::<KeysPage>(session, region, "ListKeys", &body, LIST_KEYS).await {
            Ok(page) => page,
            Err(failure) => {
                return vec![CheckResult::error(
                    KMS_KEY_ROTATION,
                    session.account.region_resource(region),
                    failure.failure,
                )];
            }
        };
        ids.extend(page.keys.into_iter().map(|key| key.id));
        match page.next_marker.filter(|m| page.truncated && !m.is_empty()) {
            Some(next) if marker.as_ref() != Some(&next) => marker = Some(next),
            _ => break,
        }
    }
    let mut results = Vec::new();
    for id in ids {
        let resource = |arn: String| CheckedResource {
            kind: "aws.kms.key".into(),
            id: arn,
            name: id.clone(),
            region: Some(region.to_owned()),
        };
        let fallback_arn = format!("arn:{}:kms:{region}:{}:key/{id}", session.account.partition, session.account.id);
        let key = match call::<Described>(session, region, "DescribeKey", &json!({ "KeyId": id }), DESCRIBE_KEY).await {
            Ok(described) => described.metadata,
            Err(failure) => {
                results.push(CheckResult::error(KMS_KEY_ROTATION, resource(fallback_arn), failure.failure));
                continue;
            }
        };
        let spec = key.spec.as_deref().or(key.legacy_spec.as_deref()).unwrap_or("SYMMETRIC_DEFAULT");
        if key.manager != "CUSTOMER" || key.state != "Enabled" || spec != "SYMMETRIC_DEFAULT" {
            // Not in the population: AWS-managed, disabled or pending deletion, or asymmetric/HMAC.
            continue;
        }
        let resource = resource(key.arn.clone());
        if key.origin.as_deref().is_some_and(|origin| origin != "AWS_KMS") {
            let detail = format!("Key {} holds imported or external key material, which KMS cannot rotate.", key.id);
            results.push(CheckResult::judged(KMS_KEY_ROTATION, resource, CheckOutcome::NotApplicable, detail));
            continue;
        }
        let status = call::<RotationStatus>(
            session,
            region,
            "GetKeyRotationStatus",
            &json!({ "KeyId": key.id }),
            GET_KEY_ROTATION_STATUS,
        )
        .await;
        results.push(match status {
            Ok(status) if status.enabled => {
                verdict(KMS_KEY_ROTATION, resource, true, format!("Key {} rotates automatically.", key.id))
            }
            Ok(_) => verdict(KMS_KEY_ROTATION, resource, false, format!("Key {} has automatic rotation off.", key.id)),
            Err(failure) => CheckResult::error(KMS_KEY_ROTATION, resource, failure.failure),
        });
    }
    results
}
