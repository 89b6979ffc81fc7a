//! Printing a self-contained HTML document to PDF ([`DocumentPrinter`]) with the same headless
//! Chromium as captures: a process per print, its own profile and process group, a slot of the
//! runner's printing pool ([`BrowserSettings::max_prints`], apart from automations' browsers). A
//! print waits at most [`BrowserSettings::print_wait`] for its slot, then is refused as
//! [`PrintError::Busy`] (the caller retries later) instead of queueing without end.
//!
//! The document never touches the network: it is written into a blank page with
//! `Page.setDocumentContent` (no URL, no navigation), page scripts are off from the browser's start
//! (`--blink-settings=scriptEnabled=false`) and for the page (`Emulation.setScriptExecutionDisabled`),
//! every request the page would make (an image, a style sheet, a font, a prefetch) is paused by the
//! browser-wide `Fetch` domain and failed, and the browser's proxy is a local black hole that
//! closes every connection it gets, for anything that escaped the interception.
//!
//! The pages are A4 with 15 mm margins, backgrounds printed, no header (the document has its
//! own) and a footer with "page / pages" in small type.

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use compliance_ports::{DocumentPrinter, PrintError};
use serde_json::{Value, json};
use tokio::net::TcpListener;

#[cfg(doc)]
use crate::BrowserSettings;
use crate::cdp::{Cdp, CdpError, Incoming};
use crate::chromium::Chromium;
use crate::{ChromiumRunner, EXIT_COMMAND, LAUNCH_ALLOWANCE, ready, whole_seconds};

/// When a refused print may be tried again: about what one print takes.
const RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

/// A4 in inches, and 15 mm.
const A4_WIDTH: f64 = 8.27;
const A4_HEIGHT: f64 = 11.69;
const MARGIN: f64 = 0.59;

const FOOTER: &str = "<div style=\"font-size:8px;width:100%;text-align:center;color:#555\">\
<span class=\"pageNumber\"></span> / <span class=\"totalPages\"></span></div>";

#[async_trait]
impl DocumentPrinter for ChromiumRunner {
    async fn print_pdf(&self, html: &str) -> Result<Vec<u8>, PrintError> {
        let settings = self.settings();
        let timeout = settings.default_timeout;
        let _slot = match tokio::time::timeout(settings.print_wait, self.print_slots.acquire()).await {
            Ok(slot) => slot.map_err(|_| PrintError::Unavailable("the runner is closed".into()))?,
            Err(_) => return Err(PrintError::Busy { retry_after: RETRY_AFTER }),
        };
        let black_hole = BlackHole::start().await?;
        let args = [
            format!("--proxy-server=http://127.0.0.1:{}", black_hole.port),
            "--proxy-bypass-list=<-loopback>".to_owned(),
            "--blink-settings=scriptEnabled=false".to_owned(),
            "--force-webrtc-ip-handling-policy=disable_non_proxied_udp".to_owned(),
            "--webrtc-ip-handling-policy=disable_non_proxied_udp".to_owned(),
        ];
        let (chromium, mut cdp) =
            Chromium::launch(&settings.chromium_path, &settings.work_dir, &settings.isolation, &args)
                .map_err(|error| PrintError::Unavailable(error.to_string()))?;
        let result = match tokio::time::timeout(LAUNCH_ALLOWANCE, ready(&mut cdp)).await {
            Ok(Ok(())) => {
                let printed = tokio::time::timeout(timeout, print(&mut cdp, html)).await;
                let _ = tokio::time::timeout(EXIT_COMMAND, cdp.send("Browser.close", json!({}), None)).await;
                match printed {
                    Ok(result) => result.map_err(|error| PrintError::Failed(error.0)),
                    Err(_) => Err(PrintError::Timeout(whole_seconds(timeout))),
                }
            }
            Ok(Err(error)) => Err(PrintError::Unavailable(format!("{}: {}", error.0, chromium.stderr_tail()))),
            Err(_) => Err(PrintError::Unavailable("Chromium did not start in time".into())),
        };
        chromium.shutdown().await;
        drop(black_hole);
        result
    }
}

