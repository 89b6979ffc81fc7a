//! Invitations: an organization asks a person, by e-mail address, to become a member.

use serde::Deserialize;

use crate::etag::ETag;
use crate::people::{ROLE_MAX, email};
use crate::validation::{ValidationErrors, required, text};
use crate::{Department, InvitationId, OrganizationId, Timestamp, UserId, required_non_null};

/// An invitation. Only the SHA-256 of its token is kept; `Debug` leaves it out.
#[derive(Clone, PartialEq, Eq)]
pub struct Invitation {
    /// The invitation's id.
    pub id: InvitationId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// Lowercase, as [`email`] normalises it.
    pub email: String,
    /// The role the invitee gets.
    pub role: String,
    /// The department the invitee gets.
    pub department: Department,
    /// Hex SHA-256 of the token text.
    pub token_hash: String,
    /// The user who invited.
    pub invited_by: UserId,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it can no longer be accepted.
    pub expires_at: Timestamp,
    /// When it was accepted, if it was.
    pub accepted_at: Option<Timestamp>,
    /// The user who accepted it, if one did.
    pub accepted_by: Option<UserId>,
}

/// Where an invitation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvitationStatus {
    /// Not yet accepted, not yet expired.
    Pending,
    /// Accepted: the invitee is a member.
    Accepted,
    /// Past its expiry, never accepted.
    Expired,
}

impl InvitationStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Accepted => "accepted",
            Self::Expired => "expired",
        }
    }
}

impl Invitation {
    /// A new invitation, valid for `ttl` from `now`; only the token's hash is kept.
    pub fn create(
        organization_id: OrganizationId,
        input: NewInvitation,
        invited_by: UserId,
        token_hash: String,
        now: Timestamp,
        ttl: time::Duration,
    ) -> Result<Self, ValidationErrors> {
        Ok(Self {
            id: InvitationId::generate(),
            organization_id,
            email: email(required("email", input.email)?)?,
            role: text("role", required("role", input.role)?, 1, ROLE_MAX)?,
            department: input.department.unwrap_or(Department::None),
            token_hash,
            invited_by,
            created_at: now,
            expires_at: now.plus(ttl),
            accepted_at: None,
            accepted_by: None,
        })
    }

    /// Where the invitation stands at `now`.
    pub fn status_at(&self, now: Timestamp) -> InvitationStatus {
        match (self.accepted_at, self.expires_at <= now) {
            (Some(_), _) => InvitationStatus::Accepted,
            (None, true) => InvitationStatus::Expired,
            (None, false) => InvitationStatus::Pending,
        }
    }

    /// The entity tag of the invitation as it shows at `now`. **Choice:** it has no `updatedAt`,
    /// and besides being accepted, the one thing that changes is its status, which turns
    /// `expired` with time; so the tag digests what can change (acceptance and the status at
    /// `now`): it moves when the invitation is accepted or expires, and stays otherwise.
    pub fn etag_at(&self, now: Timestamp) -> ETag {
        ETag::of_state(self.id.as_str(), &(self.accepted_at, &self.accepted_by, self.status_at(now)))
    }
}

impl std::fmt::Debug for Invitation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invitation")
            .field("id", &self.id)
            .field("organization_id", &self.organization_id)
            .field("expires_at", &self.expires_at)
            .field("accepted_at", &self.accepted_at)
            .finish_non_exhaustive()
    }
}

/// The body of `POST /v1/invitations`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewInvitation {
    /// The address of the person invited; only a user whose provider verified this address can accept.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = Email, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub email: Option<String>,
    /// The member's role once accepted, e.g. `admin` or `employee`.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::people::schemas::role, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub role: Option<String>,
    /// Default `none`.
    #[cfg_attr(feature = "openapi", schema(value_type = Department))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub department: Option<Department>,
}

/// The body of `POST /v1/invitations/accept`.
#[derive(Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AcceptInvitation {
    /// The token of the invitation's `acceptUrl`.
    pub token: String,
}

impl std::fmt::Debug for AcceptInvitation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcceptInvitation").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invitation_is_pending_until_accepted_or_expired() {
        let now = Timestamp::now();
        let input =
            NewInvitation { email: Some("Ada@Example.com".into()), role: Some("admin".into()), department: None };
        let mut invitation = Invitation::create(
            OrganizationId::generate(),
            input,
            UserId::generate(),
            "h".into(),
            now,
            time::Duration::days(7),
        )
        .unwrap();
        assert_eq!(invitation.email, "ada@example.com");
        let (later, expiry) = (now.plus(time::Duration::days(6)), now.plus(time::Duration::days(7)));
        let pending = invitation.etag_at(now);
        assert_eq!(invitation.status_at(now), InvitationStatus::Pending);
        assert_eq!(invitation.etag_at(later), pending, "the tag stays while nothing changes");
        assert_eq!(invitation.status_at(expiry), InvitationStatus::Expired);
        assert_ne!(invitation.etag_at(expiry), pending, "expiring changes what it shows, so its tag");
        invitation.accepted_at = Some(now);
        assert_eq!(invitation.status_at(now.plus(time::Duration::days(8))), InvitationStatus::Accepted);
        assert_ne!(invitation.etag_at(later), pending, "accepting changes its tag");
        let bad = NewInvitation { email: Some("nope".into()), role: None, department: None };
        assert!(
            Invitation::create(
                OrganizationId::generate(),
                bad,
                UserId::generate(),
                "h".into(),
                now,
                time::Duration::days(7)
            )
            .is_err()
        );
    }
}
