//! Vendors: the [`VendorRepository`] on both backends, and the row the `vendors` table holds.

use async_trait::async_trait;
use compliance_domain::comment::{Attachment, CommentEntityType};
use compliance_domain::etag::IfMatch;
use compliance_domain::vendor::{Vendor, VendorChanges, VendorPatch};
use compliance_domain::{OrganizationId, Timestamp, VendorId};
use compliance_ports::{
    AuditOf, BulkApplied, BulkError, BulkWrite, Deleted, ListName, Page, RepoError, SortValue, VendorFilter,
    VendorQuery, VendorRepository, VendorSort,
};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::Store;
use crate::audit::AuditQueue;
use crate::bulk::{self, Failures, Statements};
use crate::comments::{attachments_on, comments_on};
use crate::db::{AnyConnection, ConnRef, db_run, write_transaction};
use crate::error::{TxError, repo_error};
use crate::list_counts::KeptCount;
use crate::locks::Locked;
use crate::paging::{ListBackend, SortColumn, SortColumns, assigned, read_page, sort_columns, text_in, time_range};
use crate::prepared::{Assignments, Prepared, insert_rows, nullable_text, text};
use crate::rows::{AttachmentRow, id, instant, naive, optional_id, value};
use crate::schema::vendors;
use crate::search;