/// Opens a blank page, writes the document into it, waits for its load event and prints it.
async fn print(cdp: &mut Cdp, html: &str) -> Result<Vec<u8>, CdpError> {
    cdp.call("Browser.setDownloadBehavior", json!({ "behavior": "deny" }), None).await?;
    cdp.call("Fetch.enable", json!({ "patterns": [{ "urlPattern": "*", "requestStage": "Request" }] }), None).await?;
    let created = cdp.call("Target.createTarget", json!({ "url": "about:blank" }), None).await?;
    let target_id = text(&created, "targetId")?;
    let attached = cdp.call("Target.attachToTarget", json!({ "targetId": target_id, "flatten": true }), None).await?;
    let session_id = text(&attached, "sessionId")?;
    let session = Some(session_id.as_str());
    call(cdp, "Emulation.setScriptExecutionDisabled", json!({ "value": true }), session).await?;
    call(cdp, "Page.enable", json!({}), session).await?;
    let tree = call(cdp, "Page.getFrameTree", json!({}), session).await?;
    let frame_id = tree.pointer("/frameTree/frame/id").and_then(Value::as_str).unwrap_or(&target_id).to_owned();
    let written = cdp.send("Page.setDocumentContent", json!({ "frameId": frame_id, "html": html }), session).await?;
    wait_for_load(cdp, written, session).await?;
    let options = json!({
        "paperWidth": A4_WIDTH,
        "paperHeight": A4_HEIGHT,
        "marginTop": MARGIN,
        "marginBottom": MARGIN,
        "marginLeft": MARGIN,
        "marginRight": MARGIN,
        "printBackground": true,
        "displayHeaderFooter": true,
        "headerTemplate": "<span></span>",
        "footerTemplate": FOOTER,
    });
    let printed = call(cdp, "Page.printToPDF", options, session).await?;
    let data = printed.get("data").and_then(Value::as_str).unwrap_or_default();
    STANDARD.decode(data).map_err(|e| CdpError(format!("Page.printToPDF answered data that is not base64: {e}")))
}

/// Waits for the answer to `Page.setDocumentContent` (command `written`) and the page's load
/// event, failing every request meanwhile. A document without sub-resources is loaded while the
/// command runs: its load event comes before the answer.
async fn wait_for_load(cdp: &mut Cdp, written: u64, session: Option<&str>) -> Result<(), CdpError> {
    let (mut answered, mut loaded) = (false, false);
    while !(answered && loaded) {
        match cdp.next().await? {
            Incoming::Response { id, result } if id == written => {
                result.map_err(|message| CdpError(format!("Page.setDocumentContent failed: {message}")))?;
                answered = true;
            }
            Incoming::Response { .. } => {}
            Incoming::Event(event) if event.method == "Fetch.requestPaused" => fail_request(cdp, &event.params).await?,
            Incoming::Event(event) => {
                loaded |= event.method == "Page.loadEventFired" && event.session_id.as_deref() == session;
            }
        }
    }
    Ok(())
}

/// Sends a command and waits for its answer, failing every request meanwhile.
async fn call(cdp: &mut Cdp, method: &str, params: Value, session: Option<&str>) -> Result<Value, CdpError> {
    let id = cdp.send(method, params, session).await?;
    loop {
        match cdp.next().await? {
            Incoming::Response { id: answered, result } if answered == id => {
                return result.map_err(|message| CdpError(format!("{method} failed: {message}")));
            }
            Incoming::Response { .. } => {}
            Incoming::Event(event) if event.method == "Fetch.requestPaused" => fail_request(cdp, &event.params).await?,
            Incoming::Event(_) => {}
        }
    }
}

/// Refuses a paused request: a printed document fetches nothing.
async fn fail_request(cdp: &mut Cdp, params: &Value) -> Result<(), CdpError> {
    if let Some(request_id) = params.get("requestId").and_then(Value::as_str) {
        let url = params.pointer("/request/url").and_then(Value::as_str).unwrap_or_default();
        tracing::debug!(url, "a printed document asked for a resource: refused");
        // Not awaited: the request may be gone by then, which is fine.
        cdp.send("Fetch.failRequest", json!({ "requestId": request_id, "errorReason": "BlockedByClient" }), None)
            .await?;
    }
    Ok(())
}

fn text(value: &Value, field: &str) -> Result<String, CdpError> {
    value
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| CdpError(format!("the browser's answer has no {field}")))
}

/// A proxy on loopback that closes every connection: where the printing browser's requests end
/// if one escaped `Fetch`.
struct BlackHole {
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl BlackHole {
    async fn start() -> Result<Self, PrintError> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| PrintError::Unavailable(format!("cannot listen on loopback: {e}")))?;
        let port = listener.local_addr().map_err(|e| PrintError::Unavailable(e.to_string()))?.port();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tracing::debug!("a printing browser opened a connection: closed");
                drop(stream);
            }
        });
        Ok(Self { port, task })
    }
}

impl Drop for BlackHole {
    fn drop(&mut self) {
        self.task.abort();
    }
}
