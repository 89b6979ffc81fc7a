//! Comments and their attachment rows in memory, shown with their author as the store shows them.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use compliance_domain::comment::{Attachment, Comment, CommentEntityType, CommentView};
use compliance_domain::{AttachmentId, CommentId, OrganizationId, Timestamp};
use compliance_ports::{CommentRepository, Cursor, MemberRepository, Page, RepoError, UserRepository};

use super::newest_first;
use super::people::{MemoryMembers, MemoryUsers};

pub struct MemoryComments {
    users: Arc<MemoryUsers>,
    members: Arc<MemoryMembers>,
    comments: Mutex<Vec<Comment>>,
    attachments: Mutex<Vec<Attachment>>,
    /// Refuse the next insert, as a database that went away would.
    fail_next_insert: Mutex<bool>,
}

impl MemoryComments {
    pub fn new(users: Arc<MemoryUsers>, members: Arc<MemoryMembers>) -> Self {
        Self {
            users,
            members,
            comments: Mutex::default(),
            attachments: Mutex::default(),
            fail_next_insert: Mutex::default(),
        }
    }

    pub fn fail_next_insert(&self) {
        *self.fail_next_insert.lock().unwrap() = true;
    }

    /// Every comment row, of every organization.
    pub fn all_comments(&self) -> Vec<Comment> {
        self.comments.lock().unwrap().clone()
    }

    /// Every attachment row, of every organization.
    pub fn all_attachments(&self) -> Vec<Attachment> {
        self.attachments.lock().unwrap().clone()
    }

    /// Deletes the comments on one record, as deleting the record does; their attachments.
    pub fn delete_on(&self, org: &OrganizationId, kind: CommentEntityType, id: &str) -> Vec<Attachment> {
        let mut comments = self.comments.lock().unwrap();
        let (gone, kept): (Vec<Comment>, Vec<Comment>) =
            comments.drain(..).partition(|c| &c.organization_id == org && c.entity_type == kind && c.entity_id == id);
        *comments = kept;
        let mut attachments = self.attachments.lock().unwrap();
        let (gone, kept): (Vec<Attachment>, Vec<Attachment>) =
            attachments.drain(..).partition(|a| gone.iter().any(|c| c.id == a.comment_id));
        *attachments = kept;
        gone
    }

    async fn view(&self, comment: Comment) -> Result<CommentView, RepoError> {
        let author = self.users.get(&comment.author_id).await?;
        let membership = self.members.find_by_user(&comment.organization_id, &comment.author_id).await?;
        let attachments =
            self.attachments.lock().unwrap().iter().filter(|a| a.comment_id == comment.id).cloned().collect();
        Ok(CommentView { author_active: membership.is_some_and(|p| p.member.is_active), author, attachments, comment })
    }

    fn find(&self, org: &OrganizationId, id: &CommentId) -> Result<Comment, RepoError> {
        let comments = self.comments.lock().unwrap();
        comments.iter().find(|c| &c.organization_id == org && &c.id == id).cloned().ok_or(RepoError::NotFound)
    }
}

#[async_trait]
impl CommentRepository for MemoryComments {
    async fn insert(
        &self,
        comment: &Comment,
        attachments: &[Attachment],
        _: &compliance_ports::AuditOf<'_, Comment>,
    ) -> Result<(), RepoError> {
        if std::mem::take(&mut *self.fail_next_insert.lock().unwrap()) {
            return Err(RepoError::Unavailable("the fake database went away".into()));
        }
        self.comments.lock().unwrap().push(comment.clone());
        self.attachments.lock().unwrap().extend_from_slice(attachments);
        Ok(())
    }

    async fn list(
        &self,
        org: &OrganizationId,
        entity_type: CommentEntityType,
        entity_id: &str,
        query: &compliance_ports::CommentQuery,
    ) -> Result<Page<CommentView>, RepoError> {
        let page = &query.page;
        let comments: Vec<Comment> = self
            .comments
            .lock()
            .unwrap()
            .iter()
            .filter(|c| &c.organization_id == org && c.entity_type == entity_type && c.entity_id == entity_id)
            .cloned()
            .collect();
        let mut views = Vec::new();
        for comment in comments {
            views.push(self.view(comment).await?);
        }
        Ok(newest_first(views, page, |v| Cursor::newest_first(v.comment.created_at, v.comment.id.to_string())))
    }

    async fn get(&self, org: &OrganizationId, id: &CommentId) -> Result<CommentView, RepoError> {
        let comment = self.find(org, id)?;
        self.view(comment).await
    }

    async fn update_content(
        &self,
        org: &OrganizationId,
        id: &CommentId,
        content: &str,
        now: Timestamp,
        _: &compliance_domain::etag::IfMatch,
        _: &compliance_ports::AuditOf<'_, Comment>,
    ) -> Result<CommentView, RepoError> {
        let updated = {
            let mut comments = self.comments.lock().unwrap();
            let comment =
                comments.iter_mut().find(|c| &c.organization_id == org && &c.id == id).ok_or(RepoError::NotFound)?;
            comment.content = content.to_owned();
            comment.updated_at = now;
            comment.clone()
        };
        self.view(updated).await
    }

    async fn delete(
        &self,
        org: &OrganizationId,
        id: &CommentId,
        _: &compliance_domain::etag::IfMatch,
        _: &compliance_ports::AuditOf<'_, Comment>,
    ) -> Result<Vec<Attachment>, RepoError> {
        let comment = self.find(org, id)?;
        self.comments.lock().unwrap().retain(|c| c.id != comment.id);
        let mut attachments = self.attachments.lock().unwrap();
        let (gone, kept): (Vec<Attachment>, Vec<Attachment>) =
            attachments.drain(..).partition(|a| a.comment_id == comment.id);
        *attachments = kept;
        Ok(gone)
    }

    async fn attachment(&self, org: &OrganizationId, id: &AttachmentId) -> Result<Attachment, RepoError> {
        let attachments = self.attachments.lock().unwrap();
        attachments.iter().find(|a| &a.organization_id == org && &a.id == id).cloned().ok_or(RepoError::NotFound)
    }
}
