//! Adapters for the [`RateLimiter`](compliance_ports::RateLimiter) port: a token bucket per caller.
//!
//! - [`MemoryRateLimiter`]: in this process's memory, right for one instance.
//! - [`RedisRateLimiter`]: in Redis, shared by every instance of a deployment.
//!
//! Which bucket a request is charged to (a credential learned to work, else the client address)
//! is the delivery layer's decision; here a key is only a key.

mod memory;
mod redis_buckets;

pub use memory::MemoryRateLimiter;
pub use redis_buckets::RedisRateLimiter;
