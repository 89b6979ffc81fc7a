//! The JSON shapes of responses, with the spec's field names, and [`WireRenderer`], which renders
//! records in them for the audit trail. A crate of its own, with no HTTP library, so that a program
//! that embeds the use cases (docs/embedding.md) writes the same audit entries as the API without
//! depending on actix-web; `compliance-http` re-exports it as `compliance_http::wire`.

#![warn(missing_docs)]

mod checks;
mod policy_diff;
mod renderer;

pub use checks::{CheckRunDto, FindingDeadlinesDto, FindingDto, FindingExceptionDto};
pub use policy_diff::{
    PolicyBlockChangeDto, PolicyBlockDto, PolicyBlockOp, PolicyDiffDraft, PolicyDiffDto, PolicyDiffTo, PolicyWordDto,
    PolicyWordOp,
};
pub use renderer::WireRenderer;

use compliance_app::{AuthType, Principal};
use compliance_domain::comment::CommentView;
use compliance_domain::context::ContextEntry;
use compliance_domain::frequency::Frequency;
use compliance_domain::organization::Organization;
use compliance_domain::people::{Person, User};
use compliance_domain::policy::{Policy, PolicyFrequency, PolicyStatus};
use compliance_domain::risk::{Risk, RiskCategory, RiskStatus, TreatmentStrategy};
use compliance_domain::task::{Task, TaskStatus};
use compliance_domain::vendor::{Vendor, VendorCategory, VendorStatus};
use compliance_domain::{
    AttachmentId, CommentId, Department, Impact, Likelihood, MemberId, OrganizationId, Timestamp, UserId,
};
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

/// How `authType` is spelled: everywhere `api-key`, on the context endpoints `apikey`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthTypeStyle {
    /// Every endpoint but the context ones: an API key is `api-key`.
    Standard,
    /// The context endpoints: an API key is `apikey`.
    Context,
}

/// The caller's `authType` in `style`: `session`, or the API key's spelling.
pub fn auth_type(caller: &Principal, style: AuthTypeStyle) -> &'static str {
    match (caller.auth_type, style) {
        (AuthType::Session, _) => "session",
        (AuthType::ApiKey, AuthTypeStyle::Standard) => "api-key",
        (AuthType::ApiKey, AuthTypeStyle::Context) => "apikey",
    }
}

/// The user the request acts as: the session's user, or the member who created the API key.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AuthenticatedUser<'a> {
    /// The user's id.
    pub id: &'a UserId,
    /// The user's e-mail address.
    pub email: &'a str,
}

impl<'a> AuthenticatedUser<'a> {
    /// The user `caller` acts as.
    pub fn of(caller: &'a Principal) -> Self {
        Self { id: &caller.user_id, email: &caller.email }
    }

    /// Update, create and delete responses name the user only for session auth.
    pub fn for_session(caller: &'a Principal) -> Option<Self> {
        (caller.auth_type == AuthType::Session).then(|| Self::of(caller))
    }
}

/// A context entry: a question about the organization and its answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextEntryDto<'a> {
    /// The entry's id.
    #[schema(value_type = compliance_domain::ContextEntryId)]
    pub id: &'a str,
    /// The organization it belongs to.
    pub organization_id: &'a OrganizationId,
    /// The question.
    pub question: &'a str,
    /// The answer.
    pub answer: &'a str,
    /// Its tags, in the order given.
    pub tags: &'a [String],
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl<'a> From<&'a ContextEntry> for ContextEntryDto<'a> {
    fn from(e: &'a ContextEntry) -> Self {
        Self {
            id: e.id.as_str(),
            organization_id: &e.organization_id,
            question: &e.question,
            answer: &e.answer,
            tags: &e.tags,
            created_at: e.created_at,
            updated_at: e.updated_at,
        }
    }
}

