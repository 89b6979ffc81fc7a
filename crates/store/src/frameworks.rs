//! Frameworks: the [`FrameworkRepository`] on both backends, and the rows the `frameworks` and
//! `requirements` tables hold.

use async_trait::async_trait;
use compliance_domain::applicability::Applicability;
use compliance_domain::etag::IfMatch;
use compliance_domain::framework::{Framework, FrameworkWithRequirements, Requirement};
use compliance_domain::{FrameworkId, OrganizationId, Timestamp};
use compliance_ports::{AuditOf, Cursor, FrameworkQuery, FrameworkRepository, Page, RepoError};
use diesel::QueryResult;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use time::PrimitiveDateTime;

use crate::Store;
use crate::audit::AuditQueue;
use crate::db::{AnyConnection, ConnRef, db_run, write_transaction};
use crate::error::{TxError, repo_error};
use crate::locks::lock_organization;
use crate::paging::{ListBackend, newest_first, read_page, text_in, time_range};
use crate::prepared::Prepared;
use crate::rows::{id, instant, naive, optional_id, value};
use crate::schema::{control_requirements, frameworks, requirement_applicability, requirements};

#[async_trait]
impl FrameworkRepository for Store {
    async fn list_frameworks(
        &self,
        org: &OrganizationId,
        query: &FrameworkQuery,
    ) -> Result<Page<Framework>, RepoError> {
        let (org, matching) = (org.to_string(), query.clone());
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<FrameworkRow>, _) = read_page!(
            &mut conn,
            &query.page,
            frameworks_matching(frameworks::table.into_boxed(), &org, &matching),
            FrameworkRow::as_select(),
            newest_first(frameworks::created_at, frameworks::id),
            None,
        )
        .map_err(repo_error)?;
        let items = rows.into_iter().map(Framework::try_from).collect::<Result<Vec<_>, _>>()?;
        Ok(Page::from_rows(items, &query.page, total, |f| Cursor::newest_first(f.created_at, f.id.to_string())))
    }

    async fn get_framework(
        &self,
        org: &OrganizationId,
        id: &FrameworkId,
    ) -> Result<FrameworkWithRequirements, RepoError> {
        let mut conn = self.pools.read().await?;
        let result: Result<(FrameworkRow, Vec<RequirementRow>), TxError> = db_run!(&mut conn, |c| {
            c.transaction(async |c| {
                let framework: FrameworkRow = frameworks::table
                    .filter(frameworks::organization_id.eq(org.as_str()))
                    .filter(frameworks::id.eq(id.as_str()))
                    .select(FrameworkRow::as_select())
                    .first(c)
                    .await?;
                let requirements: Vec<RequirementRow> = requirements::table
                    .filter(requirements::organization_id.eq(org.as_str()))
                    .filter(requirements::framework_id.eq(id.as_str()))
                    .order(requirements::position.asc())
                    .select(RequirementRow::as_select())
                    .load(c)
                    .await?;
                Ok((framework, requirements))
            })
            .await
        });
        let (framework, requirements) = result.map_err(RepoError::from)?;
        Ok(FrameworkWithRequirements {
            framework: framework.try_into()?,
            requirements: requirements.into_iter().map(Requirement::try_from).collect::<Result<_, _>>()?,
        })
    }

    async fn insert_framework(
        &self,
        framework: &FrameworkWithRequirements,
        audit: &AuditOf<'_, Framework>,
    ) -> Result<(), RepoError> {
        let org = framework.framework.organization_id.as_str();
        let mut conn = self.pools.write().await?;
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            insert_framework_rows(c.any(), framework).await?;
            c.append(audit(None, Some(&framework.framework))).await?;
            Ok(())
        });
        result.map_err(|error| already_there(framework, error.into()))
    }

    /// The statement in force is closed and the new one added under the organization's lock, so
    /// two statements about one requirement never both stay in force.
    async fn state_applicability(
        &self,
        statement: &Applicability,
        audit: &AuditOf<'_, Applicability>,
    ) -> Result<Option<Applicability>, RepoError> {
        let org = statement.organization_id.as_str();
        let row = ApplicabilityRow::from(statement);
        let mut conn = self.pools.write().await?;
        let result: Result<Option<Applicability>, TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            // The requirement, found only among the organization's framework's.
            requirements::table
                .filter(requirements::organization_id.eq(org))
                .filter(requirements::framework_id.eq(statement.framework_id.as_str()))
                .filter(requirements::id.eq(statement.requirement_id.as_str()))
                .select(requirements::id)
                .first::<String>(c)
                .await?;
            let in_force = requirement_applicability::table
                .filter(requirement_applicability::organization_id.eq(org))
                .filter(requirement_applicability::requirement_id.eq(statement.requirement_id.as_str()))
                .filter(requirement_applicability::removed_at.is_null());
            let before: Option<Applicability> = diesel::update(in_force)
                .set(requirement_applicability::removed_at.eq(Some(naive(statement.created_at))))
                .returning(ApplicabilityRow::as_returning())
                .get_result(c)
                .await
                .optional()?
                .map(Applicability::try_from)
                .transpose()?;
            diesel::insert_into(requirement_applicability::table).values(&row).execute(c).await?;
            c.append(audit(before.as_ref(), Some(statement))).await?;
            Ok(before)
        });
        result.map_err(RepoError::from)
    }

    async fn applicability(
        &self,
        org: &OrganizationId,
        framework: &FrameworkId,
        moment: Timestamp,
    ) -> Result<Vec<Applicability>, RepoError> {
        let at = naive(moment);
        let mut conn = self.pools.read().await?;
        let rows: Vec<ApplicabilityRow> = db_run!(&mut conn, |c| {
            requirement_applicability::table
                .filter(requirement_applicability::organization_id.eq(org.as_str()))
                .filter(requirement_applicability::framework_id.eq(framework.as_str()))
                .filter(requirement_applicability::created_at.le(at))
                .filter(
                    requirement_applicability::removed_at.is_null().or(requirement_applicability::removed_at.gt(at)),
                )
                .select(ApplicabilityRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        rows.into_iter().map(Applicability::try_from).collect()
    }

    async fn delete_framework(
        &self,
        org: &OrganizationId,
        id: &FrameworkId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Framework>,
    ) -> Result<Framework, RepoError> {
        let mut conn = self.pools.write().await?;
        let the_framework = || {
            frameworks::table
                .filter(frameworks::organization_id.eq(org.as_str()))
                .filter(frameworks::id.eq(id.as_str()))
        };
        let result: Result<Framework, TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org.as_str()).await?;
            // The precondition first (RFC 9110 §13.2.2), then what the delete itself refuses.
            let current: Framework = the_framework().select(FrameworkRow::as_select()).first(c).await?.try_into()?;
            if_match.check(&current.etag())?;
            // Mappings are written under the same lock: none can arrive after this count.
            let of_the_framework = || {
                control_requirements::table
                    .filter(control_requirements::organization_id.eq(org.as_str()))
                    .filter(control_requirements::framework_id.eq(id.as_str()))
            };
            let mapped: i64 =
                of_the_framework().filter(control_requirements::removed_at.is_null()).count().get_result(c).await?;
            if mapped > 0 {
                return Err(RepoError::Conflict(format!(
                    "{mapped} control mapping(s) refer to this framework's requirements: unmap them first \
                     (DELETE /v1/controls/{{id}}/requirements/{{requirementId}})"
                ))
                .into());
            }
            // The removed mappings' history goes with the framework it was about.
            diesel::delete(of_the_framework()).execute(c).await?;
            // The requirements go with it (ON DELETE CASCADE).
            let deleted: Framework = diesel::delete(the_framework())
                .returning(FrameworkRow::as_returning())
                .get_result(c)
                .await?
                .try_into()?;
            c.append(audit(Some(&deleted), None)).await?;
            Ok(deleted)
        });
        result.map_err(RepoError::from)
    }
}

