//! A minimal Chrome DevTools Protocol client over the browser's DevTools pipe
//! (`--remote-debugging-pipe`: JSON messages, each ended by a NUL byte, written to the browser's
//! fd 3 and read from its fd 4): send a command, read the answer with the same id, and keep the
//! events that arrive meanwhile for [`Cdp::next`]. A pipe, unlike a DevTools TCP port, cannot be
//! reached by any other local process (or by a page that guesses the port).
//!
//! Sessions are "flat": a command for a page carries the `sessionId` of the attachment, and so do
//! the page's events, all on the browser's one connection.

use std::collections::VecDeque;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

/// An event: its method, its parameters and, for a page, the session it belongs to.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub method: String,
    pub params: Value,
    pub session_id: Option<String>,
}

/// What the browser sent.
pub(crate) enum Incoming {
    Response { id: u64, result: Result<Value, String> },
    Event(Event),
}

/// The longest message read from the browser (a full-page screenshot or a PDF, base64-encoded).
const MAX_MESSAGE: u64 = 256 << 20;

pub(crate) struct Cdp {
    /// The browser's fd 3: where commands go.
    commands: ChildStdin,
    /// The browser's fd 4: answers and events.
    messages: BufReader<ChildStdout>,
    next_id: u64,
    events: VecDeque<Event>,
}

/// A protocol failure: the connection broke, or the browser answered a command with an error.
#[derive(Debug)]
pub(crate) struct CdpError(pub String);

impl Cdp {
    /// A client over the browser's DevTools pipe.
    pub(crate) fn over_pipe(commands: ChildStdin, messages: ChildStdout) -> Self {
        Self { commands, messages: BufReader::new(messages), next_id: 0, events: VecDeque::new() }
    }

    /// Sends a command without waiting for its answer (which [`Cdp::next`] returns, and
    /// [`Cdp::call`] skips); returns its id.
    pub(crate) async fn send(
        &mut self,
        method: &str,
        params: Value,
        session_id: Option<&str>,
    ) -> Result<u64, CdpError> {
        self.next_id += 1;
        let id = self.next_id;
        let mut command = json!({ "id": id, "method": method, "params": params });
        if let (Some(session_id), Some(object)) = (session_id, command.as_object_mut()) {
            object.insert("sessionId".into(), Value::String(session_id.into()));
        }
        let mut bytes = command.to_string().into_bytes();
        bytes.push(0);
        self.commands.write_all(&bytes).await.map_err(|e| CdpError(format!("cannot send {method}: {e}")))?;
        self.commands.flush().await.map_err(|e| CdpError(format!("cannot send {method}: {e}")))?;
        Ok(id)
    }

    /// Sends a command and waits for its answer; events read meanwhile are kept in order.
    pub(crate) async fn call(
        &mut self,
        method: &str,
        params: Value,
        session_id: Option<&str>,
    ) -> Result<Value, CdpError> {
        let id = self.send(method, params, session_id).await?;
        loop {
            match self.read().await? {
                Incoming::Response { id: answered, result } if answered == id => {
                    return result.map_err(|message| CdpError(format!("{method} failed: {message}")));
                }
                Incoming::Response { .. } => {}
                Incoming::Event(event) => self.events.push_back(event),
            }
        }
    }

    /// The next message: a kept event first, then from the connection.
    pub(crate) async fn next(&mut self) -> Result<Incoming, CdpError> {
        match self.events.pop_front() {
            Some(event) => Ok(Incoming::Event(event)),
            None => self.read().await,
        }
    }

    /// The next kept event, without reading the connection.
    pub(crate) fn kept_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Drops the kept events (those of before a navigation).
    pub(crate) fn clear_events(&mut self) {
        self.events.clear();
    }

    async fn read(&mut self) -> Result<Incoming, CdpError> {
        loop {
            let mut message = Vec::new();
            let read = (&mut self.messages)
                .take(MAX_MESSAGE)
                .read_until(0, &mut message)
                .await
                .map_err(|e| CdpError(format!("the DevTools connection failed: {e}")))?;
            match message.pop() {
                Some(0) => {}
                _ if read == 0 => return Err(CdpError("the DevTools connection closed".into())),
                _ => return Err(CdpError("the browser sent an unfinished or oversized message".into())),
            }
            let mut value: Value = serde_json::from_slice(&message)
                .map_err(|e| CdpError(format!("the browser sent a message that is not JSON: {e}")))?;
            if let Some(id) = value.get("id").and_then(Value::as_u64) {
                let result = match value.get_mut("error") {
                    Some(error) => {
                        Err(error.get("message").and_then(Value::as_str).unwrap_or("unknown error").to_owned())
                    }
                    None => Ok(value.get_mut("result").map(Value::take).unwrap_or(Value::Null)),
                };
                return Ok(Incoming::Response { id, result });
            }
            if let Some(method) = value.get("method").and_then(Value::as_str) {
                return Ok(Incoming::Event(Event {
                    method: method.to_owned(),
                    session_id: value.get("sessionId").and_then(Value::as_str).map(str::to_owned),
                    params: value.get_mut("params").map(Value::take).unwrap_or(Value::Null),
                }));
            }
        }
    }
}
