//! Adoptions of the control library: the [`LibraryRepository`] on both backends, and the check
//! links a new connection brings to the controls made from the library.

use async_trait::async_trait;
use compliance_domain::control::{EvidenceSource, SourceKind, check_source_id};
use compliance_domain::library::adoption::{Adoption, Holdings, Made};
use compliance_domain::{ConnectionId, OrganizationId, Timestamp};
use compliance_ports::{AdoptionAudits, LibraryRepository, Planner, RepoError, SuggestedChecks};
use diesel::QueryResult;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use crate::Store;
use crate::audit::AuditQueue;
use crate::control_requirements::MappingRow;
use crate::controls::{ControlRow, SourceRow};
use crate::db::{AnyConnection, ConnRef, db_run, write_transaction};
use crate::error::TxError;
use crate::frameworks::{already_there, insert_framework_rows};
use crate::locks::lock_organization;
use crate::policies::PolicyRow;
use crate::prepared::insert_rows;
use crate::rows::id;
use crate::schema::{connections, control_evidence_sources, control_requirements, controls, policies, tasks};
use crate::tasks::TaskRow;

#[async_trait]
impl LibraryRepository for Store {
    async fn adopt(
        &self,
        org: &OrganizationId,
        plan: &Planner<'_>,
        audits: &AdoptionAudits<'_>,
    ) -> Result<Adoption, RepoError> {
        let mut conn = self.pools.write().await?;
        let result: Result<Adoption, TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org.as_str()).await?;
            let holdings = holdings(c.any(), org.as_str()).await?;
            let adoption = plan(&holdings)?;
            insert_framework_rows(c.any(), &adoption.framework)
                .await
                .map_err(|error| TxError::Repo(already_there(&adoption.framework, TxError::from(error).into())))?;
            insert_records(c.any(), &adoption).await?;
            c.append_many(entries(&adoption, audits)).await?;
            Ok(adoption)
        });
        result.map_err(RepoError::from)
    }
}

/// What the organization holds that an adoption reuses: its records made from the library, and
/// its connections that are not disconnected.
async fn holdings(conn: ConnRef<'_>, org: &str) -> Result<Holdings, TxError> {
    type Pairs = Vec<(Option<String>, String)>;
    let (controls, policies, tasks, connections): (Pairs, Pairs, Pairs, Vec<(String, String)>) = db_run!(conn, |c| {
        let controls = controls::table
            .filter(controls::organization_id.eq(org))
            .filter(controls::library_id.is_not_null())
            .select((controls::library_id, controls::id))
            .load(c)
            .await?;
        let policies = policies::table
            .filter(policies::organization_id.eq(org))
            .filter(policies::library_id.is_not_null())
            .select((policies::library_id, policies::id))
            .load(c)
            .await?;
        let tasks = tasks::table
            .filter(tasks::organization_id.eq(org))
            .filter(tasks::library_id.is_not_null())
            .select((tasks::library_id, tasks::id))
            .load(c)
            .await?;
        let connections = connections::table
            .filter(connections::organization_id.eq(org))
            .filter(connections::status.ne(crate::connections::DISCONNECTED))
            .order(connections::created_at.asc())
            .select((connections::id, connections::provider))
            .load(c)
            .await?;
        QueryResult::Ok((controls, policies, tasks, connections))
    })?;
    fn by_template<K: compliance_domain::IdKind>(
        table: &str,
        pairs: Pairs,
    ) -> Result<std::collections::BTreeMap<String, compliance_domain::Id<K>>, RepoError> {
        pairs
            .into_iter()
            .filter_map(|(template, record)| Some((template?, record)))
            .map(|(t, r)| Ok((t, id(table, r)?)))
            .collect()
    }
    Ok(Holdings {
        controls: by_template("controls", controls)?,
        policies: by_template("policies", policies)?,
        tasks: by_template("tasks", tasks)?,
        connections: connections
            .into_iter()
            .map(|(connection, provider)| Ok((id("connections", connection)?, provider)))
            .collect::<Result<_, RepoError>>()?,
    })
}

/// A record's row with the template's fields as they made it.
#[derive(Insertable)]
#[diesel(table_name = controls)]
struct MadeControl {
    #[diesel(embed)]
    row: ControlRow,
    library_base: String,
}

#[derive(Insertable)]
#[diesel(table_name = policies)]
struct MadePolicy {
    #[diesel(embed)]
    row: PolicyRow,
    library_base: String,
}