/// Inserts the framework and its requirements (in a transaction the caller opened).
pub(crate) async fn insert_framework_rows(conn: ConnRef<'_>, framework: &FrameworkWithRequirements) -> QueryResult<()> {
    let row = FrameworkRow::from(&framework.framework);
    let rows: Vec<RequirementRow> = framework
        .requirements
        .iter()
        .enumerate()
        .map(|(position, r)| RequirementRow::of(&framework.framework, position, r))
        .collect();
    db_run!(conn, |c| {
        diesel::insert_into(frameworks::table).values(&row).execute(c).await?;
        // One prepared statement, row by row: diesel-async's SQLite connection takes no
        // multi-row INSERT. Parents come first in catalog order, so each row refers only
        // to rows inserted before it.
        for row in &rows {
            Prepared(diesel::insert_into(requirements::table).values(row)).execute(c).await?;
        }
        Ok(())
    })
}

/// A write's error, a taken name and version said in words.
pub(crate) fn already_there(framework: &FrameworkWithRequirements, error: RepoError) -> RepoError {
    match error {
        RepoError::Conflict(_) => RepoError::Conflict(format!(
            "the organization already has the framework `{}` version `{}`",
            framework.framework.name, framework.framework.version
        )),
        other => other,
    }
}

/// The organization's frameworks that match every filter of `query`.
fn frameworks_matching<DB: ListBackend>(
    matching: frameworks::BoxedQuery<'static, DB>,
    org: &str,
    query: &FrameworkQuery,
) -> frameworks::BoxedQuery<'static, DB> {
    let conditions = [
        text_in(frameworks::source, &query.filter.source),
        time_range(&query.times, frameworks::created_at, Some(frameworks::updated_at)),
    ];
    let mut matching = matching.filter(frameworks::organization_id.eq(DB::text(org.to_owned())));
    for condition in conditions.into_iter().flatten() {
        matching = matching.filter(condition);
    }
    matching
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = frameworks)]
struct FrameworkRow {
    id: String,
    organization_id: String,
    name: String,
    version: String,
    source: String,
    requirement_count: i64,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

impl From<&Framework> for FrameworkRow {
    fn from(f: &Framework) -> Self {
        Self {
            id: f.id.to_string(),
            organization_id: f.organization_id.to_string(),
            name: f.name.clone(),
            version: f.version.clone(),
            source: f.source.to_string(),
            requirement_count: i64::try_from(f.requirement_count).unwrap_or(i64::MAX),
            created_at: naive(f.created_at),
            updated_at: naive(f.updated_at),
        }
    }
}

impl TryFrom<FrameworkRow> for Framework {
    type Error = RepoError;
    fn try_from(r: FrameworkRow) -> Result<Self, RepoError> {
        const T: &str = "frameworks";
        Ok(Self {
            id: id(T, r.id)?,
            organization_id: id(T, r.organization_id)?,
            name: r.name,
            version: r.version,
            source: value(T, &r.source)?,
            requirement_count: usize::try_from(r.requirement_count).unwrap_or_default(),
            created_at: instant(r.created_at),
            updated_at: instant(r.updated_at),
        })
    }
}

/// A requirement's row; `position` keeps the catalog's order. `None` is written as NULL (not
/// DEFAULT), so that the insert has one shape and keeps its prepared statement.
#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = requirements, treat_none_as_default_value = false)]
struct RequirementRow {
    id: String,
    organization_id: String,
    framework_id: String,
    position: i64,
    identifier: String,
    title: String,
    description: Option<String>,
    parent_id: Option<String>,
    catalog_id: Option<String>,
}

impl RequirementRow {
    fn of(framework: &Framework, position: usize, r: &Requirement) -> Self {
        Self {
            id: r.id.to_string(),
            organization_id: framework.organization_id.to_string(),
            framework_id: framework.id.to_string(),
            position: i64::try_from(position).unwrap_or(i64::MAX),
            identifier: r.identifier.clone(),
            title: r.title.clone(),
            description: r.description.clone(),
            parent_id: r.parent_id.as_ref().map(ToString::to_string),
            catalog_id: r.catalog_id.clone(),
        }
    }
}

impl TryFrom<RequirementRow> for Requirement {
    type Error = RepoError;
    fn try_from(r: RequirementRow) -> Result<Self, RepoError> {
        const T: &str = "requirements";
        Ok(Self {
            id: id(T, r.id)?,
            identifier: r.identifier,
            title: r.title,
            description: r.description,
            parent_id: optional_id(T, r.parent_id)?,
            catalog_id: r.catalog_id,
        })
    }
}

/// A statement of applicability's row; the rows replaced keep their `removed_at`.
#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = requirement_applicability, treat_none_as_null = true)]
struct ApplicabilityRow {
    organization_id: String,
    framework_id: String,
    requirement_id: String,
    applicable: bool,
    justification: String,
    created_at: PrimitiveDateTime,
    removed_at: Option<PrimitiveDateTime>,
}

impl From<&Applicability> for ApplicabilityRow {
    fn from(a: &Applicability) -> Self {
        Self {
            organization_id: a.organization_id.to_string(),
            framework_id: a.framework_id.to_string(),
            requirement_id: a.requirement_id.to_string(),
            applicable: a.applicable,
            justification: a.justification.clone(),
            created_at: naive(a.created_at),
            removed_at: a.removed_at.map(naive),
        }
    }
}

impl TryFrom<ApplicabilityRow> for Applicability {
    type Error = RepoError;
    fn try_from(r: ApplicabilityRow) -> Result<Self, RepoError> {
        const T: &str = "requirement_applicability";
        Ok(Self {
            organization_id: id(T, r.organization_id)?,
            framework_id: id(T, r.framework_id)?,
            requirement_id: id(T, r.requirement_id)?,
            applicable: r.applicable,
            justification: r.justification,
            created_at: instant(r.created_at),
            removed_at: r.removed_at.map(instant),
        })
    }
}
