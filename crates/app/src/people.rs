//! People: the memberships of users in the caller's organization.

use std::sync::Arc;

use compliance_domain::access::Role;
use compliance_domain::access::{Action, Family};
use compliance_domain::etag::IfMatch;
use compliance_domain::people::{LAST_OWNER, Member, MemberChanges, MemberPatch, NewMember, Person};
use compliance_domain::{MemberId, OrganizationId, UserId};
use compliance_ports::{Clock, MemberRepository, OrganizationRepository, Page, PersonQuery, RepoError, UserRepository};

use crate::access::{holds, require};
use crate::audit::{AuditTrail, Author, MEMBER, member_action};
use crate::{AppError, Ports, Principal, PrincipalCache};

const ONE_MEMBERSHIP: &str = "the user is already a member of this organization";
const OWNERS_ONLY: &str = "only an owner may make someone an owner or change an owner's membership";

/// Members of the organization: their roles, departments and devices.
pub struct PeopleService {
    members: Arc<dyn MemberRepository>,
    users: Arc<dyn UserRepository>,
    organizations: Arc<dyn OrganizationRepository>,
    clock: Arc<dyn Clock>,
    /// Forgets the organization's authenticated callers when a membership changes.
    principals: Arc<PrincipalCache>,
    audit: AuditTrail,
}

impl PeopleService {
    pub(crate) fn new(ports: &Ports, principals: Arc<PrincipalCache>) -> Self {
        Self {
            members: ports.members.clone(),
            users: ports.users.clone(),
            organizations: ports.organizations.clone(),
            clock: ports.clock.clone(),
            principals,
            audit: AuditTrail::new(ports.renderer.clone(), ports.clock.clone()),
        }
    }

    /// A page of the active members, newest first; deactivated ones too when asked.
    pub async fn list(
        &self,
        caller: &Principal,
        include_inactive: bool,
        query: &PersonQuery,
    ) -> Result<Page<Person>, AppError> {
        require(caller, Family::People, Action::Read)?;
        Ok(self.members.list(&caller.organization_id, include_inactive, query).await?)
    }

    /// One member of the caller's organization.
    pub async fn get(&self, caller: &Principal, id: &MemberId) -> Result<Person, AppError> {
        require(caller, Family::People, Action::Read)?;
        self.members.get(&caller.organization_id, id).await.map_err(|e| AppError::from_repo(e, "person"))
    }

    /// Only an owner may make someone an owner.
    pub async fn create(&self, caller: &Principal, input: NewMember) -> Result<Person, AppError> {
        require(caller, Family::People, Action::Write)?;
        if input.role.as_deref().is_some_and(|role| holds(role, Role::Owner)) && !holds(&caller.role, Role::Owner) {
            return Err(AppError::Denied(OWNERS_ONLY.into()));
        }
        self.create_in(&caller.organization_id, input, Author::of(caller)).await
    }

    /// `author` is whom the entry names: the caller, or the operator.
    pub(crate) async fn create_in(
        &self,
        org: &OrganizationId,
        input: NewMember,
        author: Author,
    ) -> Result<Person, AppError> {
        let member = Member::create(org.clone(), input, self.clock.now())?;
        if let Some(label) = member.device_manager_label_id {
            crate::devices::require_label_free(self.organizations.as_ref(), org, label).await?;
        }
        let user = self.existing_user(&member.user_id).await?;
        let audit = self.audit.change_by(author, member_action, &MEMBER);
        self.members.insert(&member, &audit).await.map_err(one_membership)?;
        Ok(Person { member, user })
    }

    /// Only an owner may change an owner or make someone an owner; the last active owner cannot
    /// be deactivated or demoted (409, checked in the store's transaction).
    pub async fn update(
        &self,
        caller: &Principal,
        id: &MemberId,
        changes: MemberChanges,
        if_match: &IfMatch,
    ) -> Result<Person, AppError> {
        require(caller, Family::People, Action::Write)?;
        let patch = MemberPatch::new(changes)?;
        if !holds(&caller.role, Role::Owner) {
            let target = self.get(caller, id).await?;
            if holds(&target.member.role, Role::Owner) || patch.role().is_some_and(|role| holds(role, Role::Owner)) {
                return Err(AppError::Denied(OWNERS_ONLY.into()));
            }
        }
        if let Some(label) = patch.device_label() {
            crate::devices::require_label_free(self.organizations.as_ref(), &caller.organization_id, label).await?;
        }
        if let Some(user) = patch.user_id() {
            self.existing_user(user).await?;
        }
        let audit = self.audit.change_by(Author::of(caller), member_action, &MEMBER);
        let updated = self.members.update(&caller.organization_id, id, &patch, if_match, &audit).await;
        // a deactivated member's keys and sessions stop working now, not when the cache expires
        self.principals.forget_organization(&caller.organization_id);
        updated.map_err(|error| match error {
            RepoError::NotFound => AppError::NotFound("person"),
            other => one_membership(other),
        })
    }

    async fn existing_user(&self, id: &UserId) -> Result<compliance_domain::people::User, AppError> {
        match self.users.get(id).await {
            Ok(user) => Ok(user),
            Err(RepoError::NotFound) => Err(AppError::invalid("userId", "no user has this id")),
            Err(other) => Err(other.into()),
        }
    }
}

fn one_membership(error: RepoError) -> AppError {
    match error {
        RepoError::Conflict(why) if why == LAST_OWNER => AppError::Conflict(why),
        RepoError::Conflict(_) => AppError::Conflict(ONE_MEMBERSHIP.into()),
        other => other.into(),
    }
}
