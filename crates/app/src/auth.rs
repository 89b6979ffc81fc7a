//! Who is calling, and for which organization.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use compliance_domain::people::Person;
use compliance_domain::{ApiKeyId, OrganizationId, Timestamp, UserId};
use compliance_ports::{Clock, CredentialRepository, MemberRepository};
use secrecy::{ExposeSecret, SecretString};
use time::Duration;

use crate::secret::{digest, digests_match};
use crate::{AppError, Ports};

/// `lastUsedAt` is written at most this often per key.
const LAST_USED_WRITE_INTERVAL: Duration = Duration::minutes(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthType {
    ApiKey,
    Session,
}

/// The authenticated caller: a user acting for one organization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub organization_id: OrganizationId,
    pub user_id: UserId,
    pub email: String,
    pub auth_type: AuthType,
}

/// What a request presented. `organization` is the raw `X-Organization-Id` header.
#[derive(Debug)]
pub enum Credentials {
    ApiKey { key: SecretString, organization: Option<String> },
    Session { token: SecretString, organization: Option<String> },
}

pub struct AuthService {
    credentials: Arc<dyn CredentialRepository>,
    members: Arc<dyn MemberRepository>,
    clock: Arc<dyn Clock>,
    /// When each key's `lastUsedAt` was last written by this process.
    last_used_written: Mutex<HashMap<ApiKeyId, Timestamp>>,
}

impl AuthService {
    pub(crate) fn new(ports: &Ports) -> Self {
        Self {
            credentials: ports.credentials.clone(),
            members: ports.members.clone(),
            clock: ports.clock.clone(),
            last_used_written: Mutex::new(HashMap::new()),
        }
    }

    pub async fn authenticate(&self, credentials: Credentials) -> Result<Principal, AppError> {
        match credentials {
            Credentials::ApiKey { key, organization } => self.by_api_key(&key, organization.as_deref()).await,
            Credentials::Session { token, organization } => self.by_session(&token, organization.as_deref()).await,
        }
    }

    async fn by_api_key(&self, key: &SecretString, organization: Option<&str>) -> Result<Principal, AppError> {
        const INVALID: AppError = AppError::Unauthenticated("invalid API key");
        let presented = digest(key.expose_secret());
        let stored = self.credentials.find_api_key(&presented).await?.ok_or(INVALID)?;
        let now = self.clock.now();
        if !digests_match(&stored.key_hash, &presented) || !stored.is_usable_at(now) {
            return Err(INVALID);
        }
        // A key works only while the member who made it is an active member of its organization.
        let person = self.active_person(&stored.organization_id, &stored.created_by).await?.ok_or(INVALID)?;
        if organization.is_some_and(|org| org != stored.organization_id.as_str()) {
            return Err(AppError::Forbidden("the API key belongs to another organization"));
        }
        self.note_use(&stored.id, stored.last_used_at, now).await;
        Ok(principal(stored.organization_id, person, AuthType::ApiKey))
    }

    async fn by_session(&self, token: &SecretString, organization: Option<&str>) -> Result<Principal, AppError> {
        const INVALID: AppError = AppError::Unauthenticated("invalid or expired session");
        let presented = digest(token.expose_secret());
        let session = self.credentials.find_session(&presented).await?.ok_or(INVALID)?;
        if !digests_match(&session.token_hash, &presented) || session.expires_at <= self.clock.now() {
            return Err(INVALID);
        }
        let organization =
            organization.ok_or_else(|| AppError::invalid("X-Organization-Id", "is required with session auth"))?;
        const NOT_MEMBER: AppError = AppError::Forbidden("not an active member of that organization");
        let org = OrganizationId::parse(organization).map_err(|_| NOT_MEMBER)?;
        let person = self.active_person(&org, &session.user_id).await?.ok_or(NOT_MEMBER)?;
        Ok(principal(org, person, AuthType::Session))
    }

    async fn active_person(&self, org: &OrganizationId, user: &UserId) -> Result<Option<Person>, AppError> {
        let person = self.members.find_by_user(org, user).await?;
        Ok(person.filter(|p| p.member.is_active))
    }

    /// Writes `lastUsedAt` unless this key's was written less than a minute ago. A failed write is
    /// logged, not fatal: it must not turn a valid request away.
    async fn note_use(&self, key: &ApiKeyId, stored: Option<Timestamp>, now: Timestamp) {
        let due = {
            let Ok(mut written) = self.last_used_written.lock() else { return };
            let last = written.get(key).copied().or(stored);
            let due = last.is_none_or(|at| at.plus(LAST_USED_WRITE_INTERVAL) <= now);
            if due {
                written.insert(key.clone(), now);
            }
            due
        };
        if due && let Err(error) = self.credentials.touch_api_key(key, now).await {
            tracing::warn!(%error, api_key = %key, "could not record API key use");
        }
    }
}

fn principal(organization_id: OrganizationId, person: Person, auth_type: AuthType) -> Principal {
    Principal { organization_id, user_id: person.user.id, email: person.user.email, auth_type }
}
