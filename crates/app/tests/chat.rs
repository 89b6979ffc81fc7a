//! The assistant chat history. Its time to live is enforced by the `ChatStore` adapter (Redis
//! expires the key; the in-process store checks a deadline; crates/chat/tests/contract.rs checks
//! both); what the use case decides is the TTL itself: the configured one, restarted by every
//! replacement. The fake store here expires by the fake clock, so the effect can be read too.

use std::time::Duration;

use compliance_app::{AppError, Settings};
use compliance_domain::chat::{ChatMessage, ChatRole};

use crate::support::{World, settings};

fn conversation(topic: &str) -> Vec<ChatMessage> {
    vec![
        ChatMessage { id: "m1".into(), role: ChatRole::User, text: format!("Tell me about {topic}"), created_at: 1 },
        ChatMessage { id: "m2".into(), role: ChatRole::Assistant, text: topic.into(), created_at: 2 },
    ]
}

#[tokio::test]
async fn every_replacement_restarts_the_configured_ttl() {
    let world = World::with(Settings { chat_ttl: Duration::from_secs(3), ..settings() });
    let tenant = world.tenant().await;
    let chat = &world.app.chat;
    let seconds = |s: i64| time::Duration::seconds(s);

    chat.replace(&tenant.owner, conversation("first")).await.unwrap();
    world.clock.advance(seconds(2));
    chat.replace(&tenant.owner, conversation("second")).await.unwrap();
    assert_eq!(world.chat.ttls(), [Duration::from_secs(3); 2], "each write asks for the whole TTL again");

    world.clock.advance(seconds(2));
    assert_eq!(chat.history(&tenant.owner).await.unwrap(), conversation("second"), "4 s after the first write");
    world.clock.advance(time::Duration::milliseconds(999));
    assert_eq!(chat.history(&tenant.owner).await.unwrap(), conversation("second"), "2.999 s after the last");
    world.clock.advance(time::Duration::milliseconds(1));
    assert_eq!(chat.history(&tenant.owner).await.unwrap(), [], "3 s after the last write it is gone");
}

#[tokio::test]
async fn the_default_ttl_is_a_week() {
    let world = World::new();
    let tenant = world.tenant().await;
    world.app.chat.replace(&tenant.owner, conversation("kept")).await.unwrap();
    assert_eq!(world.chat.ttls(), [Duration::from_secs(7 * 24 * 60 * 60)]);
    world.clock.advance(time::Duration::days(7) - time::Duration::seconds(1));
    assert_eq!(world.app.chat.history(&tenant.owner).await.unwrap(), conversation("kept"));
}

#[tokio::test]
async fn a_refused_history_leaves_the_stored_one_and_its_ttl() {
    let limits = compliance_domain::chat::ChatLimits { max_messages: 2, max_message_chars: 100 };
    let world = World::with(Settings { chat_limits: limits, ..settings() });
    let tenant = world.tenant().await;
    world.app.chat.replace(&tenant.owner, conversation("kept")).await.unwrap();
    let three = [conversation("a"), conversation("b")].concat()[..3].to_vec();
    let refused = world.app.chat.replace(&tenant.owner, three).await;
    assert!(matches!(refused, Err(AppError::TooLarge(_))), "{refused:?}");
    assert_eq!(world.chat.ttls().len(), 1, "a refused write does not reach the store, nor restart the TTL");
    assert_eq!(world.app.chat.history(&tenant.owner).await.unwrap(), conversation("kept"));
}

#[tokio::test]
async fn the_history_belongs_to_a_session_not_to_an_api_key() {
    let world = World::new();
    let tenant = world.tenant().await;
    let (_, key) = world.api_key(&tenant.owner).await;
    let refused = world.app.chat.replace(&key, conversation("x")).await;
    assert!(matches!(refused, Err(AppError::Forbidden(_))), "{refused:?}");
    assert!(matches!(world.app.chat.history(&key).await, Err(AppError::Forbidden(_))));
    assert!(matches!(world.app.chat.clear(&key).await, Err(AppError::Forbidden(_))));
    assert_eq!(world.chat.ttls(), [] as [Duration; 0]);
}