#[async_trait]
impl VendorRepository for Store {
    async fn list_vendors(&self, org: &OrganizationId, query: &VendorQuery) -> Result<Page<Vendor>, RepoError> {
        let (org, matching) = (org.to_string(), query.clone());
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<(VendorRow, i64)>, _) = read_page!(
            &mut conn,
            &query.page,
            vendors_matching(vendors::table.into_boxed(), &org, &matching),
            (VendorRow::as_select(), search::relevance(&search::VENDORS, &org, &matching)),
            search::order(&search::VENDORS, &org, &matching, vendor_order(&matching)),
            KeptCount::whole(&org, ListName::Vendors, &matching),
        )
        .map_err(repo_error)?;
        let items = rows
            .into_iter()
            .map(|(row, relevance)| Ok((Vendor::try_from(row)?, relevance)))
            .collect::<Result<Vec<_>, RepoError>>()?;
        let keys = query.sort_keys(VendorSort::CreatedAt);
        let page = Page::from_rows(items, &query.page, total, |(item, relevance)| {
            let values = keys.iter().map(|key| vendor_sort_value(item, key.field)).collect();
            search::cursor(query, *relevance, values, item.id.to_string())
        });
        Ok(page.map(|(item, _)| item))
    }

    async fn get_vendor(&self, org: &OrganizationId, id: &VendorId) -> Result<Vendor, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: VendorRow = db_run!(&mut conn, |c| {
            vendors::table
                .filter(vendors::organization_id.eq(org.as_str()))
                .filter(vendors::id.eq(id.as_str()))
                .select(VendorRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn insert_vendor(&self, vendor: &Vendor, audit: &AuditOf<'_, Vendor>) -> Result<(), RepoError> {
        let row = VendorRow::from(vendor);
        let mut conn = self.pools.write().await?;
        write_transaction!(&mut conn, async |c| {
            Prepared(diesel::insert_into(vendors::table).values(&row)).execute(c).await?;
            c.append(audit(None, Some(vendor))).await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    /// One prepared `UPDATE … SET … RETURNING *` whose `SET` list `changed_columns` builds, after
    /// a read of the vendor as it was, for the entry, that locks its row (`crate::locks::Locked`).
    async fn update_vendor(
        &self,
        org: &OrganizationId,
        id: &VendorId,
        patch: &VendorPatch,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Vendor>,
    ) -> Result<Vendor, RepoError> {
        let changes = changed_columns(patch, now);
        let mut conn = self.pools.write().await?;
        let the_vendor =
            || vendors::table.filter(vendors::organization_id.eq(org.as_str())).filter(vendors::id.eq(id.as_str()));
        let result: Result<Vendor, TxError> = write_transaction!(&mut conn, async |c| {
            let before: Vendor = Locked(the_vendor().select(VendorRow::as_select())).get_result(c).await?.try_into()?;
            if_match.check(&before.etag())?;
            let after: Vendor =
                Prepared(diesel::update(the_vendor()).set(&changes).returning(VendorRow::as_returning()))
                    .get_result(c)
                    .await?
                    .try_into()?;
            c.append(audit(Some(&before), Some(&after))).await?;
            Ok(after)
        });
        result.map_err(RepoError::from)
    }

    async fn delete_vendor(
        &self,
        org: &OrganizationId,
        id: &VendorId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Vendor>,
    ) -> Result<Deleted<Vendor>, RepoError> {
        let mut conn = self.pools.write().await?;
        let entity = CommentEntityType::Vendor.as_str();
        let result: Result<(Vendor, Vec<AttachmentRow>), TxError> = write_transaction!(&mut conn, async |c| {
            let attachments: Vec<AttachmentRow> = diesel::delete(attachments_on(org.as_str(), entity, id.as_str()))
                .returning(AttachmentRow::as_returning())
                .get_results(c)
                .await?;
            diesel::delete(comments_on(org.as_str(), entity, id.as_str())).execute(c).await?;
            let vendor =
                vendors::table.filter(vendors::organization_id.eq(org.as_str())).filter(vendors::id.eq(id.as_str()));
            let deleted: Vendor =
                diesel::delete(vendor).returning(VendorRow::as_returning()).get_result(c).await?.try_into()?;
            // The deleted row is the record as it was: a stale `If-Match` rolls the delete back.
            if_match.check(&deleted.etag())?;
            c.append(audit(Some(&deleted), None)).await?;
            Ok((deleted, attachments))
        });
        let (record, attachments) = result.map_err(RepoError::from)?;
        let attachments = attachments.into_iter().map(Attachment::try_from).collect::<Result<_, _>>()?;
        Ok(Deleted { record, attachments })
    }

    /// The writes in one transaction (see the store's `bulk::apply_in`).
    async fn apply_vendor_bulk(
        &self,
        org: &OrganizationId,
        writes: &[BulkWrite<Vendor, VendorId, VendorPatch>],
        now: Timestamp,
        audit: &AuditOf<'_, Vendor>,
    ) -> Result<BulkApplied<Vendor>, BulkError> {
        let mut conn = self.pools.write().await.map_err(RepoError::from)?;
        let (org, entity) = (org.as_str(), CommentEntityType::Vendor.as_str());
        let the_vendor = |org: &str, id: &VendorId| {
            vendors::table.filter(vendors::organization_id.eq(org.to_owned())).filter(vendors::id.eq(id.to_string()))
        };
        let mut failures = Failures::default();
        let result = write_transaction!(&mut conn, async |c| {
            bulk::apply_in(
                c,
                org,
                writes,
                audit,
                &mut failures,
                Statements {
                    table: "vendors",
                    id: VendorId::as_str,
                    is_empty: VendorPatch::is_empty,
                    read: &|c, org, id| {
                        Box::pin(async move {
                            let vendor: Vendor =
                                the_vendor(org, id).select(VendorRow::as_select()).first(c).await?.try_into()?;
                            Ok(vendor)
                        })
                    },
                    update: &|c, org, before, patch| {
                        Box::pin(async move {
                            let changes = changed_columns(patch, now);
                            let update = diesel::update(the_vendor(org, &before.id))
                                .set(&changes)
                                .returning(VendorRow::as_returning());
                            let after: Vendor = Prepared(update).get_result(c).await?.try_into()?;
                            Ok(after)
                        })
                    },
                    delete: &|c, org, id| {
                        Box::pin(async move {
                            let attachments: Vec<AttachmentRow> =
                                diesel::delete(attachments_on(org, entity, id.as_str()))
                                    .returning(AttachmentRow::as_returning())
                                    .get_results(c)
                                    .await?;
                            diesel::delete(comments_on(org, entity, id.as_str())).execute(c).await?;
                            let deleted: Vendor = diesel::delete(the_vendor(org, id))
                                .returning(VendorRow::as_returning())
                                .get_result(c)
                                .await?
                                .try_into()?;
                            Ok((deleted, attachments))
                        })
                    },
                    insert: &|c, rows| Box::pin(insert_vendor_rows(c.any(), rows)),
                    row: |record| VendorRow::from(record),
                },
            )
            .await
        });
        failures.answer(result)
    }
}

/// The organization's vendors that match every filter of `query`.
fn vendors_matching<DB: ListBackend>(
    matching: vendors::BoxedQuery<'static, DB>,
    org: &str,
    query: &VendorQuery,
) -> vendors::BoxedQuery<'static, DB> {
    let VendorFilter { status, category, assignee } = &query.filter;
    let conditions = [
        text_in(vendors::status, status),
        text_in(vendors::category, category),
        assigned(vendors::assignee_id, assignee),
        time_range(&query.times, vendors::created_at, Some(vendors::updated_at)),
        search::filter(&search::VENDORS, org, query.search.as_ref()),
    ];
    let mut matching = matching.filter(vendors::organization_id.eq(DB::text(org.to_owned())));
    for condition in conditions.into_iter().flatten() {
        matching = matching.filter(condition);
    }
    matching
}

/// The columns `query` orders vendors by, the id last.
fn vendor_order<DB: ListBackend>(query: &VendorQuery) -> SortColumns<vendors::table, DB> {
    let column = |field| match field {
        VendorSort::CreatedAt => SortColumn::time(vendors::created_at),
        VendorSort::UpdatedAt => SortColumn::time(vendors::updated_at),
        VendorSort::Name => SortColumn::text(vendors::name),
        VendorSort::Status => SortColumn::text(vendors::status),
    };
    sort_columns(&query.sort_keys(VendorSort::CreatedAt), column, vendors::id)
}

/// A vendor's value of a sort field, as its cursor holds it.
fn vendor_sort_value(vendor: &Vendor, field: VendorSort) -> SortValue {
    match field {
        VendorSort::CreatedAt => SortValue::Time(vendor.created_at),
        VendorSort::UpdatedAt => SortValue::Time(vendor.updated_at),
        VendorSort::Name => SortValue::Text(vendor.name.clone()),
        VendorSort::Status => SortValue::Text(vendor.status.to_string()),
    }
}

/// The columns a PATCH sets, taken apart field by field without `..`: a field added to the patch
/// does not compile until it is written here too. Every column is in the statement whatever the
/// patch holds (see [`Assignments`]), so it has one shape and each connection prepares it once.
fn changed_columns(patch: &VendorPatch, now: Timestamp) -> Assignments<vendors::table> {
    let VendorChanges {
        name,
        description,
        category,
        status,
        inherent_probability,
        inherent_impact,
        residual_probability,
        residual_impact,
        website,
        assignee_id,
    } = patch.changes();
    Assignments::new(vendors::updated_at, naive(now))
        .required(vendors::name, name.clone())
        .required(vendors::description, description.clone())
        .required(vendors::category, text(category))
        .required(vendors::status, text(status))
        .required(vendors::inherent_probability, text(inherent_probability))
        .required(vendors::inherent_impact, text(inherent_impact))
        .required(vendors::residual_probability, text(residual_probability))
        .required(vendors::residual_impact, text(residual_impact))
        .nullable(vendors::website, website.clone())
        .nullable(vendors::assignee_id, nullable_text(assignee_id))
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = vendors, treat_none_as_null = true)]
pub struct VendorRow {
    id: String,
    organization_id: String,
    name: String,
    description: String,
    category: String,
    status: String,
    inherent_probability: String,
    inherent_impact: String,
    residual_probability: String,
    residual_impact: String,
    website: Option<String>,
    assignee_id: Option<String>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

impl From<&Vendor> for VendorRow {
    fn from(v: &Vendor) -> Self {
        Self {
            id: v.id.to_string(),
            organization_id: v.organization_id.to_string(),
            name: v.name.clone(),
            description: v.description.clone(),
            category: v.category.to_string(),
            status: v.status.to_string(),
            inherent_probability: v.inherent_probability.to_string(),
            inherent_impact: v.inherent_impact.to_string(),
            residual_probability: v.residual_probability.to_string(),
            residual_impact: v.residual_impact.to_string(),
            website: v.website.clone(),
            assignee_id: v.assignee_id.as_ref().map(ToString::to_string),
            created_at: naive(v.created_at),
            updated_at: naive(v.updated_at),
        }
    }
}

impl TryFrom<VendorRow> for Vendor {
    type Error = RepoError;
    fn try_from(r: VendorRow) -> Result<Self, RepoError> {
        const T: &str = "vendors";
        Ok(Self {
            id: id(T, r.id)?,
            organization_id: id(T, r.organization_id)?,
            name: r.name,
            description: r.description,
            category: value(T, &r.category)?,
            status: value(T, &r.status)?,
            inherent_probability: value(T, &r.inherent_probability)?,
            inherent_impact: value(T, &r.inherent_impact)?,
            residual_probability: value(T, &r.residual_probability)?,
            residual_impact: value(T, &r.residual_impact)?,
            website: r.website,
            assignee_id: optional_id(T, r.assignee_id)?,
            created_at: instant(r.created_at),
            updated_at: instant(r.updated_at),
        })
    }
}

/// A bulk request's created vendors, together ([`insert_rows!`]).
async fn insert_vendor_rows(conn: ConnRef<'_>, rows: &[VendorRow]) -> QueryResult<()> {
    insert_rows!(conn, vendors::table, rows)
}
