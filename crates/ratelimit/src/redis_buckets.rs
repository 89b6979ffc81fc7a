//! Token buckets in Redis, so that every instance of a deployment counts a caller's requests in
//! the same bucket: one hash per bucket, `{prefix}{key}` with the tokens left and the time of the last update
//! (Redis's own clock, so instances need no synchronised clocks), updated by one Lua script
//! (atomic) and expired once the bucket would be full again. The script is sent once per Redis
//! server (`SCRIPT LOAD`) and then run by its digest (`EVALSHA`), loaded again when Redis answers
//! `NOSCRIPT` (after a restart or `SCRIPT FLUSH`). It needs Redis 5 or later: it calls `TIME`
//! before writing, which older servers refuse without script effects replication.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use compliance_ports::{RateDecision, RateLimit, RateLimiter, RepoError};
use compliance_redis::RedisConnection;
use redis::aio::ConnectionManager;
use redis::{RedisError, RedisResult};
use tokio::runtime::Handle;

const DEFAULT_PREFIX: &str = "compliance:ratelimit:";
/// A rate limiter must not slow requests down much when Redis is slow or away.
const TIMEOUT: Duration = Duration::from_millis(500);
/// After a failure, Redis is not asked again for this long: requests pass without waiting on it.
const BACKOFF_MILLIS: u64 = 1000;

