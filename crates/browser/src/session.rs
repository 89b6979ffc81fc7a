//! A page session ([`BrowserPage`]) for the step and agent executors: a [`Tab`] in a browser of its
//! own, driven one action at a time.
//!
//! # Matching rules
//!
//! - **Click by visible text.** The needle and each element's text are compared with white space
//!   collapsed and case ignored. Candidates are visible elements; the first rule that finds one
//!   wins, in document order: (1) a button, link, label, tab, menu item or `summary` whose text
//!   equals the needle; (2) any other element whose own text equals it (the innermost); (3) a
//!   button, link, … whose text contains it; (4) any element whose text contains it (the
//!   innermost). An element's text is its visible text, its `aria-label`, or for inputs its value.
//! - **Type into a field** named by the text of its label (`<label for>`, a wrapping label,
//!   `aria-label`, `aria-labelledby`), its placeholder, or its `name`: equal first (in that order),
//!   then a label or placeholder containing the needle. Visible `input`s (not buttons, hidden,
//!   checkboxes or radios), `textarea`s and editable elements only. The field is focused, its
//!   value cleared and the text inserted as the user would type it (`Input.insertText`), then
//!   `change` fires.
//! - **Text on the page** is the top document's visible text (`innerText`: not form values, not
//!   frames), compared with white space collapsed and case ignored.
//! - A click or key press that starts a navigation of the page (a link, a submitted form) waits
//!   for it to load; one that does not is followed for [`SETTLE`] so that the page can react.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use compliance_ports::{
    BrowserPage, CaptureError, Clickable, Field, PageError, PageSnapshot, ScrollDirection, SnapshotElement,
};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use tokio::sync::OwnedSemaphorePermit;

use crate::chromium::Chromium;
use crate::page::Tab;
use crate::{EXIT_COMMAND, whole_seconds};

/// How long a click or key press that starts no navigation is followed.
const SETTLE: Duration = Duration::from_millis(300);
/// How often `wait_for_text` looks again.
const POLL: Duration = Duration::from_millis(200);

/// The page's helpers, defined once per document (they survive until the page reloads).
const HELPERS: &str = include_str!("session.js");

/// Dropped without [`ChromiumPage::end`] (the run was cancelled), `Chromium`'s own drop kills the
/// process group.
pub(crate) struct ChromiumPage {
    tab: Tab,
    chromium: Option<Chromium>,
    /// The browser's place among those allowed to run at once.
    _slot: OwnedSemaphorePermit,
    /// Each navigation, load or command.
    timeout: Duration,
}

impl ChromiumPage {
    pub(crate) fn new(tab: Tab, chromium: Chromium, slot: OwnedSemaphorePermit, timeout: Duration) -> Self {
        Self { tab, chromium: Some(chromium), _slot: slot, timeout }
    }

    /// Ends the browser: a graceful close, then the process group's kill.
    pub(crate) async fn end(mut self) {
        let _ = tokio::time::timeout(EXIT_COMMAND, self.tab.cdp.send("Browser.close", json!({}), None)).await;
        if let Some(chromium) = self.chromium.take() {
            chromium.shutdown().await;
        }
    }

    /// Runs `f` within the page's timeout.
    async fn bounded<T>(
        &mut self,
        what: &str,
        f: impl AsyncFnOnce(&mut Tab) -> Result<T, CaptureError>,
    ) -> Result<T, PageError> {
        let timeout = self.timeout;
        match tokio::time::timeout(timeout, f(&mut self.tab)).await {
            Ok(result) => result.map_err(PageError::from),
            Err(_) => {
                Err(PageError::Timeout(format!("{what} did not finish within {} seconds", whole_seconds(timeout))))
            }
        }
    }

    /// Calls one of the page's helpers with JSON arguments; its JSON result.
    async fn helper(&mut self, name: &str, args: Value) -> Result<Value, PageError> {
        let expression = format!("({HELPERS})().{name}(...{args})");
        self.bounded("the page", async |tab| evaluate(tab, &expression).await).await
    }

    /// After a click or key press: waits for a navigation it started.
    async fn settle(&mut self) -> Result<(), PageError> {
        self.bounded("the page", async |tab| tab.settle(SETTLE).await.map(|_| ())).await
    }
}

