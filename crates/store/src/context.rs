//! Context entries: the [`ContextRepository`] on both backends, and the row the `context_entries`
//! table holds.

use async_trait::async_trait;
use compliance_domain::context::{ContextEntry, ContextEntryChanges, ContextEntryPatch};
use compliance_domain::etag::IfMatch;
use compliance_domain::{ContextEntryId, OrganizationId, Timestamp};
use compliance_ports::{
    AuditOf, ContextFilter, ContextQuery, ContextRepository, ContextSort, ListName, Page, RepoError, SortValue,
};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::Store;
use crate::audit::AuditQueue;
use crate::db::{db_run, write_transaction};
use crate::error::{TxError, repo_error};
use crate::list_counts::KeptCount;
use crate::locks::Locked;
use crate::paging::{Condition, ListBackend, SortColumn, SortColumns, any_of, read_page, sort_columns, time_range};
use crate::prepared::{Assignments, Prepared};
use crate::rows::{id, instant, json, json_text, naive};
use crate::schema::context_entries;
use crate::search;

#[async_trait]
impl ContextRepository for Store {
    async fn list_context_entries(
        &self,
        org: &OrganizationId,
        query: &ContextQuery,
    ) -> Result<Page<ContextEntry>, RepoError> {
        let (org, matching) = (org.to_string(), query.clone());
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<(ContextEntryRow, i64)>, _) = read_page!(
            &mut conn,
            &query.page,
            context_matching(context_entries::table.into_boxed(), &org, &matching),
            (ContextEntryRow::as_select(), search::relevance(&search::CONTEXT, &org, &matching)),
            search::order(&search::CONTEXT, &org, &matching, context_order(&matching)),
            KeptCount::whole(&org, ListName::Context, &matching),
        )
        .map_err(repo_error)?;
        let items = rows
            .into_iter()
            .map(|(row, relevance)| Ok((ContextEntry::try_from(row)?, relevance)))
            .collect::<Result<Vec<_>, RepoError>>()?;
        let keys = query.sort_keys(ContextSort::CreatedAt);
        let page = Page::from_rows(items, &query.page, total, |(item, relevance)| {
            let values = keys.iter().map(|key| context_sort_value(item, key.field)).collect();
            search::cursor(query, *relevance, values, item.id.to_string())
        });
        Ok(page.map(|(item, _)| item))
    }

    async fn get_context_entry(&self, org: &OrganizationId, id: &ContextEntryId) -> Result<ContextEntry, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: ContextEntryRow = db_run!(&mut conn, |c| {
            context_entries::table
                .filter(context_entries::organization_id.eq(org.as_str()))
                .filter(context_entries::id.eq(id.as_str()))
                .select(ContextEntryRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn insert_context_entry(
        &self,
        entry: &ContextEntry,
        audit: &AuditOf<'_, ContextEntry>,
    ) -> Result<(), RepoError> {
        let row = ContextEntryRow::from(entry);
        let mut conn = self.pools.write().await?;
        write_transaction!(&mut conn, async |c| {
            Prepared(diesel::insert_into(context_entries::table).values(&row)).execute(c).await?;
            c.append(audit(None, Some(entry))).await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    /// One prepared `UPDATE … SET … RETURNING *` whose `SET` list `changed_columns` builds, after
    /// a read of the entry as it was that locks its row (`crate::locks::Locked`).
    async fn update_context_entry(
        &self,
        org: &OrganizationId,
        id: &ContextEntryId,
        patch: &ContextEntryPatch,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, ContextEntry>,
    ) -> Result<ContextEntry, RepoError> {
        let changes = changed_columns(patch, now);
        let mut conn = self.pools.write().await?;
        let the_entry = || {
            context_entries::table
                .filter(context_entries::organization_id.eq(org.as_str()))
                .filter(context_entries::id.eq(id.as_str()))
        };
        let result: Result<ContextEntry, TxError> = write_transaction!(&mut conn, async |c| {
            let before: ContextEntry =
                Locked(the_entry().select(ContextEntryRow::as_select())).get_result(c).await?.try_into()?;
            if_match.check(&before.etag())?;
            let after: ContextEntry =
                Prepared(diesel::update(the_entry()).set(&changes).returning(ContextEntryRow::as_returning()))
                    .get_result(c)
                    .await?
                    .try_into()?;
            c.append(audit(Some(&before), Some(&after))).await?;
            Ok(after)
        });
        result.map_err(RepoError::from)
    }

    /// Context entries carry no comments: the delete and its entry.
    async fn delete_context_entry(
        &self,
        org: &OrganizationId,
        id: &ContextEntryId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, ContextEntry>,
    ) -> Result<ContextEntry, RepoError> {
        let mut conn = self.pools.write().await?;
        let result: Result<ContextEntry, TxError> = write_transaction!(&mut conn, async |c| {
            let entry = context_entries::table
                .filter(context_entries::organization_id.eq(org.as_str()))
                .filter(context_entries::id.eq(id.as_str()));
            let deleted: ContextEntry =
                diesel::delete(entry).returning(ContextEntryRow::as_returning()).get_result(c).await?.try_into()?;
            // The deleted row is the record as it was: a stale `If-Match` rolls the delete back.
            if_match.check(&deleted.etag())?;
            c.append(audit(Some(&deleted), None)).await?;
            Ok(deleted)
        });
        result.map_err(RepoError::from)
    }
}

/// The organization's context entries that match every filter of `query`.
fn context_matching<DB: ListBackend>(
    matching: context_entries::BoxedQuery<'static, DB>,
    org: &str,
    query: &ContextQuery,
) -> context_entries::BoxedQuery<'static, DB> {
    let ContextFilter { tag } = &query.filter;
    // `tags` holds a JSON array of strings: an entry has the tag when the array holds its JSON
    // text, quotes included (a `LIKE` with the pattern's own wildcards escaped).
    let tagged = any_of(tag.iter().map(|tag| -> Condition<context_entries::table, DB> {
        DB::contains(Box::new(context_entries::tags), &json_text(tag))
    }));
    let conditions = [
        tagged,
        time_range(&query.times, context_entries::created_at, Some(context_entries::updated_at)),
        search::filter(&search::CONTEXT, org, query.search.as_ref()),
    ];
    let mut matching = matching.filter(context_entries::organization_id.eq(DB::text(org.to_owned())));
    for condition in conditions.into_iter().flatten() {
        matching = matching.filter(condition);
    }
    matching
}

/// The columns `query` orders context entries by, the id last.
fn context_order<DB: ListBackend>(query: &ContextQuery) -> SortColumns<context_entries::table, DB> {
    let column = |field| match field {
        ContextSort::CreatedAt => SortColumn::time(context_entries::created_at),
        ContextSort::UpdatedAt => SortColumn::time(context_entries::updated_at),
        ContextSort::Question => SortColumn::text(context_entries::question),
    };
    sort_columns(&query.sort_keys(ContextSort::CreatedAt), column, context_entries::id)
}

/// An entry's value of a sort field, as its cursor holds it.
fn context_sort_value(entry: &ContextEntry, field: ContextSort) -> SortValue {
    match field {
        ContextSort::CreatedAt => SortValue::Time(entry.created_at),
        ContextSort::UpdatedAt => SortValue::Time(entry.updated_at),
        ContextSort::Question => SortValue::Text(entry.question.clone()),
    }
}

/// The columns a PATCH sets, taken apart field by field without `..`: a field added to the patch
/// does not compile until it is written here too. Every column is in the statement whatever the
/// patch holds (see [`Assignments`]), so it has one shape and each connection prepares it once.
fn changed_columns(patch: &ContextEntryPatch, now: Timestamp) -> Assignments<context_entries::table> {
    let ContextEntryChanges { question, answer, tags } = patch.changes();
    Assignments::new(context_entries::updated_at, naive(now))
        .required(context_entries::question, question.clone())
        .required(context_entries::answer, answer.clone())
        .required(context_entries::tags, tags.as_ref().map(json_text))
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = context_entries, treat_none_as_null = true)]
pub struct ContextEntryRow {
    id: String,
    organization_id: String,
    question: String,
    answer: String,
    tags: String,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

impl From<&ContextEntry> for ContextEntryRow {
    fn from(e: &ContextEntry) -> Self {
        Self {
            id: e.id.to_string(),
            organization_id: e.organization_id.to_string(),
            question: e.question.clone(),
            answer: e.answer.clone(),
            tags: json_text(&e.tags),
            created_at: naive(e.created_at),
            updated_at: naive(e.updated_at),
        }
    }
}

impl TryFrom<ContextEntryRow> for ContextEntry {
    type Error = RepoError;
    fn try_from(r: ContextEntryRow) -> Result<Self, RepoError> {
        Ok(Self {
            id: id("context_entries", r.id)?,
            organization_id: id("context_entries", r.organization_id)?,
            question: r.question,
            answer: r.answer,
            tags: json("context_entries", &r.tags)?,
            created_at: instant(r.created_at),
            updated_at: instant(r.updated_at),
        })
    }
}
