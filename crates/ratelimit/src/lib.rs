//! Adapters for the [`RateLimiter`](compliance_ports::RateLimiter) port: a token bucket per caller.
//!
//! - [`RedisRateLimiter`]: in Redis, shared by every instance of a deployment.

mod redis_buckets;

pub use redis_buckets::RedisRateLimiter;
