//! `/v1/assistant-chat/history`: per user and organization, session auth only, exact limits, expiry,
//! in process and in Redis.

use std::time::Duration;

use serde_json::{Value, json};

use crate::client::Client;
use crate::harness::{Env, TestServer, poll_until};

api_tests!(
    api_keys_are_refused_with_a_reason,
    history_is_replaced_read_and_cleared,
    history_is_per_user_and_per_organization,
    messages_are_validated,
    limits_are_exact with SMALL_LIMITS,
    history_expires_after_its_ttl with SHORT_TTL,
    redis_keeps_the_history with REDIS,
    redis_history_expires_after_its_ttl with REDIS_SHORT_TTL,
);

const HISTORY: &str = "/v1/assistant-chat/history";
const SMALL_LIMITS: Env = &[("CHAT_MAX_MESSAGES", "3"), ("CHAT_MAX_MESSAGE_CHARS", "10")];
const SHORT_TTL: Env = &[("CHAT_HISTORY_TTL_SECONDS", "1")];
/// How long a history of `SHORT_TTL` may take to go: far beyond its second, far below the default week.
const TTL_DEADLINE: Duration = Duration::from_secs(10);
const REDIS: Env = &[("REDIS_URL", "redis://127.0.0.1:6379")];
const REDIS_SHORT_TTL: Env = &[("REDIS_URL", "redis://127.0.0.1:6379"), ("CHAT_HISTORY_TTL_SECONDS", "1")];

/// A chat message.
fn message(id: &str, role: &str, text: &str) -> Value {
    json!({"id": id, "role": role, "text": text, "createdAt": 1_700_000_000_000_i64})
}

fn conversation(topic: &str) -> Value {
    json!([message("m1", "user", &format!("Tell me about {topic}")), message("m2", "assistant", topic)])
}

async fn put(client: &Client, messages: Value) {
    let answer = client.put(HISTORY, json!({"messages": messages})).await.ok(200);
    assert_eq!(answer, json!({"success": true}));
}

/// The stored messages.
async fn history(client: &Client) -> Value {
    let answer = client.get(HISTORY).await.ok(200);
    assert!(answer["messages"].is_array(), "no `messages` array in {answer}");
    answer["messages"].clone()
}

async fn clear(client: &Client) {
    assert_eq!(client.delete(HISTORY).await.ok(200), json!({"success": true}));
}

async fn api_keys_are_refused_with_a_reason(server: &TestServer) {
    let tenant = server.tenant().await;
    put(&tenant.session, conversation("keys")).await;
    let with_org = tenant.api.with_org(Some(&tenant.org_id));
    for client in [&tenant.api, &with_org] {
        for answer in [
            client.get(HISTORY).await,
            client.put(HISTORY, json!({"messages": conversation("x")})).await,
            client.delete(HISTORY).await,
        ] {
            let problem = answer.problem(403);
            assert!(!problem["detail"].as_str().unwrap_or_default().trim().is_empty(), "403 without a reason");
        }
    }
    server.anonymous().get(HISTORY).await.problem(401);
    assert_eq!(history(&tenant.session).await, conversation("keys"), "refused calls change nothing");
}

async fn history_is_replaced_read_and_cleared(server: &TestServer) {
    let tenant = server.tenant().await;
    let session = &tenant.session;
    assert_eq!(history(session).await, json!([]), "empty before the first PUT");
    clear(session).await;

    let first = json!([
        message("a", "user", "Which controls cover laptops?"),
        {"id": "b", "role": "assistant", "text": "Disk encryption — «A.8.1».\n", "createdAt": 0},
        {"id": "x".repeat(255), "role": "user", "text": "ok", "createdAt": 4_102_444_800_000_i64},
    ]);
    put(session, first.clone()).await;
    assert_eq!(history(session).await, first);
    put(session, conversation("replaced")).await;
    assert_eq!(history(session).await, conversation("replaced"), "PUT replaces the whole history");
    put(session, json!([])).await;
    assert_eq!(history(session).await, json!([]));
    put(session, conversation("again")).await;
    clear(session).await;
    assert_eq!(history(session).await, json!([]));
}

async fn history_is_per_user_and_per_organization(server: &TestServer) {
    let a = server.tenant().await;
    let b = server.tenant().await;
    let c = server.tenant().await;
    server.admin().add_member(&b.org_id, &a.owner.id, "member").await;
    let owner_in_a = &a.session;
    let owner_in_b = a.session.with_org(Some(&b.org_id));
    let other_session_in_b = server.session(&a.owner.id, Some(&b.org_id)).await;
    let (colleague, _) = server.member(&a, "auditor").await;
    let colleague_in_a = server.session(&colleague.id, Some(&a.org_id)).await;

    put(owner_in_a, conversation("org a")).await;
    put(&owner_in_b, conversation("org b")).await;
    put(&colleague_in_a, conversation("colleague")).await;
    assert_eq!(history(owner_in_a).await, conversation("org a"));
    assert_eq!(history(&owner_in_b).await, conversation("org b"));
    assert_eq!(history(&other_session_in_b).await, conversation("org b"), "the user's history, not the session's");
    assert_eq!(history(&colleague_in_a).await, conversation("colleague"));
    assert_eq!(history(&b.session).await, json!([]), "b's owner sees nothing of a's owner");
    assert_eq!(history(&c.session).await, json!([]));

    clear(owner_in_a).await;
    assert_eq!(history(owner_in_a).await, json!([]));
    assert_eq!(history(&owner_in_b).await, conversation("org b"));
    assert_eq!(history(&colleague_in_a).await, conversation("colleague"));
    // A session of another organization cannot reach a's histories by naming a.
    c.session.with_org(Some(&a.org_id)).get(HISTORY).await.problem(403);
    assert_eq!(history(&colleague_in_a).await, conversation("colleague"));
}

