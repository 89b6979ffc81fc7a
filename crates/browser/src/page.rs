//! One capture in a running browser: open a page, navigate, wait for the load event, screenshot.

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use compliance_ports::{Capture, CaptureError};
use serde_json::{Value, json};

use crate::cdp::{Cdp, CdpError, Event, Incoming};
use crate::outbound::{self, Target};

/// The viewport, in CSS pixels (the screenshot is this size).
pub(crate) const WIDTH: u32 = 1280;
pub(crate) const HEIGHT: u32 = 800;

impl From<CdpError> for CaptureError {
    fn from(error: CdpError) -> Self {
        CaptureError::Browser(error.0)
    }
}

/// Drives one page through `target` and returns its screenshot. The caller bounds it in time.
pub(crate) async fn capture(cdp: &mut Cdp, target: &Target, allowed_hosts: &[String]) -> Result<Capture, CaptureError> {
    // Every request of the browser (pages, out-of-process frames, workers, redirects) pauses
    // until it is continued or failed below.
    cdp.call("Fetch.enable", json!({ "patterns": [{ "urlPattern": "*", "requestStage": "Request" }] }), None).await?;
    let created = cdp.call("Target.createTarget", json!({ "url": "about:blank" }), None).await?;
    let target_id = string(&created, "targetId")?;
    let attached = cdp.call("Target.attachToTarget", json!({ "targetId": target_id, "flatten": true }), None).await?;
    let session_id = string(&attached, "sessionId")?;
    let session = Some(session_id.as_str());
    cdp.call("Page.enable", json!({}), session).await?;
    cdp.call("Network.enable", json!({}), session).await?;
    let metrics = json!({ "width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": false });
    cdp.call("Emulation.setDeviceMetricsOverride", metrics, session).await?;
    cdp.clear_events();

    let navigation = cdp.send("Page.navigate", json!({ "url": target.url.as_str() }), session).await?;
    let mut navigated = false;
    let mut status = None;
    let mut refused_document = None;
    let mut verdicts = HashMap::new();
    loop {
        match cdp.next().await? {
            Incoming::Response { id, result } if id == navigation => {
                let result =
                    result.map_err(|message| CaptureError::Browser(format!("Page.navigate failed: {message}")))?;
                if let Some(error_text) = result.get("errorText").and_then(Value::as_str) {
                    return Err(match (refused_document, status) {
                        (Some(reason), _) => CaptureError::Refused(reason),
                        (None, Some(status)) if status >= 400 => CaptureError::HttpStatus(status),
                        (None, _) => CaptureError::Unreachable(error_text.to_owned()),
                    });
                }
                navigated = true;
            }
            Incoming::Response { .. } => {}
            Incoming::Event(event) => match event.method.as_str() {
                "Fetch.requestPaused" => {
                    let document = is_top_document(&event, &target_id);
                    if let Some(reason) = pass_or_fail(cdp, &event, allowed_hosts, &mut verdicts).await?
                        && document
                    {
                        refused_document = Some(reason);
                    }
                }
                "Network.responseReceived"
                    if event.session_id.as_deref() == session && is_top_document(&event, &target_id) =>
                {
                    let found = event.params.pointer("/response/status").and_then(Value::as_u64);
                    status = found.and_then(|s| u16::try_from(s).ok());
                }
                "Page.loadEventFired" if navigated && event.session_id.as_deref() == session => break,
                _ => {}
            },
        }
    }
    if let Some(status) = status.filter(|status| *status >= 400) {
        return Err(CaptureError::HttpStatus(status));
    }
    let shot = cdp.call("Page.captureScreenshot", json!({ "format": "png" }), session).await?;
    let png = STANDARD
        .decode(string(&shot, "data")?)
        .map_err(|e| CaptureError::Browser(format!("the screenshot is not base64: {e}")))?;
    Ok(Capture { png, http_status: status })
}

/// Continues a paused request whose URL passes the outbound rules and fails the others; returns
/// the reason when it failed one.
async fn pass_or_fail(
    cdp: &mut Cdp,
    event: &Event,
    allowed_hosts: &[String],
    verdicts: &mut HashMap<String, Option<String>>,
) -> Result<Option<String>, CdpError> {
    let Some(request_id) = event.params.get("requestId").and_then(Value::as_str) else {
        return Ok(None);
    };
    let url = event.params.pointer("/request/url").and_then(Value::as_str).unwrap_or_default();
    let verdict = match url::Url::parse(url) {
        // No network: the page's own data.
        Ok(parsed) if matches!(parsed.scheme(), "data" | "blob" | "about") => None,
        Ok(parsed) => {
            let origin = parsed.origin().ascii_serialization();
            match verdicts.get(&origin) {
                Some(verdict) => verdict.clone(),
                None => {
                    let verdict = match outbound::check(url, allowed_hosts).await {
                        Ok(_) => None,
                        Err(CaptureError::Refused(reason) | CaptureError::Unreachable(reason)) => Some(reason),
                        Err(other) => Some(other.to_string()),
                    };
                    verdicts.insert(origin, verdict.clone());
                    verdict
                }
            }
        }
        Err(_) => Some("the request URL does not parse".to_owned()),
    };
    // The answers are not awaited: a request can be gone by then (the page moved on), which is fine.
    match &verdict {
        None => {
            cdp.send("Fetch.continueRequest", json!({ "requestId": request_id }), event.session_id.as_deref()).await?
        }
        Some(_) => {
            let params = json!({ "requestId": request_id, "errorReason": "BlockedByClient" });
            cdp.send("Fetch.failRequest", params, event.session_id.as_deref()).await?
        }
    };
    Ok(verdict)
}

/// Whether an event is about the main document of the page (the top frame's id is the target's).
fn is_top_document(event: &Event, target_id: &str) -> bool {
    let params = &event.params;
    let kind = params.get("resourceType").or_else(|| params.get("type")).and_then(Value::as_str);
    kind == Some("Document") && params.get("frameId").and_then(Value::as_str) == Some(target_id)
}

fn string(value: &Value, field: &str) -> Result<String, CaptureError> {
    value
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| CaptureError::Browser(format!("the browser's answer has no {field}")))
}
