//! One capture in a running browser: open a page, navigate, wait for the load event, screenshot.

use std::collections::{HashMap, HashSet};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use compliance_ports::{Capture, CaptureError};
use serde_json::{Value, json};

use crate::cdp::{Cdp, CdpError, Event, Incoming};
use crate::outbound::{self, Target};
use crate::proxy::{self, Proxy};

/// The viewport, in CSS pixels (the screenshot is this size).
pub(crate) const WIDTH: u32 = 1280;
pub(crate) const HEIGHT: u32 = 800;

impl From<CdpError> for CaptureError {
    fn from(error: CdpError) -> Self {
        CaptureError::Browser(error.0)
    }
}

/// What the page driver knows about the main document so far.
#[derive(Default)]
struct Document {
    /// The URLs the top frame asked for (the target, redirects, later navigations).
    urls: Vec<String>,
    /// Why the `Fetch` check refused one of them.
    refused: Option<String>,
}

impl Document {
    /// Whether a main-document request was refused, by the `Fetch` check or by the proxy.
    fn refusal(&self, proxy: &Proxy) -> Option<CaptureError> {
        if let Some(reason) = &self.refused {
            return Some(CaptureError::Refused(reason.clone()));
        }
        self.urls.iter().find_map(|url| proxy.failure(url).filter(|f| matches!(f, CaptureError::Refused(_))))
    }

    /// Why the proxy did not connect a main-document request, refusals first.
    fn proxy_failure(&self, proxy: &Proxy) -> Option<CaptureError> {
        self.refusal(proxy).or_else(|| self.urls.iter().rev().find_map(|url| proxy.failure(url)))
    }
}

/// One page of a running browser, over its DevTools connection, with the state that keeps every
/// request it makes checked: paused requests are answered whenever the tab reads the connection
/// (while a command runs, while it waits for a load, while it pumps), so a page waits for its
/// requests between two actions and never gets an unchecked one.
pub(crate) struct Tab {
    pub(crate) cdp: Cdp,
    proxy: Proxy,
    allowed_hosts: Vec<String>,
    target_id: String,
    session_id: String,
    /// The outbound verdict of each origin seen (`None`: allowed).
    verdicts: HashMap<String, Option<String>>,
    document: Document,
    /// The HTTP status of the current main document.
    status: Option<u16>,
    /// The origins the page's documents may come from, once a session is kept to them.
    confinement: Confinement,
}

/// Where a page session may go: `None` anywhere the outbound rules allow (captures), else only to
/// these origins. Frames inside the page (known by `Page.frameAttached`) may load what they like;
/// the top frame and any other frame (a new window) may not leave.
#[derive(Default)]
struct Confinement {
    origins: Option<Vec<String>>,
    subframes: HashSet<String>,
}

impl Confinement {
    /// Notes a frame attached inside the page.
    fn note(&mut self, event: &Event, session: Option<&str>) {
        if event.method == "Page.frameAttached"
            && event.session_id.as_deref() == session
            && let Some(frame) = event.params.get("frameId").and_then(Value::as_str)
        {
            self.subframes.insert(frame.to_owned());
        }
    }

    /// Why a paused request may not be sent: a document of the top frame or of a new window on an
    /// origin outside the kept ones.
    fn refusal(&self, event: &Event, target_id: &str) -> Option<String> {
        let origins = self.origins.as_ref()?;
        let params = &event.params;
        if params.get("resourceType").and_then(Value::as_str) != Some("Document") {
            return None;
        }
        let frame = params.get("frameId").and_then(Value::as_str).unwrap_or_default();
        if frame != target_id && self.subframes.contains(frame) {
            return None;
        }
        let url = params.pointer("/request/url").and_then(Value::as_str).unwrap_or_default();
        let parsed = url::Url::parse(url).ok()?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return None; // about:blank, data: — no network
        }
        let origin = parsed.origin().ascii_serialization();
        (!origins.contains(&origin))
            .then(|| format!("{origin} is neither the origin of targetUrl nor one of the automation's allowedOrigins"))
    }
}