/// A policy.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyDto<'a> {
    /// The policy's id.
    #[schema(value_type = compliance_domain::PolicyId)]
    pub id: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Its description; empty when none.
    pub description: &'a str,
    /// `draft`, `needs_review`, `pending_approval` or `published`.
    pub status: PolicyStatus,
    /// The working copy of its rich text.
    #[schema(value_type = Vec<compliance_domain::openapi::RichTextNode>)]
    pub content: &'a RawValue,
    /// How often it is reviewed.
    pub frequency: PolicyFrequency,
    /// The department it concerns.
    pub department: Department,
    /// Whether members must sign its published version.
    pub is_required_to_sign: bool,
    /// The users who signed its current version.
    pub signed_by: &'a [UserId],
    /// When it is next due for review.
    pub review_date: Timestamp,
    /// Whether it is archived.
    pub is_archived: bool,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// When it was last archived, or `null`.
    pub last_archived_at: Option<Timestamp>,
    /// When a version was last published, or `null`.
    pub last_published_at: Option<Timestamp>,
    /// The organization it belongs to.
    pub organization_id: &'a OrganizationId,
    /// The member responsible for it, or `null`.
    pub assignee_id: Option<&'a MemberId>,
    /// The member who approves its submissions, or `null`.
    pub approver_id: Option<&'a MemberId>,
    /// The template it was made from, or `null`.
    pub policy_template_id: Option<&'a str>,
    /// The number of the published version readers and signers see; `null` before the first
    /// publish (see `GET /v1/policies/{id}/versions/{n}`).
    #[schema(required = true)]
    pub current_version: Option<i32>,
    /// While `pending_approval`: the user who submitted it, and their note.
    #[schema(value_type = Option<UserId>, required = true)]
    pub submitted_by: Option<&'a UserId>,
    /// The submitter's note while `pending_approval`, else `null`.
    #[schema(required = true)]
    pub change_note: Option<&'a str>,
    /// Why the approver returned the last submission to draft; `null` once submitted again.
    #[schema(required = true)]
    pub rejection_reason: Option<&'a str>,
    /// The library template it was made from by an adoption (`LIB-AC-01`), or `null` (read-only).
    #[schema(required = true)]
    pub library_id: Option<&'a str>,
    /// That template's version when it was made (or last updated from it), or `null` (read-only).
    #[schema(required = true)]
    pub library_version: Option<u32>,
}

impl<'a> From<&'a Policy> for PolicyDto<'a> {
    fn from(p: &'a Policy) -> Self {
        Self {
            id: p.id.as_str(),
            name: &p.name,
            description: &p.description,
            status: p.status,
            content: p.content.json(),
            frequency: p.frequency,
            department: p.department,
            is_required_to_sign: p.is_required_to_sign,
            signed_by: &p.signed_by,
            review_date: p.review_date,
            is_archived: p.is_archived,
            created_at: p.created_at,
            updated_at: p.updated_at,
            last_archived_at: p.last_archived_at,
            last_published_at: p.last_published_at,
            organization_id: &p.organization_id,
            assignee_id: p.assignee_id.as_ref(),
            approver_id: p.approver_id.as_ref(),
            policy_template_id: p.policy_template_id.as_deref(),
            current_version: (p.current_version > 0).then_some(p.current_version),
            submitted_by: p.submitted_by.as_ref(),
            change_note: p.change_note.as_deref(),
            rejection_reason: p.rejection_reason.as_deref(),
            library_id: p.library.as_ref().map(|l| l.id.as_str()),
            library_version: p.library.as_ref().map(|l| l.version),
        }
    }
}

/// A user, as people show it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = User)]
#[serde(rename_all = "camelCase")]
pub struct UserDto<'a> {
    /// The user's id.
    pub id: &'a UserId,
    /// Their name.
    pub name: &'a str,
    /// Their e-mail address, lowercase.
    pub email: &'a str,
    /// Whether a sign-in provider vouched for the address.
    pub email_verified: bool,
    /// A URL, or `null`.
    #[schema(required = true)]
    pub image: Option<&'a str>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// When they last signed in, or `null`; in a person, when a session of theirs last came to
    /// this organization (never a sign-in to use another organization).
    #[schema(required = true)]
    pub last_login: Option<Timestamp>,
}

