//! What delivery needs to run the service in production: request rate limits and the state of
//! the database connection pools, for metrics.

use std::time::Duration;

use async_trait::async_trait;

use crate::RepoError;

/// A token bucket: `burst` requests at once, refilled at `per_second` requests a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Tokens added a second.
    pub per_second: u32,
    /// The bucket's size: the most requests at once.
    pub burst: u32,
}

/// Whether a request may go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateDecision {
    /// A token was taken.
    Allowed,
    /// The bucket is empty; it holds a token again after `retry_after`.
    Limited {
        /// How long until the next token.
        retry_after: Duration,
    },
}

/// Token buckets per caller. Keys are opaque and never hold a secret (callers hash credentials).
#[async_trait]
pub trait RateLimiter: Send + Sync {
    /// Takes one token from `key`'s bucket, creating a full bucket if it has none.
    async fn take(&self, key: &str) -> Result<RateDecision, RepoError>;
}

/// The state of one connection pool at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolStatus {
    /// Which pool: `main` (PostgreSQL), `writer` or `readers` (SQLite).
    pub name: &'static str,
    /// The most connections it may open.
    pub max_size: usize,
    /// Connections open now, idle or in use.
    pub size: usize,
    /// Idle connections ready to be taken.
    pub available: usize,
    /// Requests waiting for a connection.
    pub waiting: usize,
}

/// Reports the connection pools, for metrics; cheap and without I/O.
pub trait PoolMetrics: Send + Sync {
    /// Every pool's state now.
    fn pool_status(&self) -> Vec<PoolStatus>;
}
