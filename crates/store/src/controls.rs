//! Controls: the [`ControlRepository`] on both backends, and the rows of `controls`,
//! `control_evidence_sources` and `evidence`.

use async_trait::async_trait;
use compliance_domain::control::{Control, ControlChanges, ControlPatch, Evidence, EvidenceKind, EvidenceSource};
use compliance_domain::etag::IfMatch;
use compliance_domain::{ControlId, EvidenceId, OrganizationId, Timestamp};
use compliance_ports::{
    AuditOf, ControlEvidenceState, ControlFilter, ControlRepository, Cursor, DeletedControl, Page, PageRequest,
    RepoError,
};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::Store;
use crate::audit::AuditQueue;
use crate::db::{AnyConnection, db_run, write_transaction};
use crate::error::{TxError, repo_error};
use crate::locks::{Locked, lock_organization};
use crate::paging::{newest_first, read_page};
use crate::prepared::{Assignments, Prepared, nullable_text};
use crate::rows::{id, instant, json, json_text, library_origin, naive, optional_id, value};
use crate::schema::{control_evidence_sources, controls, evidence};

#[async_trait]
impl ControlRepository for Store {
    async fn list_controls(
        &self,
        org: &OrganizationId,
        filter: &ControlFilter,
        page: &PageRequest,
    ) -> Result<Page<Control>, RepoError> {
        let (org, owner, frequency) =
            (org.to_string(), filter.owner.as_ref().map(ToString::to_string), filter.frequency.map(|f| f.to_string()));
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<ControlRow>, _) = read_page!(
            &mut conn,
            page,
            {
                let mut query = controls::table.filter(controls::organization_id.eq(org.clone())).into_boxed();
                if let Some(owner) = owner.clone() {
                    query = query.filter(controls::owner_id.eq(owner));
                }
                if let Some(frequency) = frequency.clone() {
                    query = query.filter(controls::frequency.eq(frequency));
                }
                query
            },
            ControlRow::as_select(),
            newest_first(controls::created_at, controls::id),
            None,
        )
        .map_err(repo_error)?;
        let items = rows.into_iter().map(Control::try_from).collect::<Result<Vec<_>, _>>()?;
        Ok(Page::from_rows(items, page, total, |c| Cursor::newest_first(c.created_at, c.id.to_string())))
    }

    async fn get_control(&self, org: &OrganizationId, id: &ControlId) -> Result<Control, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: ControlRow = db_run!(&mut conn, |c| {
            controls::table
                .filter(controls::organization_id.eq(org.as_str()))
                .filter(controls::id.eq(id.as_str()))
                .select(ControlRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn insert_control(&self, control: &Control, audit: &AuditOf<'_, Control>) -> Result<(), RepoError> {
        let row = ControlRow::from(control);
        let mut conn = self.pools.write().await?;
        write_transaction!(&mut conn, async |c| {
            diesel::insert_into(controls::table).values(&row).execute(c).await?;
            c.append(audit(None, Some(control))).await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    async fn update_control(
        &self,
        org: &OrganizationId,
        id: &ControlId,
        patch: &ControlPatch,
        now: Timestamp,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Control>,
    ) -> Result<Control, RepoError> {
        let changes = changed_columns(patch, now);
        let mut conn = self.pools.write().await?;
        let the_control =
            || controls::table.filter(controls::organization_id.eq(org.as_str())).filter(controls::id.eq(id.as_str()));
        let result: Result<Control, TxError> = write_transaction!(&mut conn, async |c| {
            let before: Control =
                Locked(the_control().select(ControlRow::as_select())).get_result(c).await?.try_into()?;
            if_match.check(&before.etag())?;
            let after: Control =
                Prepared(diesel::update(the_control()).set(&changes).returning(ControlRow::as_returning()))
                    .get_result(c)
                    .await?
                    .try_into()?;
            c.append(audit(Some(&before), Some(&after))).await?;
            Ok(after)
        });
        result.map_err(RepoError::from)
    }

    async fn delete_control(
        &self,
        org: &OrganizationId,
        id: &ControlId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Control>,
    ) -> Result<DeletedControl, RepoError> {
        let mut conn = self.pools.write().await?;
        let result: Result<(Control, Vec<Option<String>>), TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org.as_str()).await?;
            let files: Vec<Option<String>> = diesel::delete(
                evidence::table
                    .filter(evidence::organization_id.eq(org.as_str()))
                    .filter(evidence::control_id.eq(id.as_str())),
            )
            .returning(evidence::blob_key)
            .get_results(c)
            .await?;
            diesel::delete(
                control_evidence_sources::table
                    .filter(control_evidence_sources::organization_id.eq(org.as_str()))
                    .filter(control_evidence_sources::control_id.eq(id.as_str())),
            )
            .execute(c)
            .await?;
            let the_control =
                controls::table.filter(controls::organization_id.eq(org.as_str())).filter(controls::id.eq(id.as_str()));
            let deleted: Control =
                diesel::delete(the_control).returning(ControlRow::as_returning()).get_result(c).await?.try_into()?;
            // The deleted row is the record as it was: a stale `If-Match` rolls the delete back.
            if_match.check(&deleted.etag())?;
            c.append(audit(Some(&deleted), None)).await?;
            Ok((deleted, files))
        });
        let (control, files) = result.map_err(RepoError::from)?;
        // Only uploaded files own their blob; a run's screenshot belongs to the run.
        let prefix = format!("{}/evd_", control.organization_id);
        let blob_keys = files.into_iter().flatten().filter(|key| key.starts_with(&prefix)).collect();
        Ok(DeletedControl { control, blob_keys })
    }

    async fn add_evidence_source(
        &self,
        source: &EvidenceSource,
        audit: &AuditOf<'_, EvidenceSource>,
    ) -> Result<(), RepoError> {
        let row = SourceRow::from(source);
        let org = source.organization_id.as_str();
        let mut conn = self.pools.write().await?;
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            let exists: i64 = control_count(org, source.control_id.as_str()).get_result(c).await?;
            if exists == 0 {
                return Err(diesel::result::Error::NotFound.into());
            }
            diesel::insert_into(control_evidence_sources::table).values(&row).execute(c).await?;
            c.append(audit(None, Some(source))).await?;
            Ok(())
        });
        result.map_err(|error| match RepoError::from(error) {
            RepoError::Conflict(_) => RepoError::Conflict("the control is already linked to this source".into()),
            other => other,
        })
    }

    /// The link stays, with its `removed_at`: a status `asOf` an earlier moment still counts it.
    async fn remove_evidence_source(
        &self,
        org: &OrganizationId,
        control: &ControlId,
        source_id: &str,
        now: Timestamp,
        audit: &AuditOf<'_, EvidenceSource>,
    ) -> Result<EvidenceSource, RepoError> {
        let mut conn = self.pools.write().await?;
        let result: Result<EvidenceSource, TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org.as_str()).await?;
            let link = control_evidence_sources::table
                .filter(control_evidence_sources::organization_id.eq(org.as_str()))
                .filter(control_evidence_sources::control_id.eq(control.as_str()))
                .filter(control_evidence_sources::source_id.eq(source_id))
                .filter(control_evidence_sources::removed_at.is_null());
            let removed: EvidenceSource = diesel::update(link)
                .set(control_evidence_sources::removed_at.eq(Some(naive(now))))
                .returning(SourceRow::as_returning())
                .get_result(c)
                .await?
                .try_into()?;
            c.append(audit(Some(&removed), None)).await?;
            Ok(removed)
        });
        result.map_err(RepoError::from)
    }

    /// Three statements, however many controls, links and evidence items: the links in force at
    /// `moment`, each with the id of its source's latest evidence since the link was made (a
    /// subquery per row, one indexed read of `evidence_latest` each: never the whole history);
    /// each control's latest file, the same way; then those evidence rows.
    async fn evidence_state(
        &self,
        org: &OrganizationId,
        controls: &[ControlId],
        moment: Timestamp,
    ) -> Result<Vec<ControlEvidenceState>, RepoError> {
        let ids: Vec<String> = controls.iter().map(ToString::to_string).collect();
        let at = naive(moment);
        let mut conn = self.pools.read().await?;
        let (links, rows): (Vec<SourceRow>, Vec<EvidenceRow>) = db_run!(&mut conn, |c| {
            async {
                // The latest evidence of the link's source for its control, collected while the
                // link was in force up to `at`.
                let latest_of_link = evidence::table
                    .filter(evidence::organization_id.eq(control_evidence_sources::organization_id))
                    .filter(evidence::control_id.eq(control_evidence_sources::control_id))
                    .filter(evidence::source_id.eq(control_evidence_sources::source_id.nullable()))
                    .filter(evidence::collected_at.ge(control_evidence_sources::created_at))
                    .filter(evidence::collected_at.le(at))
                    .order((evidence::collected_at.desc(), evidence::id.desc()))
                    .select(evidence::id)
                    .limit(1)
                    .single_value();
                let links: Vec<(SourceRow, Option<String>)> = control_evidence_sources::table
                    .filter(control_evidence_sources::organization_id.eq(org.as_str()))
                    .filter(control_evidence_sources::control_id.eq_any(&ids))
                    .filter(in_force_at(at))
                    .order((control_evidence_sources::created_at.asc(), control_evidence_sources::source_id.asc()))
                    .select((SourceRow::as_select(), latest_of_link))
                    .load(c)
                    .await?;
                // The control's latest uploaded file at or before `at`.
                let latest_file = evidence::table
                    .filter(evidence::organization_id.eq(controls::organization_id))
                    .filter(evidence::control_id.eq(controls::id))
                    .filter(evidence::source_id.is_null())
                    .filter(evidence::collected_at.le(at))
                    .order((evidence::collected_at.desc(), evidence::id.desc()))
                    .select(evidence::id)
                    .limit(1)
                    .single_value();
                let files: Vec<Option<String>> = controls::table
                    .filter(controls::organization_id.eq(org.as_str()))
                    .filter(controls::id.eq_any(&ids))
                    .select(latest_file)
                    .load(c)
                    .await?;
                let wanted: Vec<String> =
                    links.iter().filter_map(|(_, latest)| latest.clone()).chain(files.into_iter().flatten()).collect();
                let rows: Vec<EvidenceRow> = evidence::table
                    .filter(evidence::organization_id.eq(org.as_str()))
                    .filter(evidence::id.eq_any(&wanted))
                    .select(EvidenceRow::as_select())
                    .load(c)
                    .await?;
                Ok::<_, diesel::result::Error>((links.into_iter().map(|(link, _)| link).collect(), rows))
            }
            .await
        })
        .map_err(repo_error)?;
        let links = links.into_iter().map(EvidenceSource::try_from).collect::<Result<Vec<_>, _>>()?;
        let latest = rows.into_iter().map(Evidence::try_from).collect::<Result<Vec<_>, _>>()?;
        Ok(controls
            .iter()
            .map(|control| {
                let sources: Vec<EvidenceSource> = links.iter().filter(|l| &l.control_id == control).cloned().collect();
                let mine = latest.iter().filter(|e| &e.control_id == control);
                let latest_file = mine.clone().find(|e| e.kind == EvidenceKind::File).cloned();
                let latest = mine.filter(|e| e.kind != EvidenceKind::File).cloned().collect();
                ControlEvidenceState { sources, latest, latest_file }
            })
            .collect())
    }

    async fn list_evidence(
        &self,
        org: &OrganizationId,
        control: &ControlId,
        page: &PageRequest,
    ) -> Result<Page<Evidence>, RepoError> {
        let (org, control) = (org.to_string(), control.to_string());
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<EvidenceRow>, _) = read_page!(
            &mut conn,
            page,
            evidence::table
                .filter(evidence::organization_id.eq(org.clone()))
                .filter(evidence::control_id.eq(control.clone()))
                .into_boxed(),
            EvidenceRow::as_select(),
            newest_first(evidence::collected_at, evidence::id),
            None,
        )
        .map_err(repo_error)?;
        let items = rows.into_iter().map(Evidence::try_from).collect::<Result<Vec<_>, _>>()?;
        Ok(Page::from_rows(items, page, total, |e| Cursor::newest_first(e.collected_at, e.id.to_string())))
    }

    async fn get_evidence(&self, org: &OrganizationId, id: &EvidenceId) -> Result<Evidence, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: EvidenceRow = db_run!(&mut conn, |c| {
            evidence::table
                .filter(evidence::organization_id.eq(org.as_str()))
                .filter(evidence::id.eq(id.as_str()))
                .select(EvidenceRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn insert_evidence(&self, item: &Evidence, audit: &AuditOf<'_, Evidence>) -> Result<(), RepoError> {
        let row = EvidenceRow::from(item);
        let org = item.organization_id.as_str();
        let mut conn = self.pools.write().await?;
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            let exists: i64 = control_count(org, item.control_id.as_str()).get_result(c).await?;
            if exists == 0 {
                return Err(diesel::result::Error::NotFound.into());
            }
            diesel::insert_into(evidence::table).values(&row).execute(c).await?;
            c.append(audit(None, Some(item))).await?;
            Ok(())
        });
        result.map_err(RepoError::from)
    }
}

