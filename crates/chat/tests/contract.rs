//! One contract for the `ChatStore` port, run against every adapter. The Redis run needs a real Redis:
//! `REDIS_URL`, or `redis://127.0.0.1:6379` by default.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

use std::time::{Duration, Instant};

use compliance_chat::{MemoryChatStore, RedisChatStore};
use compliance_domain::chat::{ChatMessage, ChatRole};
use compliance_domain::{OrganizationId, UserId};
use compliance_ports::ChatStore;

const LONG: Duration = Duration::from_secs(60);

fn message(id: &str, role: ChatRole, text: &str) -> ChatMessage {
    ChatMessage { id: id.into(), role, text: text.into(), created_at: 1_700_000_000_000 }
}

fn conversation() -> Vec<ChatMessage> {
    vec![
        message("m1", ChatRole::User, "Which risks are open?"),
        message("m2", ChatRole::Assistant, "Three: ünïcode, \"quotes\" and\nnew lines."),
        message("m3", ChatRole::User, ""),
    ]
}

fn ids() -> (OrganizationId, UserId) {
    (OrganizationId::generate(), UserId::generate())
}

async fn replace_then_get_returns_the_messages_in_order(store: &dyn ChatStore) {
    let (org, user) = ids();
    store.replace(&org, &user, &conversation(), LONG).await.unwrap();
    assert_eq!(store.get(&org, &user).await.unwrap(), conversation());
}

async fn replace_overwrites_the_whole_history(store: &dyn ChatStore) {
    let (org, user) = ids();
    store.replace(&org, &user, &conversation(), LONG).await.unwrap();
    let shorter = vec![message("m9", ChatRole::Assistant, "fresh start")];
    store.replace(&org, &user, &shorter, LONG).await.unwrap();
    assert_eq!(store.get(&org, &user).await.unwrap(), shorter);
}

async fn histories_are_per_user_and_per_organization(store: &dyn ChatStore) {
    let (org, alice) = ids();
    let (other_org, bob) = ids();
    let first = vec![message("a", ChatRole::User, "alice in org 1")];
    let second = vec![message("b", ChatRole::User, "alice in org 2")];
    store.replace(&org, &alice, &first, LONG).await.unwrap();
    store.replace(&other_org, &alice, &second, LONG).await.unwrap();
    assert_eq!(store.get(&org, &alice).await.unwrap(), first);
    assert_eq!(store.get(&other_org, &alice).await.unwrap(), second, "same user, other organization");
    assert_eq!(store.get(&org, &bob).await.unwrap(), [], "other user, same organization");

    store.clear(&org, &alice).await.unwrap();
    assert_eq!(store.get(&other_org, &alice).await.unwrap(), second, "clearing one tenant leaves the other");
}

async fn get_of_nothing_is_empty(store: &dyn ChatStore) {
    let (org, user) = ids();
    assert_eq!(store.get(&org, &user).await.unwrap(), []);
}

async fn clear_removes_the_history_and_clearing_nothing_is_fine(store: &dyn ChatStore) {
    let (org, user) = ids();
    store.replace(&org, &user, &conversation(), LONG).await.unwrap();
    store.clear(&org, &user).await.unwrap();
    assert_eq!(store.get(&org, &user).await.unwrap(), []);
    store.clear(&org, &user).await.unwrap();
    let (org, user) = ids();
    store.clear(&org, &user).await.unwrap();
}

async fn a_history_expires_after_its_ttl(store: &dyn ChatStore) {
    let (org, user) = ids();
    let written = Instant::now();
    store.replace(&org, &user, &conversation(), Duration::from_millis(300)).await.unwrap();
    let alive = store.get(&org, &user).await.unwrap();
    assert_eq!(alive, conversation(), "alive before its TTL ({:?} after the write)", written.elapsed());
    tokio::time::sleep(Duration::from_millis(450)).await;
    assert_eq!(store.get(&org, &user).await.unwrap(), [], "gone after its TTL");
}

/// Only the "still alive" check depends on the machine being quick: it has 300 ms of slack.
async fn replace_restarts_the_ttl(store: &dyn ChatStore) {
    let (org, user) = ids();
    let ttl = Duration::from_millis(600);
    store.replace(&org, &user, &conversation(), ttl).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let rewritten = Instant::now();
    store.replace(&org, &user, &conversation(), ttl).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let alive = store.get(&org, &user).await.unwrap();
    let elapsed = rewritten.elapsed();
    assert_eq!(alive, conversation(), "the first TTL is over, the second is not ({elapsed:?} after the rewrite)");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(store.get(&org, &user).await.unwrap(), [], "the second TTL is over");
}

