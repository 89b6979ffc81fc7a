//! Credentials handed out to callers: random text shown once, stored only as a SHA-256 digest.

use rand::RngCore;
use secrecy::SecretString;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub const API_KEY_PREFIX: &str = "cpk_";
pub const SESSION_TOKEN_PREFIX: &str = "cps_";

/// 256 random bits as hex behind `prefix`.
pub fn generate(prefix: &str) -> SecretString {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    SecretString::from(format!("{prefix}{}", hex::encode(bytes)))
}

/// Hex SHA-256 of the credential text.
pub fn digest(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Compares two digests in constant time.
pub fn digests_match(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    #[test]
    fn generated_credentials_are_prefixed_random_and_hash_stably() {
        let a = generate(API_KEY_PREFIX);
        let b = generate(API_KEY_PREFIX);
        assert!(a.expose_secret().starts_with("cpk_"));
        assert_eq!(a.expose_secret().len(), 4 + 64);
        assert_ne!(a.expose_secret(), b.expose_secret());
        assert!(digests_match(&digest(a.expose_secret()), &digest(a.expose_secret())));
        assert!(!digests_match(&digest(a.expose_secret()), &digest(b.expose_secret())));
    }
}
