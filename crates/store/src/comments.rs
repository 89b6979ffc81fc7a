//! Comments and their attachments' metadata.

use std::collections::HashMap;

use async_trait::async_trait;
use compliance_domain::comment::{Attachment, Comment, CommentEntityType, CommentView};
use compliance_domain::etag::IfMatch;
use compliance_domain::{AttachmentId, CommentId, OrganizationId, Timestamp};
use compliance_ports::{
    AuditOf, CommentFilter, CommentQuery, CommentRepository, CommentSort, Page, RepoError, SortValue,
};
use diesel::dsl;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use crate::Store;
use crate::audit::AuditQueue;
use crate::db::{AnyConnection, db_run, write_transaction};
use crate::error::{TxError, repo_error};
use crate::locks::lock_organization;
use crate::paging::{Boxed, ListBackend, SortColumn, SortColumns, read_page, sort_columns, text_in, time_range};
use crate::rows::{AttachmentRow, CommentRow, UserRow};
use crate::schema::{attachments, comments, members, users};
use crate::search;

/// The comments on one entity of the organization. Deleting a record deletes them, in the
/// record's transaction, after their attachments' rows ([`attachments_on`]).
#[dsl::auto_type]
pub(crate) fn comments_on<'a>(org: &'a str, entity_type: &'a str, entity_id: &'a str) -> _ {
    comments::table
        .filter(comments::organization_id.eq(org))
        .filter(comments::entity_type.eq(entity_type))
        .filter(comments::entity_id.eq(entity_id))
}

/// The attachments of the comments on one entity of the organization.
#[dsl::auto_type]
pub(crate) fn attachments_on<'a>(org: &'a str, entity_type: &'a str, entity_id: &'a str) -> _ {
    let comment_ids: dsl::Select<comments_on<'a>, comments::id> =
        comments_on(org, entity_type, entity_id).select(comments::id);
    attachments::table.filter(attachments::comment_id.eq_any(comment_ids))
}

/// Comments joined with their authors and the authors' memberships.
#[dsl::auto_type]
fn comments_with_authors() -> _ {
    let author_membership: dsl::And<
        dsl::Eq<members::user_id, comments::author_id>,
        dsl::Eq<members::organization_id, comments::organization_id>,
    > = members::user_id.eq(comments::author_id).and(members::organization_id.eq(comments::organization_id));
    comments::table.inner_join(users::table).left_join(members::table.on(author_membership))
}

/// The tables of [`comments_with_authors`], as conditions on them name it.
type CommentsWithAuthors = dsl::LeftJoinQuerySource<
    dsl::InnerJoinQuerySource<comments::table, users::table>,
    members::table,
    dsl::And<
        dsl::Eq<members::user_id, comments::author_id>,
        dsl::Eq<members::organization_id, comments::organization_id>,
    >,
>;

/// The comments on one entity of the organization that match every filter of `query`.
fn comments_matching<ST, DB: ListBackend>(
    matching: Boxed<ST, CommentsWithAuthors, DB>,
    org: &str,
    entity_type: CommentEntityType,
    entity_id: &str,
    query: &CommentQuery,
) -> Boxed<ST, CommentsWithAuthors, DB> {
    let CommentFilter { author } = &query.filter;
    let conditions = [
        text_in(comments::author_id, author),
        time_range(&query.times, comments::created_at, Some(comments::updated_at)),
        search::filter(&search::COMMENTS, org, query.search.as_ref()),
    ];
    let mut matching = matching
        .filter(comments::organization_id.eq(DB::text(org.to_owned())))
        .filter(comments::entity_type.eq(DB::text(entity_type.as_str().to_owned())))
        .filter(comments::entity_id.eq(DB::text(entity_id.to_owned())));
    for condition in conditions.into_iter().flatten() {
        matching = matching.filter(condition);
    }
    matching
}

/// The columns `query` orders comments by, the id last.
fn comment_order<DB: ListBackend>(query: &CommentQuery) -> SortColumns<CommentsWithAuthors, DB> {
    let column = |field| match field {
        CommentSort::CreatedAt => SortColumn::time(comments::created_at),
        CommentSort::UpdatedAt => SortColumn::time(comments::updated_at),
    };
    sort_columns(&query.sort_keys(CommentSort::CreatedAt), column, comments::id)
}