/// What a navigation wait saw.
enum Load {
    Loaded,
    /// `Page.navigate` answered with an error text (the navigation did not happen).
    Failed(String),
}

impl Tab {
    /// Opens a blank page in the browser: downloads denied, every request intercepted.
    pub(crate) async fn open(mut cdp: Cdp, proxy: Proxy, allowed_hosts: Vec<String>) -> Result<Self, CaptureError> {
        // Downloads are refused outright: nothing a page offers is written to disk.
        cdp.call("Browser.setDownloadBehavior", json!({ "behavior": "deny" }), None).await?;
        // Every request of the browser (pages, out-of-process frames, workers, redirects) pauses
        // until it is continued or failed. The proxy enforces the same rules on every connection;
        // this check names the refused main document early and precisely.
        let patterns = json!({ "patterns": [{ "urlPattern": "*", "requestStage": "Request" }] });
        cdp.call("Fetch.enable", patterns, None).await?;
        let created = cdp.call("Target.createTarget", json!({ "url": "about:blank" }), None).await?;
        let target_id = string(&created, "targetId")?;
        let attached =
            cdp.call("Target.attachToTarget", json!({ "targetId": target_id, "flatten": true }), None).await?;
        let session_id = string(&attached, "sessionId")?;
        let session = Some(session_id.as_str());
        cdp.call("Page.enable", json!({}), session).await?;
        cdp.call("Network.enable", json!({}), session).await?;
        let metrics = json!({ "width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": false });
        cdp.call("Emulation.setDeviceMetricsOverride", metrics, session).await?;
        cdp.clear_events();
        Ok(Self {
            cdp,
            proxy,
            allowed_hosts,
            target_id,
            session_id,
            verdicts: HashMap::new(),
            document: Document::default(),
            status: None,
            confinement: Confinement::default(),
        })
    }

    /// Keeps the page's documents on `origins` from now on ([`Confinement`]).
    pub(crate) fn keep_to(&mut self, origins: &[String]) {
        self.confinement.origins = Some(origins.to_vec());
    }

    /// Why a navigation to `url` would be refused by [`Tab::keep_to`], before it is asked for.
    pub(crate) fn leaves_origins(&self, url: &url::Url) -> Option<String> {
        let origins = self.confinement.origins.as_ref()?;
        let origin = url.origin().ascii_serialization();
        (!origins.contains(&origin))
            .then(|| format!("{origin} is neither the origin of targetUrl nor one of the automation's allowedOrigins"))
    }

    /// Navigates to `url` and waits for the load event; the caller bounds it in time. A document
    /// answering 400 or more is [`CaptureError::HttpStatus`] (an error page is not evidence).
    pub(crate) async fn navigate(&mut self, url: &str) -> Result<(), CaptureError> {
        self.document = Document::default();
        self.status = None;
        let session = Some(self.session_id.clone());
        let navigation = self.cdp.send("Page.navigate", json!({ "url": url }), session.as_deref()).await?;
        match self.wait_for_load(Some(navigation)).await? {
            Load::Loaded => self.check_status(),
            Load::Failed(error_text) => Err(match (self.document.proxy_failure(&self.proxy), self.status) {
                (Some(failure), _) => failure,
                (None, Some(status)) if status >= 400 => CaptureError::HttpStatus(status),
                (None, _) => CaptureError::Unreachable(error_text),
            }),
        }
    }

