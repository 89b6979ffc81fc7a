//! Controls: what the organization does to satisfy its requirements, the sources that prove each
//! one (policies, tasks, integration connections, browser automations, uploaded files), and its
//! status computed from the evidence those sources recorded.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::validation::{ValidationErrors, map_present, required, set, text};
use crate::{
    AutomationId, ConnectionId, ControlId, EvidenceId, FieldError, Id, IdKind, MemberId, OrganizationId, PolicyId,
    TaskId, Timestamp, nullable, required_non_null,
};

crate::string_enum! {
    /// How often a control must be proven again: its evidence goes stale after this long.
    ControlFrequency { Monthly = "monthly", Quarterly = "quarterly", Yearly = "yearly" }
}

impl ControlFrequency {
    /// How long evidence stays fresh. **Choice:** fixed lengths that cover the longest calendar
    /// month, quarter and year (31, 92 and 366 days), so no evidence goes stale early.
    pub fn period(self) -> time::Duration {
        match self {
            ControlFrequency::Monthly => time::Duration::days(31),
            ControlFrequency::Quarterly => time::Duration::days(92),
            ControlFrequency::Yearly => time::Duration::days(366),
        }
    }
}

crate::string_enum! {
    /// The kind of record a control is linked to as a source of evidence.
    SourceKind {
        Policy = "policy",
        Task = "task",
        Connection = "connection",
        Automation = "automation",
        Check = "check",
    }
}

crate::string_enum! {
    /// Where an evidence item came from: a linked source's kind, or a `file` uploaded to the control.
    EvidenceKind {
        Policy = "policy",
        Task = "task",
        Connection = "connection",
        Automation = "automation",
        Check = "check",
        File = "file",
    }
}

crate::string_enum! {
    /// What an evidence item shows.
    EvidenceOutcome { Pass = "pass", Fail = "fail" }
}

crate::string_enum! {
    /// A control's (or one source's) status at a moment.
    ControlStatus { Passing = "passing", Failing = "failing", Stale = "stale", NotStarted = "not_started" }
}

impl From<SourceKind> for EvidenceKind {
    fn from(kind: SourceKind) -> Self {
        match kind {
            SourceKind::Policy => EvidenceKind::Policy,
            SourceKind::Task => EvidenceKind::Task,
            SourceKind::Connection => EvidenceKind::Connection,
            SourceKind::Automation => EvidenceKind::Automation,
            SourceKind::Check => EvidenceKind::Check,
        }
    }
}

impl SourceKind {
    /// The kind a source id names by its prefix (`pol_`, `tsk_`, `con_`, `aut_`), the id checked.
    pub fn of_id(id: &str) -> Result<SourceKind, FieldError> {
        fn is<K: IdKind>(id: &str) -> bool {
            Id::<K>::parse(id).is_ok()
        }
        if is::<crate::id::PolicyKind>(id) {
            Ok(SourceKind::Policy)
        } else if is::<crate::id::TaskKind>(id) {
            Ok(SourceKind::Task)
        } else if is::<crate::id::ConnectionKind>(id) {
            Ok(SourceKind::Connection)
        } else if is::<crate::id::AutomationKind>(id) {
            Ok(SourceKind::Automation)
        } else if check_source(id).is_some() {
            Ok(SourceKind::Check)
        } else {
            Err(FieldError::new(
                "sourceId",
                "must be the id of a policy (pol_…), task (tsk_…), connection (con_…) or automation (aut_…), \
                 or a connection's check (`con_…:aws.iam.root-mfa`)",
            ))
        }
    }
}

/// The longest name, in characters.
pub const NAME_MAX: usize = 255;
/// The longest description, in characters.
pub const DESCRIPTION_MAX: usize = 10_000;

