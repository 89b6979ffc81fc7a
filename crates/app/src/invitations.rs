//! Invitations: owners and admins invite people by e-mail address; the invited person, signed in
//! with that address verified, accepts and becomes a member.

use std::sync::Arc;

use compliance_domain::access::{Action, Family, Role, holds};
use compliance_domain::etag::IfMatch;
use compliance_domain::invitation::{Invitation, InvitationStatus, NewInvitation};
use compliance_domain::people::{Member, NewMember, Person};
use compliance_domain::{InvitationId, Timestamp};
use compliance_ports::{
    Acceptance, Clock, InvitationRepository, MemberRepository, Page, PageRequest, RepoError, UserRepository,
};
use secrecy::{ExposeSecret, SecretString};

use crate::access::require;
use crate::audit::{AuditTrail, INVITATION, MEMBER, Provenance, member_action, user_actor};
use crate::secret::{digest, generate};
use crate::{AppError, Ports, Principal, PrincipalCache, Settings, SignedInUser};

/// Invitation tokens: 256 random bits behind this prefix.
const INVITATION_TOKEN_PREFIX: &str = "cpi_";
const OWNERS_ONLY: &str = "only an owner may invite someone as an owner";

/// A new invitation and the only copy of its token.
#[derive(Debug)]
pub struct IssuedInvitation {
    /// The invitation as stored (its token's hash only).
    pub invitation: Invitation,
    /// The token the invitee accepts with: shown once, not stored.
    pub token: SecretString,
}

/// Invitations to join an organization by e-mail address, and their acceptance.
pub struct InvitationService {
    invitations: Arc<dyn InvitationRepository>,
    members: Arc<dyn MemberRepository>,
    users: Arc<dyn UserRepository>,
    clock: Arc<dyn Clock>,
    principals: Arc<PrincipalCache>,
    settings: Arc<Settings>,
    audit: AuditTrail,
}

impl InvitationService {
    pub(crate) fn new(ports: &Ports, principals: Arc<PrincipalCache>, settings: Arc<Settings>) -> Self {
        Self {
            invitations: ports.invitations.clone(),
            members: ports.members.clone(),
            users: ports.users.clone(),
            clock: ports.clock.clone(),
            principals,
            settings,
            audit: AuditTrail::new(ports.renderer.clone(), ports.clock.clone()),
        }
    }

    /// The service's clock, for callers that date what they show.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Inviting is writing people: owners and admins; only an owner may invite an owner.
    pub async fn create(&self, caller: &Principal, input: NewInvitation) -> Result<IssuedInvitation, AppError> {
        require(caller, Family::People, Action::Write)?;
        if input.role.as_deref().is_some_and(|role| holds(role, Role::Owner)) && !holds(&caller.role, Role::Owner) {
            return Err(AppError::Denied(OWNERS_ONLY.to_owned()));
        }
        let token = generate(INVITATION_TOKEN_PREFIX);
        let invitation = Invitation::create(
            caller.organization_id.clone(),
            input,
            caller.user_id.clone(),
            digest(token.expose_secret()),
            self.clock.now(),
            self.settings.invitation_ttl,
        )?;
        self.invitations.insert(&invitation, &self.audit.change(caller, "invitation.created", &INVITATION)).await?;
        Ok(IssuedInvitation { invitation, token })
    }

    /// The organization's invitations, a page at a time.
    pub async fn list(&self, caller: &Principal, page: &PageRequest) -> Result<Page<Invitation>, AppError> {
        require(caller, Family::People, Action::Read)?;
        Ok(self.invitations.list(&caller.organization_id, page).await?)
    }

    /// One invitation of the caller's organization.
    pub async fn get(&self, caller: &Principal, id: &InvitationId) -> Result<Invitation, AppError> {
        require(caller, Family::People, Action::Read)?;
        self.invitations.get(&caller.organization_id, id).await.map_err(|e| AppError::from_repo(e, "invitation"))
    }

    /// Withdraws the invitation (its token stops working), while `if_match` holds for it.
    pub async fn delete(&self, caller: &Principal, id: &InvitationId, if_match: &IfMatch) -> Result<(), AppError> {
        require(caller, Family::People, Action::Write)?;
        let audit = self.audit.change(caller, "invitation.deleted", &INVITATION);
        self.invitations
            .delete(&caller.organization_id, id, if_match, self.clock.now(), &audit)
            .await
            .map_err(|e| AppError::from_repo(e, "invitation"))
    }

    /// Makes the signed-in caller a member of the invitation's organization. In order: an unknown
    /// token is 404; a user whose verified address is not the invitation's, 403; a used or expired
    /// invitation, 410; a user who is already a member, 409.
    pub async fn accept(&self, caller: &SignedInUser, token: &SecretString) -> Result<Person, AppError> {
        caller.require_session("accepting an invitation needs a signed-in session, not an API key")?;
        let found = self.invitations.find_by_token(&digest(token.expose_secret())).await?;
        let invitation = found.ok_or(AppError::NotFound("invitation"))?;
        let user = self.users.get(&caller.user_id).await.map_err(|e| AppError::from_repo(e, "user"))?;
        if !user.email_verified || user.email != invitation.email {
            return Err(AppError::Forbidden(
                "the invitation is for another e-mail address, or yours is not verified by your identity provider",
            ));
        }
        let now = self.clock.now();
        match invitation.status_at(now) {
            InvitationStatus::Pending => {}
            InvitationStatus::Accepted => return Err(AppError::Gone("the invitation was already used")),
            InvitationStatus::Expired => return Err(AppError::Gone("the invitation expired")),
        }
        let org = invitation.organization_id.clone();
        if self.members.find_by_user(&org, &user.id).await?.is_some() {
            return Err(AppError::Conflict("you are already a member of this organization".into()));
        }
        let input = NewMember {
            user_id: Some(user.id.clone()),
            role: Some(invitation.role.clone()),
            department: Some(invitation.department),
            device_manager_label_id: None,
        };
        let member = Member::create(org.clone(), input, now)?;
        let provenance = || Provenance {
            actor: user_actor(&user.id, Some(user.email.clone())),
            organization_id: org.clone(),
            request_id: None,
            idempotency: None,
        };
        let audit_invitation = self.audit.change_by(provenance(), |_, _| "invitation.accepted", &INVITATION);
        let audit_member = self.audit.change_by(provenance(), member_action, &MEMBER);
        match self.invitations.accept(&invitation, &member, now, (&audit_invitation, &audit_member)).await {
            Ok(Acceptance::Accepted) => {}
            Ok(Acceptance::NoLongerPending) => return Err(AppError::Gone("the invitation was already used")),
            Err(RepoError::Conflict(_)) => {
                return Err(AppError::Conflict("you are already a member of this organization".into()));
            }
            Err(other) => return Err(other.into()),
        }
        self.principals.forget_organization(&org);
        Ok(Person { member, user })
    }
}
