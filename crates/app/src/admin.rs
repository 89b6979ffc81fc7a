//! Operator use cases behind the `admin` CLI: tenants, users, memberships and credentials.

use std::sync::Arc;

use compliance_domain::access::Scopes;
use compliance_domain::audit::Actor;
use compliance_domain::organization::Organization;
use compliance_domain::people::{ApiKey, NewMember, Person, User};
use compliance_domain::{ApiKeyId, Department, OrganizationId, UserId};
use compliance_ports::{
    Clock, CredentialRepository, MemberRepository, OrganizationRepository, RepoError, UserRepository,
};
use secrecy::SecretString;
use time::Duration;

use crate::audit::{API_KEY, AuditTrail, Author, ORGANIZATION, SESSION};
use crate::organization::with_free_slug;
use crate::sessions::{IssuedSession, issue_session};
use crate::{AppError, PeopleService, Ports, PrincipalCache};

/// The operator in audit entries: `{type: "system", id: "admin"}`.
const ADMIN: &str = "admin";

/// A new API key and the only copy of its text.
#[derive(Debug)]
pub struct IssuedApiKey {
    pub key: ApiKey,
    pub secret: SecretString,
}

pub struct AdminService {
    organizations: Arc<dyn OrganizationRepository>,
    users: Arc<dyn UserRepository>,
    credentials: Arc<dyn CredentialRepository>,
    members: Arc<dyn MemberRepository>,
    people: PeopleService,
    clock: Arc<dyn Clock>,
    principals: Arc<PrincipalCache>,
    /// The operator's changes are the system's (`admin`) in the audit trail.
    audit: Arc<AuditTrail>,
}

impl AdminService {
    pub(crate) fn new(ports: &Ports, principals: Arc<PrincipalCache>) -> Self {
        Self {
            organizations: ports.organizations.clone(),
            users: ports.users.clone(),
            credentials: ports.credentials.clone(),
            members: ports.members.clone(),
            people: PeopleService::new(ports, principals.clone()),
            clock: ports.clock.clone(),
            principals,
            audit: Arc::new(AuditTrail::new(ports.renderer.clone(), ports.clock.clone())),
        }
    }

    /// A new organization. Without a slug one is derived from the name, with a random suffix when
    /// the plain one is taken; a slug given explicitly must be free.
    pub async fn create_organization(&self, name: String, slug: Option<String>) -> Result<Organization, AppError> {
        let organization = Organization::create(name, slug.clone(), self.clock.now())?;
        let (organizations, trail) = (self.organizations.clone(), self.audit.clone());
        with_free_slug(organization, slug.is_some(), |candidate| {
            let (organizations, trail) = (organizations.clone(), trail.clone());
            async move {
                let author = Author::system(ADMIN, &candidate.id);
                let audit = trail.change_by(author, |_, _| "organization.created", &ORGANIZATION);
                organizations.insert(&candidate, &audit).await.map(|()| candidate)
            }
        })
        .await
    }

    pub async fn create_user(&self, email: String, name: String) -> Result<User, AppError> {
        let user = User::create(email, name, self.clock.now())?;
        self.users.insert(&user).await.map_err(|error| match error {
            RepoError::Conflict(_) => AppError::Conflict("a user with this e-mail address exists".into()),
            other => other.into(),
        })?;
        Ok(user)
    }

    pub async fn add_member(
        &self,
        org: OrganizationId,
        user: UserId,
        role: String,
        department: Option<Department>,
    ) -> Result<Person, AppError> {
        self.organizations.get(&org).await.map_err(|e| AppError::from_repo(e, "organization"))?;
        let input = NewMember { user_id: Some(user), role: Some(role), department, device_manager_label_id: None };
        self.people.create_in(&org, input, Author::system(ADMIN, &org)).await
    }

    /// A new API key for the organization, acting as `created_by`, who must be an active member.
    pub async fn create_api_key(
        &self,
        org: OrganizationId,
        created_by: UserId,
        name: Option<String>,
        expires_in_days: Option<u32>,
    ) -> Result<IssuedApiKey, AppError> {
        let now = self.clock.now();
        self.require_active_member(&org, &created_by).await?;
        let name = compliance_domain::validation::text("name", name.unwrap_or_else(|| "API key".into()), 1, 100)?;
        let expires_at = expires_in_days.map(|days| now.plus(Duration::days(i64::from(days))));
        // The operator's keys hold every scope: they act with their creator's whole role.
        let author = Author::system(ADMIN, &org);
        let issued = crate::api_keys::issue(org, created_by, name, expires_at, Scopes::everything(), now);
        let audit = self.audit.change_by(author, |_, _| "apiKey.created", &API_KEY);
        self.credentials.insert_api_key(&issued.key, &audit).await?;
        Ok(issued)
    }

    pub async fn revoke_api_key(&self, id: &ApiKeyId) -> Result<ApiKey, AppError> {
        // The key's organization is known once the store has read it.
        let audit = |before: Option<&ApiKey>, after: Option<&ApiKey>| {
            let org = after.or(before).map(|key| key.organization_id.clone()).unwrap_or_else(OrganizationId::generate);
            self.audit.change_by(Author::system(ADMIN, &org), |_, _| "apiKey.revoked", &API_KEY)(before, after)
        };
        let revoked = self.credentials.revoke_api_key(id, self.clock.now(), &audit).await;
        self.principals.forget_api_key(id);
        revoked.map_err(|e| AppError::from_repo(e, "API key"))
    }

    /// A new session for the user, valid for `ttl`; also records the login.
    pub async fn create_session(&self, user: UserId, ttl: Duration) -> Result<IssuedSession, AppError> {
        if ttl <= Duration::ZERO {
            return Err(AppError::invalid("ttl-hours", "must be at least 1"));
        }
        self.users.get(&user).await.map_err(|e| AppError::from_repo(e, "user"))?;
        let audit = self.audit.change_each(Actor::system(ADMIN), "session.created", &SESSION);
        issue_session(self.credentials.as_ref(), self.users.as_ref(), &user, ttl, self.clock.now(), &audit).await
    }

    async fn require_active_member(&self, org: &OrganizationId, user: &UserId) -> Result<(), AppError> {
        match self.members.find_by_user(org, user).await? {
            Some(person) if person.member.is_active => Ok(()),
            _ => Err(AppError::invalid("created-by", "must be an active member of the organization")),
        }
    }
}
