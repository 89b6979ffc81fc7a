//! Signed, expiring download URLs for attachments served by this service.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Signs and checks `(organization, attachment, expiry)` triples with HMAC-SHA256.
pub struct UrlSigner {
    key: Vec<u8>,
}

impl UrlSigner {
    /// Signs with `key` (HMAC-SHA256; at least 32 bytes in practice).
    pub fn new(key: Vec<u8>) -> Self {
        Self { key }
    }

    fn mac(&self, org: &str, attachment: &str, expires: i64) -> Option<Hmac<Sha256>> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).ok()?;
        mac.update(format!("{org}\n{attachment}\n{expires}").as_bytes());
        Some(mac)
    }

    /// The hex signature of `attachment` in `org`, valid until `expires` (Unix seconds).
    pub fn sign(&self, org: &str, attachment: &str, expires: i64) -> String {
        self.mac(org, attachment, expires).map(|mac| hex::encode(mac.finalize().into_bytes())).unwrap_or_default()
    }

    /// A form's CSRF token: binds the session, the organization and the form, so a token is
    /// useless to anyone without the session cookie and to any other form.
    pub fn form_token(&self, session_token: &str, org: &str, form: &str) -> String {
        self.sign(org, &format!("form\n{form}\n{session_token}"), 0)
    }

    /// Whether `token` is [`UrlSigner::form_token`]'s for this session, organization and form.
    pub fn verify_form_token(&self, session_token: &str, org: &str, form: &str, token: &str) -> bool {
        self.verify(org, &format!("form\n{form}\n{session_token}"), 0, token)
    }

    /// Compares in constant time; a signature that is not hex never matches.
    pub fn verify(&self, org: &str, attachment: &str, expires: i64, signature: &str) -> bool {
        let (Some(mac), Ok(bytes)) = (self.mac(org, attachment, expires), hex::decode(signature)) else {
            return false;
        };
        mac.verify_slice(&bytes).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_bind_every_part_and_the_key() {
        let signer = UrlSigner::new(b"k".repeat(32));
        let signature = signer.sign("org_a", "att_b", 100);
        assert!(signer.verify("org_a", "att_b", 100, &signature));
        assert!(!signer.verify("org_x", "att_b", 100, &signature));
        assert!(!signer.verify("org_a", "att_x", 100, &signature));
        assert!(!signer.verify("org_a", "att_b", 101, &signature));
        assert!(!signer.verify("org_a", "att_b", 100, "zz"));
        assert!(!UrlSigner::new(b"j".repeat(32)).verify("org_a", "att_b", 100, &signature));
    }

    #[test]
    fn form_tokens_bind_session_organization_and_form() {
        let signer = UrlSigner::new(b"k".repeat(32));
        let token = signer.form_token("cps_1", "org_a", "connect/github");
        assert!(signer.verify_form_token("cps_1", "org_a", "connect/github", &token));
        assert!(!signer.verify_form_token("cps_2", "org_a", "connect/github", &token));
        assert!(!signer.verify_form_token("cps_1", "org_b", "connect/github", &token));
        assert!(!signer.verify_form_token("cps_1", "org_a", "connect/aws", &token));
    }
}
