//! Storage for the credential vault: encrypted secrets, OAuth states and refresh leases.
//!
//! The vault itself (encryption, keys) lives in `compliance-vault`, behind [`SecretCipher`]; these
//! ports only keep what it produces, so the database never sees a plaintext secret.

use async_trait::async_trait;
use compliance_domain::etag::{ETag, IfMatch};
use compliance_domain::{OrganizationId, Timestamp, UserId};
use secrecy::SecretString;

use crate::{AuditOf, RepoError};

/// An encrypted secret and what it belongs to. The ciphertext is bound (as associated data) to
/// the organization and the owner, so a row copied elsewhere does not decrypt.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredSecret {
    /// The organization the secret belongs to.
    pub organization_id: OrganizationId,
    /// What kind of record owns the secret: `connection`, `oauth_app`, `oauth_state`, …
    pub owner_kind: String,
    /// The owning record's id.
    pub owner_id: String,
    /// The vault key the ciphertext was made with.
    pub key_id: String,
    /// The sealed bytes.
    pub ciphertext: Vec<u8>,
    /// When it was last written.
    pub updated_at: Timestamp,
}

impl StoredSecret {
    /// The tag of the secret as stored (see [`secret_etag`]).
    pub fn etag(&self) -> ETag {
        secret_etag(&self.owner_kind, &self.owner_id, self.updated_at)
    }
}

/// The `ETag` of the secret `owner_kind`/`owner_id` last written at `updated_at`: what a
/// resource kept in the vault (an OAuth app, an automation's secret) answers, and what its
/// `If-Match` is checked against. Re-encryption under a new key keeps `updated_at`, so the tag.
pub fn secret_etag(owner_kind: &str, owner_id: &str, updated_at: Timestamp) -> ETag {
    ETag::of(&format!("{owner_kind}/{owner_id}"), updated_at)
}

/// Never shows the ciphertext.
impl std::fmt::Debug for StoredSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredSecret")
            .field("organization_id", &self.organization_id)
            .field("owner_kind", &self.owner_kind)
            .field("owner_id", &self.owner_id)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// The owner kind of a connection's credential values: one sealed JSON object of field name to
/// value, owned by the connection's id (written by the integration use cases).
pub const CONNECTION_CREDENTIALS_OWNER_KIND: &str = "connection";
/// The owner kind of an automation's login secrets: one row per secret, owned by
/// `{automation id}/{NAME}` (see [`SecretOwner::automation_secret`]).
pub const AUTOMATION_SECRET_OWNER_KIND: &str = "automation_secret";

/// Who a sealed secret belongs to: a ciphertext opens only for the owner it was sealed for.
#[derive(Debug, Clone, Copy)]
pub struct SecretOwner<'a> {
    /// The organization.
    pub organization_id: &'a OrganizationId,
    /// The kind of the owning record (`connection`, `automation_secret`, …).
    pub owner_kind: &'a str,
    /// The owning record's id.
    pub owner_id: &'a str,
}

impl SecretOwner<'_> {
    /// The owner id of an automation's secret `name`: the automation is part of the owner, so a
    /// secret sealed for one automation never opens for another.
    pub fn automation_secret(automation_id: &str, name: &str) -> String {
        format!("{automation_id}/{name}")
    }
}

