//! Attachment blob storage: adapters for the [`compliance_ports::BlobStore`] port.
//!
//! - [`FsBlobStore`] keeps bytes as files under a root directory (the embedded default).
//! - [`S3BlobStore`] keeps them in an S3-compatible bucket and hands out presigned download URLs.
//!
//! Both refuse keys that are not `ORG_ID/ATTACHMENT_ID` with `[a-z0-9_]` segments, so a key can
//! never name a path or object outside the store.
//!
//! ```
//! use compliance_blobs::FsBlobStore;
//! use compliance_ports::BlobStore;
//!
//! # async fn example() -> Result<(), compliance_ports::BlobError> {
//! let store = FsBlobStore::new(std::env::temp_dir().join("blobs-example"));
//! store.put("org_1/att_1", b"hello".to_vec(), "text/plain").await?;
//! assert_eq!(store.get("org_1/att_1").await?, b"hello");
//! # Ok(()) }
//! ```

mod fs;
mod key;
mod s3;

pub use fs::FsBlobStore;
pub use s3::{S3BlobStore, S3Config};
