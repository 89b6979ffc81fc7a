//! The use cases shared by context entries, policies, vendors and risks.

use std::sync::Arc;

use compliance_domain::MemberId;
use compliance_ports::{Clock, MemberRepository, Page, PageRequest, RecordRepository, RepoError, TenantRecord};

use crate::{AppError, CommentService, Ports, Principal};

pub struct RecordService<R: TenantRecord> {
    records: Arc<dyn RecordRepository<R>>,
    members: Arc<dyn MemberRepository>,
    clock: Arc<dyn Clock>,
    /// Removes the bytes of the attachments deleted with a record.
    comments: Arc<CommentService>,
}

impl<R: TenantRecord> RecordService<R> {
    pub(crate) fn new(records: Arc<dyn RecordRepository<R>>, ports: &Ports, comments: Arc<CommentService>) -> Self {
        Self { records, members: ports.members.clone(), clock: ports.clock.clone(), comments }
    }

    /// A page of the caller's organization's records, newest first.
    pub async fn list(&self, caller: &Principal, page: &PageRequest) -> Result<Page<R>, AppError> {
        Ok(self.records.list(&caller.organization_id, page).await?)
    }

    pub async fn get(&self, caller: &Principal, id: &R::Id) -> Result<R, AppError> {
        self.records.get(&caller.organization_id, id).await.map_err(not_found::<R>)
    }

    pub async fn create(&self, caller: &Principal, input: R::New) -> Result<R, AppError> {
        let record = R::create(caller.organization_id.clone(), input, self.clock.now())?;
        self.check_members(caller, record.named_members()).await?;
        self.records.insert(&record).await?;
        Ok(record)
    }

    pub async fn update(&self, caller: &Principal, id: &R::Id, changes: R::Changes) -> Result<R, AppError> {
        let patch = R::validate(changes)?;
        if R::patch_is_empty(&patch) {
            return self.get(caller, id).await;
        }
        self.check_members(caller, R::patch_named_members(&patch)).await?;
        self.records.update(&caller.organization_id, id, &patch, self.clock.now()).await.map_err(not_found::<R>)
    }

    /// Deletes the record for good, with its comments and attachments, and returns what it was.
    pub async fn delete(&self, caller: &Principal, id: &R::Id) -> Result<R, AppError> {
        let deleted = self.records.delete(&caller.organization_id, id).await.map_err(not_found::<R>)?;
        self.comments.remove_attachments(&deleted.attachments).await;
        Ok(deleted.record)
    }

    /// Every named member must be an active member of the caller's organization.
    async fn check_members(&self, caller: &Principal, named: Vec<(&'static str, &MemberId)>) -> Result<(), AppError> {
        for (field, member) in named {
            match self.members.get(&caller.organization_id, member).await {
                Ok(person) if person.member.is_active => {}
                Ok(_) | Err(RepoError::NotFound) => {
                    return Err(AppError::invalid(field, "must name an active member of the organization"));
                }
                Err(other) => return Err(other.into()),
            }
        }
        Ok(())
    }
}

fn not_found<R: TenantRecord>(error: RepoError) -> AppError {
    AppError::from_repo(error, R::KIND)
}