/// A control of the organization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    /// The control's id.
    pub id: ControlId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// 1 to [`NAME_MAX`] characters.
    pub name: String,
    /// 0 to [`DESCRIPTION_MAX`] characters.
    pub description: String,
    /// The member responsible for it, if any.
    pub owner_id: Option<MemberId>,
    /// How often it must be proven again; `None`: evidence never goes stale.
    pub frequency: Option<ControlFrequency>,
    /// The library template it was made from by an adoption, if any (read-only).
    pub library: Option<crate::library::LibraryOrigin>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl Control {
    /// The entity tag of this state of the record.
    pub fn etag(&self) -> crate::etag::ETag {
        crate::etag::ETag::of(self.id.as_str(), self.updated_at)
    }

    /// A new control of the organization, validated.
    pub fn create(
        organization_id: OrganizationId,
        input: NewControl,
        now: Timestamp,
    ) -> Result<Self, ValidationErrors> {
        Ok(Self {
            id: ControlId::generate(),
            organization_id,
            name: text("name", required("name", input.name)?, 1, NAME_MAX)?,
            description: text("description", input.description.unwrap_or_default(), 0, DESCRIPTION_MAX)?,
            owner_id: input.owner_id,
            frequency: input.frequency,
            library: None,
            created_at: now,
            updated_at: now,
        })
    }

    /// Applies a validated patch; an empty patch changes nothing, not even `updated_at`.
    pub fn apply(&mut self, patch: &ControlPatch, now: Timestamp) {
        if patch.is_empty() {
            return;
        }
        let c = &patch.0;
        set(&mut self.name, &c.name);
        set(&mut self.description, &c.description);
        set(&mut self.owner_id, &c.owner_id);
        set(&mut self.frequency, &c.frequency);
        self.updated_at = now;
    }
}

/// The body of `POST /v1/controls`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewControl {
    /// Required: 1 to 255 characters, not blank.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::name, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub name: Option<String>,
    /// Up to 10,000 characters; empty when omitted.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::description))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub description: Option<String>,
    /// The member responsible for it: an active member of the organization.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<MemberId>))]
    pub owner_id: Option<MemberId>,
    /// How often it must be proven again; `null` or omitted: never stale.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<ControlFrequency>))]
    pub frequency: Option<ControlFrequency>,
}

/// The body of `PATCH /v1/controls/{id}`: only present fields change; `null` clears a nullable one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ControlChanges {
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::name))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub name: Option<String>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::description))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub description: Option<String>,
    /// Absent: unchanged; `null`: no owner.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<MemberId>))]
    #[serde(default, deserialize_with = "nullable")]
    pub owner_id: Option<Option<MemberId>>,
    /// Absent: unchanged; `null`: never stale.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<ControlFrequency>))]
    #[serde(default, deserialize_with = "nullable")]
    pub frequency: Option<Option<ControlFrequency>>,
}

/// Validated changes to a control.
#[derive(Debug, Clone)]
pub struct ControlPatch(ControlChanges);

impl ControlPatch {
    /// Validates `changes`; the first wrong field is the error.
    pub fn new(changes: ControlChanges) -> Result<Self, ValidationErrors> {
        Ok(Self(ControlChanges {
            name: map_present(changes.name, |n| text("name", n, 1, NAME_MAX))?,
            description: map_present(changes.description, |d| text("description", d, 0, DESCRIPTION_MAX))?,
            ..changes
        }))
    }

    /// The validated changes.
    pub fn changes(&self) -> &ControlChanges {
        &self.0
    }

    /// Whether no field is to change.
    pub fn is_empty(&self) -> bool {
        self.0 == ControlChanges::default()
    }

    /// The member the patch makes owner, if it names one.
    pub fn owner(&self) -> Option<&MemberId> {
        self.0.owner_id.as_ref().and_then(Option::as_ref)
    }
}

/// The body of `POST /v1/controls/{id}/evidence-sources`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewEvidenceSource {
    /// Required: the id of a policy (`pol_…`), task (`tsk_…`), integration connection (`con_…`)
    /// or browser automation (`aut_…`) of the organization; its prefix says which.
    #[cfg_attr(feature = "openapi", schema(value_type = String, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub source_id: Option<String>,
}

/// A source linked to a control.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceSource {
    /// The control.
    pub control_id: ControlId,
    /// The organization.
    pub organization_id: OrganizationId,
    /// What kind of record the source is.
    pub kind: SourceKind,
    /// The record's id.
    pub source_id: String,
    /// When it was linked; before this moment it proves nothing for the control, and evidence
    /// recorded before it (during an earlier link of the same source) does not count for it.
    pub created_at: Timestamp,
    /// When it was unlinked (`None` while it is linked): from this moment on it proves nothing
    /// for the control, while a status asked for an earlier moment still counts it.
    pub removed_at: Option<Timestamp>,
}

impl EvidenceSource {
    /// A new link of `control` to the record `input` names, validated (the record's existence is
    /// the use case's to check).
    pub fn link(control: &Control, input: NewEvidenceSource, now: Timestamp) -> Result<Self, ValidationErrors> {
        let source_id = required("sourceId", input.source_id)?;
        let kind = SourceKind::of_id(&source_id)?;
        Ok(Self {
            control_id: control.id.clone(),
            organization_id: control.organization_id.clone(),
            kind,
            source_id,
            created_at: now,
            removed_at: None,
        })
    }

