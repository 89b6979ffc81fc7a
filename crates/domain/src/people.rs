//! Users, their memberships in organizations (people), API keys and sessions.

use serde::Deserialize;

use crate::access::Scopes;

use crate::validation::{FieldError, ValidationErrors, device_label, map_nullable, map_present, required, set, text};
use crate::{
    ApiKeyId, Department, MemberId, OrganizationId, SessionId, Timestamp, UserId, nullable_whole_number,
    optional_whole_number, required_non_null,
};

/// The longest name, in characters.
pub const NAME_MAX: usize = 255;
/// The longest e-mail address, in characters (RFC 5321).
pub const EMAIL_MAX: usize = 254;
/// The longest role, in characters.
pub const ROLE_MAX: usize = 100;
/// The longest API key name, in characters.
pub const KEY_NAME_MAX: usize = 100;
/// Why a membership change that would leave the organization without an active owner is refused.
pub const LAST_OWNER: &str = "the last owner of the organization cannot be deactivated or demoted";

/// A person who can sign in, across organizations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// The user's id.
    pub id: UserId,
    /// 1 to [`NAME_MAX`] characters.
    pub name: String,
    /// Unique, stored lowercase.
    pub email: String,
    /// Whether a provider vouched for the address.
    pub email_verified: bool,
    /// A picture URL, if the provider gave one.
    pub image: Option<String>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// When the user last signed in.
    pub last_login: Option<Timestamp>,
}

/// A plausible e-mail address (one `@` with text on both sides and a dot in the domain) in the
/// one form addresses are compared in: NFKC, then lowercase. The part before the `@` must be
/// ASCII: there, Unicode case folding and compatibility forms make distinct mailboxes look
/// alike (`\u{212A}elvin@` becomes `kelvin@`), and an account or invitation matched by such an
/// address could be someone else's.
pub fn email(value: String) -> Result<String, FieldError> {
    use unicode_normalization::UnicodeNormalization;
    let trimmed = value.trim();
    if trimmed.rsplit_once('@').is_some_and(|(local, _)| !local.is_ascii()) {
        return Err(FieldError::new("email", "must have only ASCII characters before the @"));
    }
    let value = text("email", trimmed.nfkc().collect::<String>().to_lowercase(), 3, EMAIL_MAX)?;
    let plausible = match value.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty() && domain.contains('.') && !domain.contains('@') && !value.contains(char::is_whitespace)
        }
        None => false,
    };
    if plausible { Ok(value) } else { Err(FieldError::new("email", "must be an e-mail address")) }
}

impl User {
    /// A new user; a bad e-mail address or name is a validation error.
    pub fn create(email_text: String, name: String, now: Timestamp) -> Result<Self, ValidationErrors> {
        Ok(Self {
            id: UserId::generate(),
            name: text("name", name, 1, NAME_MAX)?,
            email: email(email_text)?,
            email_verified: false,
            image: None,
            created_at: now,
            updated_at: now,
            last_login: None,
        })
    }

    /// A user first seen at sign-in: the provider's claims, its word on the address, its picture.
    /// A name the provider does not give is the address's local part.
    pub fn signed_in(
        email_text: String,
        name: Option<String>,
        email_verified: bool,
        picture: Option<String>,
        now: Timestamp,
    ) -> Result<Self, ValidationErrors> {
        let email = email(email_text)?;
        let name = name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
        let name = name.unwrap_or_else(|| email.split('@').next().unwrap_or_default().to_owned());
        let name: String = name.chars().take(NAME_MAX).collect();
        let picture = picture.filter(|p| p.len() <= 2048 && (p.starts_with("https://") || p.starts_with("http://")));
        Ok(Self { email_verified, image: picture, ..Self::create(email, name, now)? })
    }
}

