//! Who is calling, and for which organization.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use compliance_domain::access::{Role, Scopes};
use compliance_domain::people::Person;
use compliance_domain::{ApiKeyId, MemberId, OrganizationId, Timestamp, UserId};
use compliance_ports::{Clock, CredentialRepository, ListGenerations, ListName, MemberRepository};
use secrecy::{ExposeSecret, SecretString};
use time::Duration;

use crate::AppError;
use crate::principal_cache::{CacheKey, Cached, PrincipalCache};
use crate::secret::{digest, digests_match};

/// `lastUsedAt` is written at most this often per key.
const LAST_USED_WRITE_INTERVAL: Duration = Duration::minutes(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// How a caller authenticated, which decides what an entry names as actor and what only a
/// signed-in user may do.
pub enum AuthType {
    /// An `X-API-Key` header: the key acts as the member who created it.
    ApiKey,
    /// A session from sign-in (cookie or bearer token).
    Session,
}

/// The authenticated caller: a user acting for one organization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The organization every call of this caller is scoped to.
    pub organization_id: OrganizationId,
    /// The member's user.
    pub user_id: UserId,
    /// The user's e-mail address, for audit entries.
    pub email: String,
    /// API key or session.
    pub auth_type: AuthType,
    /// The caller's membership in the organization.
    pub member_id: MemberId,
    /// The member's free-text role, e.g. `owner` or `admin, auditor` (see [`crate::access`]).
    pub role: String,
    /// For an API key, what it may be used for; `None` for a session.
    pub scopes: Option<Scopes>,
    /// The API key the request presented; `None` for a session.
    pub api_key_id: Option<ApiKeyId>,
    /// The request's id (`X-Request-Id`), for the audit entries it writes; set by the delivery
    /// layer, never remembered with the caller.
    pub request_id: Option<String>,
    /// The request's hold on its `Idempotency-Key`, for the audit entries it writes (the store
    /// marks the key applied with them); set by the delivery layer, never remembered.
    pub idempotency: Option<compliance_domain::idempotency::IdempotencyClaim>,
}

impl Principal {
    /// Administrators are members whose role, split on commas and whitespace, names `owner` or
    /// `admin` (any case).
    pub fn is_administrator(&self) -> bool {
        crate::access::holds(&self.role, Role::Owner) || crate::access::holds(&self.role, Role::Admin)
    }

    /// A signed-in member of a new organization with `role`, for the use cases' unit tests.
    #[cfg(test)]
    pub(crate) fn session_with_role(role: &str) -> Self {
        Principal {
            organization_id: OrganizationId::generate(),
            user_id: UserId::generate(),
            member_id: MemberId::generate(),
            email: "a@example.com".into(),
            auth_type: AuthType::Session,
            role: role.into(),
            scopes: None,
            api_key_id: None,
            request_id: None,
            idempotency: None,
        }
    }
}

/// What a request presented. `organization` is the raw `X-Organization-Id` header.
#[derive(Debug)]
pub enum Credentials {
    /// An `X-API-Key` header.
    ApiKey {
        /// The key's text (`cpk_…`).
        key: SecretString,
        /// The organization asked for, if any: a key acts only in its own.
        organization: Option<String>,
    },
    /// A session cookie or bearer token.
    Session {
        /// The session's token.
        token: SecretString,
        /// The organization to act in (`X-Organization-Id`): required, a 400 without it.
        organization: Option<String>,
    },
}

/// Turns credentials into a [`Principal`], through the in-process [`PrincipalCache`].
pub struct AuthService {
    credentials: Arc<dyn CredentialRepository>,
    members: Arc<dyn MemberRepository>,
    /// Each organization's access generation, which a remembered caller must still match.
    generations: Arc<dyn ListGenerations>,
    clock: Arc<dyn Clock>,
    /// When each key's `lastUsedAt` was last written by this process.
    last_used_written: Mutex<HashMap<ApiKeyId, Timestamp>>,
    cache: Arc<PrincipalCache>,
}

impl AuthService {
    pub(crate) fn new(
        credentials: Arc<dyn CredentialRepository>,
        members: Arc<dyn MemberRepository>,
        generations: Arc<dyn ListGenerations>,
        clock: Arc<dyn Clock>,
        cache: Arc<PrincipalCache>,
    ) -> Self {
        Self { credentials, members, generations, clock, last_used_written: Mutex::new(HashMap::new()), cache }
    }

