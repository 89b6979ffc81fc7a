//! Comments on tasks, vendors, risks and policies; their attachments; signed downloads.

use std::sync::Arc;

use compliance_domain::access::{Action, Family};
use compliance_domain::comment::{
    Attachment, CommentDraft, CommentEdit, CommentEntityType, CommentInputError, CommentView, NewComment,
};
use compliance_domain::etag::IfMatch;
use compliance_domain::{AttachmentId, CommentId, Id, OrganizationId, UserId};
use compliance_ports::{BlobStore, Clock, CommentQuery, CommentRepository, Page, RepoError};

use crate::access::{Reach, only_own, require};
use crate::audit::{AuditTrail, COMMENT};
use crate::blob_links::{BlobLinks, DownloadLink, LinkTarget};
use crate::{AppError, AuthType, Ports, Principal, Settings};

/// Comments on risks, vendors, policies and tasks, with their attachments.
pub struct CommentService {
    comments: Arc<dyn CommentRepository>,
    blobs: Arc<dyn BlobStore>,
    clock: Arc<dyn Clock>,
    entities: EntityLookup,
    settings: Arc<Settings>,
    links: BlobLinks,
    audit: AuditTrail,
}

impl CommentService {
    pub(crate) fn new(ports: &Ports, settings: Arc<Settings>) -> Self {
        Self {
            comments: ports.comments.clone(),
            blobs: ports.blobs.clone(),
            clock: ports.clock.clone(),
            entities: EntityLookup::new(ports),
            links: BlobLinks::new(ports.blobs.clone(), ports.clock.clone(), settings.clone()),
            settings,
            audit: AuditTrail::new(ports.renderer.clone(), ports.clock.clone()),
        }
    }

    /// A page of the entity's comments, newest first; 404 when the entity is not the caller's.
    pub async fn list(
        &self,
        caller: &Principal,
        entity_type: CommentEntityType,
        entity_id: &str,
        query: &CommentQuery,
    ) -> Result<Page<CommentView>, AppError> {
        require(caller, Family::Comments, Action::Read)?;
        self.entities.readable(caller, entity_type, entity_id).await?;
        Ok(self.comments.list(&caller.organization_id, entity_type, entity_id, query).await?)
    }

    /// Stores the attachments' bytes, then the comment and its attachment rows in one transaction.
    /// On any failure the bytes already written are removed again: all or nothing.
    pub async fn create(&self, caller: &Principal, input: NewComment) -> Result<CommentView, AppError> {
        require(caller, Family::Comments, Action::Write)?;
        let org = &caller.organization_id;
        let author = author(caller, input.user_id.as_ref())?;
        let draft = CommentDraft::new(org.clone(), author, input, self.settings.attachments, self.clock.now())
            .map_err(|error| match error {
                CommentInputError::Invalid(errors) => AppError::Validation(errors),
                CommentInputError::TooLarge(why) => AppError::TooLarge(why),
            })?;
        let CommentDraft { comment, attachments: decoded } = draft;
        self.entities.readable(caller, comment.entity_type, &comment.entity_id).await?;
        let mut written = Vec::new();
        let mut attachments = Vec::new();
        for file in decoded {
            let key = file.attachment.blob_key();
            if let Err(error) = self.blobs.put(&key, file.bytes, &file.attachment.media_type).await {
                self.links.remove(&written.iter().map(String::as_str).collect::<Vec<_>>(), "attachment").await;
                tracing::warn!(%error, "could not store an attachment");
                return Err(AppError::Unavailable("the attachment store cannot be written".into()));
            }
            written.push(key);
            attachments.push(file.attachment);
        }
        let audit = self.audit.change(caller, "comment.created", &COMMENT);
        if let Err(error) = self.comments.insert(&comment, &attachments, &audit).await {
            self.links.remove(&written.iter().map(String::as_str).collect::<Vec<_>>(), "attachment").await;
            return Err(error.into());
        }
        self.comments.get(org, &comment.id).await.map_err(|e| AppError::from_repo(e, "comment"))
    }

    /// Only the author may edit.
    pub async fn edit(
        &self,
        caller: &Principal,
        id: &CommentId,
        edit: CommentEdit,
        if_match: &IfMatch,
    ) -> Result<CommentView, AppError> {
        require(caller, Family::Comments, Action::Write)?;
        self.authored(caller, id).await?;
        let content = edit.content()?;
        let now = self.clock.now();
        let audit = self.audit.change(caller, "comment.updated", &COMMENT);
        self.comments
            .update_content(&caller.organization_id, id, &content, now, if_match, &audit)
            .await
            .map_err(|e| AppError::from_repo(e, "comment"))
    }

    /// Only the author may delete; the attachments' bytes go with the comment.
    pub async fn delete(
        &self,
        caller: &Principal,
        id: &CommentId,
        if_match: &IfMatch,
    ) -> Result<CommentView, AppError> {
        require(caller, Family::Comments, Action::Write)?;
        let view = self.authored(caller, id).await?;
        let audit = self.audit.change(caller, "comment.deleted", &COMMENT);
        let attachments = self
            .comments
            .delete(&caller.organization_id, id, if_match, &audit)
            .await
            .map_err(|e| AppError::from_repo(e, "comment"))?;
        self.remove_attachments(&attachments).await;
        Ok(view)
    }

