//! Operator use cases behind the `admin` CLI: tenants, users, memberships and credentials.

use std::sync::Arc;

use compliance_domain::access::Scopes;
use compliance_domain::audit::Actor;
use compliance_domain::etag::IfMatch;
use compliance_domain::organization::{Organization, OrganizationChanges, OrganizationPatch};
use compliance_domain::people::{ApiKey, NewMember, Person, User};
use compliance_domain::{ApiKeyId, Department, MemberId, OrganizationId, UserId};
use compliance_ports::{
    Clock, CredentialRepository, DeviceDirectory, MemberRepository, OrganizationRepository, Page, PageRequest,
    RepoError, SignInRepository, UserRepository,
};
use secrecy::SecretString;
use time::Duration;

use crate::audit::{API_KEY, AuditTrail, ORGANIZATION, Provenance, SESSION};
use crate::organization::{OWNER_ROLE, with_free_slug};
use crate::sessions::{IssuedSession, issue_session};
use crate::{AppError, PeopleService, Ports, PrincipalCache};

/// The operator in audit entries: `{type: "system", id: "admin"}`.
const ADMIN: &str = "admin";

/// Keys per page when the operator lists an organization's keys.
const KEYS_PER_PAGE: usize = 500;

/// What `bootstrap` made or found: an organization, a user, the user's membership in it and a new
/// API key acting as that member.
#[derive(Debug)]
pub struct Bootstrapped {
    /// The organization, found by its slug or made.
    pub organization: Ensured<Organization>,
    /// The user, found by e-mail address or made.
    pub user: Ensured<User>,
    /// The user's membership in the organization: an existing active one keeps its role, a new one is `owner`.
    pub member: Ensured<Person>,
    /// Always new: a key's text is shown once, so a second run is how an operator gets another.
    pub api_key: IssuedApiKey,
}

/// A record `bootstrap` needed, and whether it made it (`created`) or reused an existing one.
#[derive(Debug)]
pub struct Ensured<T> {
    /// The record as stored.
    pub record: T,
    /// `true` when this call made it, `false` when it already existed.
    pub created: bool,
}

/// Where `set-device-label` put the label: the organization or one of its members, as now stored.
#[derive(Debug)]
pub enum DeviceLabelAssigned {
    /// The organization's label.
    Organization(Organization),
    /// A member's label.
    Member(Person),
}

/// A new API key and the only copy of its text.
#[derive(Debug)]
pub struct IssuedApiKey {
    /// The stored key (its hash and prefix, never its text).
    pub key: ApiKey,
    /// The key's text (`cpk_…`): shown once, not stored.
    pub secret: SecretString,
}

