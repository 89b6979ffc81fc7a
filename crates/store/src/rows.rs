//! Rows as the tables hold them, and their conversion to and from domain records.

use compliance_domain::access::Scopes;
use compliance_domain::comment::{Attachment, Comment};
use compliance_domain::organization::Organization;
use compliance_domain::people::{ApiKey, Member, Person, Session, User};
use compliance_domain::{Id, IdKind, Timestamp};
use compliance_ports::RepoError;
use diesel::prelude::*;
use time::PrimitiveDateTime;

use crate::error::corrupt;
use crate::schema::{api_keys, attachments, comments, members, organizations, sessions, users};

pub(crate) fn naive(ts: Timestamp) -> PrimitiveDateTime {
    ts.to_utc_naive()
}

pub(crate) fn instant(naive: PrimitiveDateTime) -> Timestamp {
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

pub(crate) fn optional_id<K: IdKind>(table: &str, text: Option<String>) -> Result<Option<Id<K>>, RepoError> {
    text.map(|t| id(table, t)).transpose()
}

/// A stored value parsed with `FromStr` (enums, schedules); unparsable is a corrupt row of `table`.
/// The library template a record was made from, from its two columns (both or neither are set).
pub(crate) fn library_origin(
    id: Option<String>,
    version: Option<i32>,
) -> Option<compliance_domain::library::LibraryOrigin> {
    Some(compliance_domain::library::LibraryOrigin { id: id?, version: u32::try_from(version?).unwrap_or_default() })
}

pub(crate) fn value<T: std::str::FromStr>(table: &str, text: &str) -> Result<T, RepoError>
where
    T::Err: std::fmt::Display,
{
    text.parse().map_err(|error| corrupt(table, error))
}

pub(crate) fn json<T: serde::de::DeserializeOwned>(table: &str, text: &str) -> Result<T, RepoError> {
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
    last_login: Option<PrimitiveDateTime>,
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
            last_login: m.last_login.map(naive),
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
            last_login: r.last_login.map(instant),
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
    scopes: String,
    parent_id: Option<String>,
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
            scopes: k.scopes.to_text(),
            parent_id: k.parent_id.as_ref().map(ToString::to_string),
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
            scopes: Scopes::from_text(&r.scopes),
            parent_id: r.parent_id.map(|parent| id("api_keys", parent)).transpose()?,
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