async fn a_zero_ttl_keeps_nothing(store: &dyn ChatStore) {
    let (org, user) = ids();
    store.replace(&org, &user, &conversation(), LONG).await.unwrap();
    store.replace(&org, &user, &conversation(), Duration::ZERO).await.unwrap();
    assert_eq!(store.get(&org, &user).await.unwrap(), []);
}

async fn an_empty_history_round_trips(store: &dyn ChatStore) {
    let (org, user) = ids();
    store.replace(&org, &user, &conversation(), LONG).await.unwrap();
    store.replace(&org, &user, &[], LONG).await.unwrap();
    assert_eq!(store.get(&org, &user).await.unwrap(), []);
}

/// Declares every contract case once per adapter: `in_memory::case` and `on_redis::case`.
macro_rules! contract {
    ($($case:ident),* $(,)?) => {
        mod in_memory {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(&super::MemoryChatStore::new()).await;
                }
            )*
        }
        mod on_redis {
            $(
                #[tokio::test]
                async fn $case() {
                    let redis = super::TestRedis::start().await;
                    super::$case(&redis.store).await;
                    redis.cleanup().await;
                }
            )*
        }
    };
}

contract!(
    replace_then_get_returns_the_messages_in_order,
    replace_overwrites_the_whole_history,
    histories_are_per_user_and_per_organization,
    get_of_nothing_is_empty,
    clear_removes_the_history_and_clearing_nothing_is_fine,
    a_history_expires_after_its_ttl,
    replace_restarts_the_ttl,
    a_zero_ttl_keeps_nothing,
    an_empty_history_round_trips,
);

/// A store on the real Redis under a random key prefix of its own. Every key the contract writes has a
/// TTL, so keys left behind by a failed test expire by themselves.
struct TestRedis {
    url: String,
    prefix: String,
    store: RedisChatStore,
}

impl TestRedis {
    async fn start() -> Self {
        let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
        let prefix = format!("compliance-test:{}:", OrganizationId::generate());
        let store = match RedisChatStore::connect(&url).await {
            Ok(store) => store.with_prefix(&prefix),
            Err(err) => panic!(
                "These tests need a real Redis: {err}. Start Redis (e.g. `redis-server --daemonize yes`) \
                 or set REDIS_URL to one."
            ),
        };
        Self { url, prefix, store }
    }

    async fn connection(&self) -> redis::aio::MultiplexedConnection {
        let client = redis::Client::open(self.url.as_str()).unwrap();
        client.get_multiplexed_async_connection().await.unwrap()
    }

    async fn keys(&self) -> Vec<String> {
        let pattern = format!("{}*", self.prefix);
        redis::cmd("KEYS").arg(pattern).query_async(&mut self.connection().await).await.unwrap()
    }

    async fn cleanup(self) {
        let keys = self.keys().await;
        if !keys.is_empty() {
            redis::cmd("DEL").arg(&keys).query_async::<()>(&mut self.connection().await).await.unwrap();
        }
        assert_eq!(self.keys().await, Vec::<String>::new());
    }
}

#[tokio::test]
async fn redis_keeps_one_expiring_key_per_history_under_the_prefix() {
    let redis = TestRedis::start().await;
    let (org, user) = ids();
    redis.store.replace(&org, &user, &conversation(), LONG).await.unwrap();
    let key = format!("{}{org}:{user}", redis.prefix);
    assert_eq!(redis.keys().await, [key.as_str()]);
    let ttl: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut redis.connection().await).await.unwrap();
    assert!(ttl > 50_000 && ttl <= 60_000, "Redis expires the key itself; PTTL was {ttl}");
    redis.cleanup().await;
}

#[tokio::test]
async fn redis_reports_a_corrupt_history_as_internal() {
    let redis = TestRedis::start().await;
    let (org, user) = ids();
    let key = format!("{}{org}:{user}", redis.prefix);
    redis::cmd("SET")
        .arg(&key)
        .arg("not json")
        .arg("EX")
        .arg(60)
        .query_async::<()>(&mut redis.connection().await)
        .await
        .unwrap();
    let err = redis.store.get(&org, &user).await.unwrap_err();
    assert!(matches!(err, compliance_ports::RepoError::Internal(_)), "{err:?}");
    redis.cleanup().await;
}