impl<'a> From<&'a User> for UserDto<'a> {
    fn from(u: &'a User) -> Self {
        Self {
            id: &u.id,
            name: &u.name,
            email: &u.email,
            email_verified: u.email_verified,
            image: u.image.as_deref(),
            created_at: u.created_at,
            updated_at: u.updated_at,
            last_login: u.last_login,
        }
    }
}

/// A person: a user's membership in the organization. `isActive: false` means deactivated.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Member)]
#[serde(rename_all = "camelCase")]
pub struct MemberDto<'a> {
    /// The membership's id.
    pub id: &'a MemberId,
    /// The organization it belongs to.
    pub organization_id: &'a OrganizationId,
    /// The user.
    pub user_id: &'a UserId,
    /// Its roles, as written (`owner`, `admin`, `auditor`, `employee`, comma-separated).
    pub role: &'a str,
    /// When they joined.
    pub created_at: Timestamp,
    /// Their department.
    pub department: Department,
    /// Whether the membership counts; an inactive member cannot act.
    pub is_active: bool,
    /// The device management system's label of their devices, or `null`.
    #[schema(required = true)]
    pub device_manager_label_id: Option<i64>,
    /// The user.
    pub user: UserDto<'a>,
}

impl<'a> From<&'a Person> for MemberDto<'a> {
    fn from(p: &'a Person) -> Self {
        let m = &p.member;
        Self {
            id: &m.id,
            organization_id: &m.organization_id,
            user_id: &m.user_id,
            role: &m.role,
            created_at: m.created_at,
            department: m.department,
            is_active: m.is_active,
            device_manager_label_id: m.device_manager_label_id,
            // The organization's own view of the user's sign-ins, not the user's global one.
            user: UserDto { last_login: m.last_login, ..UserDto::from(&p.user) },
        }
    }
}

/// A vendor; list items leave out `organizationId`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VendorDto<'a> {
    /// The vendor's id.
    #[schema(value_type = compliance_domain::VendorId)]
    pub id: &'a str,
    /// Its name.
    pub name: &'a str,
    /// What the vendor does for the organization.
    pub description: &'a str,
    /// What it provides.
    pub category: VendorCategory,
    /// How far its assessment is.
    pub status: VendorStatus,
    /// How likely a problem is before controls.
    pub inherent_probability: Likelihood,
    /// How bad a problem would be before controls.
    pub inherent_impact: Impact,
    /// How likely a problem is after controls.
    pub residual_probability: Likelihood,
    /// How bad a problem would be after controls.
    pub residual_impact: Impact,
    /// An http(s) URL, or `null`.
    pub website: Option<&'a str>,
    /// The organization it belongs to (absent from list items).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization_id: Option<&'a OrganizationId>,
    /// The member responsible for it, or `null`.
    pub assignee_id: Option<&'a MemberId>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl<'a> VendorDto<'a> {
    /// The vendor as the API shows it; `detail` for a single vendor, else as a list item.
    pub fn new(v: &'a Vendor, detail: bool) -> Self {
        Self {
            id: v.id.as_str(),
            name: &v.name,
            description: &v.description,
            category: v.category,
            status: v.status,
            inherent_probability: v.inherent_probability,
            inherent_impact: v.inherent_impact,
            residual_probability: v.residual_probability,
            residual_impact: v.residual_impact,
            website: v.website.as_deref(),
            organization_id: detail.then_some(&v.organization_id),
            assignee_id: v.assignee_id.as_ref(),
            created_at: v.created_at,
            updated_at: v.updated_at,
        }
    }
}

