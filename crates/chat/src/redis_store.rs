use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use compliance_domain::chat::ChatMessage;
use compliance_domain::{OrganizationId, UserId};
use compliance_ports::{ChatStore, RepoError};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, IntoConnectionInfo, RedisError};

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
    connection: ConnectionManager,
    /// `host:port` (or the socket path), safe to show.
    address: String,
    /// The password from the URL, only to scrub it from error texts.
    password: Option<String>,
    prefix: String,
}

impl RedisChatStore {
    /// Connects to `redis://[user:password@]host[:port][/db]` (or `rediss://`, `unix://`) and checks
    /// the server answers. The connection reconnects by itself after a Redis restart.
    pub async fn connect(url: &str) -> Result<Self, RepoError> {
        let store = Self::lazy(url)?;
        let mut connection = store.connection.clone();
        redis::cmd("PING").query_async::<()>(&mut connection).await.map_err(|err| {
            RepoError::Unavailable(format!("cannot reach Redis at {}: {}", store.address, store.describe(&err)))
        })?;
        Ok(store)
    }

    /// Builds the store without contacting the server.
    fn lazy(url: &str) -> Result<Self, RepoError> {
        let invalid = |err: RedisError| {
            let text = redact(&err.to_string(), &[url]);
            RepoError::Internal(format!("invalid Redis URL: {text}"))
        };
        let info = url.into_connection_info().map_err(invalid)?;
        let address = info.addr().to_string();
        let password = info.redis_settings().password().map(str::to_owned);
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT))
            .set_number_of_retries(2);
        let connection = Client::open(info).and_then(|client| client.get_connection_manager_lazy(config));
        let connection = connection.map_err(invalid)?;
        Ok(Self { connection, address, password, prefix: DEFAULT_PREFIX.to_owned() })
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

    fn describe(&self, err: &RedisError) -> String {
        redact(&err.to_string(), self.password.as_slice())
    }

    fn error(&self, err: &RedisError) -> RepoError {
        let text = format!("Redis at {}: {}", self.address, self.describe(err));
        if err.is_io_error() || err.is_connection_dropped() || err.is_connection_refusal() || err.is_timeout() {
            RepoError::Unavailable(text)
        } else {
            RepoError::Internal(text)
        }
    }
}

fn redact(text: &str, secrets: &[impl AsRef<str>]) -> String {
    secrets
        .iter()
        .map(AsRef::as_ref)
        .filter(|secret| !secret.is_empty())
        .fold(text.to_owned(), |text, secret| text.replace(secret, "***"))
}

impl fmt::Debug for RedisChatStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisChatStore")
            .field("address", &self.address)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
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
        let mut connection = self.connection.clone();
        if ttl.is_zero() {
            // Redis refuses an expiry of 0; a history that lives for no time is no history.
            return redis::cmd("DEL")
                .arg(&key)
                .query_async::<()>(&mut connection)
                .await
                .map_err(|err| self.error(&err));
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
            .map_err(|err| self.error(&err))
    }

    async fn get(&self, org: &OrganizationId, user: &UserId) -> Result<Vec<ChatMessage>, RepoError> {
        let key = self.key(org, user);
        let mut connection = self.connection.clone();
        let json: Option<String> =
            redis::cmd("GET").arg(&key).query_async(&mut connection).await.map_err(|err| self.error(&err))?;
        match json {
            None => Ok(Vec::new()),
            Some(json) => serde_json::from_str(&json)
                .map_err(|err| RepoError::Internal(format!("the chat history in Redis key {key} is not valid: {err}"))),
        }
    }

    async fn clear(&self, org: &OrganizationId, user: &UserId) -> Result<(), RepoError> {
        let mut connection = self.connection.clone();
        redis::cmd("DEL")
            .arg(self.key(org, user))
            .query_async::<()>(&mut connection)
            .await
            .map_err(|err| self.error(&err))
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

    #[test]
    fn redact_replaces_every_secret_and_ignores_empty_ones() {
        assert_eq!(redact("a pw b pw", &["pw", ""]), "a *** b ***");
    }
}