/// The operator's use cases (the `admin` CLI): they act as the service itself, outside any
/// member's permissions, and write audit entries as `system`.
pub struct AdminService {
    organizations: Arc<dyn OrganizationRepository>,
    users: Arc<dyn UserRepository>,
    credentials: Arc<dyn CredentialRepository>,
    members: Arc<dyn MemberRepository>,
    /// Users by e-mail address, for `bootstrap`.
    sign_in: Arc<dyn SignInRepository>,
    people: PeopleService,
    /// The device management system, asked about a label before it is assigned.
    devices: Arc<dyn DeviceDirectory>,
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
            sign_in: ports.sign_in.clone(),
            people: PeopleService::new(ports, principals.clone()),
            devices: ports.devices.clone(),
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
                let provenance = Provenance::system(ADMIN, &candidate.id);
                let audit = trail.change_by(provenance, |_, _| "organization.created", &ORGANIZATION);
                organizations.insert(&candidate, &audit).await.map(|()| candidate)
            }
        })
        .await
    }

    /// The first steps in one: the organization (found by the slug given or derived from its
    /// name), the user (found by e-mail address), the user's membership as `owner` (an existing
    /// active membership is kept with its role) and a new API key acting as that member. Each
    /// record it makes writes its audit entry as the single commands do; run again, it finds what
    /// an earlier run made, so an interrupted run is finished by running it again.
    pub async fn bootstrap(
        &self,
        organization: (String, Option<String>),
        user: (String, String),
        key_name: Option<String>,
    ) -> Result<Bootstrapped, AppError> {
        let (org_name, slug) = organization;
        let slug_given = slug.is_some();
        let (email, user_name) = user;
        // Every input is checked before anything is made: a refused run leaves nothing behind.
        let now = self.clock.now();
        let wanted_org = Organization::create(org_name.clone(), slug, now)?;
        let wanted_user = User::create(email.clone(), user_name.clone(), now)?;
        let key_name =
            compliance_domain::validation::text("key-name", key_name.unwrap_or_else(|| "bootstrap".into()), 1, 100)?;
        if !slug_given {
            self.refuse_a_namesake(&wanted_org.slug, &wanted_user.email).await?;
        }
        let organization = self.find_or_create_organization(org_name, &wanted_org.slug).await?;
        let user = self.find_or_create_user((email, user_name), &wanted_user.email).await?;
        let member = self.find_or_add_owner(&organization.record.id, &user.record).await?;
        let api_key = self
            .create_api_key(organization.record.id.clone(), user.record.id.clone(), Some(key_name), None, None)
            .await?;
        Ok(Bootstrapped { organization, user, member, api_key })
    }

    /// A slug derived from a name that another organization already holds is that organization
    /// only when the user is already its member: a second customer called "Acme" must not become
    /// an owner of the first. An explicit `--slug` says which one is meant.
    async fn refuse_a_namesake(&self, slug: &str, email: &str) -> Result<(), AppError> {
        let Some(existing) = self.organizations.find_by_slug(slug).await? else { return Ok(()) };
        let member = match self.sign_in.find_by_email(email).await? {
            Some(user) => self.members.find_by_user(&existing.id, &user.id).await?,
            None => None,
        };
        match member {
            Some(_) => Ok(()),
            None => Err(AppError::Conflict(format!(
                "an organization with the slug `{slug}` ({}) exists and {email} is not its member: pass \
                 `--slug {slug}` to make them its owner, or another `--slug` for a new organization",
                existing.id
            ))),
        }
    }

    /// `slug` is the one `name` was checked with (given or derived).
    async fn find_or_create_organization(&self, name: String, slug: &str) -> Result<Ensured<Organization>, AppError> {
        if let Some(record) = self.organizations.find_by_slug(slug).await? {
            return Ok(Ensured { record, created: false });
        }
        match self.create_organization(name, Some(slug.to_owned())).await {
            Ok(record) => Ok(Ensured { record, created: true }),
            // Another run made it meanwhile.
            Err(AppError::Conflict(why)) => match self.organizations.find_by_slug(slug).await? {
                Some(record) => Ok(Ensured { record, created: false }),
                None => Err(AppError::Conflict(why)),
            },
            Err(other) => Err(other),
        }
    }

    /// `normalised` is the e-mail address as `User::create` keeps it, so that `Ada@Acme.test`
    /// finds `ada@acme.test`.
    async fn find_or_create_user(
        &self,
        (email, name): (String, String),
        normalised: &str,
    ) -> Result<Ensured<User>, AppError> {
        if let Some(record) = self.sign_in.find_by_email(normalised).await? {
            return Ok(Ensured { record, created: false });
        }
        match self.create_user(email, name).await {
            Ok(record) => Ok(Ensured { record, created: true }),
            Err(AppError::Conflict(why)) => match self.sign_in.find_by_email(normalised).await? {
                Some(record) => Ok(Ensured { record, created: false }),
                None => Err(AppError::Conflict(why)),
            },
            Err(other) => Err(other),
        }
    }

    async fn find_or_add_owner(&self, org: &OrganizationId, user: &User) -> Result<Ensured<Person>, AppError> {
        match self.members.find_by_user(org, &user.id).await? {
            Some(person) if person.member.is_active => Ok(Ensured { record: person, created: false }),
            Some(person) => Err(AppError::Conflict(format!(
                "{} is a deactivated member ({}) of this organization: reactivate the membership first",
                user.email, person.member.id
            ))),
            None => {
                let record = self.add_member(org.clone(), user.id.clone(), OWNER_ROLE.into(), None).await?;
                Ok(Ensured { record, created: true })
            }
        }
    }

    /// The first `limit` organizations, oldest first.
    pub async fn list_organizations(&self, limit: usize) -> Result<Vec<Organization>, AppError> {
        Ok(self.organizations.list(limit).await?)
    }

    /// Every key of the organization, revoked and expired ones too, newest first.
    pub async fn list_api_keys(&self, org: &OrganizationId) -> Result<Vec<ApiKey>, AppError> {
        self.organizations.get(org).await.map_err(|e| AppError::from_repo(e, "organization"))?;
        let mut keys = Vec::new();
        let mut page = PageRequest::first(KEYS_PER_PAGE);
        loop {
            let Page { items, next, .. } = self.credentials.list_api_keys(org, None, &page).await?;
            keys.extend(items);
            match next {
                Some(cursor) => page = PageRequest { after: Some(cursor), ..PageRequest::first(KEYS_PER_PAGE) },
                None => return Ok(keys),
            }
        }
    }

    /// A new user with no membership; a taken e-mail address is [`AppError::Conflict`].
    pub async fn create_user(&self, email: String, name: String) -> Result<User, AppError> {
        let user = User::create(email, name, self.clock.now())?;
        self.users.insert(&user).await.map_err(|error| match error {
            RepoError::Conflict(_) => AppError::Conflict("a user with this e-mail address exists".into()),
            other => other.into(),
        })?;
        Ok(user)
    }

    /// Makes an existing user a member of `org` with `role`; an unknown organization is
    /// [`AppError::NotFound`], a bad role or department [`AppError::Validation`].
    pub async fn add_member(
        &self,
        org: OrganizationId,
        user: UserId,
        role: String,
        department: Option<Department>,
    ) -> Result<Person, AppError> {
        self.organizations.get(&org).await.map_err(|e| AppError::from_repo(e, "organization"))?;
        let input = NewMember { user_id: Some(user), role: Some(role), department, device_manager_label_id: None };
        self.people.create_in(&org, input, Provenance::system(ADMIN, &org)).await
    }

    /// Assigns device label `label` (`None`: clears it) to organization `org`, or to its member
    /// `member`. Only the operator assigns labels: the device management system must know the
    /// label and it must not be one of its built-in labels (when a system is configured), and no
    /// other organization may hold it.
    pub async fn set_device_label(
        &self,
        org: OrganizationId,
        member: Option<MemberId>,
        label: Option<i64>,
    ) -> Result<DeviceLabelAssigned, AppError> {
        self.organizations.get(&org).await.map_err(|e| AppError::from_repo(e, "organization"))?;
        if let Some(label) = label {
            let label = compliance_domain::validation::device_label("label", label)?;
            crate::devices::require_assignable(self.devices.as_ref(), self.organizations.as_ref(), &org, label).await?;
        }
        let provenance = Provenance::system(ADMIN, &org);
        let assigned = match member {
            Some(member) => {
                DeviceLabelAssigned::Member(self.people.set_device_label(&org, &member, label, provenance).await?)
            }
            None => {
                let changes =
                    OrganizationChanges { device_manager_label_id: Some(label), ..OrganizationChanges::default() };
                let audit = self.audit.change_by(provenance, |_, _| "organization.updated", &ORGANIZATION);
                let patch = OrganizationPatch::new(changes)?;
                let updated = self.organizations.update(&org, &patch, &IfMatch::Absent, &audit).await;
                DeviceLabelAssigned::Organization(updated.map_err(|e| AppError::from_repo(e, "organization"))?)
            }
        };
        self.principals.forget_organization(&org);
        Ok(assigned)
    }

    /// A new API key for the organization, acting as `created_by`, who must be an active member,
    /// narrowed to `scopes` (`None`: every scope, so the key acts with its creator's whole role).
    pub async fn create_api_key(
        &self,
        org: OrganizationId,
        created_by: UserId,
        name: Option<String>,
        expires_in_days: Option<u32>,
        scopes: Option<Scopes>,
    ) -> Result<IssuedApiKey, AppError> {
        let now = self.clock.now();
        self.require_active_member(&org, &created_by).await?;
        let name = compliance_domain::validation::text("name", name.unwrap_or_else(|| "API key".into()), 1, 100)?;
        let expires_at = expires_in_days.map(|days| now.plus(Duration::days(i64::from(days))));
        // Without scopes the operator's key acts with its creator's whole role. A scope beyond
        // that role grants nothing: a key's access is its scopes within its creator's role.
        let provenance = Provenance::system(ADMIN, &org);
        let issued =
            crate::api_keys::issue(org, created_by, name, expires_at, scopes.unwrap_or_else(Scopes::everything), now);
        let audit = self.audit.change_by(provenance, |_, _| "apiKey.created", &API_KEY);
        self.credentials.insert_api_key(&issued.key, &audit).await?;
        Ok(issued)
    }

    /// Revokes the key `id`, in whichever organization it belongs to; it stops authenticating at
    /// the next request on every instance.
    pub async fn revoke_api_key(&self, id: &ApiKeyId) -> Result<ApiKey, AppError> {
        let org = self.credentials.api_key_organization(id).await.map_err(|e| AppError::from_repo(e, "API key"))?;
        let audit = self.audit.change_by(Provenance::system(ADMIN, &org), |_, _| "apiKey.revoked", &API_KEY);
        let revoked = self.credentials.revoke_api_key(&org, id, self.clock.now(), &audit).await;
        crate::api_keys::forget_revoked(&self.principals, id, revoked)
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