/// A risk; list items leave out the fields the spec marks "absent from list items". The outer
/// `Option` of a detail-only field is absent-or-present; the inner one is the value's nullability.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RiskDto<'a> {
    /// The risk's id.
    #[schema(value_type = compliance_domain::RiskId)]
    pub id: &'a str,
    /// Its title.
    pub title: &'a str,
    /// What could happen.
    pub description: &'a str,
    /// What kind of risk.
    pub category: RiskCategory,
    /// The department it concerns, or `null` (absent from list items).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub department: Option<Option<Department>>,
    /// Where it stands.
    pub status: RiskStatus,
    /// How likely it is before treatment.
    pub likelihood: Likelihood,
    /// How bad it would be before treatment.
    pub impact: Impact,
    /// How likely it is after treatment (absent from list items).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub residual_likelihood: Option<Likelihood>,
    /// How bad it would be after treatment (absent from list items).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub residual_impact: Option<Impact>,
    /// How the treatment is carried out, or `null` (absent from list items).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub treatment_strategy_description: Option<Option<&'a str>>,
    /// How the risk is treated.
    pub treatment_strategy: TreatmentStrategy,
    /// The organization it belongs to (absent from list items).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization_id: Option<&'a OrganizationId>,
    /// The member responsible for it, or `null`.
    pub assignee_id: Option<&'a MemberId>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl<'a> RiskDto<'a> {
    /// The risk as the API shows it; `detail` for a single risk, else as a list item.
    pub fn new(r: &'a Risk, detail: bool) -> Self {
        Self {
            id: r.id.as_str(),
            title: &r.title,
            description: &r.description,
            category: r.category,
            department: detail.then_some(r.department),
            status: r.status,
            likelihood: r.likelihood,
            impact: r.impact,
            residual_likelihood: detail.then_some(r.residual_likelihood),
            residual_impact: detail.then_some(r.residual_impact),
            treatment_strategy_description: detail.then_some(r.treatment_strategy_description.as_deref()),
            treatment_strategy: r.treatment_strategy,
            organization_id: detail.then_some(&r.organization_id),
            assignee_id: r.assignee_id.as_ref(),
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// A task.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskDto<'a> {
    /// The task's id.
    #[schema(value_type = compliance_domain::TaskId)]
    pub id: &'a str,
    /// The organization it belongs to.
    pub organization_id: &'a OrganizationId,
    /// Its title.
    pub title: &'a str,
    /// Its description; empty when none.
    pub description: &'a str,
    /// Where it stands.
    pub status: TaskStatus,
    /// The member responsible for it, or `null`.
    pub assignee_id: Option<&'a MemberId>,
    /// The member who approves it when it is submitted, or `null` (then it is marked done directly).
    pub approver_id: Option<&'a MemberId>,
    /// How often it recurs, or `null` for one-off work.
    pub frequency: Option<Frequency>,
    /// When it is due, or `null`.
    pub due_at: Option<Timestamp>,
    /// When it last became `done`, or `null` (read-only).
    pub last_completed_at: Option<Timestamp>,
    /// Why its approver last rejected it, or `null` (read-only; cleared when it is submitted again).
    pub rejection_reason: Option<&'a str>,
    /// The finding it was made to fix (`POST /v1/findings/{id}/task`), or `null` (read-only).
    #[schema(value_type = Option<compliance_domain::FindingId>)]
    pub finding_id: Option<&'a str>,
    /// The library template it was made from by an adoption (`LIB-AC-01`), or `null` (read-only).
    #[schema(required = true)]
    pub library_id: Option<&'a str>,
    /// That template's version when it was made (or last updated from it), or `null` (read-only).
    #[schema(required = true)]
    pub library_version: Option<u32>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl<'a> From<&'a Task> for TaskDto<'a> {
    fn from(t: &'a Task) -> Self {
        Self {
            id: t.id.as_str(),
            organization_id: &t.organization_id,
            title: &t.title,
            description: &t.description,
            status: t.status,
            assignee_id: t.assignee_id.as_ref(),
            approver_id: t.approver_id.as_ref(),
            frequency: t.frequency,
            due_at: t.due_at,
            last_completed_at: t.last_completed_at,
            rejection_reason: t.rejection_reason.as_deref(),
            finding_id: t.finding_id.as_ref().map(|f| f.as_str()),
            library_id: t.library.as_ref().map(|l| l.id.as_str()),
            library_version: t.library.as_ref().map(|l| l.version),
            created_at: t.created_at,
            updated_at: t.updated_at,
        }
    }
}

/// A comment as the spec shows it: attachments carry metadata only.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Comment)]
#[serde(rename_all = "camelCase")]
pub struct CommentDto<'a> {
    /// The comment's id.
    pub id: &'a CommentId,
    /// Its text.
    pub content: &'a str,
    /// Who wrote it.
    pub author: AuthorDto<'a>,
    /// Its attachments, in upload order.
    pub attachments: Vec<AttachmentDto<'a>>,
    /// When it was created.
    pub created_at: Timestamp,
}