/// A person: a user's membership in an organization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The membership's id.
    pub id: MemberId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// The user.
    pub user_id: UserId,
    /// Free text whose words (split on commas and spaces) name its roles: `owner`, `admin`, `auditor`, `employee`.
    pub role: String,
    /// Their department.
    pub department: Department,
    /// Whether the membership counts: an inactive member cannot act.
    pub is_active: bool,
    /// The device management system's label of their devices, if set.
    pub device_manager_label_id: Option<i64>,
    /// When they joined.
    pub created_at: Timestamp,
    /// When a session of theirs last came to this organization: its own view of their sign-ins,
    /// never when they signed in to use another organization.
    pub last_login: Option<Timestamp>,
}

/// A member together with the user behind it, as the API shows people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// The membership.
    pub member: Member,
    /// Its user.
    pub user: User,
}

impl Person {
    /// The entity tag of this state of the person ([`ETag::of_state`](crate::etag::ETag::of_state)):
    /// a membership keeps no `updatedAt`, so its whole state counts, with its user's `updatedAt`.
    pub fn etag(&self) -> crate::etag::ETag {
        crate::etag::ETag::of_state(self.member.id.as_str(), &(&self.member, &self.user.id, self.user.updated_at))
    }
}

/// A new membership of an existing user: made when the user accepts an invitation or creates an
/// organization, or by the operator (`admin add-member`); never by a tenant naming a user.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewMember {
    /// An existing user (else 400), not yet a member of this organization (else 409).
    #[cfg_attr(feature = "openapi", schema(value_type = UserId, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub user_id: Option<UserId>,
    /// A free role name.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::role, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub role: Option<String>,
    /// Default `none`.
    #[cfg_attr(feature = "openapi", schema(value_type = Department))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub department: Option<Department>,
    /// A device management label id (the operator assigns labels).
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::device_label))]
    #[serde(default, deserialize_with = "optional_whole_number")]
    pub device_manager_label_id: Option<i64>,
}

/// The body of `PATCH /v1/people/{id}`: only present fields change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemberChanges {
    /// The membership's user: only its current value is accepted (else 400); another user joins
    /// by accepting an invitation.
    #[cfg_attr(feature = "openapi", schema(value_type = UserId))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub user_id: Option<UserId>,
    /// Comma-separated roles. Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::role))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub role: Option<String>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = Department))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub department: Option<Department>,
    /// `false` deactivates the member (the record remains).
    #[cfg_attr(feature = "openapi", schema(value_type = bool))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub is_active: Option<bool>,
    /// Only its current value is accepted (else 403): the operator assigns device labels
    /// (`admin set-device-label --member`).
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::device_label))]
    #[serde(default, deserialize_with = "nullable_whole_number")]
    pub device_manager_label_id: Option<Option<i64>>,
}

/// The schemas of this module's inputs, as the validation below checks them.
#[cfg(feature = "openapi")]
pub(crate) mod schemas {
    use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, SchemaType, Type};

    pub fn role() -> utoipa::openapi::Object {
        crate::openapi::text(1, super::ROLE_MAX).build()
    }

    pub fn key_name() -> utoipa::openapi::Object {
        crate::openapi::text(1, super::KEY_NAME_MAX).build()
    }

    /// A non-empty array of the scopes there are.
    pub fn scopes() -> utoipa::openapi::schema::Array {
        let names = crate::access::Scope::every().map(|scope| scope.to_string()).collect::<Vec<_>>();
        let item = ObjectBuilder::new().schema_type(Type::String).enum_values(Some(names));
        utoipa::openapi::schema::ArrayBuilder::new().items(item).min_items(Some(1)).build()
    }

    /// A positive label id or `null` (`validation::device_label`).
    pub fn device_label() -> utoipa::openapi::Object {
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(1))
            .maximum(Some(i64::MAX))
            .build()
    }
}

/// Validated changes to a membership.
#[derive(Debug, Clone)]
pub struct MemberPatch(MemberChanges);