async fn messages_are_validated(server: &TestServer) {
    let tenant = server.tenant().await;
    let session = &tenant.session;
    put(session, conversation("kept")).await;
    let with = |key: &str, value: Value| {
        let mut m = message("m", "user", "hi");
        m[key] = value;
        m
    };
    let without = |key: &str| {
        let mut m = message("m", "user", "hi");
        m.as_object_mut().expect("an object").remove(key);
        m
    };
    let cases = [
        with("role", json!("system")),
        with("role", json!("User")),
        with("role", json!(null)),
        without("role"),
        with("createdAt", json!(-1)),
        with("createdAt", json!(1.5)),
        with("createdAt", json!("1700000000000")),
        without("createdAt"),
        with("id", json!("")),
        with("id", json!("x".repeat(256))),
        with("id", json!(5)),
        without("id"),
        with("text", json!(5)),
        without("text"),
        json!("hi"),
    ];
    for bad in cases {
        let messages = json!([message("ok", "assistant", "fine"), bad]);
        session.put(HISTORY, json!({"messages": messages})).await.invalid("messages");
    }
    session.put(HISTORY, json!({})).await.invalid("messages");
    session.put(HISTORY, json!({"messages": message("m", "user", "hi")})).await.invalid("messages");
    session.put(HISTORY, json!({"messages": null})).await.invalid("messages");
    assert_eq!(history(session).await, conversation("kept"), "refused PUTs change nothing");
}

async fn limits_are_exact(server: &TestServer) {
    let tenant = server.tenant().await;
    let session = &tenant.session;
    let three = json!([message("1", "user", "a"), message("2", "assistant", "b"), message("3", "user", "c")]);
    put(session, three.clone()).await;
    let four = json!([
        message("1", "user", "a"),
        message("2", "assistant", "b"),
        message("3", "user", "c"),
        message("4", "assistant", "d")
    ]);
    session.put(HISTORY, json!({"messages": four})).await.problem(413);
    assert_eq!(history(session).await, three);

    let ten = json!([message("1", "user", &"é".repeat(10))]);
    put(session, ten.clone()).await;
    assert_eq!(history(session).await, ten, "10 characters (20 bytes) are allowed");
    let eleven = json!([message("1", "user", "short"), message("2", "assistant", &"x".repeat(11))]);
    session.put(HISTORY, json!({"messages": eleven})).await.problem(413);
    assert_eq!(history(session).await, ten);
}

/// `CHAT_HISTORY_TTL_SECONDS` reaches the store (the default is a week). That every PUT restarts
/// the TTL, and when exactly a history expires, is tested with a fake clock in
/// crates/app/tests/chat.rs and against both stores in crates/chat/tests/contract.rs.
async fn history_expires_after_its_ttl(server: &TestServer) {
    let tenant = server.tenant().await;
    put(&tenant.session, conversation("fleeting")).await;
    let session = &tenant.session;
    let gone =
        poll_until(TTL_DEADLINE, || async move { (history(session).await == json!([])).then_some(()) }).await.is_some();
    assert!(gone, "the history outlived CHAT_HISTORY_TTL_SECONDS=1 by {TTL_DEADLINE:?}");
}

async fn redis_keeps_the_history(server: &TestServer) {
    let a = server.tenant().await;
    let b = server.tenant().await;
    server.admin().add_member(&b.org_id, &a.owner.id, "member").await;
    let in_b = a.session.with_org(Some(&b.org_id));
    assert_eq!(history(&a.session).await, json!([]));
    put(&a.session, conversation("redis a")).await;
    put(&in_b, conversation("redis b")).await;
    assert_eq!(history(&a.session).await, conversation("redis a"));
    assert_eq!(history(&in_b).await, conversation("redis b"));
    assert_eq!(history(&b.session).await, json!([]));
    put(&a.session, conversation("redis replaced")).await;
    assert_eq!(history(&a.session).await, conversation("redis replaced"));
    clear(&a.session).await;
    assert_eq!(history(&a.session).await, json!([]));
    assert_eq!(history(&in_b).await, conversation("redis b"));
    clear(&in_b).await;
    assert_eq!(history(&in_b).await, json!([]));
}

async fn redis_history_expires_after_its_ttl(server: &TestServer) {
    let tenant = server.tenant().await;
    put(&tenant.session, conversation("fleeting in redis")).await;
    let session = &tenant.session;
    let gone =
        poll_until(TTL_DEADLINE, || async move { (history(session).await == json!([])).then_some(()) }).await.is_some();
    assert!(gone, "the Redis history outlived CHAT_HISTORY_TTL_SECONDS=1 by {TTL_DEADLINE:?}");
}