/// The author of a comment: `id` is the user id; `deactivated` once their membership is inactive.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = CommentAuthor)]
pub struct AuthorDto<'a> {
    /// The author's user id.
    pub id: &'a UserId,
    /// Their name.
    pub name: &'a str,
    /// Their e-mail address.
    pub email: &'a str,
    /// A picture URL, or `null`.
    #[schema(required = true)]
    pub image: Option<&'a str>,
    /// Whether their membership is inactive.
    pub deactivated: bool,
}

/// An attachment's metadata; its bytes are fetched through a signed download link.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Attachment)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentDto<'a> {
    /// The attachment's id.
    pub id: &'a AttachmentId,
    /// Its file name.
    pub name: &'a str,
    /// Its media type (`image/png`, …).
    #[serde(rename = "type")]
    pub media_type: &'a str,
    /// When it was uploaded.
    pub created_at: Timestamp,
}

impl<'a> From<&'a CommentView> for CommentDto<'a> {
    fn from(view: &'a CommentView) -> Self {
        let author = &view.author;
        Self {
            id: &view.comment.id,
            content: &view.comment.content,
            author: AuthorDto {
                id: &author.id,
                name: &author.name,
                email: &author.email,
                image: author.image.as_deref(),
                deactivated: !view.author_active,
            },
            attachments: view
                .attachments
                .iter()
                .map(|a| AttachmentDto {
                    id: &a.id,
                    name: &a.name,
                    media_type: &a.media_type,
                    created_at: a.created_at,
                })
                .collect(),
            created_at: view.comment.created_at,
        }
    }
}

/// The organization (tenant).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Organization)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationDto<'a> {
    /// The organization's id.
    pub id: &'a OrganizationId,
    /// Its name.
    pub name: &'a str,
    /// Its unique slug.
    pub slug: &'a str,
    /// A URL, or `null`.
    #[schema(required = true)]
    pub logo: Option<&'a str>,
    /// JSON text, or `null`.
    #[schema(required = true)]
    pub metadata: Option<&'a str>,
    /// A URL, or `null`.
    #[schema(required = true)]
    pub website: Option<&'a str>,
    /// Whether the client finished its onboarding.
    pub onboarding_completed: bool,
    /// Whether the organization may use the product.
    pub has_access: bool,
    /// The device management system's label of its devices, or `null`.
    #[schema(required = true)]
    pub device_manager_label_id: Option<i64>,
    /// Whether the device management set-up is done.
    pub is_device_manager_setup_completed: bool,
    /// `#rgb` or `#rrggbb`, or `null`.
    #[schema(required = true)]
    pub primary_color: Option<&'a str>,
    /// When it was created.
    pub created_at: Timestamp,
}

impl<'a> From<&'a Organization> for OrganizationDto<'a> {
    fn from(o: &'a Organization) -> Self {
        Self {
            id: &o.id,
            name: &o.name,
            slug: &o.slug,
            logo: o.logo.as_deref(),
            metadata: o.metadata.as_deref(),
            website: o.website.as_deref(),
            onboarding_completed: o.onboarding_completed,
            has_access: o.has_access,
            device_manager_label_id: o.device_manager_label_id,
            is_device_manager_setup_completed: o.is_device_manager_setup_completed,
            primary_color: o.primary_color.as_deref(),
            created_at: o.created_at,
        }
    }
}