    /// Whether the link was in force at `moment`: made at or before it, and not removed at or
    /// before it.
    pub fn in_force_at(&self, moment: Timestamp) -> bool {
        in_force(self.created_at, self.removed_at, moment)
    }

    /// Whether `evidence` (of this link's source) counts for the link at `moment`: collected
    /// while the link was in force, up to `moment`. Evidence of an earlier link of the same source
    /// does not count for a link made again.
    pub fn counts(&self, evidence: &Evidence, moment: Timestamp) -> bool {
        self.created_at <= evidence.collected_at && evidence.collected_at <= moment
    }
}

/// Whether something made at `created_at` and removed at `removed_at` (never, when `None`) was in
/// force at `moment`: from its making (included) to its removal (excluded). Links and requirement
/// mappings keep their history this way, so a status `asOf` a past moment counts what was in force
/// then.
pub fn in_force(created_at: Timestamp, removed_at: Option<Timestamp>, moment: Timestamp) -> bool {
    created_at <= moment && removed_at.is_none_or(|removed| moment < removed)
}

/// Ids of the kinds a source may be, for typed look-ups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceRef {
    /// A policy.
    Policy(PolicyId),
    /// A task.
    Task(TaskId),
    /// An integration connection.
    Connection(ConnectionId),
    /// A browser automation.
    Automation(AutomationId),
    /// A check of the catalog, as a connection's runs read it.
    Check(ConnectionId, String),
}

/// The id of a check as an evidence source: its connection's id and the check's, `con_…:<check id>`.
pub fn check_source_id(connection: &ConnectionId, check_id: &str) -> String {
    format!("{connection}:{check_id}")
}

/// The connection and check of a check source id, when it is one: a connection id, a colon and a
/// check of the catalog (or one a catalog check reports, such as a FleetDM policy's).
pub fn check_source(id: &str) -> Option<(ConnectionId, String)> {
    let (connection, check_id) = id.split_once(':')?;
    let connection = ConnectionId::parse(connection).ok()?;
    crate::check::reading(check_id).map(|_| (connection, check_id.to_owned()))
}

impl EvidenceSource {
    /// The typed id of the linked record.
    pub fn target(&self) -> Option<SourceRef> {
        let id = self.source_id.as_str();
        Some(match self.kind {
            SourceKind::Policy => SourceRef::Policy(PolicyId::parse(id).ok()?),
            SourceKind::Task => SourceRef::Task(TaskId::parse(id).ok()?),
            SourceKind::Connection => SourceRef::Connection(ConnectionId::parse(id).ok()?),
            SourceKind::Automation => SourceRef::Automation(AutomationId::parse(id).ok()?),
            SourceKind::Check => {
                let (connection, check_id) = check_source(id)?;
                SourceRef::Check(connection, check_id)
            }
        })
    }
}

/// One recorded piece of evidence: immutable once written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// The item's id.
    pub id: EvidenceId,
    /// The organization.
    pub organization_id: OrganizationId,
    /// The control it proves (or disproves).
    pub control_id: ControlId,
    /// Where it came from.
    pub kind: EvidenceKind,
    /// The source record's id; `None` for a file.
    pub source_id: Option<String>,
    /// What it shows.
    pub outcome: EvidenceOutcome,
    /// When it was collected (the moment of the change that produced it).
    pub collected_at: Timestamp,
    /// What the source reported (a check's error, a run's verdict, a file's name and type).
    pub detail: Value,
    /// The blob holding an uploaded file, or a run's screenshot.
    pub blob_key: Option<String>,
    /// The automation run that produced it.
    pub run_id: Option<String>,
}

impl Evidence {
    /// The evidence of a file uploaded to `control`: passing, collected `now`.
    pub fn file(
        control: &Control,
        name: &str,
        media_type: &str,
        size: i64,
        description: Option<&str>,
        now: Timestamp,
    ) -> Self {
        let id = EvidenceId::generate();
        let blob_key = format!("{}/{}", control.organization_id, id);
        Self {
            id,
            organization_id: control.organization_id.clone(),
            control_id: control.id.clone(),
            kind: EvidenceKind::File,
            source_id: None,
            outcome: EvidenceOutcome::Pass,
            collected_at: now,
            detail: serde_json::json!({
                "fileName": name, "fileType": media_type, "size": size, "description": description,
            }),
            blob_key: Some(blob_key),
            run_id: None,
        }
    }
}

