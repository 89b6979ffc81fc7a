//! Policies: the [`PolicyRepository`] on both backends, and the row the `policies` table holds.

use async_trait::async_trait;
use compliance_domain::comment::{Attachment, CommentEntityType};
use compliance_domain::etag::IfMatch;
use compliance_domain::policy::{
    Policy, PolicyPatch, PolicyStatus, PolicyVersion, PolicyVersionSummary, RichText, VersionSigners,
};
use compliance_domain::{OrganizationId, PolicyId, Timestamp, UserId};
use compliance_ports::{
    AuditOf, Deleted, ListName, POLICY_CHANGED, Page, PolicyFilter, PolicyQuery, PolicyRepository, PolicySort,
    PolicyWrite, RepoError, SortValue,
};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::Store;
use crate::audit::AuditQueue;
use crate::comments::{attachments_on, comments_on};
use crate::db::{db_run, write_transaction};
use crate::error::{TxError, corrupt, repo_error};
use crate::list_counts::KeptCount;
use crate::locks::Locked;
use crate::paging::{
    Condition, ListBackend, SortColumn, SortColumns, assigned, read_page, sort_columns, text_in, time_range,
};
use crate::policy_versions::{PolicySignatureRow, PolicyVersionRow};
use crate::prepared::Prepared;
use crate::rows::{AttachmentRow, id, instant, json, json_text, library_origin, naive, optional_id, value};
use crate::schema::{policies, policy_signatures, policy_versions};
use crate::search;