    /// Answers from the cache when it can (see [`PrincipalCache`]); only successes are cached.
    pub async fn authenticate(&self, credentials: Credentials) -> Result<Principal, AppError> {
        let now = self.clock.now();
        let key = cache_key(&credentials);
        if let Some(cached) = self.current(&key, now).await {
            if let Some(api_key) = &cached.api_key {
                self.note_use(api_key, None, now).await;
            }
            return Ok(cached.principal);
        }
        match credentials {
            Credentials::ApiKey { organization, .. } => self.by_api_key(key, organization.as_deref()).await,
            Credentials::Session { organization, .. } => self.by_session(key, organization.as_deref()).await,
        }
    }

    /// The caller, when the cache knows `credentials`, the organization's access generation is
    /// still the one it was looked up at, and nothing is due to be written (a key's `lastUsedAt`):
    /// one indexed read on the calling thread's connection, no task. `None`: ask
    /// [`AuthService::authenticate`].
    pub async fn remembered(&self, credentials: &Credentials) -> Option<Principal> {
        let now = self.clock.now();
        let cached = self.current(&cache_key(credentials), now).await?;
        match &cached.api_key {
            Some(api_key) => {
                let written = self.last_used_written.lock().ok()?;
                (!use_is_due(written.get(api_key).copied(), now)).then_some(cached.principal)
            }
            None => Some(cached.principal),
        }
    }

    /// The cached entry under `key`, if it is still current: a change to the organization's access
    /// committed anywhere (another instance, the admin CLI) moved the generation, and the entry
    /// is forgotten. A generation that cannot be read makes the caller be looked up again.
    async fn current(&self, key: &CacheKey, now: Timestamp) -> Option<Cached> {
        let cached = self.cache.get(key, now)?;
        match self.access_generation(&cached.principal.organization_id).await {
            Ok(generation) if generation == cached.generation => Some(cached),
            _ => {
                self.cache.forget(key);
                None
            }
        }
    }

    async fn access_generation(&self, org: &OrganizationId) -> Result<u64, AppError> {
        Ok(self.generations.generation(org, ListName::Access).await?)
    }

    async fn by_api_key(&self, key: CacheKey, organization: Option<&str>) -> Result<Principal, AppError> {
        const INVALID: AppError = AppError::Unauthenticated("invalid API key");
        let presented = &key.digest;
        let stored = self.credentials.find_api_key(presented).await?.ok_or(INVALID)?;
        let now = self.clock.now();
        if !digests_match(&stored.key_hash, presented) || !stored.is_usable_at(now) {
            return Err(INVALID);
        }
        // To be remembered, the key is read again after the generation: a revocation committing
        // before that read is seen in it, one committing after moves the generation past the one
        // remembered. Either way no revoked key is remembered.
        let (stored, generation) = match self.cache.is_on() {
            true => {
                let generation = self.access_generation(&stored.organization_id).await?;
                let again = self.credentials.find_api_key(presented).await?;
                (again.filter(|k| k.is_usable_at(now)).ok_or(INVALID)?, generation)
            }
            false => (stored, 0),
        };
        // A key works only while the member who made it is an active member of its organization.
        let person = self.active_person(&stored.organization_id, &stored.created_by).await?.ok_or(INVALID)?;
        if organization.is_some_and(|org| org != stored.organization_id.as_str()) {
            return Err(AppError::Forbidden("the API key belongs to another organization"));
        }
        self.note_use(&stored.id, stored.last_used_at, now).await;
        let expires_at = stored.expires_at;
        let mut principal = principal(stored.organization_id, person, AuthType::ApiKey, Some(stored.scopes));
        principal.api_key_id = Some(stored.id.clone());
        self.cache.put(key, &principal, Some(&stored.id), expires_at, generation, now);
        Ok(principal)
    }

