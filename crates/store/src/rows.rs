//! Rows as the tables hold them, and their conversion to and from domain records.

use compliance_domain::comment::{Attachment, Comment};
use compliance_domain::context::ContextEntry;
use compliance_domain::organization::Organization;
use compliance_domain::people::{ApiKey, Member, Person, Session, User};
use compliance_domain::policy::{Policy, RichText};
use compliance_domain::risk::Risk;
use compliance_domain::task::Task;
use compliance_domain::vendor::Vendor;
use compliance_domain::{Id, IdKind, Timestamp};
use compliance_ports::RepoError;
use diesel::prelude::*;
use time::PrimitiveDateTime;

use crate::error::corrupt;
use crate::schema::{
    api_keys, attachments, comments, context_entries, members, organizations, policies, risks, sessions, tasks, users,
    vendors,
};

pub(crate) fn naive(ts: Timestamp) -> PrimitiveDateTime {
    ts.to_utc_naive()
}

fn instant(naive: PrimitiveDateTime) -> Timestamp {
    Timestamp::from_utc_naive(naive)
}

/// An optional instant as both backends store it.
pub(crate) fn optional_naive(ts: Option<Timestamp>) -> Option<PrimitiveDateTime> {
    ts.map(naive)
}

pub(crate) fn optional_instant(naive: Option<PrimitiveDateTime>) -> Option<Timestamp> {
    naive.map(instant)
}

/// A stored id of kind `K`; malformed is a corrupt row of `table`.
pub(crate) fn id<K: IdKind>(table: &str, text: String) -> Result<Id<K>, RepoError> {
    Id::parse_owned(text).map_err(|error| corrupt(table, error))
}

fn optional_id<K: IdKind>(table: &str, text: Option<String>) -> Result<Option<Id<K>>, RepoError> {
    text.map(|t| id(table, t)).transpose()
}

/// A stored value parsed with `FromStr` (enums, schedules); unparsable is a corrupt row of `table`.
pub(crate) fn value<T: std::str::FromStr>(table: &str, text: &str) -> Result<T, RepoError>
where
    T::Err: std::fmt::Display,
{
    text.parse().map_err(|error| corrupt(table, error))
}

fn json<T: serde::de::DeserializeOwned>(table: &str, text: &str) -> Result<T, RepoError> {
    serde_json::from_str(text).map_err(|error| corrupt(table, error))
}

pub(crate) fn json_text<T: serde::Serialize>(value: &T) -> String {
    // Serialising plain strings and JSON values cannot fail.
    serde_json::to_string(value).unwrap_or_else(|_| "[]".to_owned())
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = organizations, treat_none_as_null = true)]
pub struct OrganizationRow {
    id: String,
    name: String,
    slug: String,
    logo: Option<String>,
    metadata: Option<String>,
    website: Option<String>,
    onboarding_completed: bool,
    has_access: bool,
    device_manager_label_id: Option<i64>,
    is_device_manager_setup_completed: bool,
    primary_color: Option<String>,
    created_at: PrimitiveDateTime,
}

impl From<&Organization> for OrganizationRow {
    fn from(o: &Organization) -> Self {
        Self {
            id: o.id.to_string(),
            name: o.name.clone(),
            slug: o.slug.clone(),
            logo: o.logo.clone(),
            metadata: o.metadata.clone(),
            website: o.website.clone(),
            onboarding_completed: o.onboarding_completed,
            has_access: o.has_access,
            device_manager_label_id: o.device_manager_label_id,
            is_device_manager_setup_completed: o.is_device_manager_setup_completed,
            primary_color: o.primary_color.clone(),
            created_at: naive(o.created_at),
        }
    }
}

