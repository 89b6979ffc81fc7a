//! Standard Webhooks signing: secrets `whsec_<base64>`, signatures `v1,<base64 HMAC-SHA256 of
//! "{id}.{timestamp}.{body}">` keyed with the secret's decoded bytes.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use rand::RngCore;
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;

pub const SECRET_PREFIX: &str = "whsec_";
/// Random bytes in a secret (the specification asks for 24 to 64).
const SECRET_BYTES: usize = 32;

/// A new secret: `whsec_` and the base64 of 32 random bytes.
pub fn generate_secret() -> SecretString {
    let mut bytes = [0u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    SecretString::from(format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes)))
}

/// `v1,<signature>` of one message under `secret`; `None` for a secret that is not `whsec_` and
/// base64 (never made here).
pub fn sign(secret: &SecretString, message_id: &str, timestamp: i64, body: &str) -> Option<String> {
    let encoded = secret.expose_secret().strip_prefix(SECRET_PREFIX)?;
    let key = secrecy::zeroize::Zeroizing::new(STANDARD.decode(encoded).ok()?);
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(message_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    Some(format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes())))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    /// The example of the Standard Webhooks reference libraries' tests.
    #[test]
    fn signs_like_the_reference_implementation() {
        let secret = SecretString::from("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned());
        let body = r#"{"test": 2432232314}"#;
        let signature = sign(&secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body).unwrap();
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn secrets_are_prefixed_base64_of_32_bytes() {
        let secret = generate_secret();
        let encoded = secret.expose_secret().strip_prefix(SECRET_PREFIX).unwrap();
        assert_eq!(STANDARD.decode(encoded).unwrap().len(), 32);
        assert_ne!(generate_secret().expose_secret(), secret.expose_secret());
    }
}
