//! The audit trail: the entry each change writes with it ([`AuditTrail::change`], one call in each
//! use case), and how each kind of record appears in entries. Reading, proving, verifying and
//! pruning the log is [`crate::audit_log`]; sealing it, [`crate::audit_sequencer`].

use std::sync::Arc;

use compliance_domain::audit::{Actor, ActorType, AuditDraft, JsonText, Redaction, diff, redact_data};
use compliance_domain::evidence::Observation;
use compliance_domain::idempotency::IdempotencyClaim;
use compliance_domain::{AuditEntryId, OrganizationId};
use compliance_ports::{Clock, ResourceRenderer};
use serde_json::Value;

use crate::{AuthType, Principal};

/// How entries of one kind of resource are made: its type in entries, its id, its API form and
/// which of its fields are secret or rich text.
pub struct Subject<T> {
    /// The resource's type in entries (`risk`, `policy`, …).
    pub resource_type: &'static str,
    /// The record's id as entries show it.
    pub id: fn(&T) -> String,
    /// The record as the API shows it.
    pub render: fn(&dyn ResourceRenderer, &T) -> Value,
    /// Which fields never reach an entry (secrets) or reach it shortened (rich text).
    pub redaction: Redaction,
    /// What a change of such a record proves about a control's evidence source, from its action
    /// and the record before and after (`compliance_domain::evidence::of_task`, …); `None` for
    /// records that are no evidence source.
    pub evidence: Option<Evidence<T>>,
}

/// The rule of [`Subject::evidence`].
pub type Evidence<T> = fn(&str, Option<&T>, Option<&T>) -> Option<Observation>;

/// Makes the entries of changes, for the use cases (which hand them to the store with the change).
pub struct AuditTrail {
    renderer: Arc<dyn ResourceRenderer>,
    clock: Arc<dyn Clock>,
}

impl AuditTrail {
    /// Entries rendered by `renderer` and dated by `clock`.
    pub fn new(renderer: Arc<dyn ResourceRenderer>, clock: Arc<dyn Clock>) -> Self {
        Self { renderer, clock }
    }

    /// The entry of `caller`'s change `action` (`risk.updated`) to a `subject` record, made by the
    /// store inside the change's transaction from the record before and after it: `changes` is
    /// their difference, `data` the record as the API shows it after (before, for a delete).
    pub fn change<'a, T>(
        &'a self,
        caller: &'a Principal,
        action: &'static str,
        subject: &'a Subject<T>,
    ) -> impl Fn(Option<&T>, Option<&T>) -> AuditDraft + Send + Sync + 'a {
        self.change_by(Provenance::of(caller), move |_, _| action, subject)
    }

    /// The entry of a change by `provenance`, whose action `action_of` names from the record before
    /// and after it (a member's update is `member.deactivated` when it deactivated them).
    pub fn change_by<'a, T>(
        &'a self,
        provenance: Provenance,
        action_of: impl Fn(Option<&T>, Option<&T>) -> &'static str + Send + Sync + 'a,
        subject: &'a Subject<T>,
    ) -> impl Fn(Option<&T>, Option<&T>) -> AuditDraft + Send + Sync + 'a {
        move |before: Option<&T>, after: Option<&T>| {
            let render = |record: &T| (subject.render)(self.renderer.as_ref(), record);
            let (before_view, after_view) = (before.map(render), after.map(render));
            let record = after.or(before);
            let action = action_of(before, after);
            AuditDraft {
                id: AuditEntryId::generate(),
                organization_id: provenance.organization_id.clone(),
                actor: provenance.actor.clone(),
                action: action.to_owned(),
                resource_type: subject.resource_type.to_owned(),
                resource_id: record.map(subject.id).unwrap_or_default(),
                changes: JsonText::of(&diff(before_view.as_ref(), after_view.as_ref(), &subject.redaction)),
                // The rendered record itself (not a copy), redacted once `changes` has read it.
                data: after_view.or(before_view).map(|view| JsonText::of(&redact_data(view, &subject.redaction))),
                request_id: provenance.request_id.clone(),
                created_at: self.clock.now(),
                idempotency: provenance.idempotency.clone(),
                evidence: subject.evidence.and_then(|observe| observe(action, before, after)),
            }
        }
    }

    /// The entry of `actor`'s change to a record that belongs to a user rather than to one
    /// organization (a session): the store makes one in each organization the user is an active
    /// member of, each with its own id.
    pub(crate) fn change_each<'a, T>(
        &'a self,
        actor: Actor,
        action: &'static str,
        subject: &'a Subject<T>,
    ) -> impl Fn(&OrganizationId, Option<&T>, Option<&T>) -> AuditDraft + Send + Sync + 'a {
        move |org: &OrganizationId, before: Option<&T>, after: Option<&T>| {
            let provenance =
                Provenance { actor: actor.clone(), organization_id: org.clone(), request_id: None, idempotency: None };
            self.change_by(provenance, move |_, _| action, subject)(before, after)
        }
    }
}

