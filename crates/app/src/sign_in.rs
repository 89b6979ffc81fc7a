//! Sign-in with an OpenID provider: the start (`/auth/login`) and the return (`/auth/callback`).
//!
//! Each sign-in generates a `state`, a `nonce` and a PKCE verifier. The state's SHA-256 keys the
//! attempt in the store, which the callback deletes as it reads it (single use). The verifier is
//! the browser's proof that it started the attempt: it travels only in a short-lived HttpOnly
//! cookie, and the store keeps its SHA-256. The nonce goes to the provider and must come back in
//! the ID token. Log lines are the credential spec's diagnostic messages, with fixed reasons: no
//! code, token, state or verifier is ever in one.

use std::sync::Arc;

use compliance_domain::Timestamp;
use compliance_domain::people::User;
use compliance_ports::{
    AuthorizationParams, Clock, CredentialRepository, IdentityError, IdentityProvider, RepoError, SignInAttempt,
    SignInRepository, UserRepository, VerifiedIdentity,
};
use secrecy::{ExposeSecret, SecretString};
use time::Duration;

use crate::audit::{AuditTrail, SESSION, user_actor};
use crate::secret::{digest, digests_match, generate};
use crate::sessions::{IssuedSession, issue_session};
use crate::{AppError, Ports, Settings};

/// How long a started sign-in may take to come back.
pub const SIGN_IN_TTL: Duration = Duration::minutes(10);
/// The longest `redirect` accepted.
const REDIRECT_MAX: usize = 2048;
const NOT_CONFIGURED: AppError = AppError::NotEnabled("sign-in is not configured");
/// How the diagnostic lines name the provider.
const PROVIDER: &str = "OpenID Connect";

/// Where to send the browser, and the value of the cookie that binds the attempt to it.
#[derive(Debug)]
pub struct SignInStart {
    /// The provider's authorization URL.
    pub authorization_url: String,
    /// The binding cookie's value: the callback must come from the browser that started.
    pub browser_binding: SecretString,
}

/// What the provider sent back, and the browser's binding cookie.
#[derive(Debug, Default)]
pub struct Callback {
    /// The provider's `code` parameter.
    pub code: Option<SecretString>,
    /// The provider's `state` parameter.
    pub state: Option<SecretString>,
    /// The provider's `error` parameter.
    pub error: Option<String>,
    /// The binding cookie the attempt was started with.
    pub browser_binding: Option<SecretString>,
}

/// A finished sign-in: the new session and where to go.
#[derive(Debug)]
pub struct SignedIn {
    /// The new session.
    pub session: IssuedSession,
    /// A path on this service to send the browser to.
    pub redirect: String,
}

/// Sign-in with an OpenID Connect provider.
pub struct SignInService {
    provider: Option<Arc<dyn IdentityProvider>>,
    sign_in: Arc<dyn SignInRepository>,
    credentials: Arc<dyn CredentialRepository>,
    users: Arc<dyn UserRepository>,
    clock: Arc<dyn Clock>,
    settings: Arc<Settings>,
    audit: AuditTrail,
}

impl SignInService {
    pub(crate) fn new(ports: &Ports, settings: Arc<Settings>) -> Self {
        Self {
            provider: ports.identity.clone(),
            sign_in: ports.sign_in.clone(),
            credentials: ports.credentials.clone(),
            users: ports.users.clone(),
            clock: ports.clock.clone(),
            settings,
            audit: AuditTrail::new(ports.renderer.clone(), ports.clock.clone()),
        }
    }

    fn provider(&self) -> Result<&dyn IdentityProvider, AppError> {
        self.provider.as_deref().ok_or(NOT_CONFIGURED)
    }

    /// 404 "sign-in is not configured" without a provider.
    pub fn require_configured(&self) -> Result<(), AppError> {
        self.provider().map(|_| ())
    }

