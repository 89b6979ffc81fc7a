//! Evidence recorded by the audit chain: [`EvidenceLog::record_evidence`] runs inside every
//! audited transaction, right after its entry is appended, and writes one evidence row per control
//! linked to the source the entry proves something about (`compliance_domain::evidence::observe`).

use std::collections::HashSet;

use compliance_domain::EvidenceId;
use compliance_domain::audit::AuditDraft;
use compliance_domain::control::{EvidenceKind, EvidenceOutcome};
use compliance_domain::evidence::{Observation, Proof, observe};
use diesel::prelude::*;
use diesel::result::QueryResult;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::SqliteAsync;
use crate::rows::{json_text, naive};
use crate::schema::{control_evidence_sources, evidence, members};

/// One impl per connection type, as [`crate::audit::AuditChain`]: the bodies are the same
/// statements, type-checked once per backend.
pub(crate) trait EvidenceLog {
    fn record_evidence(&mut self, draft: &AuditDraft) -> impl Future<Output = QueryResult<()>> + Send;
}

/// The rows to write for `observation`, given the controls linked to its source and (for a policy)
/// the users of the organization's active members.
fn rows(draft: &AuditDraft, observation: Observation, controls: Vec<String>, active: &[String]) -> Vec<Row> {
    let outcome = match &observation.proof {
        Proof::Outcome(outcome) => *outcome,
        Proof::SignedBy(signed) if signed_by_all(signed, active) => EvidenceOutcome::Pass,
        // A new version not yet signed by everyone: the last version's pass no longer holds.
        Proof::SignedBy(_) if draft.action == "policy.published" => EvidenceOutcome::Fail,
        // A signature that still leaves some to sign: it proves nothing yet, and fails nothing.
        Proof::SignedBy(_) => return Vec::new(),
    };
    let mut detail = observation.detail.clone();
    if outcome == EvidenceOutcome::Fail && matches!(observation.proof, Proof::SignedBy(_)) {
        detail["reason"] = "a new version was published: it awaits every active member's signature".into();
    }
    let kind = EvidenceKind::from(observation.kind).to_string();
    let detail = json_text(&detail);
    controls
        .into_iter()
        .map(|control_id| Row {
            id: EvidenceId::generate().to_string(),
            organization_id: draft.organization_id.to_string(),
            control_id,
            kind: kind.clone(),
            source_id: Some(observation.source_id.clone()),
            outcome: outcome.to_string(),
            collected_at: naive(draft.created_at),
            detail: detail.clone(),
            blob_key: None,
            run_id: observation.run_id.clone(),
        })
        .collect()
}

/// Whether every user of `active` is among `signed` (a set: an organization of thousands of
/// members would otherwise compare every pair).
fn signed_by_all(signed: &[String], active: &[String]) -> bool {
    let signed: HashSet<&str> = signed.iter().map(String::as_str).collect();
    active.iter().all(|user| signed.contains(user.as_str()))
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

impl EvidenceLog for AsyncPgConnection {
    async fn record_evidence(&mut self, draft: &AuditDraft) -> QueryResult<()> {
        let Some(observation) = observe(&draft.resource_type, &draft.action, &draft.changes, draft.data.as_ref())
        else {
            return Ok(());
        };
        let org = draft.organization_id.as_str();
        let controls: Vec<String> = control_evidence_sources::table
            .filter(control_evidence_sources::organization_id.eq(org))
            .filter(control_evidence_sources::source_id.eq(&observation.source_id))
            .filter(control_evidence_sources::kind.eq(observation.kind.as_str()))
            .select(control_evidence_sources::control_id)
            .load(self)
            .await?;
        if controls.is_empty() {
            return Ok(());
        }
        let active: Vec<String> = match observation.proof {
            Proof::SignedBy(_) => {
                members::table
                    .filter(members::organization_id.eq(org))
                    .filter(members::is_active.eq(true))
                    .select(members::user_id)
                    .load(self)
                    .await?
            }
            Proof::Outcome(_) => Vec::new(),
        };
        let rows = rows(draft, observation, controls, &active);
        // One row per linked control: a handful, and SQLite has no batch insert in diesel.
        for row in rows {
            diesel::insert_into(evidence::table).values(row).execute(self).await?;
        }
        Ok(())
    }
}

impl EvidenceLog for SqliteAsync {
    async fn record_evidence(&mut self, draft: &AuditDraft) -> QueryResult<()> {
        let Some(observation) = observe(&draft.resource_type, &draft.action, &draft.changes, draft.data.as_ref())
        else {
            return Ok(());
        };
        let org = draft.organization_id.as_str();
        let controls: Vec<String> = control_evidence_sources::table
            .filter(control_evidence_sources::organization_id.eq(org))
            .filter(control_evidence_sources::source_id.eq(&observation.source_id))
            .filter(control_evidence_sources::kind.eq(observation.kind.as_str()))
            .select(control_evidence_sources::control_id)
            .load(self)
            .await?;
        if controls.is_empty() {
            return Ok(());
        }
        let active: Vec<String> = match observation.proof {
            Proof::SignedBy(_) => {
                members::table
                    .filter(members::organization_id.eq(org))
                    .filter(members::is_active.eq(true))
                    .select(members::user_id)
                    .load(self)
                    .await?
            }
            Proof::Outcome(_) => Vec::new(),
        };
        let rows = rows(draft, observation, controls, &active);
        // One row per linked control: a handful, and SQLite has no batch insert in diesel.
        for row in rows {
            diesel::insert_into(evidence::table).values(row).execute(self).await?;
        }
        Ok(())
    }
}
