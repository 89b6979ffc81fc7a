//! A minimal Chrome DevTools Protocol client over one websocket: send a command, read the answer
//! with the same id, and keep the events that arrive meanwhile for [`Cdp::next`].
//!
//! Sessions are "flat": a command for a page carries the `sessionId` of the attachment, and so do
//! the page's events, all on the browser's one connection.

use std::collections::VecDeque;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

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

pub(crate) struct Cdp {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    events: VecDeque<Event>,
}

/// A protocol failure: the connection broke, or the browser answered a command with an error.
#[derive(Debug)]
pub(crate) struct CdpError(pub String);

impl Cdp {
    /// Connects to a `ws://` DevTools endpoint (the browser's, from its stderr).
    pub(crate) async fn connect(ws_url: &str) -> Result<Self, CdpError> {
        let (ws, _) = tokio_tungstenite::connect_async(ws_url)
            .await
            .map_err(|e| CdpError(format!("cannot connect to the DevTools endpoint: {e}")))?;
        Ok(Self { ws, next_id: 0, events: VecDeque::new() })
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
        self.ws
            .send(Message::text(command.to_string()))
            .await
            .map_err(|e| CdpError(format!("cannot send {method}: {e}")))?;
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
            let message = match self.ws.next().await {
                Some(Ok(message)) => message,
                Some(Err(e)) => return Err(CdpError(format!("the DevTools connection failed: {e}"))),
                None => return Err(CdpError("the DevTools connection closed".into())),
            };
            let text = match message {
                Message::Text(text) => text,
                Message::Close(_) => return Err(CdpError("the DevTools connection closed".into())),
                _ => continue,
            };
            let mut value: Value = serde_json::from_str(text.as_str())
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
