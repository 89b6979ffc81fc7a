//! A scripted OpenAI-compatible model on a real local HTTP server (wiremock): `POST
//! /v1/chat/completions` answers the prepared replies in order (the last one again once the script
//! runs out) and records every request body, so that tests can read every prompt the server sent.
//!
//! A reply's arguments may name an element of the page as `@role:name`: the fake finds the element
//! line `[eN] role "name"` (name in any case) in the latest page view it received and puts its
//! reference in, as a model reading the snapshot would.

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::harness::{Backend, TestServer, random_hex, run_with_owned_env};

/// The path the server posts to, under `AUTOMATION_LLM_URL` = `{uri}/v1`.
pub const COMPLETIONS_PATH: &str = "/v1/chat/completions";

/// One prepared answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A completion calling one tool with these arguments (`@role:name` resolved, see the module).
    Tool(&'static str, Value),
    /// This status, with an error body that quotes the API key (which must not leak).
    Status(u16),
    /// A completion whose one tool call carries this raw `arguments` text.
    RawArguments(&'static str, &'static str),
}

#[derive(Debug, Default)]
pub struct State {
    script: Vec<Reply>,
    /// How many requests had come when the script was set: its first reply answers the next one.
    script_start: usize,
    /// Every request body received, in order.
    pub requests: Vec<Value>,
}

#[derive(Debug)]
pub struct FakeModel {
    server: MockServer,
    state: Arc<Mutex<State>>,
    /// The API key it expects (`AUTOMATION_LLM_API_KEY`), a secret that must never leak.
    pub api_key: String,
}

impl FakeModel {
    pub async fn start() -> Self {
        let server = MockServer::start().await;
        let api_key = format!("sk-fake-{}", random_hex(16));
        let state = Arc::new(Mutex::new(State::default()));
        let responder = Completions { state: Arc::clone(&state), api_key: api_key.clone() };
        Mock::given(method("POST")).and(path(COMPLETIONS_PATH)).respond_with(responder).mount(&server).await;
        Self { server, state, api_key }
    }

    pub fn uri(&self) -> String {
        self.server.uri()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The replies to give from now on, in order.
    pub fn script(&self, replies: Vec<Reply>) {
        let mut state = self.state();
        state.script = replies;
        state.script_start = state.requests.len();
    }

    /// Every request body received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.state().requests.clone()
    }

    /// Fails the test when `needle` occurs in any request the model received.
    #[track_caller]
    pub fn assert_never_sent(&self, needle: &str) {
        for (index, request) in self.requests().iter().enumerate() {
            let text = request.to_string();
            assert!(!text.contains(needle), "prompt {index} holds {needle:?}:\n{text}");
        }
    }
}

struct Completions {
    state: Arc<Mutex<State>>,
    api_key: String,
}

impl Respond for Completions {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let authorized = request
            .headers
            .get("authorization")
            .is_some_and(|v| v.as_bytes() == format!("Bearer {}", self.api_key).as_bytes());
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let turn = state.requests.len();
        state.requests.push(body.clone());
        if !authorized {
            return ResponseTemplate::new(401).set_body_json(json!({"error": {"message": "bad key"}}));
        }
        let reply = state.script.get(turn - state.script_start).or(state.script.last()).cloned();
        match reply {
            None => ResponseTemplate::new(500).set_body_string("no script"),
            Some(Reply::Status(status)) => ResponseTemplate::new(status)
                .set_body_json(json!({"error": {"message": format!("overloaded; your key {} is fine", self.api_key)}})),
            Some(Reply::Tool(name, arguments)) => {
                let arguments = resolve(&arguments, &latest_view(&body));
                completion(turn, name, &arguments.to_string())
            }
            Some(Reply::RawArguments(name, raw)) => completion(turn, name, raw),
        }
    }
}

fn completion(turn: usize, name: &str, arguments: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": format!("chatcmpl-{turn}"),
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": format!("call_{turn}"), "type": "function",
                            "function": {"name": name, "arguments": arguments}}],
        }}],
        "usage": {"prompt_tokens": 500, "completion_tokens": 20, "total_tokens": 520},
    }))
}

/// The text of the last user message (the latest page view).
fn latest_view(body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last_user = messages.iter().rev().find(|m| m["role"] == "user");
    last_user.and_then(|m| m["content"].as_str()).unwrap_or_default().to_owned()
}

/// `arguments` with every `"@role:name"` string replaced by the reference of that element in
/// `view` (left as is when there is none: the server then reports an unknown element).
fn resolve(arguments: &Value, view: &str) -> Value {
    let Value::Object(map) = arguments else { return arguments.clone() };
    let mut out = map.clone();
    for value in out.values_mut() {
        let Some((role, name)) = value.as_str().and_then(|s| s.strip_prefix('@')).and_then(|s| s.split_once(':'))
        else {
            continue;
        };
        let wanted = format!("] {role} \"{}\"", name.to_lowercase());
        let line = view.lines().find(|line| line.starts_with('[') && line.to_lowercase().ends_with(&wanted));
        if let Some(reference) = line.and_then(|l| l.strip_prefix('[')).and_then(|l| l.split(']').next()) {
            *value = Value::String(reference.to_owned());
        }
    }
    Value::Object(out)
}

/// Runs `test` against a server whose model is a fresh [`FakeModel`], with loopback pages allowed
/// and `extra` environment; afterwards the API key may not appear in the server's stderr.
pub async fn run<F, Fut>(backend: Backend, extra: &[(&str, &str)], test: F)
where
    F: FnOnce(Arc<TestServer>, Arc<FakeModel>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let model = Arc::new(FakeModel::start().await);
    let mut env = vec![
        ("RUST_LOG".to_owned(), "info".to_owned()),
        ("AUTOMATION_ALLOWED_HOSTS".to_owned(), "127.0.0.1".to_owned()),
        ("AUTOMATION_LLM_URL".to_owned(), format!("{}/v1", model.uri())),
        ("AUTOMATION_LLM_MODEL".to_owned(), "scripted".to_owned()),
        ("AUTOMATION_LLM_API_KEY".to_owned(), model.api_key.clone()),
    ];
    env.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    run_with_owned_env(backend, env, move |server| async move {
        test(Arc::clone(&server), Arc::clone(&model)).await;
        let stderr = server.stop().await;
        assert!(!stderr.contains(&model.api_key), "the server's stderr holds the model's API key:\n{stderr}");
    })
    .await;
}
