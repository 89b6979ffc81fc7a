//! People: the memberships of users in the caller's organization.

use std::sync::Arc;

use compliance_domain::access::Role;
use compliance_domain::access::{Action, Family};
use compliance_domain::etag::IfMatch;
use compliance_domain::people::{LAST_OWNER, Member, MemberChanges, MemberPatch, NewMember, Person, User};
use compliance_domain::{MemberId, OrganizationId, UserId};
use compliance_ports::{BulkError, BulkWrite, Clock, MemberRepository, Page, PersonQuery, RepoError, UserRepository};

use crate::access::{holds, require};
use crate::audit::{AuditTrail, MEMBER, Provenance, member_action};
use crate::bulk::{self, BulkOperation};
use crate::{AppError, Ports, Principal, PrincipalCache};

const ONE_MEMBERSHIP: &str = "the user is already a member of this organization";
const NOT_DELETED: &str = "people are not deleted: deactivate them with an update setting isActive to false";
const JOIN_BY_INVITATION: &str =
    "people are not created: a user joins by accepting an invitation (POST /v1/invitations)";
const USER_FIXED: &str =
    "a membership's user never changes: invite the other user (POST /v1/invitations) and deactivate this member";
const OWNERS_ONLY: &str = "only an owner may make someone an owner or change an owner's membership";

/// Members of the organization: their roles, departments and devices.
pub struct PeopleService {
    members: Arc<dyn MemberRepository>,
    users: Arc<dyn UserRepository>,
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

    /// `provenance` is whom the entry names: the caller, or the operator.
    pub(crate) async fn create_in(
        &self,
        org: &OrganizationId,
        input: NewMember,
        provenance: Provenance,
    ) -> Result<Person, AppError> {
        let (member, user) = self.new_member(org, input).await?;
        let audit = self.audit.change_by(provenance, member_action, &MEMBER);
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
        let patch = self.checked_patch(caller, id, changes).await?;
        let audit = self.audit.change_by(Provenance::of(caller), member_action, &MEMBER);
        let updated = self.members.update(&caller.organization_id, id, &patch, if_match, &audit).await;
        // a deactivated member's keys and sessions stop working now, not when the cache expires
        self.principals.forget_organization(&caller.organization_id);
        updated.map_err(|error| match error {
            RepoError::NotFound => AppError::NotFound("person"),
            other => one_membership(other),
        })
    }

    /// A new member of `org` from `input`, validated, with its user, who must exist.
    async fn new_member(&self, org: &OrganizationId, input: NewMember) -> Result<(Member, User), AppError> {
        let member = Member::create(org.clone(), input, self.clock.now())?;
        let user = self.existing_user(&member.user_id).await?;
        Ok((member, user))
    }

    /// `changes` to member `id` validated, and allowed to the caller: only an owner may change
    /// an owner or make someone an owner. `userId` and `deviceManagerLabelId` may be sent as they
    /// are, never changed: a membership is its user's for good (another user joins by accepting
    /// an invitation), and only the operator assigns device labels.
    async fn checked_patch(
        &self,
        caller: &Principal,
        id: &MemberId,
        changes: MemberChanges,
    ) -> Result<MemberPatch, AppError> {
        let mut patch = MemberPatch::new(changes)?;
        let (user, label) = patch.take_fixed_fields();
        let checks_target = !holds(&caller.role, Role::Owner) || user.is_some() || label.is_some();
        if !checks_target {
            return Ok(patch);
        }
        let target = self.get(caller, id).await?;
        if !holds(&caller.role, Role::Owner)
            && (holds(&target.member.role, Role::Owner) || patch.role().is_some_and(|role| holds(role, Role::Owner)))
        {
            return Err(AppError::Denied(OWNERS_ONLY.into()));
        }
        if user.is_some_and(|user| user != target.member.user_id) {
            return Err(AppError::invalid("userId", USER_FIXED));
        }
        if label.is_some_and(|label| label != target.member.device_manager_label_id) {
            return Err(crate::devices::operator_sets("deviceManagerLabelId", "admin set-device-label --member"));
        }
        Ok(patch)
    }