/// Evaluates `expression` in the page and returns its value (by value, awaited).
async fn evaluate(tab: &mut Tab, expression: &str) -> Result<Value, CaptureError> {
    let params = json!({ "expression": expression, "returnByValue": true, "awaitPromise": true });
    let answer = tab.call("Runtime.evaluate", params).await?;
    if let Some(exception) = answer.get("exceptionDetails") {
        let text = exception.pointer("/exception/description").or_else(|| exception.get("text"));
        let text = text.and_then(Value::as_str).unwrap_or("an exception");
        return Err(CaptureError::Browser(format!("a page script failed: {}", first_line(text))));
    }
    Ok(answer.pointer("/result/value").cloned().unwrap_or(Value::Null))
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

#[async_trait]
impl BrowserPage for ChromiumPage {
    async fn keep_to_origins(&mut self, origins: &[String]) -> Result<(), PageError> {
        self.tab.keep_to(origins);
        Ok(())
    }

    async fn navigate(&mut self, url: &str) -> Result<(), PageError> {
        let allowed = self.tab.allowed_hosts().to_vec();
        let target = crate::outbound::check(url, &allowed).await?;
        if let Some(refusal) = self.tab.leaves_origins(&target.url) {
            return Err(PageError::Refused(refusal));
        }
        let seconds = whole_seconds(self.timeout);
        match tokio::time::timeout(self.timeout, self.tab.navigate(target.url.as_str())).await {
            Ok(result) => result.map_err(PageError::from),
            Err(_) => Err(CaptureError::Timeout(seconds).into()),
        }
    }

    async fn click(&mut self, target: Clickable<'_>) -> Result<(), PageError> {
        let (kind, needle) = match target {
            Clickable::Text(text) => ("text", text),
            Clickable::Css(selector) => ("css", selector),
            Clickable::Reference(reference) => ("reference", reference),
        };
        let found = self.helper("locate", json!([kind, needle])).await?;
        let (Some(x), Some(y)) = (found.get("x").and_then(Value::as_f64), found.get("y").and_then(Value::as_f64))
        else {
            return Err(PageError::NotFound(not_found(kind, needle, found.get("error"))));
        };
        self.bounded("the click", async |tab| {
            for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
                let event = json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 });
                tab.call("Input.dispatchMouseEvent", event).await?;
            }
            Ok(())
        })
        .await?;
        self.settle().await
    }

    async fn type_into(&mut self, field: Field<'_>, value: &SecretString) -> Result<(), PageError> {
        let (kind, needle) = match field {
            Field::Named(name) => ("field", name),
            Field::Reference(reference) => ("reference", reference),
        };
        let found = self.helper("focusField", json!([kind, needle])).await?;
        if found.get("focused").and_then(Value::as_bool) != Some(true) {
            return Err(PageError::NotFound(not_found(kind, needle, found.get("error"))));
        }
        // The value goes to the browser only, never into a message or a log of ours.
        let text = json!({ "text": value.expose_secret() });
        self.bounded("typing", async |tab| tab.call("Input.insertText", text).await.map(|_| ())).await?;
        self.helper("changed", json!([])).await.map(|_| ())
    }

    async fn press(&mut self, key: &str) -> Result<(), PageError> {
        let Some(key) = Key::named(key) else {
            return Err(PageError::NotFound(format!("there is no key named {key}")));
        };
        self.bounded("the key press", async |tab| {
            let down = json!({
                "type": if key.text.is_empty() { "rawKeyDown" } else { "keyDown" },
                "key": key.key, "code": key.code, "windowsVirtualKeyCode": key.code_number,
                "text": key.text, "unmodifiedText": key.text,
            });
            tab.call("Input.dispatchKeyEvent", down).await?;
            let up =
                json!({ "type": "keyUp", "key": key.key, "code": key.code, "windowsVirtualKeyCode": key.code_number });
            tab.call("Input.dispatchKeyEvent", up).await.map(|_| ())
        })
        .await?;
        self.settle().await
    }

    async fn scroll(&mut self, direction: ScrollDirection) -> Result<(), PageError> {
        let sign = match direction {
            ScrollDirection::Up => -1,
            ScrollDirection::Down => 1,
        };
        self.helper("scroll", json!([sign])).await.map(|_| ())
    }

    async fn wait_for_text(&mut self, text: &str, deadline: Instant) -> Result<(), PageError> {
        loop {
            if self.contains_text(text).await? {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(PageError::Timeout("the text did not appear before the run's deadline".into()));
            }
            // Follows the page meanwhile (its requests are answered, a navigation is waited for).
            let pause = POLL.min(deadline - now);
            self.bounded("the page", async |tab| tab.settle(pause).await.map(|_| ())).await?;
        }
    }

    async fn contains_text(&mut self, text: &str) -> Result<bool, PageError> {
        let found = self.helper("containsText", json!([text])).await?;
        Ok(found.as_bool() == Some(true))
    }

    async fn current_url(&mut self) -> Result<String, PageError> {
        let url = self.bounded("the page", async |tab| evaluate(tab, "location.href").await).await?;
        Ok(url.as_str().unwrap_or_default().to_owned())
    }

    async fn snapshot(&mut self) -> Result<PageSnapshot, PageError> {
        let limits = json!([PageSnapshot::TEXT_MAX, PageSnapshot::ELEMENTS_MAX]);
        let found = self.helper("snapshot", limits).await?;
        let field = |name: &str| found.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
        let elements = found.get("elements").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let element = |e: &Value| {
            let field = |name: &str| e.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
            SnapshotElement { reference: field("reference"), role: field("role"), name: field("name") }
        };
        Ok(PageSnapshot {
            url: field("url"),
            title: field("title"),
            text: field("text").chars().take(PageSnapshot::TEXT_MAX).collect(),
            elements: elements.iter().take(PageSnapshot::ELEMENTS_MAX).map(element).collect(),
        })
    }

    async fn screenshot(&mut self) -> Result<Vec<u8>, PageError> {
        self.bounded("the screenshot", async |tab| tab.screenshot().await).await
    }

    async fn close(self: Box<Self>) {
        self.end().await;
    }
}

