//! PKCE (RFC 7636) with the S256 method only: `plain` gives no protection against a stolen code.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};

use crate::random::random_bytes;

/// The secret half of PKCE: kept by the service, sent only with the token exchange.
#[derive(Debug, Clone)]
pub struct PkceVerifier(SecretString);

/// The public half, sent with the authorization request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PkceChallenge(String);

/// A verifier that breaks RFC 7636 §4.1 (43–128 characters of `A-Z a-z 0-9 - . _ ~`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a PKCE code verifier must be 43 to 128 unreserved characters")]
pub struct InvalidVerifier;

impl PkceVerifier {
    /// 64 random bytes, base64url without padding: 86 characters, 512 bits.
    pub fn generate() -> Self {
        Self(SecretString::from(URL_SAFE_NO_PAD.encode(random_bytes::<64>())))
    }

    /// Rebuilds a stored verifier, checking RFC 7636's length and alphabet.
    pub fn from_secret(verifier: SecretString) -> Result<Self, InvalidVerifier> {
        let text = verifier.expose_secret();
        let valid = (43..=128).contains(&text.len())
            && text.chars().all(|ch| ch.is_ascii_alphanumeric() || "-._~".contains(ch));
        if valid { Ok(Self(verifier)) } else { Err(InvalidVerifier) }
    }

    /// `BASE64URL(SHA256(ASCII(code_verifier)))`.
    pub fn challenge(&self) -> PkceChallenge {
        PkceChallenge(URL_SAFE_NO_PAD.encode(Sha256::digest(self.0.expose_secret().as_bytes())))
    }

    pub fn secret(&self) -> &SecretString {
        &self.0
    }
}

impl PkceChallenge {
    pub const METHOD: &'static str = "S256";

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    #[test]
    fn rfc_7636_appendix_b_vector() {
        let verifier = PkceVerifier::from_secret("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into()).unwrap();
        assert_eq!(verifier.challenge().as_str(), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    }

    #[test]
    fn generated_verifiers_are_valid_random_and_in_range() {
        let a = PkceVerifier::generate();
        let b = PkceVerifier::generate();
        let text = a.secret().expose_secret().to_owned();
        assert!((43..=128).contains(&text.len()));
        assert!(PkceVerifier::from_secret(text.clone().into()).is_ok());
        assert_ne!(text, b.secret().expose_secret());
        assert_ne!(a.challenge(), b.challenge());
    }

    #[test]
    fn out_of_range_or_bad_alphabet_verifiers_are_refused() {
        for bad in ["a".repeat(42), "a".repeat(129), format!("{}+", "a".repeat(43))] {
            assert_eq!(PkceVerifier::from_secret(bad.into()).unwrap_err(), InvalidVerifier);
        }
        assert!(PkceVerifier::from_secret("a".repeat(128).into()).is_ok());
    }

    #[test]
    fn debug_hides_the_verifier() {
        let verifier = PkceVerifier::from_secret("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into()).unwrap();
        assert!(!format!("{verifier:?}").contains("dBjftJeZ"));
    }
}