    async fn by_session(&self, key: CacheKey, organization: Option<&str>) -> Result<Principal, AppError> {
        const INVALID: AppError = AppError::Unauthenticated("invalid or expired session");
        let presented = &key.digest;
        let session = self.credentials.find_session(presented).await?.ok_or(INVALID)?;
        let now = self.clock.now();
        if !digests_match(&session.token_hash, presented) || session.expires_at <= now {
            return Err(INVALID);
        }
        let organization =
            organization.ok_or_else(|| AppError::invalid("X-Organization-Id", "is required with session auth"))?;
        const NOT_MEMBER: AppError = AppError::Forbidden("not an active member of that organization");
        let org = OrganizationId::parse(organization).map_err(|_| NOT_MEMBER)?;
        // Read again after the generation, to be remembered (see by_api_key).
        let (session, generation) = match self.cache.is_on() {
            true => {
                let generation = self.access_generation(&org).await?;
                let again = self.credentials.find_session(presented).await?;
                (again.filter(|s| s.expires_at > now).ok_or(INVALID)?, generation)
            }
            false => (session, 0),
        };
        let person = self.active_person(&org, &session.user_id).await?.ok_or(NOT_MEMBER)?;
        // The first time this session comes to the organization is a sign-in the organization
        // sees (its member's `lastLogin`); a sign-in to use another organization is not.
        if person.member.last_login.is_none_or(|at| at < session.created_at)
            && let Err(error) = self.members.record_member_login(&org, &person.member.id, now).await
        {
            tracing::warn!(%error, member = %person.member.id, "could not record the member's sign-in");
        }
        let principal = principal(org, person, AuthType::Session, None);
        self.cache.put(key, &principal, None, Some(session.expires_at), generation, now);
        Ok(principal)
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
            let due = use_is_due(written.get(key).copied().or(stored), now);
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

/// Whether a key last used at `last` is due a `lastUsedAt` write.
fn use_is_due(last: Option<Timestamp>, now: Timestamp) -> bool {
    last.is_none_or(|at| at.plus(LAST_USED_WRITE_INTERVAL) <= now)
}

fn cache_key(credentials: &Credentials) -> CacheKey {
    let (secret, organization) = match credentials {
        Credentials::ApiKey { key, organization } => (key, organization),
        Credentials::Session { token, organization } => (token, organization),
    };
    CacheKey { digest: digest(secret.expose_secret()), organization: organization.clone() }
}

fn principal(
    organization_id: OrganizationId,
    person: Person,
    auth_type: AuthType,
    scopes: Option<Scopes>,
) -> Principal {
    Principal {
        organization_id,
        user_id: person.user.id,
        member_id: person.member.id,
        email: person.user.email,
        auth_type,
        role: person.member.role,
        scopes,
        api_key_id: None,
        request_id: None,
        idempotency: None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use async_trait::async_trait;
    use compliance_domain::people::{ApiKey, Member, MemberPatch, NewMember, Session, User};
    use compliance_domain::{MemberId, OrganizationId};
    use compliance_ports::RepoError;

    use super::*;
    use crate::secret::{API_KEY_PREFIX, generate};

    /// One API key and one active member, counting key lookups and `touch_api_key` calls.
    struct Fixture {
        key: ApiKey,
        person: Person,
        lookups: AtomicUsize,
        touches: AtomicUsize,
    }

    #[async_trait]
    impl CredentialRepository for Fixture {
        async fn insert_api_key(&self, _: &ApiKey, _: &compliance_ports::AuditOf<'_, ApiKey>) -> Result<(), RepoError> {
            Ok(())
        }
        async fn find_api_key(&self, hash: &str) -> Result<Option<ApiKey>, RepoError> {
            self.lookups.fetch_add(1, Ordering::SeqCst);
            Ok((hash == self.key.key_hash).then(|| self.key.clone()))
        }
        async fn list_api_keys(
            &self,
            _: &OrganizationId,
            _: Option<&UserId>,
            _: &compliance_ports::PageRequest,
        ) -> Result<compliance_ports::Page<ApiKey>, RepoError> {
            Ok(compliance_ports::Page { items: vec![self.key.clone()], total: 1, next: None })
        }
        async fn get_api_key(&self, _: &OrganizationId, _: &ApiKeyId) -> Result<ApiKey, RepoError> {
            Ok(self.key.clone())
        }
        async fn api_key_organization(&self, _: &ApiKeyId) -> Result<OrganizationId, RepoError> {
            Err(RepoError::NotFound)
        }
        async fn revoke_api_key(
            &self,
            _: &OrganizationId,
            _: &ApiKeyId,
            _: Timestamp,
            _: &compliance_ports::AuditOf<'_, ApiKey>,
        ) -> Result<compliance_ports::RevokedApiKey, RepoError> {
            Err(RepoError::NotFound)
        }
        async fn touch_api_key(&self, _: &ApiKeyId, _: Timestamp) -> Result<(), RepoError> {
            self.touches.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        async fn insert_session(
            &self,
            _: &Session,
            _: &compliance_ports::AuditEach<'_, Session>,
        ) -> Result<(), RepoError> {
            Ok(())
        }
        async fn find_session(&self, _: &str) -> Result<Option<Session>, RepoError> {
            Ok(None)
        }
    }

    #[async_trait]
    impl MemberRepository for Fixture {
        async fn insert(&self, _: &Member, _: &compliance_ports::AuditOf<'_, Member>) -> Result<(), RepoError> {
            Ok(())
        }
        async fn list(
            &self,
            _: &OrganizationId,
            _: bool,
            _: &compliance_ports::PersonQuery,
        ) -> Result<compliance_ports::Page<Person>, RepoError> {
            Ok(compliance_ports::Page { items: vec![self.person.clone()], total: 1, next: None })
        }
        async fn get(&self, _: &OrganizationId, _: &MemberId) -> Result<Person, RepoError> {
            Ok(self.person.clone())
        }
        async fn record_member_login(&self, _: &OrganizationId, _: &MemberId, _: Timestamp) -> Result<(), RepoError> {
            Ok(())
        }
        async fn find_by_user(&self, org: &OrganizationId, user: &UserId) -> Result<Option<Person>, RepoError> {
            let member = &self.person.member;
            Ok((&member.organization_id == org && &member.user_id == user).then(|| self.person.clone()))
        }
        async fn update(
            &self,
            _: &OrganizationId,
            _: &MemberId,
            _: &MemberPatch,
            _: &compliance_domain::etag::IfMatch,
            _: &compliance_ports::AuditOf<'_, Member>,
        ) -> Result<Person, RepoError> {
            Err(RepoError::NotFound)
        }
        async fn apply_member_bulk(
            &self,
            _: &OrganizationId,
            _: &[compliance_ports::BulkWrite<Member, MemberId, compliance_domain::people::MemberPatch>],
            _: &compliance_ports::AuditOf<'_, Member>,
        ) -> Result<compliance_ports::BulkApplied<compliance_domain::people::Person>, compliance_ports::BulkError>
        {
            Err(compliance_ports::BulkError::Store(RepoError::Internal("not used".into())))
        }
    }

    #[async_trait]
    impl ListGenerations for Fixture {
        async fn generation(&self, _: &OrganizationId, _: ListName) -> Result<u64, RepoError> {
            Ok(0)
        }
    }

    struct FixedClock(Mutex<Timestamp>);

    impl Clock for FixedClock {
        fn now(&self) -> Timestamp {
            self.0.lock().map(|now| *now).unwrap_or_else(|_| Timestamp::now())
        }
    }

    /// The fakes never wait, so polling until ready is enough; the service needs no runtime.
    fn run<F: std::future::Future>(future: F) -> F::Output {
        use std::task::{Context, Poll, Waker};
        let mut future = std::pin::pin!(future);
        let mut context = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
                return output;
            }
        }
    }

    const NO_CACHE: std::time::Duration = std::time::Duration::ZERO;

    /// An API key of an owner, the service over it with `cache_ttl`, and the key's secret.
    fn service(
        now: Timestamp,
        expires_at: Option<Timestamp>,
        cache_ttl: std::time::Duration,
    ) -> (Arc<Fixture>, Arc<FixedClock>, AuthService, SecretString) {
        let org = OrganizationId::generate();
        let user = User::create("ada@acme.test".into(), "Ada".into(), now).unwrap();
        let input = NewMember { user_id: Some(user.id.clone()), role: Some("owner".into()), ..NewMember::default() };
        let member = Member::create(org.clone(), input, now).unwrap();
        let secret = generate(API_KEY_PREFIX);
        let key = ApiKey {
            id: ApiKeyId::generate(),
            organization_id: org,
            name: "ci".into(),
            key_hash: digest(secret.expose_secret()),
            created_by: user.id.clone(),
            created_at: now,
            expires_at,
            revoked_at: None,
            last_used_at: None,
            scopes: compliance_domain::access::Scopes::everything(),
            parent_id: None,
        };
        let fixture = Arc::new(Fixture {
            key,
            person: Person { member, user },
            lookups: AtomicUsize::new(0),
            touches: AtomicUsize::new(0),
        });
        let clock = Arc::new(FixedClock(Mutex::new(now)));
        let cache = Arc::new(PrincipalCache::new(cache_ttl));
        let auth = AuthService::new(fixture.clone(), fixture.clone(), fixture.clone(), clock.clone(), cache);
        (fixture, clock, auth, secret)
    }

    #[test]
    fn api_key_use_is_recorded_at_most_once_a_minute() {
        let now = Timestamp::now();
        let (fixture, clock, auth, secret) = service(now, None, NO_CACHE);
        let org = fixture.key.organization_id.clone();
        let present = || Credentials::ApiKey { key: secret.clone(), organization: None };

        for _ in 0..3 {
            assert_eq!(run(auth.authenticate(present())).unwrap().organization_id, org);
        }
        assert_eq!(fixture.touches.load(Ordering::SeqCst), 1, "three uses within a minute: one write");

        *clock.0.lock().unwrap() = now.plus(Duration::seconds(61));
        run(auth.authenticate(present())).unwrap();
        assert_eq!(fixture.touches.load(Ordering::SeqCst), 2, "a minute later: written again");

        let wrong_org = Credentials::ApiKey { key: secret.clone(), organization: Some("org_other".into()) };
        assert!(matches!(run(auth.authenticate(wrong_org)), Err(AppError::Forbidden(_))));
        let wrong_key = Credentials::ApiKey { key: generate(API_KEY_PREFIX), organization: None };
        assert!(matches!(run(auth.authenticate(wrong_key)), Err(AppError::Unauthenticated(_))));
    }

    #[test]
    fn remembered_answers_only_what_needs_no_store_call() {
        let now = Timestamp::now();
        let (fixture, clock, auth, secret) = service(now, None, std::time::Duration::from_secs(300));
        let present = || Credentials::ApiKey { key: secret.clone(), organization: None };
        assert_eq!(run(auth.remembered(&present())), None, "never authenticated: not remembered");

        let principal = run(auth.authenticate(present())).unwrap();
        assert_eq!(run(auth.remembered(&present())), Some(principal.clone()));
        let other = Credentials::ApiKey { key: generate(API_KEY_PREFIX), organization: None };
        assert_eq!(run(auth.remembered(&other)), None, "another key is not remembered");

        *clock.0.lock().unwrap() = now.plus(Duration::seconds(61));
        assert_eq!(run(auth.remembered(&present())), None, "lastUsedAt is due: only authenticate writes it");
        assert_eq!(fixture.touches.load(Ordering::SeqCst), 1, "remembered writes nothing");
        assert_eq!(run(auth.authenticate(present())).unwrap(), principal);
        assert_eq!(fixture.touches.load(Ordering::SeqCst), 2);
        assert_eq!(run(auth.remembered(&present())), Some(principal), "written: remembered again");
    }

    #[test]
    fn cached_principals_skip_the_store_until_they_expire_or_are_forgotten() {
        let now = Timestamp::now();
        let ttl = std::time::Duration::from_secs(5);
        let (fixture, clock, auth, secret) = service(now, Some(now.plus(Duration::seconds(8))), ttl);
        let present = || Credentials::ApiKey { key: secret.clone(), organization: None };
        let lookups = || fixture.lookups.load(Ordering::SeqCst);

        for _ in 0..3 {
            run(auth.authenticate(present())).unwrap();
        }
        assert_eq!(
            lookups(),
            2,
            "one look-up (the key read twice, around the access generation), then two answers from the cache"
        );
        assert_eq!(fixture.touches.load(Ordering::SeqCst), 1, "use is noted on the first request");
        let other_org = Credentials::ApiKey { key: secret.clone(), organization: Some("org_other".into()) };
        assert!(
            matches!(run(auth.authenticate(other_org)), Err(AppError::Forbidden(_))),
            "the header is part of the key"
        );
        assert_eq!(lookups(), 4, "another header is looked up, not answered from the cache");

        *clock.0.lock().unwrap() = now.plus(Duration::seconds(5));
        run(auth.authenticate(present())).unwrap();
        assert_eq!(lookups(), 6, "after the TTL the store is asked again");

        auth.cache.forget_api_key(&fixture.key.id);
        run(auth.authenticate(present())).unwrap();
        assert_eq!(lookups(), 8, "a forgotten key is looked up again");
        auth.cache.forget_organization(&fixture.key.organization_id);
        run(auth.authenticate(present())).unwrap();
        assert_eq!(lookups(), 10, "so is one of a forgotten organization");

        *clock.0.lock().unwrap() = now.plus(Duration::seconds(8));
        assert!(
            matches!(run(auth.authenticate(present())), Err(AppError::Unauthenticated(_))),
            "an entry never outlives the key's own expiry"
        );
    }

    #[test]
    fn a_zero_ttl_turns_the_cache_off() {
        let (fixture, _, auth, secret) = service(Timestamp::now(), None, NO_CACHE);
        for _ in 0..3 {
            run(auth.authenticate(Credentials::ApiKey { key: secret.clone(), organization: None })).unwrap();
        }
        assert_eq!(fixture.lookups.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn administrators_are_owners_and_admins_in_any_case_among_other_roles() {
        let with_role = Principal::session_with_role;
        for role in ["owner", "Admin", "auditor, admin", "employee,OWNER"] {
            assert!(with_role(role).is_administrator(), "{role}");
        }
        for role in ["employee", "administrator", "co-owner", ""] {
            assert!(!with_role(role).is_administrator(), "{role}");
        }
    }
}
