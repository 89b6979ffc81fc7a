//! Organizations, users, memberships and credentials in memory.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use compliance_domain::etag::IfMatch;
use compliance_domain::organization::{Organization, OrganizationPatch};
use compliance_domain::people::{ApiKey, Member, MemberPatch, Person, Session, User};
use compliance_domain::{ApiKeyId, MemberId, OrganizationId, Timestamp, UserId};
use compliance_ports::{
    AuditEach, AuditOf, CredentialRepository, Cursor, MemberRepository, OrganizationRepository, Page, PageRequest,
    RepoError, RevokedApiKey, UserRepository,
};

use super::newest_first;

#[derive(Default)]
pub struct MemoryOrganizations {
    organizations: Mutex<HashMap<OrganizationId, Organization>>,
}

#[async_trait]
impl OrganizationRepository for MemoryOrganizations {
    async fn insert(&self, organization: &Organization, _: &AuditOf<'_, Organization>) -> Result<(), RepoError> {
        let mut organizations = self.organizations.lock().unwrap();
        if organizations.values().any(|o| o.slug == organization.slug) {
            return Err(RepoError::Conflict("the slug is taken".into()));
        }
        organizations.insert(organization.id.clone(), organization.clone());
        Ok(())
    }

    async fn insert_with_owner(
        &self,
        organization: &Organization,
        _: &Member,
        (audit, _): (&AuditOf<'_, Organization>, &AuditOf<'_, Member>),
    ) -> Result<(), RepoError> {
        self.insert(organization, audit).await
    }

    async fn get(&self, org: &OrganizationId) -> Result<Organization, RepoError> {
        self.organizations.lock().unwrap().get(org).cloned().ok_or(RepoError::NotFound)
    }

    async fn find_by_slug(&self, slug: &str) -> Result<Option<Organization>, RepoError> {
        Ok(self.organizations.lock().unwrap().values().find(|o| o.slug == slug).cloned())
    }

    async fn list(&self, limit: usize) -> Result<Vec<Organization>, RepoError> {
        let mut organizations: Vec<Organization> = self.organizations.lock().unwrap().values().cloned().collect();
        organizations.sort_by(|a, b| (a.created_at, a.id.as_str()).cmp(&(b.created_at, b.id.as_str())));
        organizations.truncate(limit);
        Ok(organizations)
    }

    async fn update(
        &self,
        org: &OrganizationId,
        patch: &OrganizationPatch,
        _: &IfMatch,
        _: &AuditOf<'_, Organization>,
    ) -> Result<Organization, RepoError> {
        let mut organizations = self.organizations.lock().unwrap();
        let mut updated = organizations.get(org).cloned().ok_or(RepoError::NotFound)?;
        updated.apply(patch);
        if organizations.values().any(|o| o.slug == updated.slug && &o.id != org) {
            return Err(RepoError::Conflict("the slug is taken".into()));
        }
        organizations.insert(org.clone(), updated.clone());
        Ok(updated)
    }

    async fn device_label_holders(&self, label: i64) -> Result<Vec<OrganizationId>, RepoError> {
        let organizations = self.organizations.lock().unwrap();
        Ok(organizations.values().filter(|o| o.device_manager_label_id == Some(label)).map(|o| o.id.clone()).collect())
    }
}

#[derive(Default)]
pub struct MemoryUsers {
    users: Mutex<HashMap<UserId, User>>,
}

#[async_trait]
impl UserRepository for MemoryUsers {
    async fn insert(&self, user: &User) -> Result<(), RepoError> {
        let mut users = self.users.lock().unwrap();
        if users.values().any(|u| u.email == user.email) {
            return Err(RepoError::Conflict("the e-mail address is taken".into()));
        }
        users.insert(user.id.clone(), user.clone());
        Ok(())
    }

    async fn get(&self, id: &UserId) -> Result<User, RepoError> {
        self.users.lock().unwrap().get(id).cloned().ok_or(RepoError::NotFound)
    }

