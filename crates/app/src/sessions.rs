//! Signed-in users: who they are across organizations (`/v1/me`), and their own sessions.

use std::sync::Arc;

use compliance_domain::people::{Session, User};
use compliance_domain::{OrganizationId, SessionId, Timestamp, UserId};
use compliance_ports::{
    AuditEach, Clock, CredentialRepository, Membership, RepoError, SessionRepository, UserRepository,
};
use secrecy::{ExposeSecret, SecretString};
use time::Duration;

use crate::audit::{AuditTrail, SESSION, user_actor};
use crate::secret::{self, SESSION_TOKEN_PREFIX, digest, digests_match};
use crate::{AppError, AuthType, Ports, Principal, PrincipalCache};

/// A new session and the only copy of its token.
#[derive(Debug)]
pub struct IssuedSession {
    /// The session as stored (its token's hash only).
    pub session: Session,
    /// The token (cookie value or bearer token): shown once, not stored.
    pub token: SecretString,
}

/// A caller known as a user, with no organization chosen: a session cookie alone, or an API key
/// (which belongs to one organization).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedInUser {
    /// The user.
    pub user_id: UserId,
    /// How they authenticated.
    pub auth_type: AuthType,
    /// The session the request came with.
    pub session_id: Option<SessionId>,
    /// An API key's organization: what such a caller may see of the user's memberships.
    pub key_organization: Option<OrganizationId>,
}

impl SignedInUser {
    /// The caller of an API key, as its authentication found it.
    pub fn by_api_key(principal: &Principal) -> Self {
        Self {
            user_id: principal.user_id.clone(),
            auth_type: AuthType::ApiKey,
            session_id: None,
            key_organization: Some(principal.organization_id.clone()),
        }
    }

    /// The session, or 403 for an API key: what only a person in a browser may do.
    pub fn require_session(&self, what: &'static str) -> Result<&SessionId, AppError> {
        self.session_id.as_ref().ok_or(AppError::Forbidden(what))
    }
}

/// The caller's user and memberships.
#[derive(Debug, Clone)]
pub struct Me {
    /// The signed-in user.
    pub user: User,
    /// Their active memberships, one per organization.
    pub memberships: Vec<Membership>,
}

/// One of the caller's sessions.
#[derive(Debug, Clone)]
pub struct SessionView {
    /// The session.
    pub session: Session,
    /// The session the request came with.
    pub current: bool,
}

/// The signed-in user: who they are, their memberships and their sessions (list, end).
pub struct SessionService {
    sessions: Arc<dyn SessionRepository>,
    credentials: Arc<dyn CredentialRepository>,
    users: Arc<dyn UserRepository>,
    clock: Arc<dyn Clock>,
    principals: Arc<PrincipalCache>,
    audit: AuditTrail,
}

impl SessionService {
    pub(crate) fn new(ports: &Ports, principals: Arc<PrincipalCache>) -> Self {
        Self {
            sessions: ports.sessions.clone(),
            credentials: ports.credentials.clone(),
            users: ports.users.clone(),
            clock: ports.clock.clone(),
            principals,
            audit: AuditTrail::new(ports.renderer.clone(), ports.clock.clone()),
        }
    }

    /// The user a session token belongs to, with no organization needed.
    pub async fn authenticate(&self, token: &SecretString) -> Result<SignedInUser, AppError> {
        const INVALID: AppError = AppError::Unauthenticated("invalid or expired session");
        let presented = digest(token.expose_secret());
        let session = self.credentials.find_session(&presented).await?.ok_or(INVALID)?;
        if !digests_match(&session.token_hash, &presented) || session.expires_at <= self.clock.now() {
            return Err(INVALID);
        }
        Ok(SignedInUser {
            user_id: session.user_id,
            auth_type: AuthType::Session,
            session_id: Some(session.id),
            key_organization: None,
        })
    }

    /// The user and their active memberships; an API key sees only its own organization's.
    pub async fn me(&self, caller: &SignedInUser) -> Result<Me, AppError> {
        let user = self.users.get(&caller.user_id).await.map_err(|e| AppError::from_repo(e, "user"))?;
        let mut memberships = self.sessions.memberships(&caller.user_id).await?;
        if let Some(org) = &caller.key_organization {
            memberships.retain(|m| &m.member.organization_id == org);
        }
        Ok(Me { user, memberships })
    }

    /// The caller's unexpired sessions, newest first; a session only.
    pub async fn list(&self, caller: &SignedInUser) -> Result<Vec<SessionView>, AppError> {
        // A key is scoped to one organization; a user's sessions span all of theirs.
        caller.require_session("managing sessions needs a signed-in session, not an API key")?;
        let sessions = self.sessions.list_sessions(&caller.user_id, self.clock.now()).await?;
        Ok(sessions
            .into_iter()
            .map(|session| SessionView { current: Some(&session.id) == caller.session_id.as_ref(), session })
            .collect())
    }

    /// Ends one of the caller's sessions now; another user's is a 404, as a missing one.
    pub async fn delete(&self, caller: &SignedInUser, id: &SessionId) -> Result<(), AppError> {
        caller.require_session("managing sessions needs a signed-in session, not an API key")?;
        let audit = self.audit.change_each(user_actor(&caller.user_id, None), "session.revoked", &SESSION);
        let deleted = self.sessions.delete_session(&caller.user_id, id, &audit).await;
        let session = deleted.map_err(|e| AppError::from_repo(e, "session"))?;
        self.principals.forget_credential(&session.token_hash);
        Ok(())
    }

    /// Ends the session of `token`, if it is one (signing out twice is no error).
    pub async fn end(&self, token: &SecretString) -> Result<(), AppError> {
        let Ok(caller) = self.authenticate(token).await else { return Ok(()) };
        let Some(id) = &caller.session_id else { return Ok(()) };
        match self.delete(&caller, id).await {
            Ok(()) | Err(AppError::NotFound(_)) => Ok(()),
            Err(other) => Err(other),
        }
    }
}

/// A new session of `user` valid for `ttl`, and the login recorded.
pub(crate) async fn issue_session(
    credentials: &dyn CredentialRepository,
    users: &dyn UserRepository,
    user: &UserId,
    ttl: Duration,
    now: Timestamp,
    audit: &AuditEach<'_, Session>,
) -> Result<IssuedSession, AppError> {
    let token = secret::generate(SESSION_TOKEN_PREFIX);
    let session = Session {
        id: SessionId::generate(),
        user_id: user.clone(),
        token_hash: secret::digest(token.expose_secret()),
        created_at: now,
        expires_at: now.plus(ttl),
    };
    credentials.insert_session(&session, audit).await?;
    match users.record_login(user, now).await {
        Ok(()) | Err(RepoError::NotFound) => {}
        Err(other) => return Err(other.into()),
    }
    Ok(IssuedSession { session, token })
}
