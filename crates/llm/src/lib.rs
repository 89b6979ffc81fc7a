//! [`ChatCompletionsModel`]: the agent model port over any OpenAI-compatible Chat Completions
//! endpoint with tools (function calling): hosted APIs, vLLM, llama.cpp's server, Ollama.
//!
//! One `POST {base}/chat/completions` per turn, `temperature` 0, the tools as `function` tools.
//! No redirects are followed (the API key must not travel elsewhere), every request has a timeout,
//! and errors say what happened without the API key or the server's response body: a 5xx, a 429,
//! a timeout or a refused connection is "model unavailable"; another status is a refusal (a
//! configuration problem); an answer that is not a completion, or a tool call whose arguments are
//! not a JSON object, is malformed.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use compliance_ports::{AgentModel, ChatMessage, ChatRole, ModelError, ModelReply, TokenUsage, ToolCall, ToolSpec};
use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};
use url::Url;

/// Time for one request, from connecting to the last byte of the answer (a model may think long).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Time for establishing a connection (DNS, TCP, TLS).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read.
pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// Where the model is. `Debug` shows the API key as `[REDACTED]`.
#[derive(Debug, Clone)]
pub struct LlmSettings {
    /// The API's base URL, such as `https://api.openai.com/v1` (`/chat/completions` is added
    /// unless the URL already ends with it).
    pub url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer {key}`; local servers often need none.
    pub api_key: Option<SecretString>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
}

impl LlmSettings {
    pub fn new(url: impl Into<String>, model: impl Into<String>, api_key: Option<SecretString>) -> Self {
        Self {
            url: url.into(),
            model: model.into(),
            api_key,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }
}

/// Why [`ChatCompletionsModel::new`] refused its settings. Messages carry neither the key nor the URL.
#[derive(Debug, thiserror::Error)]
pub enum LlmConfigError {
    #[error("the model URL must be an absolute http(s) URL without user, password, query or fragment")]
    InvalidUrl,
    #[error("the model name is empty")]
    MissingModel,
    #[error("the API key is empty or cannot be sent in an HTTP header")]
    InvalidKey,
    #[error("the HTTP client could not be built")]
    Client(#[source] reqwest::Error),
}

#[derive(Clone)]
pub struct ChatCompletionsModel {
    client: reqwest::Client,
    endpoint: Url,
    model: String,
    /// `Bearer {key}`, marked sensitive.
    authorization: Option<HeaderValue>,
}

impl fmt::Debug for ChatCompletionsModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatCompletionsModel")
            .field("endpoint", &self.endpoint.as_str())
            .field("model", &self.model)
            .field("authorization", &self.authorization.as_ref().map(|_| "[REDACTED]"))
            .finish_non_exhaustive()
    }
}

impl ChatCompletionsModel {
    /// Checks the settings and builds the HTTP client (no redirects, the settings' timeouts).
    pub fn new(settings: LlmSettings) -> Result<Self, LlmConfigError> {
        let endpoint = endpoint(&settings.url)?;
        let model = settings.model.trim().to_owned();
        if model.is_empty() {
            return Err(LlmConfigError::MissingModel);
        }
        let authorization = match &settings.api_key {
            None => None,
            Some(key) => {
                let key = key.expose_secret().trim();
                if key.is_empty() {
                    return Err(LlmConfigError::InvalidKey);
                }
                let mut value =
                    HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| LlmConfigError::InvalidKey)?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(settings.connect_timeout)
            .timeout(settings.timeout)
            .user_agent(concat!("compliance-llm/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmConfigError::Client(e.without_url()))?;
        Ok(Self { client, endpoint, model, authorization })
    }

    fn body(&self, messages: &[ChatMessage], tools: &[ToolSpec]) -> Value {
        let tools: Vec<Value> = tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name, "description": tool.description, "parameters": tool.parameters,
                }})
            })
            .collect();
        json!({
            "model": self.model,
            "messages": messages.iter().map(message).collect::<Vec<_>>(),
            "tools": tools,
            "temperature": 0,
        })
    }
}

#[async_trait]
impl AgentModel for ChatCompletionsModel {
    async fn complete(&self, messages: &[ChatMessage], tools: &[ToolSpec]) -> Result<ModelReply, ModelError> {
        let mut request = self.client.post(self.endpoint.clone()).json(&self.body(messages, tools));
        if let Some(authorization) = &self.authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        let response = request.send().await.map_err(transport_error)?;
        let status = response.status();
        if !status.is_success() {
            return Err(status_error(status));
        }
        let body = read_body(response).await?;
        parse_reply(&body)
    }
}

/// `{base}/chat/completions`, or the URL itself when it names that endpoint already.
fn endpoint(base: &str) -> Result<Url, LlmConfigError> {
    let mut url = Url::parse(base.trim()).map_err(|_| LlmConfigError::InvalidUrl)?;
    let acceptable = matches!(url.scheme(), "http" | "https")
        && url.host().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.query().is_none()
        && url.fragment().is_none();
    if !acceptable {
        return Err(LlmConfigError::InvalidUrl);
    }
    let path = url.path().trim_end_matches('/').to_owned();
    if !path.ends_with("/chat/completions") {
        url.set_path(&format!("{path}/chat/completions"));
    }
    Ok(url)
}

/// One message in the Chat Completions shape; tool call arguments travel as JSON text.
fn message(message: &ChatMessage) -> Value {
    let role = match message.role {
        ChatRole::System => "system",
        ChatRole::User => "user",
        ChatRole::Assistant => "assistant",
        ChatRole::Tool => "tool",
    };
    let mut out = json!({"role": role, "content": message.content});
    if !message.tool_calls.is_empty() {
        let calls: Vec<Value> = message
            .tool_calls
            .iter()
            .map(|call| {
                json!({"id": call.id, "type": "function",
                       "function": {"name": call.name, "arguments": call.arguments.to_string()}})
            })
            .collect();
        out["tool_calls"] = Value::Array(calls);
    }
    if let Some(id) = &message.tool_call_id {
        out["tool_call_id"] = Value::String(id.clone());
    }
    out
}

/// Maps a reqwest failure; the error loses its URL before it is formatted.
fn transport_error(error: reqwest::Error) -> ModelError {
    let error = error.without_url();
    if error.is_timeout() {
        ModelError::Unavailable("no answer in time".into())
    } else if error.is_connect() {
        ModelError::Unavailable("the server could not be reached".into())
    } else {
        ModelError::Unavailable("the connection failed before an answer".into())
    }
}

/// What a non-2xx status means; the body is never read (it may echo the request or the key).
fn status_error(status: StatusCode) -> ModelError {
    let code = status.as_u16();
    if status.is_server_error() {
        ModelError::Unavailable(format!("the server answered HTTP {code}"))
    } else if status == StatusCode::TOO_MANY_REQUESTS {
        ModelError::Unavailable("the server answered HTTP 429 (rate limited)".into())
    } else if status.is_redirection() {
        ModelError::Refused(format!("the server answered HTTP {code}, a redirect, which is not followed"))
    } else {
        ModelError::Refused(format!("the server answered HTTP {code}"))
    }
}

async fn read_body(mut response: reqwest::Response) -> Result<Vec<u8>, ModelError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport_error)? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(ModelError::Malformed(format!("the answer is larger than {MAX_ANSWER_BYTES} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: AssistantMessage,
}

#[derive(Deserialize)]
struct AssistantMessage {
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    id: Option<String>,
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    name: Option<String>,
    /// JSON text by the specification; some servers send the object itself.
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// The first choice of a completion, its tool calls checked: each has a name and arguments that
/// are a JSON object. Nothing of the body is quoted in an error.
fn parse_reply(body: &[u8]) -> Result<ModelReply, ModelError> {
    let completion: Completion = serde_json::from_slice(body)
        .map_err(|_| ModelError::Malformed("the answer is not a chat completion".into()))?;
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(ModelError::Malformed("the answer has no choices".into()));
    };
    let calls = choice.message.tool_calls.unwrap_or_default();
    let mut tool_calls = Vec::with_capacity(calls.len());
    for (index, call) in calls.into_iter().enumerate() {
        tool_calls.push(tool_call(index, call)?);
    }
    let usage =
        completion.usage.map(|u| TokenUsage { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens });
    Ok(ModelReply { content: choice.message.content.filter(|c| !c.is_empty()), tool_calls, usage })
}

fn tool_call(index: usize, call: WireToolCall) -> Result<ToolCall, ModelError> {
    let malformed = |what: &str| ModelError::Malformed(format!("tool call {} {what}", index + 1));
    let function = call.function.ok_or_else(|| malformed("has no function"))?;
    let name = function.name.filter(|n| !n.trim().is_empty()).ok_or_else(|| malformed("has no function name"))?;
    let arguments = match function.arguments {
        None => Value::Object(serde_json::Map::new()),
        Some(Value::String(text)) if text.trim().is_empty() => Value::Object(serde_json::Map::new()),
        Some(Value::String(text)) => {
            serde_json::from_str(&text).map_err(|_| malformed("has arguments that are not JSON"))?
        }
        Some(other) => other,
    };
    if !arguments.is_object() {
        return Err(malformed("has arguments that are not a JSON object"));
    }
    // Some servers leave the id out; the conversation still needs one to answer the call.
    let id = call.id.filter(|id| !id.is_empty()).unwrap_or_else(|| format!("call_{}", index + 1));
    Ok(ToolCall { id, name, arguments })
}

#[cfg(test)]
mod tests;