    async fn record_login(&self, id: &UserId, at: Timestamp) -> Result<(), RepoError> {
        let mut users = self.users.lock().unwrap();
        users.get_mut(id).ok_or(RepoError::NotFound)?.last_login = Some(at);
        Ok(())
    }
}

pub struct MemoryMembers {
    users: Arc<MemoryUsers>,
    members: Mutex<Vec<Member>>,
}

impl MemoryMembers {
    pub fn new(users: Arc<MemoryUsers>) -> Self {
        Self { users, members: Mutex::default() }
    }

    /// Changes a membership behind the use cases' back, as another server instance would.
    pub fn set_active(&self, user: &UserId, active: bool) {
        let mut members = self.members.lock().unwrap();
        for member in members.iter_mut().filter(|m| &m.user_id == user) {
            member.is_active = active;
        }
    }

    fn person(&self, member: Member) -> Result<Person, RepoError> {
        let user = self.users.users.lock().unwrap().get(&member.user_id).cloned().ok_or(RepoError::NotFound)?;
        Ok(Person { member, user })
    }
}

#[async_trait]
impl MemberRepository for MemoryMembers {
    async fn insert(&self, member: &Member, _: &AuditOf<'_, Member>) -> Result<(), RepoError> {
        let mut members = self.members.lock().unwrap();
        if members.iter().any(|m| m.organization_id == member.organization_id && m.user_id == member.user_id) {
            return Err(RepoError::Conflict("already a member".into()));
        }
        members.push(member.clone());
        Ok(())
    }

    async fn list(
        &self,
        org: &OrganizationId,
        include_inactive: bool,
        query: &compliance_ports::PersonQuery,
    ) -> Result<Page<Person>, RepoError> {
        let page = &query.page;
        let members: Vec<Member> = self.members.lock().unwrap().clone();
        let people = members
            .into_iter()
            .filter(|m| &m.organization_id == org && (include_inactive || m.is_active))
            .map(|m| self.person(m))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(newest_first(people, page, |p| Cursor::newest_first(p.member.created_at, p.member.id.to_string())))
    }

    async fn get(&self, org: &OrganizationId, id: &MemberId) -> Result<Person, RepoError> {
        let member = self.members.lock().unwrap().iter().find(|m| &m.organization_id == org && &m.id == id).cloned();
        self.person(member.ok_or(RepoError::NotFound)?)
    }

    async fn record_member_login(&self, org: &OrganizationId, id: &MemberId, at: Timestamp) -> Result<(), RepoError> {
        let mut members = self.members.lock().unwrap();
        let member =
            members.iter_mut().find(|m| &m.organization_id == org && &m.id == id).ok_or(RepoError::NotFound)?;
        member.last_login = Some(at);
        Ok(())
    }

    async fn find_by_user(&self, org: &OrganizationId, user: &UserId) -> Result<Option<Person>, RepoError> {
        let member =
            self.members.lock().unwrap().iter().find(|m| &m.organization_id == org && &m.user_id == user).cloned();
        member.map(|m| self.person(m)).transpose()
    }

    async fn update(
        &self,
        org: &OrganizationId,
        id: &MemberId,
        patch: &MemberPatch,
        _: &IfMatch,
        _: &AuditOf<'_, Member>,
    ) -> Result<Person, RepoError> {
        let updated = {
            let mut members = self.members.lock().unwrap();
            let member =
                members.iter_mut().find(|m| &m.organization_id == org && &m.id == id).ok_or(RepoError::NotFound)?;
            member.apply(patch);
            member.clone()
        };
        self.person(updated)
    }

    // No test here applies bulk writes (tests/api/bulk.rs does, on both databases).
    async fn apply_member_bulk(
        &self,
        _: &OrganizationId,
        _: &[compliance_ports::BulkWrite<Member, MemberId, MemberPatch>],
        _: &AuditOf<'_, Member>,
    ) -> Result<compliance_ports::BulkApplied<Person>, compliance_ports::BulkError> {
        Err(compliance_ports::BulkError::Store(RepoError::Internal("bulk writes are not faked".into())))
    }
}