/// Why a source (or the control) has its status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SourceStatus {
    /// `policy`, `task`, `connection`, `automation`, or `file` for the uploaded files.
    #[cfg_attr(feature = "openapi", schema(value_type = EvidenceKind))]
    pub kind: EvidenceKind,
    /// The source record's id; absent for `file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// This source's status at the moment.
    #[cfg_attr(feature = "openapi", schema(value_type = ControlStatus))]
    pub status: ControlStatus,
    /// Its latest evidence at or before the moment, if any.
    pub last_evidence_at: Option<Timestamp>,
    /// Why, in a sentence.
    pub reason: String,
}

/// The source that decides a control's status, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DecidedBy {
    /// The deciding source's kind.
    #[cfg_attr(feature = "openapi", schema(value_type = EvidenceKind))]
    pub kind: EvidenceKind,
    /// The deciding source's id; absent for `file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Why, in a sentence.
    pub reason: String,
}

/// A control's status at a moment, explained.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct StatusReport {
    /// The control's status.
    #[cfg_attr(feature = "openapi", schema(value_type = ControlStatus))]
    pub status: ControlStatus,
    /// The moment it is computed for.
    pub as_of: Timestamp,
    /// The source that decides it; `null` when no source is linked and no file uploaded.
    pub decided_by: Option<DecidedBy>,
    /// Every source's own status (the uploaded files count as one source, `file`).
    pub sources: Vec<SourceStatus>,
}

/// The status of a control at `moment` from its links and the latest evidence of each source
/// (the caller passes, per link, its source's latest evidence at or before `moment` since the link
/// was made; `latest_file` the latest file uploaded at or before it). Links not in force at
/// `moment` (made after it, or removed at or before it) are ignored, and so is evidence collected
/// before its link was made ([`EvidenceSource::counts`]).
///
/// A source is `not_started` without evidence, `failing` when its latest evidence failed,
/// `stale` when its latest evidence passed but is older than the frequency's period, else
/// `passing`. The control takes its sources' worst status (failing, stale, not started, passing);
/// the first source with it decides; of passing sources, the one whose evidence is oldest (the
/// next to go stale). No source at all: `not_started`, decided by nobody.
pub fn status(
    frequency: Option<ControlFrequency>,
    sources: &[(&EvidenceSource, Option<&Evidence>)],
    latest_file: Option<&Evidence>,
    moment: Timestamp,
) -> StatusReport {
    let mut statuses: Vec<SourceStatus> = Vec::new();
    for (source, evidence) in sources {
        if !source.in_force_at(moment) {
            continue;
        }
        let evidence = evidence.filter(|e| source.counts(e, moment));
        statuses.push(source_status(source.kind.into(), Some(source.source_id.clone()), frequency, evidence, moment));
    }
    if let Some(file) = latest_file.filter(|e| e.collected_at <= moment) {
        statuses.push(source_status(EvidenceKind::File, None, frequency, Some(file), moment));
    }
    let rank = |s: ControlStatus| match s {
        ControlStatus::Failing => 0,
        ControlStatus::Stale => 1,
        ControlStatus::NotStarted => 2,
        ControlStatus::Passing => 3,
    };
    let decider = statuses.iter().min_by(|a, b| {
        rank(a.status).cmp(&rank(b.status)).then_with(|| match (a.status, b.status) {
            // Of passing sources, the one that goes stale first.
            (ControlStatus::Passing, ControlStatus::Passing) => a.last_evidence_at.cmp(&b.last_evidence_at),
            _ => std::cmp::Ordering::Equal,
        })
    });
    let (status, decided_by) = match decider {
        Some(s) => (s.status, Some(DecidedBy { kind: s.kind, id: s.id.clone(), reason: s.reason.clone() })),
        None => (ControlStatus::NotStarted, None),
    };
    StatusReport { status, as_of: moment, decided_by, sources: statuses }
}

fn source_status(
    kind: EvidenceKind,
    id: Option<String>,
    frequency: Option<ControlFrequency>,
    evidence: Option<&Evidence>,
    moment: Timestamp,
) -> SourceStatus {
    let what = match &id {
        Some(id) => format!("{kind} {id}"),
        None => "the latest uploaded file".to_owned(),
    };
    let (status, reason) = match evidence {
        None => (ControlStatus::NotStarted, format!("{what} has recorded no evidence yet")),
        Some(e) if e.outcome == EvidenceOutcome::Fail => {
            let why = e.detail.get("reason").and_then(Value::as_str).unwrap_or("it failed");
            (ControlStatus::Failing, format!("{what} failed at {}: {why}", e.collected_at))
        }
        Some(e) => match frequency {
            Some(f) if e.collected_at.plus(f.period()) <= moment => (
                ControlStatus::Stale,
                format!("{what} last passed at {}, longer ago than the control's {f} frequency", e.collected_at),
            ),
            _ => (ControlStatus::Passing, format!("{what} passed at {}", e.collected_at)),
        },
    };
    SourceStatus { kind, id, status, last_evidence_at: evidence.map(|e| e.collected_at), reason }
}