/// A comment's value of a sort field, as its cursor holds it.
fn comment_sort_value(view: &CommentView, field: CommentSort) -> SortValue {
    match field {
        CommentSort::CreatedAt => SortValue::Time(view.comment.created_at),
        CommentSort::UpdatedAt => SortValue::Time(view.comment.updated_at),
    }
}

/// What [`comments_with_authors`] selects: a comment, its author and whether the author is still
/// an active member.
fn comment_with_author<DB: diesel::backend::Backend>()
-> (dsl::AsSelect<CommentRow, DB>, dsl::AsSelect<UserRow, DB>, dsl::Nullable<members::is_active>)
where
    CommentRow: Selectable<DB>,
    UserRow: Selectable<DB>,
{
    (CommentRow::as_select(), UserRow::as_select(), members::is_active.nullable())
}

/// The ids of the comments of `rows`, to load their attachments.
fn comment_ids(rows: &[CommentWithAuthor]) -> Vec<&str> {
    rows.iter().map(|(comment, _, _)| comment.id()).collect()
}

type CommentWithAuthor = (CommentRow, UserRow, Option<bool>);

/// Puts each comment's attachments (oldest first) beside it.
fn views(rows: Vec<CommentWithAuthor>, attachment_rows: Vec<AttachmentRow>) -> Result<Vec<CommentView>, RepoError> {
    let mut by_comment: HashMap<CommentId, Vec<Attachment>> = HashMap::new();
    for row in attachment_rows {
        let attachment = Attachment::try_from(row)?;
        by_comment.entry(attachment.comment_id.clone()).or_default().push(attachment);
    }
    rows.into_iter()
        .map(|(comment, author, active)| {
            let comment = Comment::try_from(comment)?;
            let mut attachments = by_comment.remove(&comment.id).unwrap_or_default();
            attachments.sort_by(|a, b| (a.created_at, &a.id.as_str()).cmp(&(b.created_at, &b.id.as_str())));
            Ok(CommentView { comment, author: author.try_into()?, author_active: active.unwrap_or(false), attachments })
        })
        .collect()
}