    /// The operator's assignment of a device label to member `id` of `org` (`None` clears it).
    pub(crate) async fn set_device_label(
        &self,
        org: &OrganizationId,
        id: &MemberId,
        label: Option<i64>,
        provenance: Provenance,
    ) -> Result<Person, AppError> {
        let patch =
            MemberPatch::new(MemberChanges { device_manager_label_id: Some(label), ..MemberChanges::default() })?;
        let audit = self.audit.change_by(provenance, member_action, &MEMBER);
        let updated = self.members.update(org, id, &patch, &IfMatch::Absent, &audit).await;
        updated.map_err(|e| AppError::from_repo(e, "person"))
    }

    /// Applies a bulk request's operations (see [`crate::bulk`]): updates as
    /// `PATCH /v1/people/{id}` does them, each allowed and validated the same way. People join by
    /// accepting an invitation and are deactivated (an update with `isActive: false`), never
    /// deleted, so a `create` or a `delete` fails with a 400 naming `op`. Atomic: all validated first and then written in one
    /// transaction, or nothing and [`AppError::BulkFailed`]; else one by one.
    pub async fn bulk_people(
        &self,
        caller: &Principal,
        operations: Vec<BulkOperation<NewMember, MemberChanges, MemberId>>,
        atomic: bool,
    ) -> Result<Vec<Result<Person, AppError>>, AppError> {
        require(caller, Family::People, Action::Write)?;
        bulk::check_count(operations.len())?;
        if !atomic {
            let mut results = Vec::with_capacity(operations.len());
            for operation in operations {
                results.push(match operation {
                    BulkOperation::Create(_) => Err(AppError::invalid("op", JOIN_BY_INVITATION)),
                    BulkOperation::Update(id, changes) => self.update(caller, &id, changes, &IfMatch::Absent).await,
                    BulkOperation::Delete(_) => Err(AppError::invalid("op", NOT_DELETED)),
                    BulkOperation::Unreadable(error) => Err(error),
                });
            }
            return Ok(results);
        }
        let org = &caller.organization_id;
        let (mut writes, mut failed) = (Vec::with_capacity(operations.len()), Vec::new());
        for (index, operation) in operations.into_iter().enumerate() {
            let write = match operation {
                BulkOperation::Create(_) => Err(AppError::invalid("op", JOIN_BY_INVITATION)),
                BulkOperation::Update(id, changes) => {
                    self.checked_patch(caller, &id, changes).await.map(|patch| BulkWrite::Update(id, patch))
                }
                BulkOperation::Delete(_) => Err(AppError::invalid("op", NOT_DELETED)),
                BulkOperation::Unreadable(error) => Err(error),
            };
            match write {
                Ok(write) => writes.push((index, write)),
                Err(error) => failed.push((index, error)),
            }
        }
        if !failed.is_empty() {
            // Nothing is written, but the answer also names the valid updates' missing members.
            for (index, write) in &writes {
                if let BulkWrite::Update(id, _) = write
                    && let Err(RepoError::NotFound) = self.members.get(org, id).await
                {
                    failed.push((*index, AppError::NotFound("person")));
                }
            }
            failed.sort_by_key(|(index, _)| *index);
            return Err(AppError::BulkFailed(failed));
        }
        let writes: Vec<_> = writes.into_iter().map(|(_, write)| write).collect();
        let audit = self.audit.change_by(Provenance::of(caller), member_action, &MEMBER);
        let applied = self.members.apply_member_bulk(org, &writes, &audit).await;
        // a deactivated member's keys and sessions stop working now, not when the cache expires
        self.principals.forget_organization(org);
        match applied {
            Ok(applied) => Ok(applied.records.into_iter().map(Ok).collect()),
            Err(BulkError::Operations(failed)) => Err(AppError::BulkFailed(
                failed
                    .into_iter()
                    .map(|(index, error)| match error {
                        RepoError::NotFound => (index, AppError::NotFound("person")),
                        other => (index, one_membership(other)),
                    })
                    .collect(),
            )),
            Err(BulkError::Store(error)) => Err(error.into()),
        }
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