/// Why a locator found nothing, for a step's detail.
fn not_found(kind: &str, needle: &str, error: Option<&Value>) -> String {
    if let Some(error) = error.and_then(Value::as_str) {
        return error.to_owned();
    }
    match kind {
        "text" => format!("no visible button, link, label or text on the page reads \"{needle}\""),
        "css" => format!("no visible element matches the selector \"{needle}\""),
        "field" => format!("no visible field has the label, placeholder or name \"{needle}\""),
        _ => format!("no element has the reference {needle} (take a new snapshot)"),
    }
}

/// A key as `Input.dispatchKeyEvent` wants it.
struct Key {
    key: String,
    code: String,
    code_number: u32,
    /// What the key types (`\r` for Enter submits a form).
    text: String,
}

impl Key {
    /// The names of `compliance_domain::automation::PRESSABLE_KEYS`, or one character.
    fn named(name: &str) -> Option<Self> {
        let named = |key: &str, code: &str, code_number: u32, text: &str| Self {
            key: key.to_owned(),
            code: code.to_owned(),
            code_number,
            text: text.to_owned(),
        };
        Some(match name {
            "Enter" => named("Enter", "Enter", 13, "\r"),
            "Tab" => named("Tab", "Tab", 9, ""),
            "Escape" => named("Escape", "Escape", 27, ""),
            "Backspace" => named("Backspace", "Backspace", 8, ""),
            "Delete" => named("Delete", "Delete", 46, ""),
            "Space" => named(" ", "Space", 32, " "),
            "ArrowUp" => named("ArrowUp", "ArrowUp", 38, ""),
            "ArrowDown" => named("ArrowDown", "ArrowDown", 40, ""),
            "ArrowLeft" => named("ArrowLeft", "ArrowLeft", 37, ""),
            "ArrowRight" => named("ArrowRight", "ArrowRight", 39, ""),
            "Home" => named("Home", "Home", 36, ""),
            "End" => named("End", "End", 35, ""),
            "PageUp" => named("PageUp", "PageUp", 33, ""),
            "PageDown" => named("PageDown", "PageDown", 34, ""),
            _ => {
                let mut chars = name.chars();
                let (Some(c), None) = (chars.next(), chars.next()) else { return None };
                let upper = c.to_ascii_uppercase();
                let code_number = if upper.is_ascii_alphanumeric() { u32::from(upper) } else { 0 };
                let code = match c {
                    c if c.is_ascii_alphabetic() => format!("Key{upper}"),
                    c if c.is_ascii_digit() => format!("Digit{c}"),
                    _ => String::new(),
                };
                Self { key: c.to_string(), code, code_number, text: c.to_string() }
            }
        })
    }
}