/// The schemas of this module's inputs, as the validation checks them.
#[cfg(feature = "openapi")]
mod schemas {
    crate::openapi::text_fields! {
        name = text(1, super::NAME_MAX);
        description = text(0, super::DESCRIPTION_MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap()
    }

    fn control(frequency: Option<ControlFrequency>) -> Control {
        let input = NewControl { name: Some("Backups".into()), frequency, ..NewControl::default() };
        Control::create(OrganizationId::generate(), input, at("2026-01-01T00:00:00Z")).unwrap()
    }

    fn evidence(control: &Control, source: &EvidenceSource, outcome: EvidenceOutcome, when: &str) -> Evidence {
        Evidence {
            id: EvidenceId::generate(),
            organization_id: control.organization_id.clone(),
            control_id: control.id.clone(),
            kind: source.kind.into(),
            source_id: Some(source.source_id.clone()),
            outcome,
            collected_at: at(when),
            detail: serde_json::json!({"reason": "the check answered 500"}),
            blob_key: None,
            run_id: None,
        }
    }

    fn link(control: &Control, id: String) -> EvidenceSource {
        let input = NewEvidenceSource { source_id: Some(id) };
        EvidenceSource::link(control, input, at("2026-01-01T00:00:00Z")).unwrap()
    }

    #[test]
    fn a_source_id_names_its_kind_by_its_prefix() {
        assert_eq!(SourceKind::of_id(PolicyId::generate().as_str()), Ok(SourceKind::Policy));
        assert_eq!(SourceKind::of_id(AutomationId::generate().as_str()), Ok(SourceKind::Automation));
        assert_eq!(SourceKind::of_id("vnd_x").unwrap_err().field, "sourceId");
    }

    #[test]
    fn no_source_is_not_started_and_decided_by_nobody() {
        let report = status(Some(ControlFrequency::Monthly), &[], None, at("2026-02-01T00:00:00Z"));
        assert_eq!(report.status, ControlStatus::NotStarted);
        assert_eq!(report.decided_by, None);
    }

    #[test]
    fn monthly_evidence_is_stale_exactly_31_days_after_it_was_collected() {
        let control = control(Some(ControlFrequency::Monthly));
        let source = link(&control, TaskId::generate().to_string());
        let pass = evidence(&control, &source, EvidenceOutcome::Pass, "2026-03-01T00:00:00Z");
        let at_moment = |when| status(control.frequency, &[(&source, Some(&pass))], None, at(when));
        assert_eq!(at_moment("2026-03-31T23:59:59Z").status, ControlStatus::Passing);
        assert_eq!(at_moment("2026-04-01T00:00:00Z").status, ControlStatus::Stale);
        // Before the evidence existed the control had not started.
        assert_eq!(at_moment("2026-02-28T00:00:00Z").status, ControlStatus::NotStarted);
    }

    #[test]
    fn quarterly_and_yearly_periods_and_no_frequency_never_stale() {
        let control = control(None);
        let source = link(&control, TaskId::generate().to_string());
        let pass = evidence(&control, &source, EvidenceOutcome::Pass, "2026-01-01T00:00:00Z");
        let report = |frequency, when| status(frequency, &[(&source, Some(&pass))], None, at(when)).status;
        assert_eq!(report(Some(ControlFrequency::Quarterly), "2026-04-02T23:59:59Z"), ControlStatus::Passing);
        assert_eq!(report(Some(ControlFrequency::Quarterly), "2026-04-03T00:00:00Z"), ControlStatus::Stale);
        assert_eq!(report(Some(ControlFrequency::Yearly), "2027-01-01T23:59:59Z"), ControlStatus::Passing);
        assert_eq!(report(Some(ControlFrequency::Yearly), "2027-01-02T00:00:00Z"), ControlStatus::Stale);
        assert_eq!(report(None, "2099-01-01T00:00:00Z"), ControlStatus::Passing);
    }

    #[test]
    fn a_failing_source_decides_over_stale_and_passing_ones() {
        let control = control(Some(ControlFrequency::Monthly));
        let (a, b, c) = (
            link(&control, TaskId::generate().to_string()),
            link(&control, ConnectionId::generate().to_string()),
            link(&control, PolicyId::generate().to_string()),
        );
        let pass = evidence(&control, &a, EvidenceOutcome::Pass, "2026-05-20T00:00:00Z");
        let fail = evidence(&control, &b, EvidenceOutcome::Fail, "2026-05-21T00:00:00Z");
        let old = evidence(&control, &c, EvidenceOutcome::Pass, "2026-01-21T00:00:00Z");
        let report = status(
            control.frequency,
            &[(&a, Some(&pass)), (&b, Some(&fail)), (&c, Some(&old))],
            None,
            at("2026-06-01T00:00:00Z"),
        );
        assert_eq!(report.status, ControlStatus::Failing);
        let decided = report.decided_by.unwrap();
        assert_eq!(decided.id.as_deref(), Some(b.source_id.as_str()));
        assert!(decided.reason.contains("the check answered 500"), "{}", decided.reason);
        let statuses: Vec<_> = report.sources.iter().map(|s| s.status).collect();
        assert_eq!(statuses, [ControlStatus::Passing, ControlStatus::Failing, ControlStatus::Stale]);
    }

    #[test]
    fn of_passing_sources_the_oldest_evidence_decides_and_files_count_as_a_source() {
        let control = control(Some(ControlFrequency::Yearly));
        let task = link(&control, TaskId::generate().to_string());
        let pass = evidence(&control, &task, EvidenceOutcome::Pass, "2026-05-20T00:00:00Z");
        let file = Evidence::file(&control, "report.pdf", "application/pdf", 3, None, at("2026-03-01T00:00:00Z"));
        let report = status(control.frequency, &[(&task, Some(&pass))], Some(&file), at("2026-06-01T00:00:00Z"));
        assert_eq!(report.status, ControlStatus::Passing);
        assert_eq!(report.decided_by.unwrap().kind, EvidenceKind::File);
        // A file alone proves a control with no sources.
        let alone = status(control.frequency, &[], Some(&file), at("2026-06-01T00:00:00Z"));
        assert_eq!(alone.status, ControlStatus::Passing);
    }

    #[test]
    fn links_made_after_the_moment_are_left_out() {
        let control = control(None);
        let mut source = link(&control, TaskId::generate().to_string());
        source.created_at = at("2026-06-01T00:00:00Z");
        let report = status(None, &[(&source, None)], None, at("2026-05-01T00:00:00Z"));
        assert!(report.sources.is_empty());
        assert_eq!(report.status, ControlStatus::NotStarted);
    }

    #[test]
    fn a_removed_link_counts_up_to_its_removal_and_a_link_made_again_starts_over() {
        let control = control(None);
        let mut first = link(&control, TaskId::generate().to_string());
        first.removed_at = Some(at("2026-03-01T00:00:00Z"));
        let pass = evidence(&control, &first, EvidenceOutcome::Pass, "2026-02-01T00:00:00Z");
        let report = |source: &EvidenceSource, when| status(None, &[(source, Some(&pass))], None, at(when));
        assert_eq!(report(&first, "2026-02-28T23:59:59Z").status, ControlStatus::Passing, "in force");
        assert!(report(&first, "2026-03-01T00:00:00Z").sources.is_empty(), "removed at that moment");
        assert!(report(&first, "2026-06-01T00:00:00Z").sources.is_empty(), "removed since");

        // Linked again: the evidence of the first link does not count for the second.
        let mut again = link(&control, first.source_id.clone());
        again.created_at = at("2026-04-01T00:00:00Z");
        let now = report(&again, "2026-06-01T00:00:00Z");
        assert_eq!(now.status, ControlStatus::NotStarted, "{now:?}");
        assert_eq!(now.sources.len(), 1);
    }

    #[test]
    fn in_force_from_its_making_to_its_removal() {
        let (made, removed) = (at("2026-01-01T00:00:00Z"), at("2026-02-01T00:00:00Z"));
        assert!(!in_force(made, Some(removed), at("2025-12-31T23:59:59Z")));
        assert!(in_force(made, Some(removed), made));
        assert!(in_force(made, Some(removed), at("2026-01-31T23:59:59Z")));
        assert!(!in_force(made, Some(removed), removed));
        assert!(in_force(made, None, at("2099-01-01T00:00:00Z")));
    }
}
