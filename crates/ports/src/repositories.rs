use async_trait::async_trait;
use compliance_domain::comment::{Attachment, Comment, CommentEntityType, CommentView};
use compliance_domain::etag::IfMatch;
use compliance_domain::organization::{Organization, OrganizationPatch};
use compliance_domain::people::{ApiKey, Member, MemberPatch, Person, Session, User};
use compliance_domain::{ApiKeyId, AttachmentId, CommentId, MemberId, OrganizationId, Timestamp, UserId};

use crate::{
    AuditEach, AuditOf, BulkApplied, BulkError, BulkWrite, CommentQuery, Page, PageRequest, PersonQuery, RepoError,
};

/// Comments and their attachments' metadata; every method is scoped to an organization.
#[async_trait]
pub trait CommentRepository: Send + Sync {
    /// Inserts the comment and its attachments' rows in one transaction.
    async fn insert(
        &self,
        comment: &Comment,
        attachments: &[Attachment],
        audit: &AuditOf<'_, Comment>,
    ) -> Result<(), RepoError>;
    /// A page of the entity's comments, newest first.
    async fn list(
        &self,
        org: &OrganizationId,
        entity_type: CommentEntityType,
        entity_id: &str,
        query: &CommentQuery,
    ) -> Result<Page<CommentView>, RepoError>;
    /// One comment with its attachments.
    async fn get(&self, org: &OrganizationId, id: &CommentId) -> Result<CommentView, RepoError>;
    /// Replaces a comment's text, with `audit`'s entry, in one transaction.
    async fn update_content(
        &self,
        org: &OrganizationId,
        id: &CommentId,
        content: &str,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Comment>,
    ) -> Result<CommentView, RepoError>;
    /// Deletes the comment and its attachments' rows; returns the attachments.
    async fn delete(
        &self,
        org: &OrganizationId,
        id: &CommentId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Comment>,
    ) -> Result<Vec<Attachment>, RepoError>;
    /// One attachment's metadata (its bytes are in the [`BlobStore`](crate::BlobStore)).
    async fn attachment(&self, org: &OrganizationId, id: &AttachmentId) -> Result<Attachment, RepoError>;
}