/// API keys and sessions; counts the lookups that reach it, to tell a cached answer from a fresh one.
#[derive(Default)]
pub struct MemoryCredentials {
    keys: Mutex<Vec<ApiKey>>,
    sessions: Mutex<Vec<Session>>,
    lookups: AtomicUsize,
}

impl MemoryCredentials {
    pub fn lookups(&self) -> usize {
        self.lookups.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl CredentialRepository for MemoryCredentials {
    async fn insert_api_key(&self, key: &ApiKey, _: &AuditOf<'_, ApiKey>) -> Result<(), RepoError> {
        self.keys.lock().unwrap().push(key.clone());
        Ok(())
    }

    async fn find_api_key(&self, key_hash: &str) -> Result<Option<ApiKey>, RepoError> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        Ok(self.keys.lock().unwrap().iter().find(|k| k.key_hash == key_hash).cloned())
    }

    async fn list_api_keys(
        &self,
        org: &OrganizationId,
        created_by: Option<&UserId>,
        page: &PageRequest,
    ) -> Result<Page<ApiKey>, RepoError> {
        let keys = self.keys.lock().unwrap();
        let mine = |k: &&ApiKey| &k.organization_id == org && created_by.is_none_or(|by| &k.created_by == by);
        let listed: Vec<ApiKey> = keys.iter().filter(mine).cloned().collect();
        Ok(super::newest_first(listed, page, |k| Cursor::newest_first(k.created_at, k.id.to_string())))
    }

    async fn get_api_key(&self, org: &OrganizationId, id: &ApiKeyId) -> Result<ApiKey, RepoError> {
        let keys = self.keys.lock().unwrap();
        keys.iter().find(|k| &k.organization_id == org && &k.id == id).cloned().ok_or(RepoError::NotFound)
    }

    async fn api_key_organization(&self, id: &ApiKeyId) -> Result<OrganizationId, RepoError> {
        let keys = self.keys.lock().unwrap();
        keys.iter().find(|k| &k.id == id).map(|k| k.organization_id.clone()).ok_or(RepoError::NotFound)
    }

    async fn revoke_api_key(
        &self,
        org: &OrganizationId,
        id: &ApiKeyId,
        at: Timestamp,
        _: &AuditOf<'_, ApiKey>,
    ) -> Result<RevokedApiKey, RepoError> {
        let mut keys = self.keys.lock().unwrap();
        let key = keys.iter_mut().find(|k| &k.organization_id == org && &k.id == id).ok_or(RepoError::NotFound)?;
        if key.revoked_at.is_some() {
            return Ok(RevokedApiKey { key: key.clone(), descendants: Vec::new() });
        }
        key.revoked_at = Some(at);
        let key = key.clone();
        // The keys made from it, generation by generation.
        let (mut descendants, mut parents) = (Vec::new(), vec![key.id.clone()]);
        while !parents.is_empty() {
            let mut children = Vec::new();
            for child in keys.iter_mut().filter(|k| k.parent_id.as_ref().is_some_and(|p| parents.contains(p))) {
                children.push(child.id.clone());
                if child.revoked_at.is_none() {
                    child.revoked_at = Some(at);
                    descendants.push(child.clone());
                }
            }
            parents = children;
        }
        Ok(RevokedApiKey { key, descendants })
    }

    async fn touch_api_key(&self, id: &ApiKeyId, at: Timestamp) -> Result<(), RepoError> {
        let mut keys = self.keys.lock().unwrap();
        keys.iter_mut().find(|k| &k.id == id).ok_or(RepoError::NotFound)?.last_used_at = Some(at);
        Ok(())
    }

    async fn insert_session(&self, session: &Session, _: &AuditEach<'_, Session>) -> Result<(), RepoError> {
        self.sessions.lock().unwrap().push(session.clone());
        Ok(())
    }

    async fn find_session(&self, token_hash: &str) -> Result<Option<Session>, RepoError> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        Ok(self.sessions.lock().unwrap().iter().find(|s| s.token_hash == token_hash).cloned())
    }
}

/// The identity ports, which these tests do not exercise (the black-box suite does, against a
/// real OpenID provider): every call fails loudly.
pub struct NoIdentity;