/// KEYS[1] the bucket; ARGV[1] tokens per second, ARGV[2] burst. Returns {allowed, wait in ms}.
const SCRIPT: &str = r"
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
local allowed = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait = math.ceil((1 - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {allowed, wait}
";

/// Token buckets in Redis. Its `Debug` output and its errors show the server's address, never
/// the password from the URL.
pub struct RedisRateLimiter {
    redis: RedisConnection,
    limit: RateLimit,
    /// The runtime the connection's I/O tasks live on; commands are sent from tasks on it.
    runtime: Handle,
    prefix: String,
    /// The script's SHA-1 digest, as `SCRIPT LOAD` answered it.
    script_sha: Arc<OnceLock<String>>,
    /// Until when (milliseconds since the epoch) Redis is not asked, after a failure.
    skip_until: AtomicU64,
}

impl RedisRateLimiter {
    /// A limiter on `redis://[user:password@]host[:port][/db]` (or `rediss://`, `unix://`). It
    /// connects on first use and reconnects by itself; `runtime` is where its I/O tasks run.
    pub fn new(url: &str, limit: RateLimit, runtime: Handle) -> Result<Self, RepoError> {
        if limit.per_second == 0 || limit.burst == 0 {
            return Err(RepoError::Internal("a rate limit needs a positive rate and burst".into()));
        }
        let redis = {
            let _runtime = runtime.enter();
            RedisConnection::lazy(url, TIMEOUT, 1)?
        };
        Ok(Self {
            redis,
            limit,
            runtime,
            prefix: DEFAULT_PREFIX.to_owned(),
            script_sha: Arc::new(OnceLock::new()),
            skip_until: AtomicU64::new(0),
        })
    }

    /// Puts `prefix` in front of every key instead of `compliance:ratelimit:`.
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }
}

/// Runs [`SCRIPT`] on `key` by its digest, loading it first when Redis does not have it.
async fn run_script(
    connection: &mut ConnectionManager,
    sha: &OnceLock<String>,
    key: &str,
    limit: RateLimit,
) -> RedisResult<(i64, i64)> {
    let load = async |connection: &mut ConnectionManager| {
        let loaded: String = redis::cmd("SCRIPT").arg("LOAD").arg(SCRIPT).query_async(&mut *connection).await?;
        Ok::<_, RedisError>(sha.get_or_init(|| loaded).clone())
    };
    let digest = match sha.get() {
        Some(digest) => digest.clone(),
        None => load(&mut *connection).await?,
    };
    let evalsha = |digest: &str| {
        let mut command = redis::cmd("EVALSHA");
        command.arg(digest).arg(1).arg(key).arg(limit.per_second).arg(limit.burst);
        command
    };
    match evalsha(&digest).query_async(&mut *connection).await {
        Err(err) if err.code() == Some("NOSCRIPT") => {
            let digest = load(&mut *connection).await?;
            evalsha(&digest).query_async(&mut *connection).await
        }
        answer => answer,
    }
}

fn now_millis() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl fmt::Debug for RedisRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisRateLimiter")
            .field("redis", &self.redis)
            .field("limit", &self.limit)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl RateLimiter for RedisRateLimiter {
    async fn take(&self, key: &str) -> Result<RateDecision, RepoError> {
        if now_millis() < self.skip_until.load(Ordering::Relaxed) {
            return Err(RepoError::Unavailable(format!("Redis at {} failed a moment ago", self.redis.address())));
        }
        let mut connection = self.redis.manager();
        let sha = Arc::clone(&self.script_sha);
        let key = format!("{}{key}", self.prefix);
        let limit = self.limit;
        let task = self.runtime.spawn(async move { run_script(&mut connection, &sha, &key, limit).await });
        let answer = match task.await {
            Ok(answer) => answer.map_err(|err| self.redis.error(&err)),
            Err(err) => Err(RepoError::Internal(format!("rate limit task failed: {err}"))),
        };
        match answer {
            Ok((1, _)) => Ok(RateDecision::Allowed),
            Ok((_, wait)) => {
                Ok(RateDecision::Limited { retry_after: Duration::from_millis(u64::try_from(wait).unwrap_or(0)) })
            }
            Err(err) => {
                self.skip_until.store(now_millis() + BACKOFF_MILLIS, Ordering::Relaxed);
                Err(err)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn url() -> String {
        std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
    }

    fn prefix() -> String {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
        format!("compliance:test:ratelimit:{nanos}:")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_bucket_empties_and_two_limiters_share_it() {
        let limit = RateLimit { per_second: 1, burst: 3 };
        let prefix = prefix();
        let first = RedisRateLimiter::new(&url(), limit, Handle::current()).unwrap().with_prefix(&prefix);
        let second = RedisRateLimiter::new(&url(), limit, Handle::current()).unwrap().with_prefix(&prefix);
        for _ in 0..2 {
            assert_eq!(first.take("k").await.unwrap(), RateDecision::Allowed);
        }
        assert_eq!(second.take("k").await.unwrap(), RateDecision::Allowed);
        match second.take("k").await.unwrap() {
            RateDecision::Limited { retry_after } => assert!(retry_after <= Duration::from_secs(1), "{retry_after:?}"),
            RateDecision::Allowed => panic!("a fourth request within a second passed a burst of 3"),
        }
        // Another key has its own bucket.
        assert_eq!(first.take("other").await.unwrap(), RateDecision::Allowed);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn the_script_is_loaded_again_after_a_flush() {
        let limit = RateLimit { per_second: 1, burst: 2 };
        let limiter = RedisRateLimiter::new(&url(), limit, Handle::current()).unwrap().with_prefix(prefix());
        assert_eq!(limiter.take("k").await.unwrap(), RateDecision::Allowed);
        assert!(limiter.script_sha.get().is_some(), "run by its digest");
        let mut connection = limiter.redis.manager();
        let () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut connection).await.unwrap();
        assert_eq!(limiter.take("k").await.unwrap(), RateDecision::Allowed, "NOSCRIPT: loaded again");
        assert!(matches!(limiter.take("k").await.unwrap(), RateDecision::Limited { .. }));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn an_unreachable_redis_is_an_unavailable_error_without_the_password() {
        let limit = RateLimit { per_second: 1, burst: 1 };
        let limiter = RedisRateLimiter::new("redis://:hunter2secret@127.0.0.1:1", limit, Handle::current()).unwrap();
        let err = limiter.take("k").await.unwrap_err();
        assert!(matches!(err, RepoError::Unavailable(_)), "{err:?}");
        assert!(!err.to_string().contains("hunter2secret"), "{err}");
        assert!(!format!("{limiter:?}").contains("hunter2secret"));
        // Within the back-off, Redis is not asked again.
        let started = std::time::Instant::now();
        assert!(limiter.take("k").await.is_err());
        assert!(started.elapsed() < Duration::from_millis(100));
    }
}
