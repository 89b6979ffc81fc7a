use std::time::Duration;

use async_trait::async_trait;

/// Why a blob operation failed. The text is for logs; callers see a generic message.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// Nothing is stored under the key.
    #[error("no such blob")]
    NotFound,
    /// The store cannot be reached now; a retry may succeed.
    #[error("blob store unavailable: {0}")]
    Unavailable(String),
    /// Anything else (permissions, a corrupt object).
    #[error("blob store failure: {0}")]
    Internal(String),
}

/// Where attachment bytes live. Keys are `ORG_ID/ATTACHMENT_ID`: relative, `/`-separated, made of
/// `[a-z0-9_]` segments only, so an adapter may map them straight onto paths or object names.
#[async_trait]
pub trait BlobStore: Send + Sync {
    /// Stores the bytes under `key`, replacing any earlier ones.
    async fn put(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<(), BlobError>;
    /// The bytes stored under `key`.
    async fn get(&self, key: &str) -> Result<Vec<u8>, BlobError>;
    /// Removes the bytes; removing a missing key is not an error.
    async fn delete(&self, key: &str) -> Result<(), BlobError>;
    /// A direct download URL valid for `ttl`, when the store can sign one itself (S3 presigned
    /// URLs). `None` means downloads go through this service, which signs its own URL.
    async fn presigned_get(&self, key: &str, ttl: Duration) -> Result<Option<String>, BlobError>;
}
