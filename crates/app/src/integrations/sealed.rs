//! JSON documents kept encrypted in the secret store, sealed by the vault's [`SecretCipher`]: a
//! connection's credential values and OAuth tokens, an OAuth app, a pending authorization's PKCE
//! verifier. The plaintext lives only in secret (zeroized) strings.

use std::sync::Arc;

use compliance_domain::etag::IfMatch;
use compliance_domain::{ConnectionId, OrganizationId, Timestamp};
use compliance_ports::{
    AuditOf, CONNECTION_CREDENTIALS_OWNER_KIND, SecretCipher, SecretOwner, SecretRepository, StoredSecret,
};
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::AppError;

/// Owner kinds in the secret store.
pub(crate) const CONNECTION_CREDENTIALS: &str = CONNECTION_CREDENTIALS_OWNER_KIND;
pub(crate) const OAUTH_APP: &str = "oauth_app";
pub(crate) const OAUTH_STATE: &str = "oauth_state";
/// A connection's OAuth tokens: one document, replaced whole, so a refresh stores the access
/// token, the refresh token and the expiry together or not at all.
pub(crate) const OAUTH_TOKENS: &str = "oauth_tokens";

#[derive(Clone)]
pub(crate) struct Sealed {
    secrets: Arc<dyn SecretRepository>,
    cipher: Arc<dyn SecretCipher>,
}

impl Sealed {
    pub(crate) fn new(secrets: Arc<dyn SecretRepository>, cipher: Arc<dyn SecretCipher>) -> Self {
        Self { secrets, cipher }
    }

    /// Encrypts a document, bound to its organization and owner.
    pub(crate) fn seal<T: Serialize>(
        &self,
        org: &OrganizationId,
        kind: &str,
        owner: &str,
        document: &T,
    ) -> Result<Vec<u8>, AppError> {
        let plaintext = SecretString::from(serde_json::to_string(document).map_err(|_| internal("encode", kind))?);
        let owner = SecretOwner { organization_id: org, owner_kind: kind, owner_id: owner };
        self.cipher.seal(&plaintext, owner).map_err(|_| internal("encrypt", kind))
    }

    pub(crate) fn open<T: DeserializeOwned>(
        &self,
        org: &OrganizationId,
        kind: &str,
        owner: &str,
        ciphertext: &[u8],
    ) -> Result<T, AppError> {
        let owner = SecretOwner { organization_id: org, owner_kind: kind, owner_id: owner };
        let plaintext = self.cipher.open(ciphertext, owner).map_err(|_| internal("decrypt", kind))?;
        serde_json::from_str(plaintext.expose_secret()).map_err(|_| internal("decode", kind))
    }

    /// Stores (or replaces) the owner's document; when it was stored.
    pub(crate) async fn put<T: Serialize>(
        &self,
        org: &OrganizationId,
        kind: &str,
        owner: &str,
        document: &T,
    ) -> Result<Timestamp, AppError> {
        let secret = self.sealed(org, (kind, owner), document)?;
        self.secrets.put(&secret).await?;
        Ok(secret.updated_at)
    }

    /// [`put`](Self::put) with `audit`'s entry, in one transaction, while `if_match` holds for
    /// the document stored before (for documents the API sets).
    pub(crate) async fn put_audited<T: Serialize>(
        &self,
        org: &OrganizationId,
        (kind, owner): (&str, &str),
        document: &T,
        if_match: &IfMatch,
        audit: &AuditOf<'_, StoredSecret>,
    ) -> Result<Timestamp, AppError> {
        let secret = self.sealed(org, (kind, owner), document)?;
        self.secrets.put_audited(&secret, if_match, audit).await?;
        Ok(secret.updated_at)
    }

    /// The owner's document sealed under the current key, as the vault stores it.
    fn sealed<T: Serialize>(
        &self,
        org: &OrganizationId,
        (kind, owner): (&str, &str),
        document: &T,
    ) -> Result<StoredSecret, AppError> {
        Ok(StoredSecret {
            organization_id: org.clone(),
            owner_kind: kind.to_owned(),
            owner_id: owner.to_owned(),
            key_id: self.cipher.current_key_id(),
            ciphertext: self.seal(org, kind, owner, document)?,
            updated_at: Timestamp::now(),
        })
    }

    /// Deletes the owner's document with `audit`'s entry of it, in one transaction, while
    /// `if_match` holds for it; whether there was one.
    pub(crate) async fn delete_audited(
        &self,
        org: &OrganizationId,
        (kind, owner): (&str, &str),
        if_match: &IfMatch,
        audit: &AuditOf<'_, StoredSecret>,
    ) -> Result<bool, AppError> {
        Ok(self.secrets.delete_audited(org, kind, owner, if_match, audit).await?)
    }

    /// The document and when it was stored.
    pub(crate) async fn get<T: DeserializeOwned>(
        &self,
        org: &OrganizationId,
        kind: &str,
        owner: &str,
    ) -> Result<Option<(T, Timestamp)>, AppError> {
        let Some(stored) = self.secrets.get(org, kind, owner).await? else { return Ok(None) };
        Ok(Some((self.open(org, kind, owner, &stored.ciphertext)?, stored.updated_at)))
    }

    /// Destroys a connection's credential values and OAuth tokens.
    pub(crate) async fn destroy_connection_secrets(
        &self,
        org: &OrganizationId,
        connection: &ConnectionId,
    ) -> Result<(), AppError> {
        for kind in [CONNECTION_CREDENTIALS, OAUTH_TOKENS] {
            self.secrets.delete(org, kind, connection.as_str()).await?;
        }
        Ok(())
    }

    pub(crate) async fn owners(&self, org: &OrganizationId, kind: &str) -> Result<Vec<String>, AppError> {
        Ok(self.secrets.owner_ids(org, kind).await?)
    }
}

/// Names what failed, never what was inside.
fn internal(step: &str, kind: &str) -> AppError {
    AppError::Internal(format!("cannot {step} a vault document of kind {kind}"))
}
