//! Evidence recorded with the audit log: [`record_evidence`] runs inside every
//! audited transaction, right after its entry is queued, and writes one evidence row per control
//! linked to the source the use case observed (the draft's `evidence`, see
//! `compliance_domain::evidence`). The store decides nothing: it finds the linked controls, reads
//! the active members when the observation compares signatures, and inserts the rows.

use compliance_domain::audit::AuditDraft;
use compliance_domain::control::EvidenceKind;
use compliance_domain::evidence::Observation;
use compliance_domain::{EvidenceId, Timestamp};
use diesel::prelude::*;
use diesel::result::QueryResult;
use diesel_async::RunQueryDsl;

use crate::db::{ConnRef, db_run};
use crate::rows::{json_text, naive};
use crate::schema::{control_evidence_sources, evidence, members};

/// One row per control in `controls` for what `observation` decided, in `org` at `at`.
fn rows(org: &str, at: Timestamp, observation: &Observation, controls: Vec<String>, active: &[String]) -> Vec<Row> {
    let Some((outcome, detail)) = observation.decide(active) else { return Vec::new() };
    let kind = EvidenceKind::from(observation.kind).to_string();
    let detail = json_text(&detail);
    controls
        .into_iter()
        .map(|control_id| Row {
            id: EvidenceId::generate().to_string(),
            organization_id: org.to_owned(),
            control_id,
            kind: kind.clone(),
            source_id: Some(observation.source_id.clone()),
            outcome: outcome.to_string(),
            collected_at: naive(at),
            detail: detail.clone(),
            blob_key: None,
            run_id: observation.run_id.clone(),
        })
        .collect()
}

#[derive(Insertable)]
#[diesel(table_name = evidence)]
struct Row {
    id: String,
    organization_id: String,
    control_id: String,
    kind: String,
    source_id: Option<String>,
    outcome: String,
    collected_at: time::PrimitiveDateTime,
    detail: String,
    blob_key: Option<String>,
    run_id: Option<String>,
}

/// Writes one evidence row per control linked to the source the draft's observation names (by a
/// link in force: not removed), as the observation decides; a draft without one writes nothing.
pub(crate) async fn record_evidence(conn: ConnRef<'_>, draft: &AuditDraft) -> QueryResult<()> {
    let Some(observation) = &draft.evidence else { return Ok(()) };
    record_observation(conn, draft.organization_id.as_str(), draft.created_at, observation).await
}

/// Writes one evidence row per control linked (by a link in force) to the source `observation`
/// names, in `org` at `at`, as it decides.
pub(crate) async fn record_observation(
    conn: ConnRef<'_>,
    org: &str,
    at: Timestamp,
    observation: &Observation,
) -> QueryResult<()> {
    db_run!(conn, |c| {
        let controls: Vec<String> = control_evidence_sources::table
            .filter(control_evidence_sources::organization_id.eq(org))
            .filter(control_evidence_sources::source_id.eq(&observation.source_id))
            .filter(control_evidence_sources::kind.eq(observation.kind.as_str()))
            // The links in force: a removed link's row stays for the past, and records nothing.
            .filter(control_evidence_sources::removed_at.is_null())
            .select(control_evidence_sources::control_id)
            .load(c)
            .await?;
        if controls.is_empty() {
            return Ok(());
        }
        let active: Vec<String> = match observation.needs_active_members() {
            true => {
                members::table
                    .filter(members::organization_id.eq(org))
                    .filter(members::is_active.eq(true))
                    .select(members::user_id)
                    .load(c)
                    .await?
            }
            false => Vec::new(),
        };
        // One row per linked control: a handful, and SQLite has no batch insert in diesel.
        for row in rows(org, at, observation, controls, &active) {
            diesel::insert_into(evidence::table).values(row).execute(c).await?;
        }
        Ok(())
    })
}