    /// Waits for the top frame's load event, answering paused requests meanwhile. With
    /// `navigation`, the load counts only after that `Page.navigate` was answered.
    async fn wait_for_load(&mut self, navigation: Option<u64>) -> Result<Load, CaptureError> {
        let mut navigated = navigation.is_none();
        loop {
            match self.cdp.next().await? {
                Incoming::Response { id, result } if Some(id) == navigation => {
                    let result =
                        result.map_err(|message| CaptureError::Browser(format!("Page.navigate failed: {message}")))?;
                    if let Some(error_text) = result.get("errorText").and_then(Value::as_str) {
                        return Ok(Load::Failed(error_text.to_owned()));
                    }
                    navigated = true;
                }
                Incoming::Response { .. } => {}
                Incoming::Event(event) => {
                    if event.method == "Page.loadEventFired" && navigated && self.is_ours(&event) {
                        return Ok(Load::Loaded);
                    }
                    self.follow(&event).await?;
                }
            }
            // A refused main document fails the page whenever it happens (a redirect, a script
            // or a meta refresh sending the page to an internal host).
            if let Some(refusal) = self.document.refusal(&self.proxy) {
                return Err(refusal);
            }
        }
    }

    /// Sends a page command and waits for its answer, following events meanwhile.
    pub(crate) async fn call(&mut self, method: &str, params: Value) -> Result<Value, CaptureError> {
        let session = Some(self.session_id.clone());
        let id = self.cdp.send(method, params, session.as_deref()).await?;
        loop {
            match self.cdp.next().await? {
                Incoming::Response { id: answered, result } if answered == id => {
                    return result.map_err(|message| CaptureError::Browser(format!("{method} failed: {message}")));
                }
                Incoming::Response { .. } => {}
                Incoming::Event(event) => self.follow(&event).await?,
            }
            if let Some(refusal) = self.document.refusal(&self.proxy) {
                return Err(refusal);
            }
        }
    }

    /// Follows events for `settle`; if the top frame starts a navigation meanwhile (a click on a
    /// link, a form submitted), waits for it to load. Whether one happened.
    pub(crate) async fn settle(&mut self, settle: std::time::Duration) -> Result<bool, CaptureError> {
        let until = tokio::time::Instant::now() + settle;
        loop {
            let incoming = match tokio::time::timeout_at(until, self.cdp.next()).await {
                Ok(incoming) => incoming?,
                Err(_) => return Ok(false),
            };
            let Incoming::Event(event) = incoming else { continue };
            // A navigation of the page itself (a link opening a new tab or a download is not).
            let in_place = event.params.get("disposition").and_then(Value::as_str).is_none_or(|d| d == "currentTab");
            let starts = matches!(event.method.as_str(), "Page.frameStartedLoading" | "Page.frameRequestedNavigation")
                && self.is_ours(&event)
                && in_place
                && event.params.get("frameId").and_then(Value::as_str) == Some(self.target_id.as_str());
            if starts {
                self.document = Document::default();
                self.status = None;
                self.follow(&event).await?;
                self.wait_for_load(None).await?;
                self.check_status()?;
                return Ok(true);
            }
            if event.method == "Page.loadEventFired" && self.is_ours(&event) {
                self.check_status()?;
                return Ok(true);
            }
            self.follow(&event).await?;
            if let Some(refusal) = self.document.refusal(&self.proxy) {
                return Err(refusal);
            }
        }
    }

    /// A PNG of the viewport; a navigation to a refused host that happened meanwhile still fails.
    pub(crate) async fn screenshot(&mut self) -> Result<Vec<u8>, CaptureError> {
        let shot = self.call("Page.captureScreenshot", json!({ "format": "png" })).await?;
        while let Some(event) = self.cdp.kept_event() {
            self.follow(&event).await?;
        }
        if let Some(refusal) = self.document.refusal(&self.proxy) {
            return Err(refusal);
        }
        STANDARD
            .decode(string(&shot, "data")?)
            .map_err(|e| CaptureError::Browser(format!("the screenshot is not base64: {e}")))
    }

    pub(crate) fn allowed_hosts(&self) -> &[String] {
        &self.allowed_hosts
    }

    pub(crate) fn status(&self) -> Option<u16> {
        self.status
    }

    fn check_status(&self) -> Result<(), CaptureError> {
        match self.status {
            Some(status) if status >= 400 => Err(CaptureError::HttpStatus(status)),
            _ => Ok(()),
        }
    }