impl TryFrom<OrganizationRow> for Organization {
    type Error = RepoError;
    fn try_from(r: OrganizationRow) -> Result<Self, RepoError> {
        Ok(Self {
            id: id("organizations", r.id)?,
            name: r.name,
            slug: r.slug,
            logo: r.logo,
            metadata: r.metadata,
            website: r.website,
            onboarding_completed: r.onboarding_completed,
            has_access: r.has_access,
            device_manager_label_id: r.device_manager_label_id,
            is_device_manager_setup_completed: r.is_device_manager_setup_completed,
            primary_color: r.primary_color,
            created_at: instant(r.created_at),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = users)]
pub struct UserRow {
    id: String,
    name: String,
    email: String,
    email_verified: bool,
    image: Option<String>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
    last_login: Option<PrimitiveDateTime>,
}

impl From<&User> for UserRow {
    fn from(u: &User) -> Self {
        Self {
            id: u.id.to_string(),
            name: u.name.clone(),
            email: u.email.clone(),
            email_verified: u.email_verified,
            image: u.image.clone(),
            created_at: naive(u.created_at),
            updated_at: naive(u.updated_at),
            last_login: u.last_login.map(naive),
        }
    }
}

impl TryFrom<UserRow> for User {
    type Error = RepoError;
    fn try_from(r: UserRow) -> Result<Self, RepoError> {
        Ok(Self {
            id: id("users", r.id)?,
            name: r.name,
            email: r.email,
            email_verified: r.email_verified,
            image: r.image,
            created_at: instant(r.created_at),
            updated_at: instant(r.updated_at),
            last_login: r.last_login.map(instant),
        })
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = members, treat_none_as_null = true)]
pub struct MemberRow {
    id: String,
    organization_id: String,
    user_id: String,
    role: String,
    department: String,
    is_active: bool,
    device_manager_label_id: Option<i64>,
    created_at: PrimitiveDateTime,
}

impl From<&Member> for MemberRow {
    fn from(m: &Member) -> Self {
        Self {
            id: m.id.to_string(),
            organization_id: m.organization_id.to_string(),
            user_id: m.user_id.to_string(),
            role: m.role.clone(),
            department: m.department.to_string(),
            is_active: m.is_active,
            device_manager_label_id: m.device_manager_label_id,
            created_at: naive(m.created_at),
        }
    }
}

impl TryFrom<MemberRow> for Member {
    type Error = RepoError;
    fn try_from(r: MemberRow) -> Result<Self, RepoError> {
        Ok(Self {
            id: id("members", r.id)?,
            organization_id: id("members", r.organization_id)?,
            user_id: id("members", r.user_id)?,
            role: r.role,
            department: value("members", &r.department)?,
            is_active: r.is_active,
            device_manager_label_id: r.device_manager_label_id,
            created_at: instant(r.created_at),
        })
    }
}

pub fn person((member, user): (MemberRow, UserRow)) -> Result<Person, RepoError> {
    Ok(Person { member: member.try_into()?, user: user.try_into()? })
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = api_keys)]
pub struct ApiKeyRow {
    id: String,
    organization_id: String,
    name: String,
    key_hash: String,
    created_by: String,
    created_at: PrimitiveDateTime,
    expires_at: Option<PrimitiveDateTime>,
    revoked_at: Option<PrimitiveDateTime>,
    last_used_at: Option<PrimitiveDateTime>,
}

impl From<&ApiKey> for ApiKeyRow {
    fn from(k: &ApiKey) -> Self {
        Self {
            id: k.id.to_string(),
            organization_id: k.organization_id.to_string(),
            name: k.name.clone(),
            key_hash: k.key_hash.clone(),
            created_by: k.created_by.to_string(),
            created_at: naive(k.created_at),
            expires_at: k.expires_at.map(naive),
            revoked_at: k.revoked_at.map(naive),
            last_used_at: k.last_used_at.map(naive),
        }
    }
}

impl TryFrom<ApiKeyRow> for ApiKey {
    type Error = RepoError;
    fn try_from(r: ApiKeyRow) -> Result<Self, RepoError> {
        Ok(Self {
            id: id("api_keys", r.id)?,
            organization_id: id("api_keys", r.organization_id)?,
            name: r.name,
            key_hash: r.key_hash,
            created_by: id("api_keys", r.created_by)?,
            created_at: instant(r.created_at),
            expires_at: r.expires_at.map(instant),
            revoked_at: r.revoked_at.map(instant),
            last_used_at: r.last_used_at.map(instant),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = sessions)]
pub struct SessionRow {
    id: String,
    user_id: String,
    token_hash: String,
    created_at: PrimitiveDateTime,
    expires_at: PrimitiveDateTime,
}

impl From<&Session> for SessionRow {
    fn from(s: &Session) -> Self {
        Self {
            id: s.id.to_string(),
            user_id: s.user_id.to_string(),
            token_hash: s.token_hash.clone(),
            created_at: naive(s.created_at),
            expires_at: naive(s.expires_at),
        }
    }
}

impl TryFrom<SessionRow> for Session {
    type Error = RepoError;
    fn try_from(r: SessionRow) -> Result<Self, RepoError> {
        Ok(Self {
            id: id("sessions", r.id)?,
            user_id: id("sessions", r.user_id)?,
            token_hash: r.token_hash,
            created_at: instant(r.created_at),
            expires_at: instant(r.expires_at),
        })
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = context_entries, treat_none_as_null = true)]
pub struct ContextEntryRow {
    id: String,
    organization_id: String,
    question: String,
    answer: String,
    tags: String,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

impl From<&ContextEntry> for ContextEntryRow {
    fn from(e: &ContextEntry) -> Self {
        Self {
            id: e.id.to_string(),
            organization_id: e.organization_id.to_string(),
            question: e.question.clone(),
            answer: e.answer.clone(),
            tags: json_text(&e.tags),
            created_at: naive(e.created_at),
            updated_at: naive(e.updated_at),
        }
    }
}

impl TryFrom<ContextEntryRow> for ContextEntry {
    type Error = RepoError;
    fn try_from(r: ContextEntryRow) -> Result<Self, RepoError> {
        Ok(Self {
            id: id("context_entries", r.id)?,
            organization_id: id("context_entries", r.organization_id)?,
            question: r.question,
            answer: r.answer,
            tags: json("context_entries", &r.tags)?,
            created_at: instant(r.created_at),
            updated_at: instant(r.updated_at),
        })
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = policies, treat_none_as_null = true)]
pub struct PolicyRow {
    id: String,
    organization_id: String,
    name: String,
    description: String,
    status: String,
    content: String,
    frequency: String,
    department: String,
    is_required_to_sign: bool,
    signed_by: String,
    review_date: PrimitiveDateTime,
    is_archived: bool,
    last_archived_at: Option<PrimitiveDateTime>,
    last_published_at: Option<PrimitiveDateTime>,
    assignee_id: Option<String>,
    approver_id: Option<String>,
    policy_template_id: Option<String>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

impl From<&Policy> for PolicyRow {
    fn from(p: &Policy) -> Self {
        Self {
            id: p.id.to_string(),
            organization_id: p.organization_id.to_string(),
            name: p.name.clone(),
            description: p.description.clone(),
            status: p.status.to_string(),
            content: p.content.json().get().to_owned(),
            frequency: p.frequency.to_string(),
            department: p.department.to_string(),
            is_required_to_sign: p.is_required_to_sign,
            signed_by: json_text(&p.signed_by),
            review_date: naive(p.review_date),
            is_archived: p.is_archived,
            last_archived_at: p.last_archived_at.map(naive),
            last_published_at: p.last_published_at.map(naive),
            assignee_id: p.assignee_id.as_ref().map(ToString::to_string),
            approver_id: p.approver_id.as_ref().map(ToString::to_string),
            policy_template_id: p.policy_template_id.clone(),
            created_at: naive(p.created_at),
            updated_at: naive(p.updated_at),
        }
    }
}

impl TryFrom<PolicyRow> for Policy {
    type Error = RepoError;
    fn try_from(r: PolicyRow) -> Result<Self, RepoError> {
        const T: &str = "policies";
        Ok(Self {
            id: id(T, r.id)?,
            organization_id: id(T, r.organization_id)?,
            name: r.name,
            description: r.description,
            status: value(T, &r.status)?,
            content: RichText::from_stored(r.content).map_err(|error| corrupt(T, error))?,
            frequency: value(T, &r.frequency)?,
            department: value(T, &r.department)?,
            is_required_to_sign: r.is_required_to_sign,
            signed_by: json(T, &r.signed_by)?,
            review_date: instant(r.review_date),
            is_archived: r.is_archived,
            last_archived_at: r.last_archived_at.map(instant),
            last_published_at: r.last_published_at.map(instant),
            assignee_id: optional_id(T, r.assignee_id)?,
            approver_id: optional_id(T, r.approver_id)?,
            policy_template_id: r.policy_template_id,
            created_at: instant(r.created_at),
            updated_at: instant(r.updated_at),
        })
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = vendors, treat_none_as_null = true)]
pub struct VendorRow {
    id: String,
    organization_id: String,
    name: String,
    description: String,
    category: String,
    status: String,
    inherent_probability: String,
    inherent_impact: String,
    residual_probability: String,
    residual_impact: String,
    website: Option<String>,
    assignee_id: Option<String>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

impl From<&Vendor> for VendorRow {
    fn from(v: &Vendor) -> Self {
        Self {
            id: v.id.to_string(),
            organization_id: v.organization_id.to_string(),
            name: v.name.clone(),
            description: v.description.clone(),
            category: v.category.to_string(),
            status: v.status.to_string(),
            inherent_probability: v.inherent_probability.to_string(),
            inherent_impact: v.inherent_impact.to_string(),
            residual_probability: v.residual_probability.to_string(),
            residual_impact: v.residual_impact.to_string(),
            website: v.website.clone(),
            assignee_id: v.assignee_id.as_ref().map(ToString::to_string),
            created_at: naive(v.created_at),
            updated_at: naive(v.updated_at),
        }
    }
}

impl TryFrom<VendorRow> for Vendor {
    type Error = RepoError;
    fn try_from(r: VendorRow) -> Result<Self, RepoError> {
        const T: &str = "vendors";
        Ok(Self {
            id: id(T, r.id)?,
            organization_id: id(T, r.organization_id)?,
            name: r.name,
            description: r.description,
            category: value(T, &r.category)?,
            status: value(T, &r.status)?,
            inherent_probability: value(T, &r.inherent_probability)?,
            inherent_impact: value(T, &r.inherent_impact)?,
            residual_probability: value(T, &r.residual_probability)?,
            residual_impact: value(T, &r.residual_impact)?,
            website: r.website,
            assignee_id: optional_id(T, r.assignee_id)?,
            created_at: instant(r.created_at),
            updated_at: instant(r.updated_at),
        })
    }
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

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = tasks, treat_none_as_null = true)]
pub struct TaskRow {
    id: String,
    organization_id: String,
    title: String,
    description: String,
    status: String,
    assignee_id: Option<String>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

impl From<&Task> for TaskRow {
    fn from(t: &Task) -> Self {
        Self {
            id: t.id.to_string(),
            organization_id: t.organization_id.to_string(),
            title: t.title.clone(),
            description: t.description.clone(),
            status: t.status.to_string(),
            assignee_id: t.assignee_id.as_ref().map(ToString::to_string),
            created_at: naive(t.created_at),
            updated_at: naive(t.updated_at),
        }
    }
}

impl TryFrom<TaskRow> for Task {
    type Error = RepoError;
    fn try_from(r: TaskRow) -> Result<Self, RepoError> {
        const T: &str = "tasks";
        Ok(Self {
            id: id(T, r.id)?,
            organization_id: id(T, r.organization_id)?,
            title: r.title,
            description: r.description,
            status: value(T, &r.status)?,
            assignee_id: optional_id(T, r.assignee_id)?,
            created_at: instant(r.created_at),
            updated_at: instant(r.updated_at),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = comments)]
pub struct CommentRow {
    id: String,
    organization_id: String,
    entity_type: String,
    entity_id: String,
    author_id: String,
    content: String,
    context_url: Option<String>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

impl CommentRow {
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl From<&Comment> for CommentRow {
    fn from(c: &Comment) -> Self {
        Self {
            id: c.id.to_string(),
            organization_id: c.organization_id.to_string(),
            entity_type: c.entity_type.to_string(),
            entity_id: c.entity_id.clone(),
            author_id: c.author_id.to_string(),
            content: c.content.clone(),
            context_url: c.context_url.clone(),
            created_at: naive(c.created_at),
            updated_at: naive(c.updated_at),
        }
    }
}

impl TryFrom<CommentRow> for Comment {
    type Error = RepoError;
    fn try_from(r: CommentRow) -> Result<Self, RepoError> {
        const T: &str = "comments";
        Ok(Self {
            id: id(T, r.id)?,
            organization_id: id(T, r.organization_id)?,
            entity_type: value(T, &r.entity_type)?,
            entity_id: r.entity_id,
            author_id: id(T, r.author_id)?,
            content: r.content,
            context_url: r.context_url,
            created_at: instant(r.created_at),
            updated_at: instant(r.updated_at),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = attachments)]
pub struct AttachmentRow {
    id: String,
    organization_id: String,
    comment_id: String,
    name: String,
    media_type: String,
    size: i64,
    description: Option<String>,
    created_at: PrimitiveDateTime,
}

impl From<&Attachment> for AttachmentRow {
    fn from(a: &Attachment) -> Self {
        Self {
            id: a.id.to_string(),
            organization_id: a.organization_id.to_string(),
            comment_id: a.comment_id.to_string(),
            name: a.name.clone(),
            media_type: a.media_type.clone(),
            size: a.size,
            description: a.description.clone(),
            created_at: naive(a.created_at),
        }
    }
}

impl TryFrom<AttachmentRow> for Attachment {
    type Error = RepoError;
    fn try_from(r: AttachmentRow) -> Result<Self, RepoError> {
        const T: &str = "attachments";
        Ok(Self {
            id: id(T, r.id)?,
            organization_id: id(T, r.organization_id)?,
            comment_id: id(T, r.comment_id)?,
            name: r.name,
            media_type: r.media_type,
            size: r.size,
            description: r.description,
            created_at: instant(r.created_at),
        })
    }
}
