use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use compliance_domain::chat::ChatMessage;
use compliance_domain::{OrganizationId, UserId};
use compliance_ports::{ChatStore, RepoError};
use compliance_redis::RedisConnection;

const DEFAULT_PREFIX: &str = "compliance:chat:";
const TIMEOUT: Duration = Duration::from_secs(2);
/// Far beyond any real time to live, and far from overflowing Redis's expiry arithmetic (~146 million years).
const MAX_TTL_MILLIS: u64 = i64::MAX as u64 / 2;

/// Chat histories in Redis, shared by every server: one key per history, `{prefix}{org}:{user}`, holding
/// the messages as a JSON array, expired by Redis itself.
///
/// Its `Debug` output and its errors show the server's address, never the password from the URL.
#[derive(Clone)]
pub struct RedisChatStore {
    redis: RedisConnection,
    prefix: String,
}

impl RedisChatStore {
    /// Connects to `redis://[user:password@]host[:port][/db]` (or `rediss://`, `unix://`) and checks
    /// the server answers. The connection reconnects by itself after a Redis restart.
    pub async fn connect(url: &str) -> Result<Self, RepoError> {
        let store = Self::lazy(url)?;
        redis::cmd("PING").query_async::<()>(&mut store.redis.manager()).await.map_err(|err| {
            RepoError::Unavailable(format!(
                "cannot reach Redis at {}: {}",
                store.redis.address(),
                store.redis.describe(&err)
            ))
        })?;
        Ok(store)
    }

    /// Builds the store without contacting the server.
    fn lazy(url: &str) -> Result<Self, RepoError> {
        Ok(Self { redis: RedisConnection::lazy(url, TIMEOUT, 2)?, prefix: DEFAULT_PREFIX.to_owned() })
    }

    /// Puts `prefix` in front of every key instead of `compliance:chat:`, e.g. to isolate tests.
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    fn key(&self, org: &OrganizationId, user: &UserId) -> String {
        format!("{}{org}:{user}", self.prefix)
    }
}

impl fmt::Debug for RedisChatStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisChatStore").field("redis", &self.redis).field("prefix", &self.prefix).finish()
    }
}

#[async_trait]
impl ChatStore for RedisChatStore {
    async fn replace(
        &self,
        org: &OrganizationId,
        user: &UserId,
        messages: &[ChatMessage],
        ttl: Duration,
    ) -> Result<(), RepoError> {
        let key = self.key(org, user);
        let mut connection = self.redis.manager();
        if ttl.is_zero() {
            // Redis refuses an expiry of 0; a history that lives for no time is no history.
            return redis::cmd("DEL")
                .arg(&key)
                .query_async::<()>(&mut connection)
                .await
                .map_err(|err| self.redis.error(&err));
        }
        let json = serde_json::to_string(messages)
            .map_err(|err| RepoError::Internal(format!("cannot encode a chat history: {err}")))?;
        // Round up, so a sub-millisecond time to live still stores the history briefly.
        let millis = u64::try_from(ttl.as_micros().div_ceil(1000)).unwrap_or(u64::MAX).min(MAX_TTL_MILLIS);
        redis::cmd("SET")
            .arg(&key)
            .arg(json)
            .arg("PX")
            .arg(millis)
            .query_async::<()>(&mut connection)
            .await
            .map_err(|err| self.redis.error(&err))
    }

    async fn get(&self, org: &OrganizationId, user: &UserId) -> Result<Vec<ChatMessage>, RepoError> {
        let key = self.key(org, user);
        let mut connection = self.redis.manager();
        let json: Option<String> =
            redis::cmd("GET").arg(&key).query_async(&mut connection).await.map_err(|err| self.redis.error(&err))?;
        match json {
            None => Ok(Vec::new()),
            Some(json) => serde_json::from_str(&json)
                .map_err(|err| RepoError::Internal(format!("the chat history in Redis key {key} is not valid: {err}"))),
        }
    }

    async fn clear(&self, org: &OrganizationId, user: &UserId) -> Result<(), RepoError> {
        let mut connection = self.redis.manager();
        redis::cmd("DEL")
            .arg(self.key(org, user))
            .query_async::<()>(&mut connection)
            .await
            .map_err(|err| self.redis.error(&err))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::unwrap_used, reason = "a test fails loudly")]

    use super::*;

    const PASSWORD: &str = "s3cret-Pa55word";

    #[tokio::test]
    async fn debug_and_errors_never_show_the_password() {
        let url = format!("redis://alice:{PASSWORD}@127.0.0.1:1/0");
        let store = RedisChatStore::lazy(&url).expect("a well-formed URL");
        let debug = format!("{store:?}");
        assert!(debug.contains("127.0.0.1:1") && !debug.contains(PASSWORD), "{debug}");

        // Nothing listens on port 1: connecting fails, with the address but without the password.
        let err = RedisChatStore::connect(&url).await.expect_err("nothing listens on port 1");
        let shown = format!("{err} {err:?}");
        assert!(matches!(err, RepoError::Unavailable(_)), "{shown}");
        assert!(shown.contains("127.0.0.1:1") && !shown.contains(PASSWORD), "{shown}");

        let err = store.get(&OrganizationId::generate(), &UserId::generate()).await.expect_err("no server");
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains(PASSWORD), "{shown}");

        let bad = format!("redis://alice:{PASSWORD}@[::1/0");
        let err = RedisChatStore::connect(&bad).await.expect_err("a malformed URL");
        let shown = format!("{err} {err:?}");
        assert!(matches!(err, RepoError::Internal(_)) && !shown.contains(PASSWORD), "{shown}");
    }
}