    fn is_ours(&self, event: &Event) -> bool {
        event.session_id.as_deref() == Some(self.session_id.as_str())
    }

    /// Follows one event (answers a paused request, notes the main document's requests and
    /// status); a proxy answer for the main document fails the page.
    async fn follow(&mut self, event: &Event) -> Result<(), CaptureError> {
        let session = Some(self.session_id.as_str());
        handle(
            &mut self.cdp,
            event,
            &self.target_id,
            session,
            &self.allowed_hosts,
            &mut self.verdicts,
            &mut self.document,
            &mut self.status,
            &mut self.confinement,
        )
        .await?;
        match proxy_answer(event, &self.target_id, session, &self.proxy) {
            Some(found) => Err(found),
            None => Ok(()),
        }
    }
}

/// Drives one page through `target` and returns its screenshot. The caller bounds it in time.
pub(crate) async fn capture(tab: &mut Tab, target: &Target) -> Result<Capture, CaptureError> {
    tab.navigate(target.url.as_str()).await?;
    let png = tab.screenshot().await?;
    Ok(Capture { png, http_status: tab.status() })
}

/// Follows one event: answers paused requests, notes the main document's requests and status.
#[allow(clippy::too_many_arguments, reason = "the state of one capture loop")]
async fn handle(
    cdp: &mut Cdp,
    event: &Event,
    target_id: &str,
    session: Option<&str>,
    allowed_hosts: &[String],
    verdicts: &mut HashMap<String, Option<String>>,
    document: &mut Document,
    status: &mut Option<u16>,
    confinement: &mut Confinement,
) -> Result<(), CaptureError> {
    confinement.note(event, session);
    match event.method.as_str() {
        "Fetch.requestPaused" => {
            let top = is_top_document(event, target_id);
            if top && let Some(url) = event.params.pointer("/request/url").and_then(Value::as_str) {
                document.urls.push(url.to_owned());
            }
            if let Some(reason) = confinement.refusal(event, target_id) {
                fail_request(cdp, event).await?;
                document.refused.get_or_insert(reason);
                return Ok(());
            }
            if let Some(reason) = pass_or_fail(cdp, event, allowed_hosts, verdicts).await?
                && top
            {
                document.refused.get_or_insert(reason);
            }
        }
        "Network.responseReceived" if event.session_id.as_deref() == session && is_top_document(event, target_id) => {
            let found = event.params.pointer("/response/status").and_then(Value::as_u64);
            *status = found.and_then(|s| u16::try_from(s).ok());
        }
        _ => {}
    }
    Ok(())
}

/// When the main document's response is the proxy's own answer (a refusal, or a host it could not
/// reach), what it said.
fn proxy_answer(event: &Event, target_id: &str, session: Option<&str>, proxy: &Proxy) -> Option<CaptureError> {
    if event.method != "Network.responseReceived"
        || event.session_id.as_deref() != session
        || !is_top_document(event, target_id)
    {
        return None;
    }
    let headers = event.params.pointer("/response/headers").and_then(Value::as_object)?;
    if !headers.keys().any(|name| name.eq_ignore_ascii_case(proxy::MARKER)) {
        return None;
    }
    let url = event.params.pointer("/response/url").and_then(Value::as_str).unwrap_or_default();
    Some(proxy.failure(url).unwrap_or_else(|| CaptureError::Browser("the egress proxy refused the page".into())))
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
        Some(_) => return fail_request(cdp, event).await.map(|()| verdict),
    };
    Ok(verdict)
}

/// Fails a paused request as blocked (not awaited, as in [`pass_or_fail`]).
async fn fail_request(cdp: &mut Cdp, event: &Event) -> Result<(), CdpError> {
    let Some(request_id) = event.params.get("requestId").and_then(Value::as_str) else { return Ok(()) };
    let params = json!({ "requestId": request_id, "errorReason": "BlockedByClient" });
    cdp.send("Fetch.failRequest", params, event.session_id.as_deref()).await.map(|_| ())
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