    /// A link that downloads the attachment for a limited time.
    pub async fn download_link(&self, caller: &Principal, id: &AttachmentId) -> Result<DownloadLink, AppError> {
        require(caller, Family::Comments, Action::Read)?;
        let attachment = self.attachment(&caller.organization_id, id).await?;
        let on = self.comments.get(&caller.organization_id, &attachment.comment_id).await?.comment;
        self.entities.readable(caller, on.entity_type, &on.entity_id).await?;
        let (key, path) = (attachment.blob_key(), format!("/v1/attachments/{}/content", attachment.id));
        let target = LinkTarget {
            key: &key,
            org: attachment.organization_id.as_str(),
            subject: attachment.id.as_str(),
            path: &path,
            what: "attachment",
        };
        self.links.link(&target).await
    }

    /// The bytes behind a URL this service signed. Any tampering or expiry is a 403.
    pub async fn download(
        &self,
        org: &str,
        id: &str,
        expires: i64,
        signature: &str,
    ) -> Result<(Attachment, Vec<u8>), AppError> {
        const REFUSED: AppError = AppError::Forbidden("the download link is invalid or has expired");
        if !self.links.accepts(org, id, expires, signature) {
            return Err(REFUSED);
        }
        let (Ok(org), Ok(id)) = (OrganizationId::parse(org), AttachmentId::parse(id)) else {
            return Err(REFUSED);
        };
        let attachment = self.attachment(&org, &id).await?;
        let bytes = self.links.read(&attachment.blob_key(), "attachment").await?;
        Ok((attachment, bytes))
    }

    /// Removes the bytes of attachments whose rows were deleted. A failure leaves bytes no row
    /// points at; it is logged, not returned, because the deletion itself has happened.
    pub(crate) async fn remove_attachments(&self, attachments: &[Attachment]) {
        let keys: Vec<String> = attachments.iter().map(Attachment::blob_key).collect();
        self.links.remove(&keys.iter().map(String::as_str).collect::<Vec<_>>(), "attachment").await;
    }

    async fn attachment(&self, org: &OrganizationId, id: &AttachmentId) -> Result<Attachment, AppError> {
        self.comments.attachment(org, id).await.map_err(|e| AppError::from_repo(e, "attachment"))
    }

    /// The comment, when the caller wrote it; 403 otherwise.
    async fn authored(&self, caller: &Principal, id: &CommentId) -> Result<CommentView, AppError> {
        let view =
            self.comments.get(&caller.organization_id, id).await.map_err(|e| AppError::from_repo(e, "comment"))?;
        if view.comment.author_id != caller.user_id {
            return Err(AppError::Forbidden("only the author of a comment may change or delete it"));
        }
        Ok(view)
    }
}

/// The author is always the caller's own user: a session's user, or the member who created the
/// API key (a key acts as its creator, so it never writes in another member's name). With a key
/// the body's `userId` may still name that user, as older clients send it; any other is a 400.
/// With a session it is ignored.
fn author(caller: &Principal, named: Option<&UserId>) -> Result<UserId, AppError> {
    match named {
        Some(named) if caller.auth_type == AuthType::ApiKey && *named != caller.user_id => Err(AppError::invalid(
            "userId",
            "with an API key the author is the key's creator: leave userId out or send the creator's user id",
        )),
        _ => Ok(caller.user_id.clone()),
    }
}

/// Checks that a comment's entity exists in the organization.
struct EntityLookup {
    ports: Ports,
}

impl EntityLookup {
    fn new(ports: &Ports) -> Self {
        Self { ports: ports.clone() }
    }

    /// The entity must exist in the caller's organization (else 404) and be readable by the
    /// caller (a comment is part of what it is on).
    async fn readable(&self, caller: &Principal, kind: CommentEntityType, id: &str) -> Result<(), AppError> {
        const MISSING: AppError = AppError::NotFound("entity");
        let family = match kind {
            CommentEntityType::Task => Family::Tasks,
            CommentEntityType::Vendor => Family::Vendors,
            CommentEntityType::Risk => Family::Risks,
            CommentEntityType::Policy => Family::Policies,
        };
        let reach = require(caller, family, Action::Read)?;
        let org = &caller.organization_id;
        let found = match kind {
            CommentEntityType::Task => {
                let task = self.ports.tasks.get_task(org, &Id::parse(id).map_err(|_| MISSING)?).await;
                match task {
                    Ok(task) if reach == Reach::Own && !crate::tasks::is_own(&task, caller) => {
                        return Err(only_own(caller, Action::Read, "tasks assigned to them"));
                    }
                    other => other.map(drop),
                }
            }
            CommentEntityType::Vendor => {
                self.ports.vendors.get_vendor(org, &Id::parse(id).map_err(|_| MISSING)?).await.map(drop)
            }
            CommentEntityType::Risk => {
                self.ports.risks.get_risk(org, &Id::parse(id).map_err(|_| MISSING)?).await.map(drop)
            }
            CommentEntityType::Policy => {
                self.ports.policies.get_policy(org, &Id::parse(id).map_err(|_| MISSING)?).await.map(drop)
            }
        };
        match found {
            Ok(()) => Ok(()),
            Err(RepoError::NotFound) => Err(MISSING),
            Err(other) => Err(other.into()),
        }
    }
}