/// Organizations.
#[async_trait]
pub trait OrganizationRepository: Send + Sync {
    /// Conflict when the slug is taken.
    async fn insert(&self, organization: &Organization, audit: &AuditOf<'_, Organization>) -> Result<(), RepoError>;
    /// Inserts the organization and its first member in one transaction, with an entry of each.
    /// Conflict when the slug is taken.
    async fn insert_with_owner(
        &self,
        organization: &Organization,
        owner: &Member,
        audit: (&AuditOf<'_, Organization>, &AuditOf<'_, Member>),
    ) -> Result<(), RepoError>;
    /// The organization; `RepoError::NotFound` when there is none.
    async fn get(&self, org: &OrganizationId) -> Result<Organization, RepoError>;
    /// The organization whose slug is `slug`, through its unique index.
    async fn find_by_slug(&self, slug: &str) -> Result<Option<Organization>, RepoError>;
    /// The first `limit` organizations, oldest first: the operator's list, and whether any exists.
    async fn list(&self, limit: usize) -> Result<Vec<Organization>, RepoError>;
    /// Conflict when the patch sets a slug another organization holds.
    async fn update(
        &self,
        org: &OrganizationId,
        patch: &OrganizationPatch,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Organization>,
    ) -> Result<Organization, RepoError>;
    /// The organizations that use device label `label`, on the organization or on a member:
    /// a label belongs to one organization, or the device management system's one token would
    /// show an organization another's devices.
    async fn device_label_holders(&self, label: i64) -> Result<Vec<OrganizationId>, RepoError>;
}

/// Users, who exist across organizations.
#[async_trait]
pub trait UserRepository: Send + Sync {
    /// Conflict when the e-mail address is taken.
    async fn insert(&self, user: &User) -> Result<(), RepoError>;
    /// The user; `RepoError::NotFound` when there is none.
    async fn get(&self, id: &UserId) -> Result<User, RepoError>;
    /// Notes a sign-in at `at`.
    async fn record_login(&self, id: &UserId, at: Timestamp) -> Result<(), RepoError>;
}

/// Members: users' roles in organizations.
#[async_trait]
pub trait MemberRepository: Send + Sync {
    /// Conflict when the user is already a member of the organization.
    async fn insert(&self, member: &Member, audit: &AuditOf<'_, Member>) -> Result<(), RepoError>;
    /// A page of the organization's people, newest first; deactivated ones only when asked.
    async fn list(
        &self,
        org: &OrganizationId,
        include_inactive: bool,
        query: &PersonQuery,
    ) -> Result<Page<Person>, RepoError>;
    /// One member with their user; `RepoError::NotFound` when not the organization's.
    async fn get(&self, org: &OrganizationId, id: &MemberId) -> Result<Person, RepoError>;
    /// The user's membership in the organization, active or not.
    async fn find_by_user(&self, org: &OrganizationId, user: &UserId) -> Result<Option<Person>, RepoError>;
    /// Notes that a session of member `id` came to organization `org` at `at` (its `lastLogin`
    /// there); no audit entry, as a key's `lastUsedAt`.
    async fn record_member_login(&self, org: &OrganizationId, id: &MemberId, at: Timestamp) -> Result<(), RepoError>;
    /// Conflict when the patch moves the membership to a user who already has one.
    async fn update(
        &self,
        org: &OrganizationId,
        id: &MemberId,
        patch: &MemberPatch,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Member>,
    ) -> Result<Person, RepoError>;
    /// Applies `writes` in order in ONE transaction, each as [`insert`](MemberRepository::insert)
    /// or [`update`](MemberRepository::update) does it (the last-owner rule included) with
    /// `audit`'s entry, and commits only when every one succeeded; else
    /// [`BulkError::Operations`] names the failed ones. Members are deactivated, never deleted:
    /// a [`BulkWrite::Delete`] fails.
    async fn apply_member_bulk(
        &self,
        org: &OrganizationId,
        writes: &[BulkWrite<Member, MemberId, MemberPatch>],
        audit: &AuditOf<'_, Member>,
    ) -> Result<BulkApplied<Person>, BulkError>;
}

/// A revoked key, and the keys made from it that were revoked with it.
#[derive(Debug, Clone)]
pub struct RevokedApiKey {
    /// The key as revoked (or as it was, when it was revoked already).
    pub key: ApiKey,
    /// The keys it made, directly or through others, that this revocation revoked.
    pub descendants: Vec<ApiKey>,
}

/// API keys and sessions, found by the hash of their secret.
#[async_trait]
pub trait CredentialRepository: Send + Sync {
    /// Inserts the key and `audit`'s entry of it, in one transaction.
    async fn insert_api_key(&self, key: &ApiKey, audit: &AuditOf<'_, ApiKey>) -> Result<(), RepoError>;
    /// The key whose SHA-256 (hex) is `key_hash`, through an index.
    async fn find_api_key(&self, key_hash: &str) -> Result<Option<ApiKey>, RepoError>;
    /// A page of the organization's keys, newest first; only those `created_by` made when given.
    async fn list_api_keys(
        &self,
        org: &OrganizationId,
        created_by: Option<&UserId>,
        page: &PageRequest,
    ) -> Result<Page<ApiKey>, RepoError>;
    /// One key; `RepoError::NotFound` when it is not the organization's.
    async fn get_api_key(&self, org: &OrganizationId, id: &ApiKeyId) -> Result<ApiKey, RepoError>;
    /// The organization of the key `id`, in whichever it is (the operator's CLI names a key by id
    /// alone); `RepoError::NotFound` when there is no such key.
    async fn api_key_organization(&self, id: &ApiKeyId) -> Result<OrganizationId, RepoError>;
    /// Marks the organization's key revoked at `at`, and every key made from it (by it, or by a
    /// key it made, …) that is not revoked yet, with `audit`'s entry for each, in one
    /// transaction. Revoking twice keeps the first time and writes nothing. `RepoError::NotFound`
    /// when the key is not the organization's.
    async fn revoke_api_key(
        &self,
        org: &OrganizationId,
        id: &ApiKeyId,
        at: Timestamp,
        audit: &AuditOf<'_, ApiKey>,
    ) -> Result<RevokedApiKey, RepoError>;
    /// Notes that the key was used at `at` (`lastUsedAt`).
    async fn touch_api_key(&self, id: &ApiKeyId, at: Timestamp) -> Result<(), RepoError>;
    /// Inserts the session with `audit`'s entry in each organization the user is an active
    /// member of.
    async fn insert_session(&self, session: &Session, audit: &AuditEach<'_, Session>) -> Result<(), RepoError>;
    /// The session whose token's SHA-256 (hex) is `token_hash`, through an index.
    async fn find_session(&self, token_hash: &str) -> Result<Option<Session>, RepoError>;
}

/// Whether the store answers.
#[async_trait]
pub trait HealthCheck: Send + Sync {
    /// `Ok` when the database answers a trivial query.
    async fn ping(&self) -> Result<(), RepoError>;
}

/// The time, so that tests can fix it.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Timestamp;
}
