//! The OAuth `state` parameter: ≥128 random bits, stored only as a SHA-256 hash, single use, expiring after
//! ten minutes and bound to the organization, user and provider that started the flow.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use time::{Duration, OffsetDateTime};

use crate::oauth::pkce::PkceVerifier;
use crate::random::random_bytes;

/// How long a started authorization may wait for its callback.
pub const STATE_LIFETIME: Duration = Duration::minutes(10);

/// The state value sent to the provider. 32 random bytes (256 bits), base64url: 43 characters.
#[derive(Debug, Clone)]
pub struct StateToken(SecretString);

impl StateToken {
    pub fn generate() -> Self {
        Self(SecretString::from(URL_SAFE_NO_PAD.encode(random_bytes::<32>())))
    }

    /// Wraps the value a callback presented, to hash it for the look-up.
    pub fn presented(value: &str) -> Self {
        Self(SecretString::from(value.to_owned()))
    }

    /// The value for the authorization URL.
    pub fn value(&self) -> &SecretString {
        &self.0
    }

    /// What gets stored: hex SHA-256 of the value, so a read of the store cannot forge a callback.
    pub fn hash(&self) -> String {
        hex::encode(Sha256::digest(self.0.expose_secret().as_bytes()))
    }
}

/// A started authorization as it will be stored (storage comes later).
#[derive(Debug, Clone)]
pub struct OAuthState {
    pub state_hash: String,
    pub organization_id: String,
    pub user_id: String,
    pub provider: String,
    pub created_at: OffsetDateTime,
    pub used: bool,
    /// Kept with the state because the token exchange needs it; the store must encrypt it.
    pub pkce_verifier: Option<PkceVerifier>,
}

/// Why a callback's state is refused. All of them are logged as `Invalid state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("the OAuth state is unknown")]
    Unknown,
    #[error("the OAuth state was already used")]
    AlreadyUsed,
    #[error("the OAuth state has expired")]
    Expired,
    #[error("the OAuth state belongs to another organization, user or provider")]
    Mismatch,
}

impl OAuthState {
    pub fn new(
        token: &StateToken,
        organization_id: impl Into<String>,
        user_id: impl Into<String>,
        provider: impl Into<String>,
        created_at: OffsetDateTime,
        pkce_verifier: Option<PkceVerifier>,
    ) -> Self {
        Self {
            state_hash: token.hash(),
            organization_id: organization_id.into(),
            user_id: user_id.into(),
            provider: provider.into(),
            created_at,
            used: false,
            pkce_verifier,
        }
    }

    /// When the state stops being accepted (the store's `expires_at`).
    pub fn expires_at(&self) -> OffsetDateTime {
        self.created_at + STATE_LIFETIME
    }

    /// True when `presented` hashes to this record's hash (constant-time comparison).
    pub fn matches(&self, presented: &StateToken) -> bool {
        presented.hash().as_bytes().ct_eq(self.state_hash.as_bytes()).into()
    }

    /// The rules, without side effects: unused, not older than ten minutes, same org, user and provider.
    pub fn check(
        &self,
        now: OffsetDateTime,
        organization_id: &str,
        user_id: &str,
        provider: &str,
    ) -> Result<(), StateError> {
        if self.used {
            return Err(StateError::AlreadyUsed);
        }
        // A record from the future (clock skew between instances) is treated as expired too.
        if now - self.created_at > STATE_LIFETIME || self.created_at > now + Duration::minutes(1) {
            return Err(StateError::Expired);
        }
        if self.organization_id != organization_id || self.user_id != user_id || self.provider != provider {
            return Err(StateError::Mismatch);
        }
        Ok(())
    }

    /// `check`, then marks the record used so a replay fails.
    pub fn consume(
        &mut self,
        now: OffsetDateTime,
        organization_id: &str,
        user_id: &str,
        provider: &str,
    ) -> Result<(), StateError> {
        self.check(now, organization_id, user_id, provider)?;
        self.used = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;
    use time::macros::datetime;

    const T0: OffsetDateTime = datetime!(2026-11-22 08:00 UTC);

    fn record() -> (StateToken, OAuthState) {
        let token = StateToken::generate();
        let state = OAuthState::new(&token, "org_1", "usr_1", "github", T0, None);
        (token, state)
    }

    #[test]
    fn state_has_at_least_128_bits_and_is_stored_hashed() {
        let (token, state) = record();
        let value = token.value().expose_secret();
        assert!(URL_SAFE_NO_PAD.decode(value).unwrap().len() * 8 >= 128);
        assert_eq!(state.state_hash, hex::encode(Sha256::digest(value.as_bytes())));
        assert_ne!(state.state_hash, *value);
        assert_ne!(StateToken::generate().hash(), token.hash());
        assert!(state.matches(&StateToken::presented(value)));
        assert!(!state.matches(&StateToken::presented("forged")));
    }

    #[test]
    fn state_is_single_use() {
        let (_, mut state) = record();
        state.consume(T0, "org_1", "usr_1", "github").unwrap();
        assert_eq!(state.consume(T0, "org_1", "usr_1", "github"), Err(StateError::AlreadyUsed));
    }

    #[test]
    fn state_expires_after_ten_minutes() {
        let (_, state) = record();
        assert!(state.check(T0 + Duration::minutes(10), "org_1", "usr_1", "github").is_ok());
        assert_eq!(state.expires_at(), T0 + Duration::minutes(10));
        assert_eq!(state.check(T0 + Duration::seconds(601), "org_1", "usr_1", "github"), Err(StateError::Expired));
        assert_eq!(state.check(T0 - Duration::minutes(5), "org_1", "usr_1", "github"), Err(StateError::Expired));
    }

    #[test]
    fn state_is_bound_to_org_user_and_provider() {
        let (_, state) = record();
        for (org, user, provider) in
            [("org_2", "usr_1", "github"), ("org_1", "usr_2", "github"), ("org_1", "usr_1", "slack")]
        {
            assert_eq!(state.check(T0, org, user, provider), Err(StateError::Mismatch));
        }
    }
}
