//! The Redis connection shared by the Redis adapters (chat histories, rate limit buckets): one place
//! that parses the URL, sets the timeouts, and turns Redis errors into port errors that show the
//! server's address but never the password from the URL.
//!
//! A helper, not an adapter: it implements no port, and adapters may depend on it (they may not
//! depend on each other).

use std::fmt;
use std::time::Duration;

use compliance_ports::RepoError;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, IntoConnectionInfo, RedisError};

/// A connection to one Redis server that connects on first use and reconnects by itself (after a
/// Redis restart, say). Cloning it is cheap; clones share the connection.
#[derive(Clone)]
pub struct RedisConnection {
    manager: ConnectionManager,
    /// `host:port` (or the socket path), safe to show.
    address: String,
    /// The password from the URL, only to scrub it from error texts.
    password: Option<String>,
}

impl RedisConnection {
    /// A connection to `redis://[user:password@]host[:port][/db]` (or `rediss://`, `unix://`),
    /// without contacting the server. `timeout` bounds connecting and each answer; a failed command
    /// is tried again `retries` times. Call it within a Tokio runtime: the connection's I/O tasks
    /// run there.
    pub fn lazy(url: &str, timeout: Duration, retries: usize) -> Result<Self, RepoError> {
        let invalid = |err: RedisError| {
            let text = redact(&err.to_string(), &[url]);
            RepoError::Internal(format!("invalid Redis URL: {text}"))
        };
        let info = url.into_connection_info().map_err(invalid)?;
        let address = info.addr().to_string();
        let password = info.redis_settings().password().map(str::to_owned);
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(retries);
        let manager = Client::open(info).and_then(|client| client.get_connection_manager_lazy(config));
        Ok(Self { manager: manager.map_err(invalid)?, address, password })
    }

    /// A handle to send commands on (a clone of the shared connection).
    pub fn manager(&self) -> ConnectionManager {
        self.manager.clone()
    }

    /// `host:port` (or the socket path), safe to show.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The error's text, without the password.
    pub fn describe(&self, err: &RedisError) -> String {
        redact(&err.to_string(), self.password.as_slice())
    }

    /// A port error naming the server: `Unavailable` when Redis could not be reached or did not
    /// answer in time, `Internal` for anything else.
    pub fn error(&self, err: &RedisError) -> RepoError {
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

impl fmt::Debug for RedisConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConnection")
            .field("address", &self.address)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::unwrap_used, reason = "a test fails loudly")]

    use super::*;

    const PASSWORD: &str = "s3cret-Pa55word";

    #[test]
    fn redact_replaces_every_secret_and_ignores_empty_ones() {
        assert_eq!(redact("a pw b pw", &["pw", ""]), "a *** b ***");
    }

    #[tokio::test]
    async fn the_password_is_never_shown() {
        let connection =
            RedisConnection::lazy(&format!("redis://alice:{PASSWORD}@127.0.0.1:1/0"), Duration::from_millis(200), 0)
                .expect("a well-formed URL");
        let debug = format!("{connection:?}");
        assert!(debug.contains("127.0.0.1:1") && !debug.contains(PASSWORD), "{debug}");
        assert_eq!(connection.address(), "127.0.0.1:1");

        // Nothing listens on port 1: unavailable, with the address but without the password.
        let err = redis::cmd("PING").query_async::<()>(&mut connection.manager()).await.expect_err("no server");
        let err = connection.error(&err);
        let shown = format!("{err} {err:?}");
        assert!(matches!(err, RepoError::Unavailable(_)), "{shown}");
        assert!(shown.contains("127.0.0.1:1") && !shown.contains(PASSWORD), "{shown}");

        let err = RedisConnection::lazy(&format!("redis://alice:{PASSWORD}@[::1/0"), Duration::from_millis(200), 0)
            .expect_err("a malformed URL");
        let shown = format!("{err} {err:?}");
        assert!(matches!(err, RepoError::Internal(_)) && !shown.contains(PASSWORD), "{shown}");
    }
}
