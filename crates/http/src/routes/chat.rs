//! The signed-in user's assistant chat history.

use actix_web::{HttpResponse, web};
use compliance_app::Settings;
use compliance_domain::chat::ChatMessage;
use serde::Deserialize;
use serde_json::json;

use super::resource;
use crate::body::{BodyLimit, JsonBody};
use crate::{ApiError, AppState, Caller};

/// The most a history body may weigh, whatever the message limits allow: one request must not
/// hold more memory than this.
const BODY_CAP: usize = 16 * 1024 * 1024;

/// The body limit of the history PUT: room for the configured messages at up to four bytes a
/// character, within [`BODY_CAP`].
pub fn chat_body_limit(settings: &Settings) -> BodyLimit {
    let limits = settings.chat_limits;
    BodyLimit(limits.max_messages.saturating_mul(limits.max_message_chars.saturating_mul(4) + 256).min(BODY_CAP))
}

pub fn configure(config: &mut web::ServiceConfig, body_limit: BodyLimit) {
    config.service(
        resource("/assistant-chat/history")
            .app_data(body_limit)
            .route(web::get().to(history))
            .route(web::put().to(replace))
            .route(web::delete().to(clear)),
    );
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct History {
    messages: Vec<ChatMessage>,
}

async fn history(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let messages = state.run(|app| async move { app.chat.history(&principal).await }).await?;
    Ok(HttpResponse::Ok().json(json!({"messages": messages})))
}

async fn replace(
    state: web::Data<AppState>,
    caller: Caller,
    JsonBody(history): JsonBody<History>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    state.run(|app| async move { app.chat.replace(&principal, history.messages).await }).await?;
    Ok(HttpResponse::Ok().json(json!({"success": true})))
}

async fn clear(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    state.run(|app| async move { app.chat.clear(&principal).await }).await?;
    Ok(HttpResponse::Ok().json(json!({"success": true})))
}