/// The vault's cipher, for the use cases that keep secrets of their own. Implemented by the
/// credential vault (AES-256-GCM, the owner bound as associated data).
pub trait SecretCipher: Send + Sync {
    /// The key new ciphertexts are made with (for `StoredSecret::key_id`).
    fn current_key_id(&self) -> String;
    /// Encrypts `plaintext` for `owner` under the current key.
    fn seal(&self, plaintext: &SecretString, owner: SecretOwner<'_>) -> Result<Vec<u8>, CipherError>;
    /// Decrypts a ciphertext sealed for `owner`, under whichever known key made it.
    fn open(&self, ciphertext: &[u8], owner: SecretOwner<'_>) -> Result<SecretString, CipherError>;
}

/// Why sealing or opening failed; names no secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the vault could not {0}")]
pub struct CipherError(pub &'static str);

/// The vault's ciphertexts, per organization and owner.
#[async_trait]
pub trait SecretRepository: Send + Sync {
    /// Stores or replaces the owner's secret.
    async fn put(&self, secret: &StoredSecret) -> Result<(), RepoError>;
    /// The owner's secret, if it has one.
    async fn get(
        &self,
        org: &OrganizationId,
        owner_kind: &str,
        owner_id: &str,
    ) -> Result<Option<StoredSecret>, RepoError>;
    /// The ids of the organization's owners of `owner_kind` that have a secret, sorted.
    async fn owner_ids(&self, org: &OrganizationId, owner_kind: &str) -> Result<Vec<String>, RepoError>;
    /// The secrets of `owner_kind` whose owner id is `{parent}/…`, sorted by owner id.
    async fn children(
        &self,
        org: &OrganizationId,
        owner_kind: &str,
        parent: &str,
    ) -> Result<Vec<StoredSecret>, RepoError>;
    /// Whether there was one to delete.
    async fn delete(&self, org: &OrganizationId, owner_kind: &str, owner_id: &str) -> Result<bool, RepoError>;
    /// [`put`](Self::put) with `audit`'s entry (made from the row before, if any, and after), in
    /// one transaction, only while `if_match` holds for the row before
    /// ([`IfMatch::check_existing`]; else `RepoError::PreconditionFailed`, nothing written). For
    /// the secrets the API sets itself (an OAuth app, an automation's).
    async fn put_audited(
        &self,
        secret: &StoredSecret,
        if_match: &IfMatch,
        audit: &AuditOf<'_, StoredSecret>,
    ) -> Result<(), RepoError>;
    /// [`delete`](Self::delete) with `audit`'s entry of the row deleted, in one transaction, only
    /// while `if_match` holds for it; no entry when there was none.
    async fn delete_audited(
        &self,
        org: &OrganizationId,
        owner_kind: &str,
        owner_id: &str,
        if_match: &IfMatch,
        audit: &AuditOf<'_, StoredSecret>,
    ) -> Result<bool, RepoError>;
    /// How many secrets are not yet under `current_key`.
    async fn count_stale(&self, current_key: &str) -> Result<u64, RepoError>;
    /// Up to `limit` secrets not under `current_key`, oldest first, for re-encryption.
    async fn stale(&self, current_key: &str, limit: usize) -> Result<Vec<StoredSecret>, RepoError>;
    /// Replaces the ciphertext only if the row still holds exactly `previous` (the ciphertext it
    /// was read with), so that a secret written meanwhile, under any key, is never overwritten by
    /// an older one re-encrypted. Keeps the row's `updated_at` (the value did not change, so
    /// neither does its [`secret_etag`]). Whether it replaced.
    async fn reencrypt(&self, secret: &StoredSecret, previous: &[u8]) -> Result<bool, RepoError>;
}

/// A pending OAuth authorization. Only the SHA-256 of the state value is kept.
#[derive(Clone, PartialEq, Eq)]
pub struct OAuthStateRecord {
    /// SHA-256 of the state, hex.
    pub state_hash: String,
    /// The organization connecting.
    pub organization_id: OrganizationId,
    /// The user who started it.
    pub user_id: UserId,
    /// The provider's slug.
    pub provider: String,
    /// Where to send the browser afterwards, if the caller asked.
    pub redirect_url: Option<String>,
    /// When the authorization started.
    pub created_at: Timestamp,
    /// When the state stops being accepted.
    pub expires_at: Timestamp,
    /// The PKCE verifier, encrypted by the vault; taken and purged with the state.
    pub sealed_pkce_verifier: Option<Vec<u8>>,
}

/// Leaves the ciphertext out.
impl std::fmt::Debug for OAuthStateRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthStateRecord")
            .field("organization_id", &self.organization_id)
            .field("user_id", &self.user_id)
            .field("provider", &self.provider)
            .field("created_at", &self.created_at)
            .field("expires_at", &self.expires_at)
            .field("has_pkce_verifier", &self.sealed_pkce_verifier.is_some())
            .finish_non_exhaustive()
    }
}

/// Pending OAuth authorizations of integration connections.
#[async_trait]
pub trait OAuthStateRepository: Send + Sync {
    /// Stores a new state.
    async fn insert(&self, state: &OAuthStateRecord) -> Result<(), RepoError>;
    /// The state, left in place: the callback reads which organization to authenticate its
    /// session in before it takes the state.
    async fn find(&self, state_hash: &str) -> Result<Option<OAuthStateRecord>, RepoError>;
    /// Removes and returns the state if `user` started it in `org`: a state can be taken once,
    /// however many callers race, and never by another user (whose attempt leaves it in place).
    async fn take(
        &self,
        state_hash: &str,
        org: &OrganizationId,
        user: &UserId,
    ) -> Result<Option<OAuthStateRecord>, RepoError>;
    /// Removes states that expired before `now`; how many.
    async fn purge_expired(&self, now: Timestamp) -> Result<u64, RepoError>;
}

/// Leases that let one process at a time refresh a connection's tokens, across every server
/// instance sharing the database.
#[async_trait]
pub trait RefreshLeases: Send + Sync {
    /// Takes the lease until `until` if nobody holds it, or its holder's lease ran out before
    /// `now`, or `holder` holds it already. Whether `holder` now holds it.
    async fn acquire(&self, key: &str, holder: &str, now: Timestamp, until: Timestamp) -> Result<bool, RepoError>;
    /// Gives the lease up, if `holder` holds it.
    async fn release(&self, key: &str, holder: &str) -> Result<(), RepoError>;
}
