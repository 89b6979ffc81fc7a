//! Mappings of controls to framework requirements: the [`ControlRequirementRepository`] on both
//! backends, and the rows of `control_requirements`.

use async_trait::async_trait;
use compliance_domain::control::Control;
use compliance_domain::framework_status::RequirementMapping;
use compliance_domain::{ControlId, FrameworkId, OrganizationId, RequirementId, Timestamp};
use compliance_ports::{AuditOf, ControlRequirementRepository, MappedRequirement, RepoError};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::Store;
use crate::audit::AuditQueue;
use crate::controls::ControlRow;
use crate::db::{AnyConnection, db_run, write_transaction};
use crate::error::{TxError, repo_error};
use crate::locks::lock_organization;
use crate::rows::{id, instant, naive};
use crate::schema::{control_requirements, controls, requirements};

#[async_trait]
impl ControlRequirementRepository for Store {
    async fn map_requirement(
        &self,
        org: &OrganizationId,
        control: &ControlId,
        requirement: &RequirementId,
        now: Timestamp,
        audit: &AuditOf<'_, RequirementMapping>,
    ) -> Result<RequirementMapping, RepoError> {
        let mut conn = self.pools.write().await?;
        let result: Result<RequirementMapping, TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org.as_str()).await?;
            // The requirement's framework, found only among the organization's.
            let framework: String = requirements::table
                .filter(requirements::organization_id.eq(org.as_str()))
                .filter(requirements::id.eq(requirement.as_str()))
                .select(requirements::framework_id)
                .first(c)
                .await?;
            let mapping = RequirementMapping {
                organization_id: org.clone(),
                control_id: control.clone(),
                requirement_id: requirement.clone(),
                framework_id: id("requirements", framework)?,
                created_at: now,
                removed_at: None,
            };
            // The foreign keys refuse a control that is not the organization's; the unique
            // index of the mappings in force, a second one (a removed one may be made again).
            diesel::insert_into(control_requirements::table).values(MappingRow::from(&mapping)).execute(c).await?;
            c.append(audit(None, Some(&mapping))).await?;
            Ok(mapping)
        });
        result.map_err(|error| match error {
            TxError::Diesel(DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => {
                RepoError::Conflict("the control is already mapped to this requirement".into())
            }
            other => other.into(),
        })
    }

    /// The mapping stays, with its `removed_at`: a status `asOf` an earlier moment still counts it.
    async fn unmap_requirement(
        &self,
        org: &OrganizationId,
        control: &ControlId,
        requirement: &RequirementId,
        now: Timestamp,
        audit: &AuditOf<'_, RequirementMapping>,
    ) -> Result<RequirementMapping, RepoError> {
        let mut conn = self.pools.write().await?;
        let result: Result<RequirementMapping, TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org.as_str()).await?;
            let the_mapping = control_requirements::table
                .filter(control_requirements::organization_id.eq(org.as_str()))
                .filter(control_requirements::control_id.eq(control.as_str()))
                .filter(control_requirements::requirement_id.eq(requirement.as_str()))
                .filter(control_requirements::removed_at.is_null());
            let removed: RequirementMapping = diesel::update(the_mapping)
                .set(control_requirements::removed_at.eq(Some(naive(now))))
                .returning(MappingRow::as_returning())
                .get_result(c)
                .await?
                .try_into()?;
            c.append(audit(Some(&removed), None)).await?;
            Ok(removed)
        });
        result.map_err(RepoError::from)
    }

    async fn control_requirements(
        &self,
        org: &OrganizationId,
        control: &ControlId,
    ) -> Result<Vec<MappedRequirement>, RepoError> {
        let mut conn = self.pools.read().await?;
        let rows: Vec<(MappingRow, String, String)> = db_run!(&mut conn, |c| {
            control_requirements::table
                .inner_join(requirements::table)
                .filter(control_requirements::organization_id.eq(org.as_str()))
                .filter(control_requirements::control_id.eq(control.as_str()))
                .filter(control_requirements::removed_at.is_null())
                .order((control_requirements::created_at.asc(), control_requirements::requirement_id.asc()))
                .select((MappingRow::as_select(), requirements::identifier, requirements::title))
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        rows.into_iter()
            .map(|(row, identifier, title)| Ok(MappedRequirement { mapping: row.try_into()?, identifier, title }))
            .collect()
    }

    async fn framework_controls(
        &self,
        org: &OrganizationId,
        framework: &FrameworkId,
        moment: Timestamp,
    ) -> Result<Vec<(RequirementId, Control)>, RepoError> {
        let at = naive(moment);
        let mut conn = self.pools.read().await?;
        let rows: Vec<(String, ControlRow)> = db_run!(&mut conn, |c| {
            control_requirements::table
                .inner_join(controls::table)
                .filter(control_requirements::organization_id.eq(org.as_str()))
                .filter(control_requirements::framework_id.eq(framework.as_str()))
                .filter(in_force_at(at))
                .order((control_requirements::requirement_id.asc(), control_requirements::created_at.asc()))
                .select((control_requirements::requirement_id, ControlRow::as_select()))
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        rows.into_iter()
            .map(|(requirement, control)| Ok((id("control_requirements", requirement)?, control.try_into()?)))
            .collect()
    }
}

/// The mappings in force at `at`: made at or before it, and not removed at or before it (see
/// `compliance_domain::control::in_force`).
#[diesel::dsl::auto_type]
fn in_force_at(at: PrimitiveDateTime) -> _ {
    control_requirements::created_at
        .le(at)
        .and(control_requirements::removed_at.is_null().or(control_requirements::removed_at.gt(at)))
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = control_requirements, treat_none_as_null = true)]
pub(crate) struct MappingRow {
    organization_id: String,
    control_id: String,
    requirement_id: String,
    framework_id: String,
    created_at: PrimitiveDateTime,
    removed_at: Option<PrimitiveDateTime>,
}

impl From<&RequirementMapping> for MappingRow {
    fn from(m: &RequirementMapping) -> Self {
        Self {
            organization_id: m.organization_id.to_string(),
            control_id: m.control_id.to_string(),
            requirement_id: m.requirement_id.to_string(),
            framework_id: m.framework_id.to_string(),
            created_at: naive(m.created_at),
            removed_at: m.removed_at.map(naive),
        }
    }
}

impl TryFrom<MappingRow> for RequirementMapping {
    type Error = RepoError;
    fn try_from(r: MappingRow) -> Result<Self, RepoError> {
        const T: &str = "control_requirements";
        Ok(Self {
            organization_id: id(T, r.organization_id)?,
            control_id: id(T, r.control_id)?,
            requirement_id: id(T, r.requirement_id)?,
            framework_id: id(T, r.framework_id)?,
            created_at: instant(r.created_at),
            removed_at: r.removed_at.map(instant),
        })
    }
}