#[async_trait]
impl PolicyRepository for Store {
    async fn list_policies(&self, org: &OrganizationId, query: &PolicyQuery) -> Result<Page<Policy>, RepoError> {
        let (org, matching) = (org.to_string(), query.clone());
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<(PolicyRow, i64)>, _) = read_page!(
            &mut conn,
            &query.page,
            policies_matching(policies::table.into_boxed(), &org, &matching),
            (PolicyRow::as_select(), search::relevance(&search::POLICIES, &org, &matching)),
            search::order(&search::POLICIES, &org, &matching, policy_order(&matching)),
            KeptCount::whole(&org, ListName::Policies, &matching),
        )
        .map_err(repo_error)?;
        let items = rows
            .into_iter()
            .map(|(row, relevance)| Ok((Policy::try_from(row)?, relevance)))
            .collect::<Result<Vec<_>, RepoError>>()?;
        let keys = query.sort_keys(PolicySort::CreatedAt);
        let page = Page::from_rows(items, &query.page, total, |(item, relevance)| {
            let values = keys.iter().map(|key| policy_sort_value(item, key.field)).collect();
            search::cursor(query, *relevance, values, item.id.to_string())
        });
        Ok(page.map(|(item, _)| item))
    }

    async fn get_policy(&self, org: &OrganizationId, id: &PolicyId) -> Result<Policy, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: PolicyRow = db_run!(&mut conn, |c| {
            policies::table
                .filter(policies::organization_id.eq(org.as_str()))
                .filter(policies::id.eq(id.as_str()))
                .select(PolicyRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn insert_policy(&self, policy: &Policy, audit: &AuditOf<'_, Policy>) -> Result<(), RepoError> {
        let row = PolicyRow::from(policy);
        let mut conn = self.pools.write().await?;
        write_transaction!(&mut conn, async |c| {
            Prepared(diesel::insert_into(policies::table).values(&row)).execute(c).await?;
            c.append(audit(None, Some(policy))).await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    /// Read, modify, write: the patch's effect depends on the policy (publishing stamps
    /// `lastPublishedAt`, archiving `lastArchivedAt`), a rule of the domain's `Policy::apply`.
    /// The transaction's first statement reads the policy and locks its row (`crate::locks::Locked`): so
    /// no other write of the policy runs between the read and the write, and the entry's "before"
    /// is what was replaced.
    async fn update_policy(
        &self,
        org: &OrganizationId,
        id: &PolicyId,
        patch: &PolicyPatch,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Policy>,
    ) -> Result<Policy, RepoError> {
        let mut conn = self.pools.write().await?;
        let the_policy =
            || policies::table.filter(policies::organization_id.eq(org.as_str())).filter(policies::id.eq(id.as_str()));
        let locked: Result<Policy, TxError> = write_transaction!(&mut conn, async |c| {
            let before = Policy::try_from(Locked(the_policy().select(PolicyRow::as_select())).get_result(c).await?)?;
            if_match.check(&before.etag())?;
            // submitted since the use case read it: the content under approval stays as
            // submitted (the use case reads again and refuses the edit)
            if before.status == PolicyStatus::PendingApproval && patch.sets_content() {
                return Err(TxError::Repo(RepoError::Conflict(POLICY_CHANGED.into())));
            }
            let mut policy = before.clone();
            // strictly later than what was read, so that `updatedAt` moves with every change
            let now =
                if now > before.updated_at { now } else { before.updated_at.plus(time::Duration::microseconds(1)) };
            if policy.apply(patch, now) {
                // publishing goes through `save_policy` with its version: the policy was
                // published or withdrawn since the use case read it
                return Err(TxError::Repo(RepoError::Conflict(POLICY_CHANGED.into())));
            }
            diesel::update(the_policy()).set(&PolicyRow::from(&policy)).execute(c).await?;
            c.append(audit(Some(&before), Some(&policy))).await?;
            Ok(policy)
        });
        locked.map_err(RepoError::from)
    }

    async fn delete_policy(
        &self,
        org: &OrganizationId,
        id: &PolicyId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Policy>,
    ) -> Result<Deleted<Policy>, RepoError> {
        let mut conn = self.pools.write().await?;
        let entity = CommentEntityType::Policy.as_str();
        let result: Result<(Policy, Vec<AttachmentRow>), TxError> = write_transaction!(&mut conn, async |c| {
            let attachments: Vec<AttachmentRow> = diesel::delete(attachments_on(org.as_str(), entity, id.as_str()))
                .returning(AttachmentRow::as_returning())
                .get_results(c)
                .await?;
            diesel::delete(comments_on(org.as_str(), entity, id.as_str())).execute(c).await?;
            let policy =
                policies::table.filter(policies::organization_id.eq(org.as_str())).filter(policies::id.eq(id.as_str()));
            let deleted: Policy =
                diesel::delete(policy).returning(PolicyRow::as_returning()).get_result(c).await?.try_into()?;
            // The deleted row is the record as it was: a stale `If-Match` rolls the delete back.
            if_match.check(&deleted.etag())?;
            c.append(audit(Some(&deleted), None)).await?;
            Ok((deleted, attachments))
        });
        let (record, attachments) = result.map_err(RepoError::from)?;
        let attachments = attachments.into_iter().map(Attachment::try_from).collect::<Result<_, _>>()?;
        Ok(Deleted { record, attachments })
    }

    /// The transaction's first statement locks the policy's row, as every write of it does: so the
    /// `updated_at` read next cannot move before the commit.
    async fn save_policy(
        &self,
        before: &Policy,
        after: &PolicyWrite<'_>,
        audit: &AuditOf<'_, Policy>,
    ) -> Result<(), RepoError> {
        let (org, id) = (before.organization_id.as_str(), before.id.as_str());
        let row = PolicyRow::from(after.policy);
        let version = after.version.map(PolicyVersionRow::from);
        let signature = after.signature.map(PolicySignatureRow::from);
        let mut conn = self.pools.write().await?;
        let the_policy = || policies::table.filter(policies::organization_id.eq(org)).filter(policies::id.eq(id));
        let saved: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            let stored: PrimitiveDateTime = Locked(the_policy().select(policies::updated_at)).get_result(c).await?;
            if stored != naive(before.updated_at) {
                return Err(TxError::Repo(RepoError::Conflict(POLICY_CHANGED.into())));
            }
            diesel::update(the_policy()).set(&row).execute(c).await?;
            if let Some(version) = &version {
                diesel::insert_into(policy_versions::table).values(version).execute(c).await?;
            }
            if let Some(signature) = &signature {
                diesel::insert_into(policy_signatures::table).values(signature).execute(c).await?;
            }
            c.append(audit(Some(before), Some(after.policy))).await?;
            Ok(())
        });
        saved.map_err(RepoError::from)
    }

    async fn list_policy_versions(
        &self,
        org: &OrganizationId,
        id: &PolicyId,
    ) -> Result<Vec<PolicyVersionSummary>, RepoError> {
        crate::policy_versions::list_versions(&self.pools, org, id).await
    }

    async fn get_policy_version(
        &self,
        org: &OrganizationId,
        id: &PolicyId,
        number: i32,
    ) -> Result<PolicyVersion, RepoError> {
        crate::policy_versions::get_version(&self.pools, org, id, number).await
    }

    async fn policy_signers(
        &self,
        org: &OrganizationId,
        id: &PolicyId,
        number: i32,
    ) -> Result<VersionSigners, RepoError> {
        crate::policy_versions::signers(&self.pools, org, id, number).await
    }

    async fn policies_of_user(
        &self,
        org: &OrganizationId,
        user: &UserId,
    ) -> Result<Vec<(Policy, Option<Timestamp>)>, RepoError> {
        let mut conn = self.pools.read().await?;
        let rows: Vec<PolicyRow> = db_run!(&mut conn, |c| {
            policies::table
                .filter(policies::organization_id.eq(org.as_str()))
                .filter(policies::current_version.gt(0))
                .filter(policies::is_archived.eq(false))
                .order((policies::created_at.asc(), policies::id.asc()))
                .select(PolicyRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        let signed = crate::policy_versions::signatures_of_user(&self.pools, org, user).await?;
        rows.into_iter()
            .map(|row| {
                let policy = Policy::try_from(row)?;
                let at = signed.get(&(policy.id.to_string(), policy.current_version)).copied();
                Ok((policy, at))
            })
            .collect()
    }

    async fn organizations_with_reviews_due(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<OrganizationId>, RepoError> {
        crate::policy_reviews::organizations_due(&self.pools, now, limit).await
    }

    async fn flag_policies_for_review(
        &self,
        org: &OrganizationId,
        now: Timestamp,
        limit: usize,
        audit: &AuditOf<'_, Policy>,
    ) -> Result<Vec<Policy>, RepoError> {
        crate::policy_reviews::flag_due(&self.pools, org, now, limit, audit).await
    }
}

/// The organization's policies that match every filter of `query`.
fn policies_matching<DB: ListBackend>(
    matching: policies::BoxedQuery<'static, DB>,
    org: &str,
    query: &PolicyQuery,
) -> policies::BoxedQuery<'static, DB> {
    let PolicyFilter { status, frequency, department, is_archived, assignee } = &query.filter;
    let conditions = [
        text_in(policies::status, status),
        text_in(policies::frequency, frequency),
        text_in(policies::department, department),
        is_archived.map(|archived| -> Condition<policies::table, DB> {
            Box::new(policies::is_archived.eq(DB::boolean(archived)))
        }),
        assigned(policies::assignee_id, assignee),
        time_range(&query.times, policies::created_at, Some(policies::updated_at)),
        search::filter(&search::POLICIES, org, query.search.as_ref()),
    ];
    let mut matching = matching.filter(policies::organization_id.eq(DB::text(org.to_owned())));
    for condition in conditions.into_iter().flatten() {
        matching = matching.filter(condition);
    }
    matching
}

/// The columns `query` orders policies by, the id last.
fn policy_order<DB: ListBackend>(query: &PolicyQuery) -> SortColumns<policies::table, DB> {
    let column = |field| match field {
        PolicySort::CreatedAt => SortColumn::time(policies::created_at),
        PolicySort::UpdatedAt => SortColumn::time(policies::updated_at),
        PolicySort::Name => SortColumn::text(policies::name),
        PolicySort::Status => SortColumn::text(policies::status),
    };
    sort_columns(&query.sort_keys(PolicySort::CreatedAt), column, policies::id)
}

/// A policy's value of a sort field, as its cursor holds it.
fn policy_sort_value(policy: &Policy, field: PolicySort) -> SortValue {
    match field {
        PolicySort::CreatedAt => SortValue::Time(policy.created_at),
        PolicySort::UpdatedAt => SortValue::Time(policy.updated_at),
        PolicySort::Name => SortValue::Text(policy.name.clone()),
        PolicySort::Status => SortValue::Text(policy.status.to_string()),
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = policies, treat_none_as_null = true)]
pub struct PolicyRow {
    id: String,
    organization_id: String,
    name: String,
    description: String,
    status: String,
    content: String,
    frequency: String,
    department: String,
    is_required_to_sign: bool,
    signed_by: String,
    review_date: PrimitiveDateTime,
    is_archived: bool,
    last_archived_at: Option<PrimitiveDateTime>,
    last_published_at: Option<PrimitiveDateTime>,
    assignee_id: Option<String>,
    approver_id: Option<String>,
    policy_template_id: Option<String>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
    current_version: i32,
    submitted_by: Option<String>,
    change_note: Option<String>,
    rejection_reason: Option<String>,
    library_id: Option<String>,
    library_version: Option<i32>,
}

impl PolicyRow {
    pub(crate) fn id(&self) -> &str {
        &self.id
    }
}

impl From<&Policy> for PolicyRow {
    fn from(p: &Policy) -> Self {
        Self {
            id: p.id.to_string(),
            organization_id: p.organization_id.to_string(),
            name: p.name.clone(),
            description: p.description.clone(),
            status: p.status.to_string(),
            content: p.content.json().get().to_owned(),
            frequency: p.frequency.to_string(),
            department: p.department.to_string(),
            is_required_to_sign: p.is_required_to_sign,
            signed_by: json_text(&p.signed_by),
            review_date: naive(p.review_date),
            is_archived: p.is_archived,
            last_archived_at: p.last_archived_at.map(naive),
            last_published_at: p.last_published_at.map(naive),
            assignee_id: p.assignee_id.as_ref().map(ToString::to_string),
            approver_id: p.approver_id.as_ref().map(ToString::to_string),
            policy_template_id: p.policy_template_id.clone(),
            created_at: naive(p.created_at),
            updated_at: naive(p.updated_at),
            current_version: p.current_version,
            submitted_by: p.submitted_by.as_ref().map(ToString::to_string),
            change_note: p.change_note.clone(),
            rejection_reason: p.rejection_reason.clone(),
            library_id: p.library.as_ref().map(|l| l.id.clone()),
            library_version: p.library.as_ref().map(|l| i32::try_from(l.version).unwrap_or(i32::MAX)),
        }
    }
}

impl TryFrom<PolicyRow> for Policy {
    type Error = RepoError;
    fn try_from(r: PolicyRow) -> Result<Self, RepoError> {
        const T: &str = "policies";
        Ok(Self {
            id: id(T, r.id)?,
            organization_id: id(T, r.organization_id)?,
            name: r.name,
            description: r.description,
            status: value(T, &r.status)?,
            content: RichText::from_stored(r.content).map_err(|error| corrupt(T, error))?,
            frequency: value(T, &r.frequency)?,
            department: value(T, &r.department)?,
            is_required_to_sign: r.is_required_to_sign,
            signed_by: json(T, &r.signed_by)?,
            review_date: instant(r.review_date),
            is_archived: r.is_archived,
            last_archived_at: r.last_archived_at.map(instant),
            last_published_at: r.last_published_at.map(instant),
            assignee_id: optional_id(T, r.assignee_id)?,
            approver_id: optional_id(T, r.approver_id)?,
            policy_template_id: r.policy_template_id,
            created_at: instant(r.created_at),
            updated_at: instant(r.updated_at),
            current_version: r.current_version,
            submitted_by: optional_id(T, r.submitted_by)?,
            change_note: r.change_note,
            rejection_reason: r.rejection_reason,
            library: library_origin(r.library_id, r.library_version),
        })
    }
}
