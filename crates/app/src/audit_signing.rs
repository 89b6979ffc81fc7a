//! The key that signs the audit log's tree heads: Ed25519, so that anyone holding the public key
//! (`GET /v1/audit-log/tree-head` shows it) can check a head without the server's secret.
//!
//! A tree head is signed over its C2SP `tlog-checkpoint` text, and shown also as a C2SP signed
//! note (the text, a blank line, and `— <name> <base64(key hash ‖ signature)>`), which the
//! transparency-log tools read (Go's `golang.org/x/mod/sumdb/note`, for one).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use compliance_domain::audit::TreeHead;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use sha2::{Digest, Sha256};

/// The name the key signs notes under.
pub const KEY_NAME: &str = "compliance-audit-log";

/// The Ed25519 key derived from the operator's `AUDIT_SIGNING_KEY`.
#[derive(Clone)]
pub struct TreeHeadSigner {
    key: SigningKey,
    key_id: String,
}

impl std::fmt::Debug for TreeHeadSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeHeadSigner").field("key_id", &self.key_id).finish_non_exhaustive()
    }
}

impl TreeHeadSigner {
    /// The key whose seed is SHA-256 of a fixed label and `secret` (any length; the server asks
    /// for at least 32 bytes): the same secret gives the same key on every instance.
    pub fn from_secret(secret: &[u8]) -> Self {
        let seed: [u8; 32] =
            Sha256::new().chain_update(b"compliance audit tree head key\n").chain_update(secret).finalize().into();
        let key = SigningKey::from_bytes(&seed);
        let key_id = hex::encode(key_hash(&key.verifying_key()));
        Self { key, key_id }
    }

    /// The C2SP key hash, hex: the first four bytes of SHA-256 of the key's name, a newline, the
    /// Ed25519 algorithm byte and the public key.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The public key, base64 (32 bytes).
    pub fn public_key(&self) -> String {
        STANDARD.encode(self.key.verifying_key().to_bytes())
    }

    /// The public key as a C2SP verifier key: `<name>+<key hash hex>+<base64(0x01 ‖ key)>`.
    pub fn verifier_key(&self) -> String {
        let mut bytes = vec![0x01];
        bytes.extend_from_slice(&self.key.verifying_key().to_bytes());
        format!("{KEY_NAME}+{}+{}", self.key_id, STANDARD.encode(bytes))
    }

    /// Signs the head: sets its `key_id` and `signature`.
    pub fn sign(&self, head: &mut TreeHead) {
        let signature = self.key.sign(head.checkpoint_body().as_bytes());
        head.key_id = self.key_id.clone();
        head.signature = STANDARD.encode(signature.to_bytes());
    }

    /// Whether this key signed the head as it is.
    pub fn signed(&self, head: &TreeHead) -> bool {
        let Ok(bytes) = STANDARD.decode(&head.signature) else { return false };
        let Ok(signature) = Signature::from_slice(&bytes) else { return false };
        head.key_id == self.key_id
            && self.key.verifying_key().verify(head.checkpoint_body().as_bytes(), &signature).is_ok()
    }

    /// The head as a C2SP signed note.
    pub fn note(&self, head: &TreeHead) -> String {
        let mut line = key_hash(&self.key.verifying_key()).to_vec();
        line.extend(STANDARD.decode(&head.signature).unwrap_or_default());
        format!("{}\n\u{2014} {KEY_NAME} {}\n", head.checkpoint_body(), STANDARD.encode(line))
    }
}

/// The C2SP key hash of an Ed25519 key named [`KEY_NAME`].
fn key_hash(key: &VerifyingKey) -> [u8; 4] {
    let digest =
        Sha256::new().chain_update(KEY_NAME.as_bytes()).chain_update(b"\n\x01").chain_update(key.to_bytes()).finalize();
    [digest[0], digest[1], digest[2], digest[3]]
}

#[cfg(test)]
mod tests {
    use compliance_domain::merkle::{Frontier, leaf_hash};
    use compliance_domain::{OrganizationId, Timestamp};

    use super::*;

    #[test]
    fn a_signed_head_verifies_and_any_change_or_other_key_does_not() {
        let signer = TreeHeadSigner::from_secret(&[7; 32]);
        let mut frontier = Frontier::default();
        frontier.push(leaf_hash(b"one"));
        let mut head = TreeHead {
            organization_id: OrganizationId::generate(),
            frontier,
            signed_at: Timestamp::now(),
            key_id: String::new(),
            signature: String::new(),
        };
        signer.sign(&mut head);
        assert!(signer.signed(&head));
        assert_eq!(TreeHeadSigner::from_secret(&[7; 32]).key_id(), signer.key_id(), "the same secret, the same key");
        assert!(!TreeHeadSigner::from_secret(&[8; 32]).signed(&head));
        let mut grown = head.clone();
        grown.frontier.push(leaf_hash(b"two"));
        assert!(!signer.signed(&grown));
        assert!(signer.note(&head).starts_with(&head.checkpoint_body()));
    }
}
