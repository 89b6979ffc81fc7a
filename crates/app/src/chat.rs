//! The assistant chat history of the signed-in user.

use std::sync::Arc;

use compliance_domain::chat::{ChatHistoryError, ChatMessage, check_history};
use compliance_ports::ChatStore;

use crate::{AppError, AuthType, Ports, Principal, Settings};

/// The assistant's chat history of the calling user in their organization (sessions only).
pub struct ChatService {
    store: Arc<dyn ChatStore>,
    settings: Arc<Settings>,
}

impl ChatService {
    pub(crate) fn new(ports: &Ports, settings: Arc<Settings>) -> Self {
        Self { store: ports.chat.clone(), settings }
    }

    /// The caller's history, oldest message first; empty when none is kept.
    pub async fn history(&self, caller: &Principal) -> Result<Vec<ChatMessage>, AppError> {
        session_only(caller)?;
        Ok(self.store.get(&caller.organization_id, &caller.user_id).await?)
    }

    /// Replaces the whole history and restarts its time to live.
    pub async fn replace(&self, caller: &Principal, messages: Vec<ChatMessage>) -> Result<(), AppError> {
        session_only(caller)?;
        check_history(&messages, self.settings.chat_limits).map_err(|error| match error {
            ChatHistoryError::Invalid(field) => AppError::Validation(field.into()),
            ChatHistoryError::TooLarge(why) => AppError::TooLarge(why),
        })?;
        let ttl = self.settings.chat_ttl;
        Ok(self.store.replace(&caller.organization_id, &caller.user_id, &messages, ttl).await?)
    }

    /// Forgets the caller's history.
    pub async fn clear(&self, caller: &Principal) -> Result<(), AppError> {
        session_only(caller)?;
        Ok(self.store.clear(&caller.organization_id, &caller.user_id).await?)
    }
}

/// The history belongs to a person at a keyboard, not to an integration's key.
fn session_only(caller: &Principal) -> Result<(), AppError> {
    match caller.auth_type {
        AuthType::Session => Ok(()),
        AuthType::ApiKey => Err(AppError::Forbidden(
            "the assistant chat history belongs to a signed-in user: use session auth, not an API key",
        )),
    }
}