/// A browser automation. `description` and `schedule` are `null` when not set; `nextRunAt` says
/// when the schedule fires next (not in the spec's table; useful and harmless).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Automation)]
#[serde(rename_all = "camelCase")]
pub struct AutomationDto<'a> {
    /// The automation's id.
    #[schema(value_type = compliance_domain::AutomationId)]
    pub id: &'a compliance_domain::AutomationId,
    /// Its name.
    #[schema(value_type = String)]
    pub name: &'a str,
    /// The task whose evidence it gathers.
    #[schema(value_type = compliance_domain::TaskId)]
    pub task_id: &'a compliance_domain::TaskId,
    /// The URL a run opens first.
    #[schema(value_type = String)]
    pub target_url: &'a str,
    /// What a run does there: a step list or free text.
    #[schema(value_type = String)]
    pub instruction: &'a str,
    /// Whether its schedule fires.
    pub is_enabled: bool,
    /// Its description, or `null`.
    #[schema(value_type = Option<String>, required = true)]
    pub description: Option<&'a str>,
    /// The cron expression as given; `null` without a schedule.
    #[schema(value_type = Option<String>, required = true)]
    pub schedule: Option<&'a str>,
    /// When the schedule fires next; `null` without a schedule or while disabled.
    #[schema(value_type = Option<Timestamp>, required = true)]
    pub next_run_at: Option<Timestamp>,
    /// How a run carries out `instruction`: `steps` when it is a step list (its first non-empty
    /// line starts with a step keyword and holds a quoted text, or is `screenshot`), `agent` for
    /// free text.
    pub executor: compliance_domain::automation::Executor,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// The integration connection whose credential fields `type secret` may read; `null` for none.
    #[schema(value_type = Option<compliance_domain::ConnectionId>, required = true)]
    pub connection_id: Option<&'a compliance_domain::ConnectionId>,
    /// Whether a completed run posts its verdict and final screenshot as a comment on the task.
    pub post_result_to_task: bool,
    /// Origins besides the origin of `targetUrl` that a run's page may go to; a navigation
    /// anywhere else is refused and reported by the run.
    #[schema(value_type = Vec<String>)]
    pub allowed_origins: &'a [String],
}

impl<'a> From<&'a compliance_domain::automation::BrowserAutomation> for AutomationDto<'a> {
    fn from(a: &'a compliance_domain::automation::BrowserAutomation) -> Self {
        Self {
            id: &a.id,
            name: &a.name,
            task_id: &a.task_id,
            target_url: &a.target_url,
            instruction: &a.instruction,
            is_enabled: a.is_enabled,
            description: a.description.as_deref(),
            schedule: a.schedule.as_ref().map(|s| s.as_str()),
            next_run_at: a.next_run_at,
            executor: a.executor(),
            created_at: a.created_at,
            updated_at: a.updated_at,
            connection_id: a.connection_id.as_ref(),
            post_result_to_task: a.post_result_to_task,
            allowed_origins: &a.allowed_origins,
        }
    }
}

/// One step a run carried out: a line of the step list, or one tool call of the agent.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = RunStep)]
#[serde(rename_all = "camelCase")]
pub struct RunStepDto<'a> {
    /// 0-based, in the order carried out.
    pub index: u32,
    /// The step's keyword (`go to`, `click`, `click css`, `type`, `type secret`, `press`,
    /// `wait for`, `expect text`, `expect no text`, `expect url contains`, `screenshot`) or the
    /// agent's tool.
    #[schema(value_type = String)]
    pub action: &'a str,
    /// What the step acted on (a URL, a text, a selector, a field, a key); never a typed value.
    #[schema(value_type = Option<String>, required = true)]
    pub target: Option<&'a str>,
    /// How the step went.
    pub outcome: compliance_domain::automation::StepOutcome,
    /// What happened, fit to show; never a secret.
    #[schema(value_type = String)]
    pub detail: &'a str,
    /// How long it took, in milliseconds.
    pub duration_ms: i64,
    /// A signed link to the PNG taken after the step, valid for a limited time; `null` for steps
    /// that did not change the page (waits and expectations) or failed.
    #[schema(value_type = Option<String>, required = true)]
    pub screenshot_url: Option<&'a str>,
}

