//! A language model that chooses browser actions by calling tools: the agent executor of an
//! automation's free-text instruction talks to it turn by turn (`app::automation_agent`).
//!
//! The types follow OpenAI's Chat Completions with function calling, the interface every
//! compatible server (hosted, vLLM, llama.cpp, Ollama) speaks, but name none of its wire details.

use async_trait::async_trait;
use serde_json::Value;

/// Who said a message of the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatRole {
    /// The instructions that frame the conversation.
    System,
    /// The task, as the service states it.
    User,
    /// The model's own turns.
    Assistant,
    /// The result of a tool call, answering the call with the same id.
    Tool,
}

/// One message of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatMessage {
    /// Who says it.
    pub role: ChatRole,
    /// The text (for a tool message, the tool's result).
    pub content: String,
    /// The tool calls of an assistant message (empty otherwise).
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool message answers.
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self { role: ChatRole::System, content: content.into(), tool_calls: Vec::new(), tool_call_id: None }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self { role: ChatRole::User, content: content.into(), tool_calls: Vec::new(), tool_call_id: None }
    }

    /// The model's own turn, sent back to it as part of the history.
    pub fn assistant(reply: &ModelReply) -> Self {
        Self {
            role: ChatRole::Assistant,
            content: reply.content.clone().unwrap_or_default(),
            tool_calls: reply.tool_calls.clone(),
            tool_call_id: None,
        }
    }

    /// The result of the tool call `call_id`.
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: ChatRole::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
}

/// A function the model may call: its name, what it does, and a JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: &'static str,
    /// What it does, for the model.
    pub description: &'static str,
    /// A JSON Schema of its arguments object.
    pub parameters: Value,
}

/// A call the model made. `arguments` is the JSON object it gave (the adapter refuses arguments
/// that are not a JSON object as a malformed answer).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The call's id, which its tool message answers.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object.
    pub arguments: Value,
}

/// Tokens one request used, as the server counted them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    /// Tokens of the request's messages.
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
}

impl TokenUsage {
    /// Both, saturating.
    pub fn total(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
}

/// The model's answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReply {
    /// Text the model wrote besides (or instead of) calling tools.
    pub content: Option<String>,
    /// The tools it called, in order (empty when it only wrote text).
    pub tool_calls: Vec<ToolCall>,
    /// `None` when the server did not report it.
    pub usage: Option<TokenUsage>,
}

/// Why the model gave no usable answer. Messages are fit to show as a run's `error`: they never
/// carry the API key nor the server's response body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The server could not be reached, timed out, was overloaded (429) or failed (5xx).
    #[error("model unavailable: {0}")]
    Unavailable(String),
    /// The server refused the request itself (401, 403, 404, 400 …): a configuration problem.
    #[error("the model refused the request: {0}")]
    Refused(String),
    /// The answer is not a Chat Completion, or a tool call in it is not well formed.
    #[error("the model's answer is malformed: {0}")]
    Malformed(String),
}

/// A chat-completions model that can call tools: what carries out free-text automations.
#[async_trait]
pub trait AgentModel: Send + Sync {
    /// One turn: the conversation so far and the tools the model may call.
    async fn complete(&self, messages: &[ChatMessage], tools: &[ToolSpec]) -> Result<ModelReply, ModelError>;
}