#[derive(Insertable)]
#[diesel(table_name = tasks)]
struct MadeTask {
    #[diesel(embed)]
    row: TaskRow,
    library_base: String,
}

fn made<'a, T: 'a, R: From<&'a T>, M>(records: &'a [Made<T>], with_base: fn(R, String) -> M) -> Vec<M> {
    records.iter().map(|made| with_base(R::from(&made.record), made.base.to_string())).collect()
}

/// The adoption's records, mappings and links, each table's rows together
/// ([`insert_rows!`](crate::prepared::insert_rows)).
async fn insert_records(mut conn: ConnRef<'_>, adoption: &Adoption) -> QueryResult<()> {
    let controls = made(&adoption.controls, |row, library_base| MadeControl { row, library_base });
    let policies = made(&adoption.policies, |row, library_base| MadePolicy { row, library_base });
    let tasks = made(&adoption.tasks, |row, library_base| MadeTask { row, library_base });
    let mappings: Vec<MappingRow> = adoption.mappings.iter().map(MappingRow::from).collect();
    let sources: Vec<SourceRow> = adoption.sources.iter().map(SourceRow::from).collect();
    let inserted: QueryResult<()> = insert_rows!(conn.reborrow(), controls::table, &controls);
    inserted?;
    let inserted: QueryResult<()> = insert_rows!(conn.reborrow(), policies::table, &policies);
    inserted?;
    let inserted: QueryResult<()> = insert_rows!(conn.reborrow(), tasks::table, &tasks);
    inserted?;
    let inserted: QueryResult<()> = insert_rows!(conn.reborrow(), control_requirements::table, &mappings);
    inserted?;
    insert_sources(conn, &sources).await
}

async fn insert_sources(conn: ConnRef<'_>, rows: &[SourceRow]) -> QueryResult<()> {
    insert_rows!(conn, control_evidence_sources::table, rows)
}

/// Each record's entry, in the order they were made: the framework, the controls, policies and
/// tasks, the mappings, the links.
fn entries(adoption: &Adoption, audits: &AdoptionAudits<'_>) -> Vec<compliance_domain::audit::AuditDraft> {
    let mut drafts = vec![(audits.framework)(None, Some(&adoption.framework.framework))];
    drafts.extend(adoption.controls.iter().map(|made| (audits.control)(None, Some(&made.record))));
    drafts.extend(adoption.policies.iter().map(|made| (audits.policy)(None, Some(&made.record))));
    drafts.extend(adoption.tasks.iter().map(|made| (audits.task)(None, Some(&made.record))));
    drafts.extend(adoption.mappings.iter().map(|mapping| (audits.mapping)(None, Some(mapping))));
    drafts.extend(adoption.sources.iter().map(|source| (audits.source)(None, Some(source))));
    drafts
}

/// Links each of the organization's controls made from a template in `suggested` to the checks
/// it suggests of the new connection `connection` (in the connection's transaction, after the
/// organization's lock), with each link's entry; linked at `now`.
pub(crate) async fn link_suggested_checks<C: AuditQueue>(
    c: &mut C,
    org: &OrganizationId,
    connection: &ConnectionId,
    suggested: &SuggestedChecks<'_>,
    now: Timestamp,
) -> Result<(), TxError> {
    if suggested.checks.is_empty() {
        return Ok(());
    }
    let templates: Vec<&str> = suggested.checks.iter().map(|(template, _)| template.as_str()).collect();
    let made: Vec<(Option<String>, String)> = db_run!(c.any(), |c| {
        controls::table
            .filter(controls::organization_id.eq(org.as_str()))
            .filter(controls::library_id.eq_any(&templates))
            .select((controls::library_id, controls::id))
            .load(c)
            .await
    })?;
    let mut sources = Vec::new();
    for (template, control) in made {
        let checks =
            suggested.checks.iter().filter(|(t, _)| Some(t) == template.as_ref()).flat_map(|(_, checks)| checks);
        for check in checks {
            sources.push(EvidenceSource {
                control_id: id("controls", control.clone())?,
                organization_id: org.clone(),
                kind: SourceKind::Check,
                source_id: check_source_id(connection, check),
                created_at: now,
                removed_at: None,
            });
        }
    }
    let rows: Vec<SourceRow> = sources.iter().map(SourceRow::from).collect();
    insert_sources(c.any(), &rows).await?;
    c.append_many(sources.iter().map(|source| (suggested.audit)(None, Some(source))).collect()).await?;
    Ok(())
}