/// Where a change comes from: the [`Actor`] an entry says made it (the one name for who did it;
/// a request's [`Principal`] becomes one with [`Provenance::of`]), in which organization's chain,
/// in answer to which request.
#[derive(Debug, Clone)]
pub struct Provenance {
    /// The user, API key or part of the service that made the change.
    pub actor: Actor,
    /// The organization whose chain the entry joins.
    pub organization_id: OrganizationId,
    /// The request's `X-Request-Id`, to find the entry from a log line; `None` outside requests.
    pub request_id: Option<String>,
    /// The request's hold on its `Idempotency-Key`, which the store marks applied with the entry.
    pub idempotency: Option<IdempotencyClaim>,
}

impl Provenance {
    /// The caller of a request, as the origin of its changes.
    pub fn of(caller: &Principal) -> Self {
        Self {
            actor: actor_of(caller),
            organization_id: caller.organization_id.clone(),
            request_id: caller.request_id.clone(),
            idempotency: caller.idempotency.clone(),
        }
    }

    /// The service itself (`part`: `admin`, `sign-in`, `webhook-worker`…) in `org`.
    pub fn system(part: &str, org: &OrganizationId) -> Self {
        Self { actor: Actor::system(part), organization_id: org.clone(), request_id: None, idempotency: None }
    }
}

/// A user acting outside an organization's request (signing in or out).
pub(crate) fn user_actor(user: &compliance_domain::UserId, email: Option<String>) -> Actor {
    Actor { actor_type: ActorType::User, id: user.to_string(), email, api_key_id: None }
}

/// The caller as an entry's actor.
pub(crate) fn actor_of(caller: &Principal) -> Actor {
    let actor_type = match caller.auth_type {
        AuthType::ApiKey => ActorType::ApiKey,
        AuthType::Session => ActorType::User,
    };
    Actor {
        actor_type,
        id: caller.user_id.to_string(),
        email: Some(caller.email.clone()),
        api_key_id: caller.api_key_id.clone(),
    }
}