const NOT_EXERCISED: &str = "the app tests do not exercise sign-in, sessions or invitations";

#[async_trait]
impl compliance_ports::SessionRepository for NoIdentity {
    async fn list_sessions(&self, _: &UserId, _: Timestamp) -> Result<Vec<Session>, RepoError> {
        Err(RepoError::Internal(NOT_EXERCISED.into()))
    }
    async fn delete_session(
        &self,
        _: &UserId,
        _: &compliance_domain::SessionId,
        _: &AuditEach<'_, Session>,
    ) -> Result<Session, RepoError> {
        Err(RepoError::Internal(NOT_EXERCISED.into()))
    }
    async fn memberships(&self, _: &UserId) -> Result<Vec<compliance_ports::Membership>, RepoError> {
        Err(RepoError::Internal(NOT_EXERCISED.into()))
    }
}

#[async_trait]
impl compliance_ports::SignInRepository for NoIdentity {
    async fn insert_attempt(&self, _: &compliance_ports::SignInAttempt, _: Timestamp) -> Result<(), RepoError> {
        Err(RepoError::Internal(NOT_EXERCISED.into()))
    }
    async fn take_attempt(&self, _: &str) -> Result<Option<compliance_ports::SignInAttempt>, RepoError> {
        Err(RepoError::Internal(NOT_EXERCISED.into()))
    }
    async fn find_by_identity(&self, _: &str, _: &str) -> Result<Option<User>, RepoError> {
        Err(RepoError::Internal(NOT_EXERCISED.into()))
    }
    async fn find_by_email(&self, _: &str) -> Result<Option<User>, RepoError> {
        Err(RepoError::Internal(NOT_EXERCISED.into()))
    }
    async fn link_identity(&self, _: &UserId, _: &str, _: &str, _: Timestamp) -> Result<(), RepoError> {
        Err(RepoError::Internal(NOT_EXERCISED.into()))
    }
    async fn insert_with_identity(&self, _: &User, _: &str, _: &str) -> Result<(), RepoError> {
        Err(RepoError::Internal(NOT_EXERCISED.into()))
    }
}

#[async_trait]
impl compliance_ports::InvitationRepository for NoIdentity {
    async fn insert(
        &self,
        _: &compliance_domain::invitation::Invitation,
        _: &AuditOf<'_, compliance_domain::invitation::Invitation>,
    ) -> Result<(), RepoError> {
        Err(RepoError::Internal(NOT_EXERCISED.into()))
    }
    async fn list(
        &self,
        _: &OrganizationId,
        _: &compliance_ports::PageRequest,
    ) -> Result<compliance_ports::Page<compliance_domain::invitation::Invitation>, RepoError> {
        Err(RepoError::Internal(NOT_EXERCISED.into()))
    }
    async fn get(
        &self,
        _: &OrganizationId,
        _: &compliance_domain::InvitationId,
    ) -> Result<compliance_domain::invitation::Invitation, RepoError> {
        Err(RepoError::Internal(NOT_EXERCISED.into()))
    }
    async fn delete(
        &self,
        _: &OrganizationId,
        _: &compliance_domain::InvitationId,
        _: &compliance_domain::etag::IfMatch,
        _: compliance_domain::Timestamp,
        _: &AuditOf<'_, compliance_domain::invitation::Invitation>,
    ) -> Result<(), RepoError> {
        Err(RepoError::Internal(NOT_EXERCISED.into()))
    }
    async fn find_by_token(&self, _: &str) -> Result<Option<compliance_domain::invitation::Invitation>, RepoError> {
        Err(RepoError::Internal(NOT_EXERCISED.into()))
    }
    async fn accept(
        &self,
        _: &compliance_domain::invitation::Invitation,
        _: &Member,
        _: Timestamp,
        _: (&AuditOf<'_, compliance_domain::invitation::Invitation>, &AuditOf<'_, Member>),
    ) -> Result<compliance_ports::Acceptance, RepoError> {
        Err(RepoError::Internal(NOT_EXERCISED.into()))
    }
}
