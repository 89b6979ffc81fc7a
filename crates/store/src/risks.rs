//! Risks: the [`RiskRepository`] on both backends, and the row the `risks` table holds.

use async_trait::async_trait;
use compliance_domain::comment::{Attachment, CommentEntityType};
use compliance_domain::etag::IfMatch;
use compliance_domain::risk::{Risk, RiskChanges, RiskPatch};
use compliance_domain::{OrganizationId, RiskId, Timestamp};
use compliance_ports::{
    AuditOf, BulkApplied, BulkError, BulkWrite, Deleted, ListName, Page, RepoError, RiskFilter, RiskQuery,
    RiskRepository, RiskSort, SortValue,
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
use crate::paging::{
    Condition, ListBackend, SortColumn, SortColumns, any_of, assigned, read_page, sort_columns, text_in, time_range,
};
use crate::prepared::{Assignments, Prepared, insert_rows, nullable_text, text};
use crate::rows::{AttachmentRow, id, instant, naive, optional_id, value};
use crate::schema::risks;
use crate::search;

#[async_trait]
impl RiskRepository for Store {
    async fn list_risks(&self, org: &OrganizationId, query: &RiskQuery) -> Result<Page<Risk>, RepoError> {
        let (org, matching) = (org.to_string(), query.clone());
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<(RiskRow, i64)>, _) = read_page!(
            &mut conn,
            &query.page,
            risks_matching(risks::table.into_boxed(), &org, &matching),
            (RiskRow::as_select(), search::relevance(&search::RISKS, &org, &matching)),
            search::order(&search::RISKS, &org, &matching, risk_order(&matching)),
            risks_kept_count(&org, &matching),
        )
        .map_err(repo_error)?;
        let risks = rows
            .into_iter()
            .map(|(row, relevance)| Ok((Risk::try_from(row)?, relevance)))
            .collect::<Result<Vec<_>, RepoError>>()?;
        let keys = query.sort_keys(RiskSort::CreatedAt);
        let page = Page::from_rows(risks, &query.page, total, |(risk, relevance)| {
            let values = keys.iter().map(|key| risk_sort_value(risk, key.field)).collect();
            search::cursor(query, *relevance, values, risk.id.to_string())
        });
        Ok(page.map(|(risk, _)| risk))
    }

    async fn get_risk(&self, org: &OrganizationId, id: &RiskId) -> Result<Risk, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: RiskRow = db_run!(&mut conn, |c| {
            risks::table
                .filter(risks::organization_id.eq(org.as_str()))
                .filter(risks::id.eq(id.as_str()))
                .select(RiskRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn insert_risk(&self, risk: &Risk, audit: &AuditOf<'_, Risk>) -> Result<(), RepoError> {
        let row = RiskRow::from(risk);
        let mut conn = self.pools.write().await?;
        write_transaction!(&mut conn, async |c| {
            Prepared(diesel::insert_into(risks::table).values(&row)).execute(c).await?;
            c.append(audit(None, Some(risk))).await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    /// One prepared `UPDATE … SET … RETURNING *` whose `SET` list `changed_columns` builds.
    async fn update_risk(
        &self,
        org: &OrganizationId,
        id: &RiskId,
        patch: &RiskPatch,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Risk>,
    ) -> Result<Risk, RepoError> {
        let changes = changed_columns(patch, now);
        let mut conn = self.pools.write().await?;
        let the_risk =
            || risks::table.filter(risks::organization_id.eq(org.as_str())).filter(risks::id.eq(id.as_str()));
        let result: Result<Risk, TxError> = write_transaction!(&mut conn, async |c| {
            let before: Risk = Locked(the_risk().select(RiskRow::as_select())).get_result(c).await?.try_into()?;
            if_match.check(&before.etag())?;
            let after: Risk = Prepared(diesel::update(the_risk()).set(&changes).returning(RiskRow::as_returning()))
                .get_result(c)
                .await?
                .try_into()?;
            c.append(audit(Some(&before), Some(&after))).await?;
            Ok(after)
        });
        result.map_err(RepoError::from)
    }

    async fn delete_risk(
        &self,
        org: &OrganizationId,
        id: &RiskId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Risk>,
    ) -> Result<Deleted<Risk>, RepoError> {
        let mut conn = self.pools.write().await?;
        let entity = CommentEntityType::Risk.as_str();
        let result: Result<(Risk, Vec<AttachmentRow>), TxError> = write_transaction!(&mut conn, async |c| {
            let attachments: Vec<AttachmentRow> = diesel::delete(attachments_on(org.as_str(), entity, id.as_str()))
                .returning(AttachmentRow::as_returning())
                .get_results(c)
                .await?;
            diesel::delete(comments_on(org.as_str(), entity, id.as_str())).execute(c).await?;
            let risk = risks::table.filter(risks::organization_id.eq(org.as_str())).filter(risks::id.eq(id.as_str()));
            let deleted: Risk =
                diesel::delete(risk).returning(RiskRow::as_returning()).get_result(c).await?.try_into()?;
            // The deleted row is the record as it was: a stale `If-Match` rolls the delete back.
            if_match.check(&deleted.etag())?;
            c.append(audit(Some(&deleted), None)).await?;
            Ok((deleted, attachments))
        });
        let (row, attachments) = result.map_err(RepoError::from)?;
        let attachments = attachments.into_iter().map(Attachment::try_from).collect::<Result<_, _>>()?;
        Ok(Deleted { record: row, attachments })
    }

    /// The writes in one transaction (see the store's `bulk::apply_in`).
    async fn apply_risk_bulk(
        &self,
        org: &OrganizationId,
        writes: &[BulkWrite<Risk, RiskId, RiskPatch>],
        now: Timestamp,
        audit: &AuditOf<'_, Risk>,
    ) -> Result<BulkApplied<Risk>, BulkError> {
        let mut conn = self.pools.write().await.map_err(RepoError::from)?;
        let (org, entity) = (org.as_str(), CommentEntityType::Risk.as_str());
        let the_risk = |org: &str, id: &RiskId| {
            risks::table.filter(risks::organization_id.eq(org.to_owned())).filter(risks::id.eq(id.to_string()))
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
                    table: "risks",
                    id: RiskId::as_str,
                    is_empty: RiskPatch::is_empty,
                    read: &|c, org, id| {
                        Box::pin(async move {
                            let risk: Risk =
                                the_risk(org, id).select(RiskRow::as_select()).first(c).await?.try_into()?;
                            Ok(risk)
                        })
                    },
                    update: &|c, org, before, patch| {
                        Box::pin(async move {
                            let changes = changed_columns(patch, now);
                            let update = diesel::update(the_risk(org, &before.id))
                                .set(&changes)
                                .returning(RiskRow::as_returning());
                            let after: Risk = Prepared(update).get_result(c).await?.try_into()?;
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
                            let deleted: Risk = diesel::delete(the_risk(org, id))
                                .returning(RiskRow::as_returning())
                                .get_result(c)
                                .await?
                                .try_into()?;
                            Ok((deleted, attachments))
                        })
                    },
                    insert: &|c, rows| Box::pin(insert_risk_rows(c.any(), rows)),
                    row: |record| RiskRow::from(record),
                },
            )
            .await
        });
        failures.answer(result)
    }
}

/// The organization's risks that match every filter of `query`.
fn risks_matching<DB: ListBackend>(
    matching: risks::BoxedQuery<'static, DB>,
    org: &str,
    query: &RiskQuery,
) -> risks::BoxedQuery<'static, DB> {
    let RiskFilter { status, category, department, assignee, likelihood, impact, treatment_strategy } = &query.filter;
    let department: Vec<Condition<risks::table, DB>> = department
        .iter()
        .map(|d| -> Condition<risks::table, DB> {
            Box::new(risks::department.assume_not_null().eq(DB::text(d.to_string())))
        })
        .collect();
    let conditions = [
        text_in(risks::status, status),
        text_in(risks::category, category),
        any_of(department),
        assigned(risks::assignee_id, assignee),
        text_in(risks::likelihood, likelihood),
        text_in(risks::impact, impact),
        text_in(risks::treatment_strategy, treatment_strategy),
        time_range(&query.times, risks::created_at, Some(risks::updated_at)),
        search::filter(&search::RISKS, org, query.search.as_ref()),
    ];
    let mut matching = matching.filter(risks::organization_id.eq(DB::text(org.to_owned())));
    for condition in conditions.into_iter().flatten() {
        matching = matching.filter(condition);
    }
    matching
}

/// The count the database keeps for `query`: the list's size, or, filtered by nothing but
/// `status` and `assigneeId`, the sum of those groups (`crate::list_counts`).
fn risks_kept_count(org: &str, query: &RiskQuery) -> Option<KeptCount> {
    let RiskFilter { status, assignee, .. } = &query.filter;
    let kept_part = RiskFilter { status: status.clone(), assignee: assignee.clone(), ..RiskFilter::default() };
    KeptCount::whole(org, ListName::Risks, query)
        .or_else(|| KeptCount::by_status_and_assignee(org, ListName::Risks, query, kept_part, status, assignee))
}

/// The columns `query` orders risks by, the id last.
fn risk_order<DB: ListBackend>(query: &RiskQuery) -> SortColumns<risks::table, DB> {
    let column = |field| match field {
        RiskSort::CreatedAt => SortColumn::time(risks::created_at),
        RiskSort::UpdatedAt => SortColumn::time(risks::updated_at),
        RiskSort::Title => SortColumn::text(risks::title),
        RiskSort::Status => SortColumn::text(risks::status),
    };
    sort_columns(&query.sort_keys(RiskSort::CreatedAt), column, risks::id)
}

/// A risk's value of a sort field, as its cursor holds it.
fn risk_sort_value(risk: &Risk, field: RiskSort) -> SortValue {
    match field {
        RiskSort::CreatedAt => SortValue::Time(risk.created_at),
        RiskSort::UpdatedAt => SortValue::Time(risk.updated_at),
        RiskSort::Title => SortValue::Text(risk.title.clone()),
        RiskSort::Status => SortValue::Text(risk.status.to_string()),
    }
}

/// The columns a PATCH sets, taken apart field by field without `..`: a field added to the patch
/// does not compile until it is written here too. Every column is in the statement whatever the
/// patch holds (see [`Assignments`]), so it has one shape and each connection prepares it once.
fn changed_columns(patch: &RiskPatch, now: Timestamp) -> Assignments<risks::table> {
    let RiskChanges {
        title,
        description,
        category,
        department,
        status,
        likelihood,
        impact,
        residual_likelihood,
        residual_impact,
        treatment_strategy_description,
        treatment_strategy,
        assignee_id,
    } = patch.changes();
    Assignments::new(risks::updated_at, naive(now))
        .required(risks::title, title.clone())
        .required(risks::description, description.clone())
        .required(risks::category, text(category))
        .nullable(risks::department, nullable_text(department))
        .required(risks::status, text(status))
        .required(risks::likelihood, text(likelihood))
        .required(risks::impact, text(impact))
        .required(risks::residual_likelihood, text(residual_likelihood))
        .required(risks::residual_impact, text(residual_impact))
        .nullable(risks::treatment_strategy_description, treatment_strategy_description.clone())
        .required(risks::treatment_strategy, text(treatment_strategy))
        .nullable(risks::assignee_id, nullable_text(assignee_id))
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = risks, treat_none_as_null = true)]
pub struct RiskRow {
    id: String,
    organization_id: String,
    title: String,
    description: String,
    category: String,
    department: Option<String>,
    status: String,
    likelihood: String,
    impact: String,
    residual_likelihood: String,
    residual_impact: String,
    treatment_strategy_description: Option<String>,
    treatment_strategy: String,
    assignee_id: Option<String>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

impl From<&Risk> for RiskRow {
    fn from(r: &Risk) -> Self {
        Self {
            id: r.id.to_string(),
            organization_id: r.organization_id.to_string(),
            title: r.title.clone(),
            description: r.description.clone(),
            category: r.category.to_string(),
            department: r.department.map(|d| d.to_string()),
            status: r.status.to_string(),
            likelihood: r.likelihood.to_string(),
            impact: r.impact.to_string(),
            residual_likelihood: r.residual_likelihood.to_string(),
            residual_impact: r.residual_impact.to_string(),
            treatment_strategy_description: r.treatment_strategy_description.clone(),
            treatment_strategy: r.treatment_strategy.to_string(),
            assignee_id: r.assignee_id.as_ref().map(ToString::to_string),
            created_at: naive(r.created_at),
            updated_at: naive(r.updated_at),
        }
    }
}

impl TryFrom<RiskRow> for Risk {
    type Error = RepoError;
    fn try_from(r: RiskRow) -> Result<Self, RepoError> {
        const T: &str = "risks";
        Ok(Self {
            id: id(T, r.id)?,
            organization_id: id(T, r.organization_id)?,
            title: r.title,
            description: r.description,
            category: value(T, &r.category)?,
            department: r.department.map(|d| value(T, &d)).transpose()?,
            status: value(T, &r.status)?,
            likelihood: value(T, &r.likelihood)?,
            impact: value(T, &r.impact)?,
            residual_likelihood: value(T, &r.residual_likelihood)?,
            residual_impact: value(T, &r.residual_impact)?,
            treatment_strategy_description: r.treatment_strategy_description,
            treatment_strategy: value(T, &r.treatment_strategy)?,
            assignee_id: optional_id(T, r.assignee_id)?,
            created_at: instant(r.created_at),
            updated_at: instant(r.updated_at),
        })
    }
}

/// A bulk request's created risks, together ([`insert_rows!`]).
async fn insert_risk_rows(conn: ConnRef<'_>, rows: &[RiskRow]) -> QueryResult<()> {
    insert_rows!(conn, risks::table, rows)
}