/// The columns a PATCH sets (see `crate::prepared::Assignments`).
fn changed_columns(patch: &ControlPatch, now: Timestamp) -> Assignments<controls::table> {
    let ControlChanges { name, description, owner_id, frequency } = patch.changes();
    Assignments::new(controls::updated_at, naive(now))
        .required(controls::name, name.clone())
        .required(controls::description, description.clone())
        .nullable(controls::owner_id, nullable_text(owner_id))
        .nullable(controls::frequency, nullable_text(frequency))
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = controls, treat_none_as_null = true)]
pub(crate) struct ControlRow {
    id: String,
    organization_id: String,
    name: String,
    description: String,
    owner_id: Option<String>,
    frequency: Option<String>,
    library_id: Option<String>,
    library_version: Option<i32>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

impl From<&Control> for ControlRow {
    fn from(c: &Control) -> Self {
        Self {
            id: c.id.to_string(),
            organization_id: c.organization_id.to_string(),
            name: c.name.clone(),
            description: c.description.clone(),
            owner_id: c.owner_id.as_ref().map(ToString::to_string),
            frequency: c.frequency.map(|f| f.to_string()),
            library_id: c.library.as_ref().map(|l| l.id.clone()),
            library_version: c.library.as_ref().map(|l| i32::try_from(l.version).unwrap_or(i32::MAX)),
            created_at: naive(c.created_at),
            updated_at: naive(c.updated_at),
        }
    }
}

impl TryFrom<ControlRow> for Control {
    type Error = RepoError;
    fn try_from(r: ControlRow) -> Result<Self, RepoError> {
        const T: &str = "controls";
        Ok(Self {
            id: id(T, r.id)?,
            organization_id: id(T, r.organization_id)?,
            name: r.name,
            description: r.description,
            owner_id: optional_id(T, r.owner_id)?,
            frequency: r.frequency.map(|f| value(T, &f)).transpose()?,
            library: library_origin(r.library_id, r.library_version),
            created_at: instant(r.created_at),
            updated_at: instant(r.updated_at),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = control_evidence_sources, treat_none_as_null = true)]
pub struct SourceRow {
    organization_id: String,
    control_id: String,
    kind: String,
    source_id: String,
    created_at: PrimitiveDateTime,
    removed_at: Option<PrimitiveDateTime>,
}

impl From<&EvidenceSource> for SourceRow {
    fn from(s: &EvidenceSource) -> Self {
        Self {
            organization_id: s.organization_id.to_string(),
            control_id: s.control_id.to_string(),
            kind: s.kind.to_string(),
            source_id: s.source_id.clone(),
            created_at: naive(s.created_at),
            removed_at: s.removed_at.map(naive),
        }
    }
}

impl TryFrom<SourceRow> for EvidenceSource {
    type Error = RepoError;
    fn try_from(r: SourceRow) -> Result<Self, RepoError> {
        const T: &str = "control_evidence_sources";
        Ok(Self {
            organization_id: id(T, r.organization_id)?,
            control_id: id(T, r.control_id)?,
            kind: value(T, &r.kind)?,
            source_id: r.source_id,
            created_at: instant(r.created_at),
            removed_at: r.removed_at.map(instant),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = evidence, treat_none_as_null = true)]
pub struct EvidenceRow {
    id: String,
    organization_id: String,
    control_id: String,
    kind: String,
    source_id: Option<String>,
    outcome: String,
    collected_at: PrimitiveDateTime,
    detail: String,
    blob_key: Option<String>,
    run_id: Option<String>,
}

impl From<&Evidence> for EvidenceRow {
    fn from(e: &Evidence) -> Self {
        Self {
            id: e.id.to_string(),
            organization_id: e.organization_id.to_string(),
            control_id: e.control_id.to_string(),
            kind: e.kind.to_string(),
            source_id: e.source_id.clone(),
            outcome: e.outcome.to_string(),
            collected_at: naive(e.collected_at),
            detail: json_text(&e.detail),
            blob_key: e.blob_key.clone(),
            run_id: e.run_id.clone(),
        }
    }
}

impl TryFrom<EvidenceRow> for Evidence {
    type Error = RepoError;
    fn try_from(r: EvidenceRow) -> Result<Self, RepoError> {
        const T: &str = "evidence";
        Ok(Self {
            id: id(T, r.id)?,
            organization_id: id(T, r.organization_id)?,
            control_id: id(T, r.control_id)?,
            kind: value(T, &r.kind)?,
            source_id: r.source_id,
            outcome: value(T, &r.outcome)?,
            collected_at: instant(r.collected_at),
            detail: json(T, &r.detail)?,
            blob_key: r.blob_key,
            run_id: r.run_id,
        })
    }
}

/// The links in force at `at`: made at or before it, and not removed at or before it (see
/// `compliance_domain::control::in_force`).
#[diesel::dsl::auto_type]
fn in_force_at(at: PrimitiveDateTime) -> _ {
    control_evidence_sources::created_at
        .le(at)
        .and(control_evidence_sources::removed_at.is_null().or(control_evidence_sources::removed_at.gt(at)))
}

/// How many of the organization's controls have `id` (0 or 1): a link or an evidence item is
/// written only for a control of the caller's organization, checked in the write's transaction.
#[diesel::dsl::auto_type]
fn control_count<'a>(org: &'a str, id: &'a str) -> _ {
    controls::table.filter(controls::organization_id.eq(org)).filter(controls::id.eq(id)).count()
}
