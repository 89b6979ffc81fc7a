//! Expiring links to bytes in the blob store (attachments, screenshots) and reading them back.
//!
//! With S3 the store presigns the link itself; otherwise the link points at this service and
//! carries an HMAC over the organization, a subject and the expiry. Each kind of link signs its
//! own subject, so a link of one kind never passes for another.

use std::sync::Arc;

use compliance_ports::{BlobError, BlobStore, Clock};

use crate::{AppError, Settings, UrlSigner};

/// A link and how many seconds it stays valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadLink {
    /// The signed URL, absolute, under `Settings::public_url`.
    pub url: String,
    /// Seconds until the link stops working.
    pub expires_in: u64,
}

/// What a link points at: the blob, and how this service serves and signs it.
pub(crate) struct LinkTarget<'a> {
    pub key: &'a str,
    pub org: &'a str,
    /// What the signature covers besides the organization and the expiry.
    pub subject: &'a str,
    /// The service's path, e.g. `/v1/attachments/att_…/content`, with a query of its own if need be.
    pub path: &'a str,
    /// For messages: `attachment`, `screenshot`.
    pub what: &'static str,
}

pub(crate) struct BlobLinks {
    blobs: Arc<dyn BlobStore>,
    clock: Arc<dyn Clock>,
    settings: Arc<Settings>,
    signer: UrlSigner,
}

impl BlobLinks {
    pub(crate) fn new(blobs: Arc<dyn BlobStore>, clock: Arc<dyn Clock>, settings: Arc<Settings>) -> Self {
        let signer = UrlSigner::new(settings.url_signing_key.clone());
        Self { blobs, clock, settings, signer }
    }

    /// A link valid for the configured download time.
    pub(crate) async fn link(&self, target: &LinkTarget<'_>) -> Result<DownloadLink, AppError> {
        let ttl = self.settings.download_ttl;
        let url = match self.blobs.presigned_get(target.key, ttl).await {
            Ok(Some(url)) => url,
            Ok(None) => {
                let ttl_seconds = i64::try_from(ttl.as_secs()).unwrap_or(0);
                let expires = self.clock.now().as_unix_seconds().saturating_add(ttl_seconds);
                let signature = self.signer.sign(target.org, target.subject, expires);
                // A path may carry its own query (a step's screenshot names the step).
                let separator = if target.path.contains('?') { '&' } else { '?' };
                format!(
                    "{}{}{separator}org={}&expires={expires}&signature={signature}",
                    self.settings.public_url.trim_end_matches('/'),
                    target.path,
                    target.org
                )
            }
            Err(error) => {
                tracing::warn!(%error, what = target.what, "could not sign a blob URL");
                return Err(unavailable(target.what));
            }
        };
        Ok(DownloadLink { url, expires_in: ttl.as_secs() })
    }

    /// Whether a link this service signed is intact and unexpired.
    pub(crate) fn accepts(&self, org: &str, subject: &str, expires: i64, signature: &str) -> bool {
        expires >= self.clock.now().as_unix_seconds() && self.signer.verify(org, subject, expires, signature)
    }

    /// The bytes under `key`; a missing blob is a 404 naming `what`.
    pub(crate) async fn read(&self, key: &str, what: &'static str) -> Result<Vec<u8>, AppError> {
        match self.blobs.get(key).await {
            Ok(bytes) => Ok(bytes),
            Err(BlobError::NotFound) => Err(AppError::NotFound(what)),
            Err(error) => {
                tracing::warn!(%error, what, "could not read a blob");
                Err(unavailable(what))
            }
        }
    }

    /// Removes blobs whose rows are gone. A failure leaves bytes nothing points at; it is logged,
    /// not returned, because the deletion itself has happened.
    pub(crate) async fn remove(&self, keys: &[&str], what: &'static str) {
        for key in keys {
            if let Err(error) = self.blobs.delete(key).await {
                tracing::warn!(%error, blob = %key, what, "could not remove blob bytes");
            }
        }
    }
}

fn unavailable(what: &str) -> AppError {
    AppError::Unavailable(format!("the {what} store is unavailable"))
}