impl MemberPatch {
    /// Validates `changes`; the first wrong field is the error.
    pub fn new(changes: MemberChanges) -> Result<Self, ValidationErrors> {
        Ok(Self(MemberChanges {
            role: map_present(changes.role, |r| text("role", r, 1, ROLE_MAX))?,
            device_manager_label_id: map_nullable(changes.device_manager_label_id, |l| {
                device_label("deviceManagerLabelId", l)
            })?,
            ..changes
        }))
    }

    /// The device label the patch assigns, if it assigns one.
    pub fn device_label(&self) -> Option<i64> {
        self.0.device_manager_label_id.flatten()
    }

    /// The role the patch sets, if it sets one.
    pub fn role(&self) -> Option<&str> {
        self.0.role.as_deref()
    }

    /// The user the membership moves to, if the patch moves it.
    pub fn user_id(&self) -> Option<&UserId> {
        self.0.user_id.as_ref()
    }

    /// Takes out the fields a tenant may not change (`userId`, `deviceManagerLabelId`), so the
    /// patch no longer writes them; the caller compares what was asked with the stored values.
    pub fn take_fixed_fields(&mut self) -> (Option<UserId>, Option<Option<i64>>) {
        (self.0.user_id.take(), self.0.device_manager_label_id.take())
    }
}

impl Member {
    /// A new member of the organization, validated.
    pub fn create(organization_id: OrganizationId, input: NewMember, now: Timestamp) -> Result<Self, ValidationErrors> {
        Ok(Self {
            id: MemberId::generate(),
            organization_id,
            user_id: required("userId", input.user_id)?,
            role: text("role", required("role", input.role)?, 1, ROLE_MAX)?,
            department: input.department.unwrap_or(Department::None),
            is_active: true,
            device_manager_label_id: input
                .device_manager_label_id
                .map(|l| device_label("deviceManagerLabelId", l))
                .transpose()?,
            created_at: now,
            last_login: None,
        })
    }

    /// Whether the member is active and their role names `owner`.
    pub fn is_active_owner(&self) -> bool {
        self.is_active && crate::access::holds(&self.role, crate::access::Role::Owner)
    }

    /// Applies a validated patch. `is_active: false` deactivates; the record remains.
    pub fn apply(&mut self, patch: &MemberPatch) {
        let c = &patch.0;
        set(&mut self.user_id, &c.user_id);
        set(&mut self.role, &c.role);
        set(&mut self.department, &c.department);
        set(&mut self.is_active, &c.is_active);
        set(&mut self.device_manager_label_id, &c.device_manager_label_id);
    }
}

/// An organization's API key. Only the SHA-256 of the key is kept; `Debug` leaves it out.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// The key's id (not its secret).
    pub id: ApiKeyId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// What the key is for, 1 to [`KEY_NAME_MAX`] characters.
    pub name: String,
    /// Hex SHA-256 of the key text.
    pub key_hash: String,
    /// The user it acts as.
    pub created_by: UserId,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it stops authenticating, if it expires.
    pub expires_at: Option<Timestamp>,
    /// When it was revoked, if it was.
    pub revoked_at: Option<Timestamp>,
    /// When it last authenticated (noted at most once a minute).
    pub last_used_at: Option<Timestamp>,
    /// What the key may be used for, within what its creator's role allows.
    pub scopes: Scopes,
    /// The key that made it (`POST /v1/api-keys` with an API key), if one did: it expires no
    /// later than that key and is revoked with it.
    pub parent_id: Option<ApiKeyId>,
}

/// The body of `POST /v1/api-keys`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewApiKey {
    /// 1–100 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::key_name, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub name: Option<String>,
    /// When the key stops working; absent: never. Must be in the future.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Timestamp>))]
    #[serde(default)]
    pub expires_at: Option<Timestamp>,
    /// `<resource>:read`, `<resource>:write`, `*:read` or `*`; at most what the creator's role allows.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::scopes, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub scopes: Option<Vec<String>>,
}

/// What a valid [`NewApiKey`] asks for.
#[derive(Debug, Clone)]
pub struct ApiKeyRequest {
    /// 1 to 100 characters.
    pub name: String,
    /// When it stops authenticating; never when `None`.
    pub expires_at: Option<Timestamp>,
    /// What it may do, within its creator's role.
    pub scopes: Scopes,
}

