//! Blobs in an S3-compatible bucket, through the `object_store` crate.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use compliance_ports::{BlobError, BlobStore};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::client::{HttpError, HttpErrorKind};
use object_store::path::Path;
use object_store::signer::{Method, Signer as _};
use object_store::{Attribute, Attributes, ObjectStore as _, ObjectStoreExt as _, PutOptions, RetryConfig};
use secrecy::{ExposeSecret as _, SecretString};

use crate::key;

/// Where and how to reach the bucket. `Debug` never shows the secret key.
#[derive(Debug, Clone)]
pub struct S3Config {
    pub bucket: String,
    pub region: String,
    /// A non-AWS endpoint such as `http://127.0.0.1:9000`; `None` means AWS itself.
    pub endpoint: Option<String>,
    pub access_key_id: String,
    pub secret_access_key: SecretString,
    /// Allow a plain-HTTP endpoint (local servers only).
    pub allow_http: bool,
    /// `https://endpoint/bucket/key` instead of `https://bucket.endpoint/key`; most
    /// self-hosted S3 servers need it.
    pub path_style: bool,
}

/// Stores each blob as the object `ORG_ID/ATTACHMENT_ID`, with its content type, and hands out
/// SigV4 presigned download URLs.
pub struct S3BlobStore {
    store: AmazonS3,
    bucket: String,
}

impl fmt::Debug for S3BlobStore {
    // By hand: the client holds the credentials, so only the bucket is shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3BlobStore").field("bucket", &self.bucket).finish_non_exhaustive()
    }
}

impl S3BlobStore {
    /// Builds the client; no request is made until the first operation.
    ///
    /// # Errors
    /// [`BlobError::Internal`] when the configuration is unusable (e.g. an unparsable endpoint).
    pub fn new(config: S3Config) -> Result<Self, BlobError> {
        // object_store retries for up to 3 minutes by default; a request handler should rather
        // fail soon with Unavailable.
        let retry = RetryConfig { max_retries: 3, retry_timeout: Duration::from_secs(15), ..RetryConfig::default() };
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&config.bucket)
            .with_region(&config.region)
            .with_access_key_id(&config.access_key_id)
            .with_secret_access_key(config.secret_access_key.expose_secret())
            .with_allow_http(config.allow_http)
            .with_virtual_hosted_style_request(!config.path_style)
            .with_retry(retry);
        if let Some(endpoint) = &config.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        // Builder errors name settings, never their values, but go through the same mapping.
        let store = builder.build().map_err(|e| BlobError::Internal(format!("S3 configuration: {e}")))?;
        Ok(Self { store, bucket: config.bucket })
    }

    fn path_of(key: &str) -> Result<Path, BlobError> {
        let [org, id] = key::validate(key)?;
        Ok(Path::from_iter([org, id]))
    }
}

#[async_trait]
impl BlobStore for S3BlobStore {
    async fn put(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<(), BlobError> {
        let path = Self::path_of(key)?;
        let attributes = Attributes::from_iter([(Attribute::ContentType, content_type.to_owned())]);
        let options = PutOptions { attributes, ..PutOptions::default() };
        match self.store.put_opts(&path, bytes.into(), options).await {
            Ok(_) => Ok(()),
            // A 404 on put means the bucket is missing: a configuration problem, not a missing blob.
            Err(e @ object_store::Error::NotFound { .. }) => Err(BlobError::Internal(format!("S3 put: {e}"))),
            Err(e) => Err(s3_error("put", &e)),
        }
    }

    async fn get(&self, key: &str) -> Result<Vec<u8>, BlobError> {
        let path = Self::path_of(key)?;
        let result = self.store.get(&path).await.map_err(|e| s3_error("get", &e))?;
        let bytes = result.bytes().await.map_err(|e| s3_error("get", &e))?;
        Ok(bytes.into())
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        let path = Self::path_of(key)?;
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(s3_error("delete", &e)),
        }
    }

    async fn presigned_get(&self, key: &str, ttl: Duration) -> Result<Option<String>, BlobError> {
        let path = Self::path_of(key)?;
        let url = self.store.signed_url(Method::GET, &path, ttl).await.map_err(|e| s3_error("presign", &e))?;
        Ok(Some(url.into()))
    }
}

/// NotFound stays NotFound; a failure to reach the server (connect, timeout) is Unavailable;
/// anything else (denied, malformed, server-side) is Internal. object_store's messages carry the
/// path and the server's answer, never the credentials.
fn s3_error(doing: &str, error: &object_store::Error) -> BlobError {
    if let object_store::Error::NotFound { .. } = error {
        return BlobError::NotFound;
    }
    let message = format!("S3 {doing}: {error}");
    if is_transient(error) { BlobError::Unavailable(message) } else { BlobError::Internal(message) }
}

fn is_transient(error: &object_store::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(http) = e.downcast_ref::<HttpError>() {
            return matches!(
                http.kind(),
                HttpErrorKind::Connect | HttpErrorKind::Timeout | HttpErrorKind::Interrupted | HttpErrorKind::Request
            );
        }
        source = e.source();
    }
    false
}
