//! Adapters for the [`ChatStore`](compliance_ports::ChatStore) port: each user's assistant chat history
//! in one organization, kept for a time to live.
//!
//! - [`MemoryChatStore`]: in-process, the default for a single server.
//! - [`RedisChatStore`]: one Redis key per history, expired by Redis, shared by several servers.

mod memory;
mod redis_store;

pub use memory::MemoryChatStore;
pub use redis_store::RedisChatStore;
