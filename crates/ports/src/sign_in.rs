//! Sign-in with an OpenID provider: the provider itself, and what a sign-in keeps in the store.

use async_trait::async_trait;
use compliance_domain::people::User;
use compliance_domain::{Timestamp, UserId};
use secrecy::SecretString;

use crate::RepoError;

/// What one sign-in sends the provider: values the use case generated, each used once.
#[derive(Debug)]
pub struct AuthorizationParams<'a> {
    /// The `state` parameter, returned by the provider to the callback.
    pub state: &'a SecretString,
    /// The `nonce` the ID token must carry.
    pub nonce: &'a SecretString,
    /// The PKCE verifier; the provider gets its S256 challenge.
    pub pkce_verifier: &'a SecretString,
}

/// The person the provider vouched for, from a validated ID token (and the provider's userinfo
/// for claims the token left out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedIdentity {
    /// The provider's issuer URL.
    pub issuer: String,
    /// The account's id at the provider (`sub`).
    pub subject: String,
    /// The account's e-mail address, if the provider gave one.
    pub email: Option<String>,
    /// The provider's `email_verified` claim; absent counts as not verified.
    pub email_verified: bool,
    /// The display name, if given.
    pub name: Option<String>,
    /// A picture URL, if given.
    pub picture: Option<String>,
}

/// Why a sign-in failed at the provider. Every text is fit for a log line: an OAuth error code or a
/// fixed phrase, never a code, token or secret.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// The provider could not be reached, timed out or answered with a server error.
    #[error("the identity provider is unavailable: {0}")]
    Unavailable(String),
    /// The token endpoint refused the code (an OAuth error code such as `invalid_grant`).
    #[error("the identity provider refused the code: {0}")]
    Refused(String),
    /// The ID token failed a check (signature, issuer, audience, expiry, nonce) or was missing.
    #[error("the ID token is not valid: {0}")]
    InvalidToken(String),
}

/// An OpenID provider, found by discovery.
#[async_trait]
pub trait IdentityProvider: Send + Sync {
    /// The provider's issuer, as it names itself.
    fn issuer(&self) -> &str;
    /// The URL to send the browser to: authorization code flow, PKCE S256, `state` and `nonce`.
    async fn authorization_url(&self, params: AuthorizationParams<'_>) -> Result<String, IdentityError>;
    /// Redeems the code with the verifier and validates the ID token against `nonce`.
    async fn redeem(
        &self,
        code: SecretString,
        pkce_verifier: SecretString,
        nonce: &SecretString,
    ) -> Result<VerifiedIdentity, IdentityError>;
}

/// A sign-in under way, keyed by the SHA-256 of its state.
#[derive(Clone, PartialEq, Eq)]
pub struct SignInAttempt {
    /// SHA-256 of the state, hex.
    pub state_hash: String,
    /// The nonce the ID token must carry.
    pub nonce: String,
    /// SHA-256 of the PKCE verifier the browser holds in its cookie.
    pub verifier_hash: String,
    /// The relative path to return to.
    pub redirect: String,
    /// When the attempt started.
    pub created_at: Timestamp,
    /// When the attempt stops being accepted.
    pub expires_at: Timestamp,
}

impl std::fmt::Debug for SignInAttempt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignInAttempt").field("expires_at", &self.expires_at).finish_non_exhaustive()
    }
}

/// Sign-in attempts, and the links between users and their provider accounts.
#[async_trait]
pub trait SignInRepository: Send + Sync {
    /// Stores the attempt, and drops attempts that expired before `now`.
    async fn insert_attempt(&self, attempt: &SignInAttempt, now: Timestamp) -> Result<(), RepoError>;
    /// Deletes and returns the attempt: a state is redeemed at most once, even by racing callbacks.
    async fn take_attempt(&self, state_hash: &str) -> Result<Option<SignInAttempt>, RepoError>;
    /// The user the provider's account is linked to.
    async fn find_by_identity(&self, issuer: &str, subject: &str) -> Result<Option<User>, RepoError>;
    /// The user with this (normalised) e-mail address.
    async fn find_by_email(&self, email: &str) -> Result<Option<User>, RepoError>;
    /// Links the provider's account to an existing user and marks its e-mail address verified
    /// (the caller links only on a verified address). When the user's address was not verified
    /// before, whoever created the user had not proved they own it: its other linked accounts and
    /// its sessions are removed in the same transaction, so that they cannot sign in to the account
    /// its real owner now takes over (account pre-hijacking).
    async fn link_identity(&self, user: &UserId, issuer: &str, subject: &str, now: Timestamp) -> Result<(), RepoError>;
    /// Inserts the user and links the provider's account, in one transaction. Conflict when the
    /// e-mail address is taken.
    async fn insert_with_identity(&self, user: &User, issuer: &str, subject: &str) -> Result<(), RepoError>;
}