impl ApiKeyRequest {
    /// Validates a new key's name, expiry and scopes.
    pub fn new(input: NewApiKey, now: Timestamp) -> Result<Self, ValidationErrors> {
        let name = text("name", required("name", input.name)?, 1, KEY_NAME_MAX)?;
        let scopes = Scopes::parse("scopes", &required("scopes", input.scopes)?)?;
        if input.expires_at.is_some_and(|at| at <= now) {
            return Err(FieldError::new("expiresAt", "must be in the future").into());
        }
        Ok(Self { name, expires_at: input.expires_at, scopes })
    }
}

impl ApiKey {
    /// When a key made by this one may expire at the latest, given the expiry asked for: never
    /// later than this key's own (**choice:** a later or missing expiry is capped, not refused).
    pub fn capped_expiry(&self, asked: Option<Timestamp>) -> Option<Timestamp> {
        match (asked, self.expires_at) {
            (Some(asked), Some(own)) => Some(asked.min(own)),
            (asked, own) => asked.or(own),
        }
    }

    /// Whether the key authenticates at `now`: not revoked, not expired.
    pub fn is_usable_at(&self, now: Timestamp) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|expiry| now < expiry)
    }
}

/// A signed-in user's session. Only the SHA-256 of the token is kept; `Debug` leaves it out.
#[derive(Clone, PartialEq, Eq)]
pub struct Session {
    /// The session's id (not its token).
    pub id: SessionId,
    /// The user.
    pub user_id: UserId,
    /// Hex SHA-256 of the token text.
    pub token_hash: String,
    /// When the user signed in.
    pub created_at: Timestamp,
    /// When it stops authenticating.
    pub expires_at: Timestamp,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("id", &self.id)
            .field("organization_id", &self.organization_id)
            .field("created_by", &self.created_by)
            .field("expires_at", &self.expires_at)
            .field("revoked_at", &self.revoked_at)
            .field("parent_id", &self.parent_id)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("user_id", &self.user_id)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_normalised_and_checked() {
        assert_eq!(email(" Ada@Example.COM ".into()).unwrap(), "ada@example.com");
        assert!(email("ada".into()).is_err());
        assert!(email("ada@localhost".into()).is_err());
        assert!(email("a da@x.io".into()).is_err());
    }

    #[test]
    fn look_alike_addresses_are_refused_or_folded_to_one_form() {
        // The Kelvin sign folds to `k`: such a local part is refused, not matched to kelvin@.
        for look_alike in ["\u{212A}elvin@example.com", "kelv\u{0131}n@example.com", "ｋelvin@example.com"] {
            let error = email(look_alike.into()).unwrap_err();
            assert_eq!(error.field, "email");
            assert!(error.message.contains("ASCII"), "{look_alike}: {}", error.message);
        }
        // In the domain, NFKC then lowercase: the form every comparison uses.
        assert_eq!(email("kelvin@EXAMPLE.\u{212A}Z".into()).unwrap(), "kelvin@example.kz");
        assert_eq!(email("ada@ｅxample.com".into()).unwrap(), "ada@example.com");
    }

    #[test]
    fn revoked_or_expired_keys_are_not_usable() {
        let now = Timestamp::now();
        let mut key = ApiKey {
            id: ApiKeyId::generate(),
            organization_id: OrganizationId::generate(),
            name: "ci".into(),
            key_hash: String::new(),
            created_by: UserId::generate(),
            created_at: now,
            expires_at: Some(now.plus(time::Duration::hours(1))),
            revoked_at: None,
            last_used_at: None,
            scopes: Scopes::everything(),
            parent_id: None,
        };
        assert!(key.is_usable_at(now));
        assert!(!key.is_usable_at(now.plus(time::Duration::hours(2))));
        key.revoked_at = Some(now);
        assert!(!key.is_usable_at(now));
    }
}
