//! The signed-in user's assistant chat history.

use actix_web::{HttpResponse, web};
use compliance_app::Settings;
use compliance_domain::chat::ChatMessage;
use serde::{Deserialize, Serialize};

use crate::body::{BodyLimit, JsonBody};
use crate::router::Routes;
use crate::{ApiError, AppState, Authenticated};

/// The most a history body may weigh, whatever the message limits allow: one request must not
/// hold more memory than this.
const BODY_CAP: usize = 16 * 1024 * 1024;

/// The body limit of the history PUT: room for the configured messages at up to four bytes a
/// character, within [`BODY_CAP`].
pub fn chat_body_limit(settings: &Settings) -> BodyLimit {
    let limits = settings.chat_limits;
    BodyLimit(limits.max_messages.saturating_mul(limits.max_message_chars.saturating_mul(4) + 256).min(BODY_CAP))
}

pub fn configure(routes: &mut Routes, body_limit: BodyLimit) {
    routes.add(get_chat_history, __path_get_chat_history);
    routes.add(replace_chat_history, __path_replace_chat_history).body_limit(body_limit);
    routes.add(clear_chat_history, __path_clear_chat_history);
}

/// The acting user's assistant chat history in the acting organization.
#[derive(Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = ChatHistory)]
#[serde(deny_unknown_fields)]
struct History {
    /// At most `CHAT_MAX_MESSAGES` messages (default 500); more is a 413.
    #[schema(max_items = 500)]
    messages: Vec<ChatMessage>,
}

/// `{"success": true}`
#[derive(Serialize, utoipa::ToSchema)]
struct Success {
    #[schema(schema_with = success_true)]
    success: bool,
}

fn success_true() -> utoipa::openapi::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Boolean)
        .enum_values(Some([true]))
        .build()
}

/// Get the chat history
///
/// The signed-in user's assistant chat history (empty when none). Session auth only: an API key
/// gets a 403.
#[utoipa::path(
    get, path = "/v1/assistant-chat/history", operation_id = "getChatHistory", tag = "assistant-chat",
    responses((status = 200, description = "The messages, oldest first as they were sent.", body = History)),
)]
async fn get_chat_history(state: web::Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let messages = state.run(|app| async move { app.chat.history(&principal).await }).await?;
    Ok(HttpResponse::Ok().json(History { messages }))
}

/// Replace the chat history
///
/// Replaces the signed-in user's whole history, which expires `CHAT_HISTORY_TTL_SECONDS` after
/// the last replace. Session auth only: an API key gets a 403. More messages or longer texts than
/// the configured limits (defaults: 500 messages, 32,000 characters each) are a 413.
#[utoipa::path(
    put, path = "/v1/assistant-chat/history", operation_id = "replaceChatHistory", tag = "assistant-chat",
    request_body = History,
    responses((status = 200, description = "The history is replaced.", body = Success)),
)]
async fn replace_chat_history(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(history): JsonBody<History>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    state.run(|app| async move { app.chat.replace(&principal, history.messages).await }).await?;
    Ok(HttpResponse::Ok().json(Success { success: true }))
}

/// Clear the chat history
///
/// Session auth only: an API key gets a 403.
#[utoipa::path(
    delete, path = "/v1/assistant-chat/history", operation_id = "clearChatHistory", tag = "assistant-chat",
    responses((status = 200, description = "The history is cleared.", body = Success)),
)]
async fn clear_chat_history(state: web::Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    state.run(|app| async move { app.chat.clear(&principal).await }).await?;
    Ok(HttpResponse::Ok().json(Success { success: true }))
}