/// Memberships in entries (`member.*`); their id is the member's id.
pub(crate) const MEMBER: Subject<compliance_domain::people::Member> = Subject {
    resource_type: "member",
    id: |member| member.id.to_string(),
    render: |_, m| {
        serde_json::json!({
            "id": m.id, "organizationId": m.organization_id, "userId": m.user_id, "role": m.role,
            "department": m.department, "isActive": m.is_active,
            "deviceManagerLabelId": m.device_manager_label_id, "createdAt": m.created_at,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: None,
};

/// The action of a membership's change: what matters most of what it changed.
pub(crate) fn member_action(
    before: Option<&compliance_domain::people::Member>,
    after: Option<&compliance_domain::people::Member>,
) -> &'static str {
    match (before, after) {
        (None, _) => "member.created",
        (Some(b), Some(a)) if b.is_active && !a.is_active => "member.deactivated",
        (Some(b), Some(a)) if !b.is_active && a.is_active => "member.reactivated",
        (Some(b), Some(a)) if b.role != a.role => "member.role_changed",
        _ => "member.updated",
    }
}

/// API keys in entries: never the key, nor its hash (the key is shown once, to its maker).
pub(crate) const API_KEY: Subject<compliance_domain::people::ApiKey> = Subject {
    resource_type: "apiKey",
    id: |key| key.id.to_string(),
    render: |_, k| {
        let scopes: Vec<String> = k.scopes.iter().map(|scope| scope.to_string()).collect();
        serde_json::json!({
            "id": k.id, "organizationId": k.organization_id, "name": k.name, "createdBy": k.created_by,
            "createdAt": k.created_at, "expiresAt": k.expires_at, "revokedAt": k.revoked_at, "scopes": scopes,
            "parentId": k.parent_id,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: None,
};

/// Sessions in entries: never the token, nor its hash.
pub(crate) const SESSION: Subject<compliance_domain::people::Session> = Subject {
    resource_type: "session",
    id: |session| session.id.to_string(),
    render: |_, s| serde_json::json!({"id": s.id, "userId": s.user_id, "createdAt": s.created_at, "expiresAt": s.expires_at}),
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: None,
};

pub(crate) const ORGANIZATION: Subject<compliance_domain::organization::Organization> = Subject {
    resource_type: "organization",
    id: |org| org.id.to_string(),
    render: |_, o| {
        serde_json::json!({
            "id": o.id, "name": o.name, "slug": o.slug, "logo": o.logo, "metadata": o.metadata,
            "website": o.website, "onboardingCompleted": o.onboarding_completed, "hasAccess": o.has_access,
            "deviceManagerLabelId": o.device_manager_label_id,
            "isDeviceManagerSetupCompleted": o.is_device_manager_setup_completed,
            "primaryColor": o.primary_color, "createdAt": o.created_at,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &["metadata"] },
    evidence: None,
};

/// Invitations in entries: never the token, nor its hash.
pub(crate) const INVITATION: Subject<compliance_domain::invitation::Invitation> = Subject {
    resource_type: "invitation",
    id: |invitation| invitation.id.to_string(),
    render: |_, i| {
        serde_json::json!({
            "id": i.id, "organizationId": i.organization_id, "email": i.email, "role": i.role,
            "department": i.department, "invitedBy": i.invited_by, "createdAt": i.created_at,
            "expiresAt": i.expires_at, "acceptedAt": i.accepted_at, "acceptedBy": i.accepted_by,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: None,
};

/// Comments in entries: their content is text, shown by length.
pub(crate) const COMMENT: Subject<compliance_domain::comment::Comment> = Subject {
    resource_type: "comment",
    id: |comment| comment.id.to_string(),
    render: |_, c| {
        serde_json::json!({
            "id": c.id, "organizationId": c.organization_id, "entityType": c.entity_type.to_string(),
            "entityId": c.entity_id, "authorId": c.author_id, "content": c.content,
            "contextUrl": c.context_url, "createdAt": c.created_at, "updatedAt": c.updated_at,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &["content"] },
    evidence: None,
};

/// Automations in entries: their instruction and description are text, shown by length.
pub(crate) const AUTOMATION: Subject<compliance_domain::automation::BrowserAutomation> = Subject {
    resource_type: "automation",
    id: |automation| automation.id.to_string(),
    render: |_, a| {
        serde_json::json!({
            "id": a.id, "organizationId": a.organization_id, "taskId": a.task_id, "name": a.name,
            "description": a.description, "targetUrl": a.target_url, "instruction": a.instruction,
            "schedule": a.schedule.as_ref().map(|s| s.as_str()), "isEnabled": a.is_enabled,
            "nextRunAt": a.next_run_at, "createdAt": a.created_at, "updatedAt": a.updated_at,
            "connectionId": a.connection_id, "postResultToTask": a.post_result_to_task,
            "allowedOrigins": a.allowed_origins,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &["instruction", "description"] },
    evidence: Some(|_, before, after| compliance_domain::evidence::of_automation(before, after)),
};

/// An automation's login secret in entries: in the automation's history (`resourceType`
/// `automation`), by its name and when it was set; never its value or ciphertext.
pub(crate) const AUTOMATION_SECRET: Subject<compliance_ports::StoredSecret> = Subject {
    resource_type: "automation",
    id: |secret| {
        secret.owner_id.split_once('/').map_or(secret.owner_id.as_str(), |(automation, _)| automation).to_owned()
    },
    render: |_, s| {
        let name = s.owner_id.split_once('/').map_or("", |(_, name)| name);
        serde_json::json!({"secretName": name, "secretSetAt": s.updated_at})
    },
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: None,
};

/// Webhook endpoints in entries: the row holds no secret in the clear, and none is rendered (a
/// rotation shows as a new `previousSecretExpiresAt`).
pub(crate) const WEBHOOK: Subject<compliance_domain::webhook::Webhook> = Subject {
    resource_type: "webhook",
    id: |webhook| webhook.id.to_string(),
    render: |_, w| {
        serde_json::json!({
            "id": w.id, "url": w.url, "description": w.description, "events": w.events,
            "isEnabled": w.is_enabled, "disabledReason": w.disabled_reason,
            "previousSecretExpiresAt": w.previous_secret_expires_at, "createdAt": w.created_at,
            "updatedAt": w.updated_at,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: None,
};

/// An automation's runs in entries: in the automation's history (`resourceType` `automation`),
/// by the run's id, trigger and outcome.
pub(crate) const AUTOMATION_RUN: Subject<compliance_domain::automation::AutomationRun> = Subject {
    resource_type: "automation",
    id: |run| run.automation_id.to_string(),
    render: |_, r| {
        serde_json::json!({
            "runId": r.id, "automationId": r.automation_id, "trigger": r.trigger, "status": r.status,
            "startedAt": r.started_at, "completedAt": r.completed_at, "error": r.error, "verdict": r.verdict,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: Some(|_, before, after| compliance_domain::evidence::of_run(before, after)),
};

/// A scheduled claim: `automation.run_started` when it queued the run, `automation.run_skipped`
/// when one was still pending or running.
pub(crate) fn scheduled_run_action(
    _: Option<&compliance_domain::automation::AutomationRun>,
    after: Option<&compliance_domain::automation::AutomationRun>,
) -> &'static str {
    match after {
        Some(_) => "automation.run_started",
        None => "automation.run_skipped",
    }
}

/// A run of a connection's checks: queued, finished (with its counts and population's digest) or failed.
pub(crate) const CHECK_RUN: Subject<compliance_domain::check_run::CheckRun> = Subject {
    resource_type: "check_run",
    id: |run| run.id.to_string(),
    render: |_, r| {
        serde_json::json!({
            "id": r.id, "connectionId": r.connection_id, "provider": r.provider, "trigger": r.trigger,
            "status": r.status, "queuedAt": r.queued_at, "startedAt": r.started_at, "finishedAt": r.finished_at,
            "attempts": r.attempts, "error": r.error, "counts": r.counts, "populationDigest": r.population_digest,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: None,
};

/// A finding: its status, and an exception's reason and end.
pub(crate) const FINDING: Subject<compliance_domain::finding::Finding> = Subject {
    resource_type: "finding",
    id: |finding| finding.id.to_string(),
    render: |_, f| {
        serde_json::json!({
            "id": f.id, "checkId": f.check_id, "connectionId": f.connection_id, "resource": f.resource,
            "severity": f.severity, "status": f.status, "dueAt": f.due_at, "taskId": f.task_id,
            "exception": f.exception.as_ref().map(|e| serde_json::json!({
                "reason": e.reason, "expiresAt": e.expires_at, "grantedBy": e.granted_by, "grantedAt": e.granted_at,
            })),
        })
    },
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: None,
};

/// An organization's finding deadlines, in days per severity (`resourceType`
/// `finding_deadlines`, the organization's id).
pub(crate) const FINDING_DEADLINES: Subject<compliance_domain::finding::OrganizationDeadlines> = Subject {
    resource_type: "finding_deadlines",
    id: |kept| kept.organization_id.to_string(),
    render: |_, k| {
        let d = &k.deadlines;
        serde_json::json!({
            "criticalDays": d.critical_days, "highDays": d.high_days, "mediumDays": d.medium_days,
            "lowDays": d.low_days, "updatedAt": k.updated_at,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: None,
};