/// A secret of an automation: its name and when it was set. The value is write-only.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = AutomationSecret)]
#[serde(rename_all = "camelCase")]
pub struct SecretDto<'a> {
    /// The name steps refer to it by; its value is never shown.
    #[schema(value_type = String, pattern = "^[A-Za-z][A-Za-z0-9_]{0,63}$")]
    pub name: &'a str,
    /// When its value was last set.
    pub updated_at: Timestamp,
}

impl<'a> From<&'a compliance_app::SecretView> for SecretDto<'a> {
    fn from(view: &'a compliance_app::SecretView) -> Self {
        Self { name: view.name.as_str(), updated_at: view.updated_at }
    }
}

/// An automation run, its screenshot as a signed, expiring link.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Run)]
#[serde(rename_all = "camelCase")]
pub struct RunDto<'a> {
    /// The run's id.
    #[schema(value_type = compliance_domain::AutomationRunId)]
    pub id: &'a compliance_domain::AutomationRunId,
    /// The automation it ran.
    #[schema(value_type = compliance_domain::AutomationId)]
    pub automation_id: &'a compliance_domain::AutomationId,
    /// `pending`, `running`, `completed` or `failed`.
    pub status: compliance_domain::automation::RunStatus,
    /// What started it: `manual` or `schedule`.
    pub trigger: compliance_domain::automation::RunTrigger,
    /// When it was queued.
    pub created_at: Timestamp,
    /// When a worker started it, or `null`.
    #[schema(value_type = Option<Timestamp>, required = true)]
    pub started_at: Option<Timestamp>,
    /// When it finished, or `null`.
    #[schema(value_type = Option<Timestamp>, required = true)]
    pub completed_at: Option<Timestamp>,
    /// From start to finish in milliseconds, or `null`.
    #[schema(value_type = Option<i64>, required = true)]
    pub duration_ms: Option<i64>,
    /// A signed link to the PNG, valid for a limited time; `null` until there is a screenshot.
    #[schema(value_type = Option<String>, required = true)]
    pub screenshot_url: Option<&'a str>,
    /// Why the run failed, fit to show; `null` unless it failed.
    #[schema(value_type = Option<String>, required = true)]
    pub error: Option<&'a str>,
    /// The judgement of a completed run: `passed` when every `expect` held (or the agent finished
    /// `passed`), else `failed` with the reason; `null` unless completed.
    #[schema(value_type = Option<compliance_domain::automation::Verdict>, required = true)]
    pub verdict: Option<&'a compliance_domain::automation::Verdict>,
    /// What the run carried out, in order.
    pub steps: Vec<RunStepDto<'a>>,
}

impl<'a> From<&'a compliance_app::RunView> for RunDto<'a> {
    fn from(view: &'a compliance_app::RunView) -> Self {
        let r = &view.run;
        Self {
            id: &r.id,
            automation_id: &r.automation_id,
            status: r.status,
            trigger: r.trigger,
            created_at: r.created_at,
            started_at: r.started_at,
            completed_at: r.completed_at,
            duration_ms: r.duration_ms,
            screenshot_url: view.screenshot_url.as_deref(),
            error: r.error.as_deref(),
            verdict: r.verdict.as_ref(),
            steps: r
                .steps
                .iter()
                .enumerate()
                .map(|(i, step)| RunStepDto {
                    index: step.index,
                    action: &step.action,
                    target: step.target.as_deref(),
                    outcome: step.outcome,
                    detail: &step.detail,
                    duration_ms: step.duration_ms,
                    screenshot_url: view.step_screenshot_urls.get(i).and_then(|url| url.as_deref()),
                })
                .collect(),
        }
    }
}