    /// Starts a sign-in that returns to `redirect` (a relative path; `/` when absent).
    pub async fn start(&self, redirect: Option<String>) -> Result<SignInStart, AppError> {
        let provider = self.provider()?;
        let redirect = relative_redirect(redirect)?;
        let (state, nonce, verifier) = (generate(""), generate(""), generate(""));
        let now = self.clock.now();
        let attempt = SignInAttempt {
            state_hash: digest(state.expose_secret()),
            nonce: nonce.expose_secret().to_owned(),
            verifier_hash: digest(verifier.expose_secret()),
            redirect,
            created_at: now,
            expires_at: now.plus(SIGN_IN_TTL),
        };
        let params = AuthorizationParams { state: &state, nonce: &nonce, pkce_verifier: &verifier };
        let authorization_url = provider.authorization_url(params).await.map_err(provider_error)?;
        self.sign_in.insert_attempt(&attempt, now).await?;
        Ok(SignInStart { authorization_url, browser_binding: verifier })
    }

    /// Finishes a sign-in: the attempt, the code, the ID token, the user, a new session.
    pub async fn finish(&self, callback: Callback) -> Result<SignedIn, AppError> {
        let provider = self.provider()?;
        if let Some(error) = &callback.error {
            tracing::warn!(provider = PROVIDER, error = %safe_code(error), "OAuth callback error");
            return Err(AppError::invalid("error", "the identity provider did not sign you in"));
        }
        let attempt = self.take_attempt(&callback).await?;
        let (Some(code), Some(verifier)) = (callback.code, callback.browser_binding) else {
            invalid_state("no code came back");
            return Err(AppError::invalid("code", "the identity provider sent no code"));
        };
        let nonce = SecretString::from(attempt.nonce);
        let identity = provider.redeem(code, verifier, &nonce).await.map_err(|error| {
            tracing::warn!(provider = PROVIDER, reason = %token_failure(&error), "Token exchange failed");
            provider_error(error)
        })?;
        let now = self.clock.now();
        let user = self.user_for(&identity, now).await?;
        let ttl = self.settings.session_ttl;
        let audit = self.audit.change_each(user_actor(&user.id, Some(user.email.clone())), "session.created", &SESSION);
        let session = issue_session(self.credentials.as_ref(), self.users.as_ref(), &user.id, ttl, now, &audit).await?;
        tracing::info!(provider = PROVIDER, user = %user.id, "OAuth completed for {PROVIDER}");
        Ok(SignedIn { session, redirect: attempt.redirect })
    }

    /// The attempt the state names, once; only in the browser that started it, and in time.
    async fn take_attempt(&self, callback: &Callback) -> Result<SignInAttempt, AppError> {
        let refuse = |reason: &'static str| {
            invalid_state(reason);
            AppError::InvalidOAuthState(reason)
        };
        let state = callback.state.as_ref().ok_or_else(|| refuse("the callback has no state"))?;
        let attempt = self.sign_in.take_attempt(&digest(state.expose_secret())).await?;
        let attempt = attempt.ok_or_else(|| refuse("the sign-in is unknown or was already used"))?;
        if attempt.expires_at <= self.clock.now() {
            return Err(refuse("the sign-in took too long; start again"));
        }
        let binding = callback.browser_binding.as_ref().map(|b| digest(b.expose_secret()));
        if !binding.is_some_and(|binding| digests_match(&binding, &attempt.verifier_hash)) {
            return Err(refuse("the sign-in was started in another browser"));
        }
        Ok(attempt)
    }

    /// The provider's account's user: linked before, else the user of the same verified address
    /// (then linked), else a new user.
    async fn user_for(&self, identity: &VerifiedIdentity, now: Timestamp) -> Result<User, AppError> {
        let (issuer, subject) = (identity.issuer.as_str(), identity.subject.as_str());
        if let Some(user) = self.sign_in.find_by_identity(issuer, subject).await? {
            return Ok(user);
        }
        let email = identity
            .email
            .clone()
            .ok_or_else(|| AppError::invalid("email", "the identity provider shared no e-mail address"))?;
        let email = compliance_domain::people::email(email)?;
        if let Some(user) = self.sign_in.find_by_email(&email).await? {
            if !identity.email_verified {
                return Err(AppError::Conflict(
                    "an account with this e-mail address exists, and the identity provider has not verified the \
                     address: verify it there, then sign in again"
                        .into(),
                ));
            }
            self.sign_in.link_identity(&user.id, issuer, subject, now).await?;
            return Ok(User { email_verified: true, ..user });
        }
        let user =
            User::signed_in(email, identity.name.clone(), identity.email_verified, identity.picture.clone(), now)?;
        match self.sign_in.insert_with_identity(&user, issuer, subject).await {
            Ok(()) => Ok(user),
            // a racing first sign-in of the same account created it: use that one
            Err(RepoError::Conflict(_)) => self.sign_in.find_by_identity(issuer, subject).await?.ok_or_else(|| {
                AppError::Conflict("a user with this e-mail address was created at the same time".into())
            }),
            Err(other) => Err(other.into()),
        }
    }
}

