//! The signed-in user's assistant chat history.

use actix_web::{HttpResponse, web};
use compliance_domain::chat::ChatMessage;
use serde::Deserialize;
use serde_json::json;

use super::resource;
use crate::body::JsonBody;
use crate::{ApiError, AppState, Caller};

pub fn configure(config: &mut web::ServiceConfig) {
    config.service(
        resource("/assistant-chat/history")
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