#[async_trait]
impl CommentRepository for Store {
    async fn insert(
        &self,
        comment: &Comment,
        attachments: &[Attachment],
        audit: &AuditOf<'_, Comment>,
    ) -> Result<(), RepoError> {
        let comment_row = CommentRow::from(comment);
        let org = comment.organization_id.as_str();
        let attachment_rows: Vec<AttachmentRow> = attachments.iter().map(AttachmentRow::from).collect();
        let mut conn = self.pools.write().await?;
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            diesel::insert_into(comments::table).values(&comment_row).execute(c).await?;
            // One statement per row: diesel has no batch insert for SQLite behind the async wrapper.
            for row in &attachment_rows {
                diesel::insert_into(attachments::table).values(row).execute(c).await?;
            }
            c.append(audit(None, Some(comment))).await?;
            Ok(())
        });
        result.map_err(RepoError::from)
    }

    async fn list(
        &self,
        org: &OrganizationId,
        entity_type: CommentEntityType,
        entity_id: &str,
        query: &CommentQuery,
    ) -> Result<Page<CommentView>, RepoError> {
        let (org, entity_id, matching) = (org.to_string(), entity_id.to_owned(), query.clone());
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<(CommentRow, UserRow, Option<bool>, i64)>, _) = read_page!(
            &mut conn,
            &query.page,
            comments_matching(comments_with_authors().into_boxed(), &org, entity_type, &entity_id, &matching),
            (
                CommentRow::as_select(),
                UserRow::as_select(),
                members::is_active.nullable(),
                search::relevance(&search::COMMENTS, &org, &matching)
            ),
            search::order(&search::COMMENTS, &org, &matching, comment_order(&matching)),
            None,
        )
        .map_err(repo_error)?;
        let (rows, relevances): (Vec<CommentWithAuthor>, Vec<i64>) =
            rows.into_iter().map(|(comment, author, active, relevance)| ((comment, author, active), relevance)).unzip();
        let attachment_rows: Vec<AttachmentRow> = db_run!(&mut conn, |c| {
            attachments::table
                .filter(attachments::comment_id.eq_any(comment_ids(&rows)))
                .select(AttachmentRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        let views = views(rows, attachment_rows)?.into_iter().zip(relevances).collect();
        let keys = query.sort_keys(CommentSort::CreatedAt);
        let page = Page::from_rows(views, &query.page, total, |(v, relevance): &(CommentView, i64)| {
            let values = keys.iter().map(|key| comment_sort_value(v, key.field)).collect();
            search::cursor(query, *relevance, values, v.comment.id.to_string())
        });
        Ok(page.map(|(v, _)| v))
    }

    async fn get(&self, org: &OrganizationId, id: &CommentId) -> Result<CommentView, RepoError> {
        let mut conn = self.pools.read().await?;
        let (rows, attachment_rows) = db_run!(&mut conn, |c| {
            async {
                let rows: Vec<CommentWithAuthor> = comments_with_authors()
                    .filter(comments::organization_id.eq(org.as_str()))
                    .filter(comments::id.eq(id.as_str()))
                    .select(comment_with_author())
                    .load(c)
                    .await?;
                let attachment_rows: Vec<AttachmentRow> = attachments::table
                    .filter(attachments::comment_id.eq_any(comment_ids(&rows)))
                    .select(AttachmentRow::as_select())
                    .load(c)
                    .await?;
                Ok::<_, diesel::result::Error>((rows, attachment_rows))
            }
            .await
        })
        .map_err(repo_error)?;
        views(rows, attachment_rows)?.pop().ok_or(RepoError::NotFound)
    }

    async fn update_content(
        &self,
        org: &OrganizationId,
        id: &CommentId,
        content: &str,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Comment>,
    ) -> Result<CommentView, RepoError> {
        let mut conn = self.pools.write().await?;
        let now = now.to_utc_naive();
        let the_comment =
            || comments::table.filter(comments::organization_id.eq(org.as_str())).filter(comments::id.eq(id.as_str()));
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org.as_str()).await?;
            let before: Comment = the_comment().select(CommentRow::as_select()).first(c).await?.try_into()?;
            if_match.check(&before.etag())?;
            let after: Comment = diesel::update(the_comment())
                .set((comments::content.eq(content), comments::updated_at.eq(now)))
                .returning(CommentRow::as_returning())
                .get_result(c)
                .await?
                .try_into()?;
            c.append(audit(Some(&before), Some(&after))).await?;
            Ok(())
        });
        result.map_err(RepoError::from)?;
        drop(conn);
        self.get(org, id).await
    }

    async fn delete(
        &self,
        org: &OrganizationId,
        id: &CommentId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Comment>,
    ) -> Result<Vec<Attachment>, RepoError> {
        let mut conn = self.pools.write().await?;
        let result: Result<Vec<AttachmentRow>, TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org.as_str()).await?;
            let rows: Vec<AttachmentRow> = attachments::table
                .filter(attachments::organization_id.eq(org.as_str()))
                .filter(attachments::comment_id.eq(id.as_str()))
                .select(AttachmentRow::as_select())
                .load(c)
                .await?;
            diesel::delete(
                attachments::table
                    .filter(attachments::organization_id.eq(org.as_str()))
                    .filter(attachments::comment_id.eq(id.as_str())),
            )
            .execute(c)
            .await?;
            let deleted: Comment = diesel::delete(
                comments::table.filter(comments::organization_id.eq(org.as_str())).filter(comments::id.eq(id.as_str())),
            )
            .returning(CommentRow::as_returning())
            .get_result(c)
            .await?
            .try_into()?;
            // The deleted row is the record as it was: a stale `If-Match` rolls the delete back.
            if_match.check(&deleted.etag())?;
            c.append(audit(Some(&deleted), None)).await?;
            Ok(rows)
        });
        result.map_err(RepoError::from)?.into_iter().map(Attachment::try_from).collect()
    }

    async fn attachment(&self, org: &OrganizationId, id: &AttachmentId) -> Result<Attachment, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: AttachmentRow = db_run!(&mut conn, |c| {
            attachments::table
                .filter(attachments::organization_id.eq(org.as_str()))
                .filter(attachments::id.eq(id.as_str()))
                .select(AttachmentRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }
}