/// `redirect` as a path on this service: it starts with one `/`, and holds no backslash, control
/// character or space, so that no browser reads it as another host (`//evil`, `/\evil`).
pub fn relative_redirect(redirect: Option<String>) -> Result<String, AppError> {
    let Some(path) = redirect else { return Ok("/".into()) };
    let refuse = || AppError::invalid("redirect", "must be a path on this service, such as /settings");
    let mut chars = path.chars();
    let relative = chars.next() == Some('/') && !matches!(chars.next(), Some('/' | '\\'));
    let plain = !path.chars().any(|c| c == '\\' || c.is_control() || c.is_whitespace());
    if relative && plain && path.len() <= REDIRECT_MAX { Ok(path) } else { Err(refuse()) }
}

/// The spec's `Invalid state` line.
fn invalid_state(reason: &'static str) {
    tracing::warn!(provider = PROVIDER, reason, "Invalid state");
}

/// An OAuth error code is a short lowercase word such as `access_denied` (RFC 6749 §4.1.2.1);
/// anything else is not echoed, because a provider could put anything in it.
fn safe_code(code: &str) -> &str {
    let plain = !code.is_empty() && code.len() <= 40 && code.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    if plain { code } else { "unrecognised" }
}

/// The reason for a `Token exchange failed` line: fixed phrases and OAuth error codes only.
fn token_failure(error: &IdentityError) -> String {
    match error {
        IdentityError::Refused(code) => format!("refused: {}", safe_code(code)),
        IdentityError::InvalidToken(why) => format!("ID token: {why}"),
        IdentityError::Unavailable(why) => format!("unavailable: {why}"),
    }
}

/// The page's message: a refusal or a bad token is the sign-in's fault (400), an unreachable
/// provider is a 502.
fn provider_error(error: IdentityError) -> AppError {
    match error {
        IdentityError::Unavailable(_) => AppError::Upstream {
            timeout: false,
            detail: "the identity provider could not be reached; try again shortly".into(),
        },
        IdentityError::Refused(_) => AppError::invalid("code", "the identity provider refused the sign-in"),
        IdentityError::InvalidToken(_) => {
            AppError::invalid("id_token", "the identity provider's answer could not be verified")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_on_this_service_are_redirects() {
        assert_eq!(relative_redirect(None).unwrap(), "/");
        for ok in ["/", "/settings", "/a/b?c=d&e=/f#g", "/%2F%2Fevil.example"] {
            assert_eq!(relative_redirect(Some(ok.into())).unwrap(), ok);
        }
        for bad in [
            "//evil.example",
            "/\\evil.example",
            "\\\\evil.example",
            "https://evil.example",
            "evil.example",
            "",
            "/a\\b",
            "/\t/evil.example",
            " /x",
            "javascript:alert(1)",
        ] {
            assert!(relative_redirect(Some(bad.into())).is_err(), "{bad:?}");
        }
        assert!(relative_redirect(Some(format!("/{}", "a".repeat(REDIRECT_MAX)))).is_err());
    }

    #[test]
    fn only_oauth_error_codes_are_echoed() {
        assert_eq!(safe_code("access_denied"), "access_denied");
        assert_eq!(safe_code("Bearer abc.def"), "unrecognised");
        assert_eq!(safe_code(""), "unrecognised");
    }
}
