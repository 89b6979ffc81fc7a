//! The assistant chat history of one user in one organization: ephemeral session context.

use serde::{Deserialize, Serialize};

use crate::validation::{FieldError, text};

crate::string_enum! {
    /// Who wrote a chat message.
    ChatRole { User = "user", Assistant = "assistant" }
}

/// The longest message id, in characters.
pub const MESSAGE_ID_MAX: usize = 255;

/// One message, stored and returned as the client sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChatMessage {
    /// The client's id of the message, 1 to 255 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::id))]
    pub id: String,
    /// Who wrote it.
    pub role: ChatRole,
    /// At most `CHAT_MAX_MESSAGE_CHARS` characters (default 32,000); longer is a 413.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::text))]
    pub text: String,
    /// Epoch milliseconds.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 9_007_199_254_740_991_i64))]
    #[serde(deserialize_with = "crate::whole_number")]
    pub created_at: i64,
}

/// The largest `createdAt`: 2^53 − 1, the largest integer every JSON client holds exactly.
pub const CREATED_AT_MAX: i64 = 9_007_199_254_740_991;

/// The schemas of a message's fields, as [`check_history`] checks them with the default limits.
#[cfg(feature = "openapi")]
mod schemas {
    pub fn id() -> utoipa::openapi::Object {
        crate::openapi::text(1, super::MESSAGE_ID_MAX).build()
    }

    pub fn text() -> utoipa::openapi::Object {
        crate::openapi::text(0, super::ChatLimits::default().max_message_chars).build()
    }
}

/// How much history one user may keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChatLimits {
    /// The most messages a history keeps.
    pub max_messages: usize,
    /// The longest message, in characters.
    pub max_message_chars: usize,
}

impl Default for ChatLimits {
    fn default() -> Self {
        Self { max_messages: 500, max_message_chars: 32_000 }
    }
}

/// Why a history is refused: a bad field (400) or too much of it (413).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatHistoryError {
    /// A field is wrong (400).
    Invalid(FieldError),
    /// More messages or characters than the limits allow (413).
    TooLarge(String),
}

/// Checks a whole history against the limits.
pub fn check_history(messages: &[ChatMessage], limits: ChatLimits) -> Result<(), ChatHistoryError> {
    if messages.len() > limits.max_messages {
        return Err(ChatHistoryError::TooLarge(format!("at most {} messages are kept", limits.max_messages)));
    }
    for (index, message) in messages.iter().enumerate() {
        let field = format!("messages[{index}]");
        text(&format!("{field}.id"), message.id.clone(), 1, MESSAGE_ID_MAX).map_err(ChatHistoryError::Invalid)?;
        if message.text.chars().count() > limits.max_message_chars {
            return Err(ChatHistoryError::TooLarge(format!(
                "{field}.text is longer than {} characters",
                limits.max_message_chars
            )));
        }
        text(&format!("{field}.text"), message.text.clone(), 0, limits.max_message_chars)
            .map_err(ChatHistoryError::Invalid)?;
        if !(0..=CREATED_AT_MAX).contains(&message.created_at) {
            return Err(ChatHistoryError::Invalid(FieldError::new(
                format!("{field}.createdAt"),
                "must be epoch milliseconds",
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str) -> ChatMessage {
        ChatMessage { id: "m1".into(), role: ChatRole::User, text: text.into(), created_at: 1 }
    }

    #[test]
    fn limits_hold_at_their_boundaries() {
        let limits = ChatLimits { max_messages: 2, max_message_chars: 3 };
        assert_eq!(check_history(&[message("abc"), message("")], limits), Ok(()));
        assert!(matches!(check_history(&[message("abcd")], limits), Err(ChatHistoryError::TooLarge(_))));
        let three = vec![message("a"); 3];
        assert!(matches!(check_history(&three, limits), Err(ChatHistoryError::TooLarge(_))));
    }
}
